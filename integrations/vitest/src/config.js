// The settings both halves share: upstreams and their base-URL variables, and the cassette folder.
// They come from the project's calltape.toml or the "calltape" field of its package.json, then
// CALLTAPE_UPSTREAM_<NAME>.

import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

import { parseCalltapeToml } from "./toml.js";

const FILE_NAME = "calltape.toml";

// Each upstream's API, the variables its SDKs read their base URL (`env`) and key (`key`) from, and
// the path of the base URL: the one table the helper knows providers by.
export const DEFAULT_UPSTREAMS = {
  openai: { url: "https://api.openai.com", env: "OPENAI_BASE_URL", path: "v1", key: "OPENAI_API_KEY" },
  anthropic: { url: "https://api.anthropic.com", env: "ANTHROPIC_BASE_URL", path: "", key: "ANTHROPIC_API_KEY" },
};

// What a replay run puts in an unset key variable, so that an SDK which refuses to start without a
// key reaches the proxy, which answers from the cassette and sends nothing upstream.
export const PLACEHOLDER_KEY = "calltape-replay-placeholder-key";

/** The key variables of `upstreams` that `env` leaves unset or empty, each once, in order. */
export function unsetKeyVariables(upstreams, env = process.env) {
  const unset = [];
  for (const u of Object.values(upstreams)) {
    if (u.key && !env[u.key] && !unset.includes(u.key)) unset.push(u.key);
  }
  return unset;
}

/**
 * The file that holds the settings for `root`, as `calltape replay` finds its own: in `root` and then
 * in each folder above it, a `calltape.toml`, else a `package.json` with a "calltape" field. The
 * search stops after the repository's root (the folder holding `.git`). Returns `{ file, field }`
 * (`field` as package.json writes it: `cassetteDir`, `upstreams`), or null when there is none.
 */
export function discover(root) {
  for (let dir = path.resolve(root); ; dir = path.dirname(dir)) {
    const toml = path.join(dir, FILE_NAME);
    let text = readIfFile(toml);
    if (text !== null) return { file: toml, field: parseCalltapeToml(text, toml) };
    const pkg = path.join(dir, "package.json");
    text = readIfFile(pkg);
    if (text !== null) {
      let json;
      try {
        json = JSON.parse(text);
      } catch (e) {
        throw new Error(`calltape: ${pkg} is not valid JSON (${e.message}); fix it so its "calltape" field can be read`);
      }
      if (json?.calltape !== undefined) return { file: pkg, field: json.calltape };
    }
    if (existsSync(path.join(dir, ".git")) || path.dirname(dir) === dir) return null;
  }
}

/** The text of the file at `file`, or null when there is no file there. */
function readIfFile(file) {
  try {
    if (!statSync(file).isFile()) return null;
  } catch (e) {
    if (e.code === "ENOENT" || e.code === "ENOTDIR") return null;
    throw e;
  }
  try {
    return readFileSync(file, "utf8");
  } catch (e) {
    throw new Error(`calltape: cannot read ${file} (${e.message}); make it readable or remove it`);
  }
}

/**
 * Reads the settings of the project rooted at `root`: those of the file `discover` finds, then
 * CALLTAPE_UPSTREAM_<NAME>. A relative cassette folder is taken from the folder of the file that
 * gives it. Throws an Error that says what to fix.
 */
export function loadSettings(root, env = process.env) {
  const found = discover(root);
  const file = found?.file ?? path.join(root, "package.json");
  const toml = path.basename(file) === FILE_NAME;
  const field = found?.field ?? {};
  if (typeof field !== "object" || field === null || Array.isArray(field)) {
    throw new Error(`calltape: the "calltape" field of ${file} must be an object, e.g. {"cassetteDir": "tests/cassettes"}`);
  }
  const upstreams = {};
  for (const [name, spec] of Object.entries({ ...DEFAULT_UPSTREAMS, ...(field.upstreams ?? {}) })) {
    if (!/^[A-Za-z0-9][A-Za-z0-9_-]*$/.test(name)) {
      throw new Error(`calltape: upstream name ${JSON.stringify(name)} in ${file} must be letters, digits, '_' and '-'`);
    }
    const known = DEFAULT_UPSTREAMS[name] ?? {};
    const given = typeof spec === "string" ? { url: spec } : spec;
    const u = { ...known, ...given };
    if (!u.url || !u.env) {
      const env = `${name.toUpperCase().replaceAll("-", "_")}_BASE_URL`;
      const example = toml
        ? `${name} = { url = "https://api.example.com", env = "${env}" }`
        : `{"url": "https://api.example.com", "env": "${env}"}`;
      throw new Error(`calltape: upstream ${JSON.stringify(name)} in ${file} needs url and env, e.g. ${example}`);
    }
    const upper = name.toUpperCase().replaceAll("-", "_");
    const override = env[`CALLTAPE_UPSTREAM_${upper}`];
    // An upstream that names no key variable: <NAME>_API_KEY, as SDKs name theirs.
    upstreams[name] = { url: override || u.url, env: u.env, path: u.path ?? "", key: u.key || `${upper}_API_KEY` };
  }
  if (field.cassetteDir !== undefined && typeof field.cassetteDir !== "string") {
    throw new Error(`calltape: the cassette folder in ${file} must be a string, e.g. "tests/cassettes"`);
  }
  const cassetteDir =
    field.cassetteDir === undefined ? path.resolve(root, "tests/cassettes") : path.resolve(path.dirname(file), field.cassetteDir);
  return { upstreams, cassetteDir };
}

/** The base URL of upstream `u` under `root` (the proxy's per-test root, or the real API's). */
export function baseURL(u, root) {
  const p = (u.path ?? "").replace(/^\/+|\/+$/g, "");
  const r = root.replace(/\/+$/, "");
  return p ? `${r}/${p}` : r;
}

/** One path segment of a cassette name: letters, digits, `.`, `_` and `-`, never `.` or `..`. */
export function fileSafe(text) {
  return String(text).replace(/[^A-Za-z0-9._-]+/g, "_").replace(/^[._]+|[._]+$/g, "") || "_";
}
