// The settings both halves share: upstreams and their base-URL variables, and the cassette folder.
// They come from the "calltape" field of the project's package.json, then CALLTAPE_UPSTREAM_<NAME>.

import { readFileSync } from "node:fs";
import path from "node:path";

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

/** Reads the settings of the project rooted at `root`. Throws an Error that says what to fix. */
export function loadSettings(root, env = process.env) {
  let field = {};
  const pkg = path.join(root, "package.json");
  let text;
  try {
    text = readFileSync(pkg, "utf8");
  } catch {
    text = null;
  }
  if (text !== null) {
    try {
      field = JSON.parse(text).calltape ?? {};
    } catch (e) {
      throw new Error(`calltape: ${pkg} is not valid JSON (${e.message}); fix it so its "calltape" field can be read`);
    }
  }
  const upstreams = {};
  for (const [name, spec] of Object.entries({ ...DEFAULT_UPSTREAMS, ...(field.upstreams ?? {}) })) {
    if (!/^[A-Za-z0-9][A-Za-z0-9_-]*$/.test(name)) {
      throw new Error(`calltape: upstream name ${JSON.stringify(name)} in ${pkg} must be letters, digits, '_' and '-'`);
    }
    const known = DEFAULT_UPSTREAMS[name] ?? {};
    const given = typeof spec === "string" ? { url: spec } : spec;
    const u = { ...known, ...given };
    if (!u.url || !u.env) {
      throw new Error(
        `calltape: upstream ${JSON.stringify(name)} in ${pkg} needs url and env, e.g. ` +
          `{"url": "https://api.example.com", "env": "${name.toUpperCase()}_BASE_URL"}`,
      );
    }
    const upper = name.toUpperCase().replaceAll("-", "_");
    const override = env[`CALLTAPE_UPSTREAM_${upper}`];
    // An upstream that names no key variable: <NAME>_API_KEY, as SDKs name theirs.
    upstreams[name] = { url: override || u.url, env: u.env, path: u.path ?? "", key: u.key || `${upper}_API_KEY` };
  }
  const cassetteDir = path.resolve(root, field.cassetteDir ?? "tests/cassettes");
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
