// The settings both halves share: upstreams and their base-URL variables, and the cassette folder.
// They come from the "calltape" field of the project's package.json, then CALLTAPE_UPSTREAM_<NAME>.

import { readFileSync } from "node:fs";
import path from "node:path";

export const DEFAULT_UPSTREAMS = {
  openai: { url: "https://api.openai.com", env: "OPENAI_BASE_URL", path: "v1" },
  anthropic: { url: "https://api.anthropic.com", env: "ANTHROPIC_BASE_URL", path: "" },
};

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
    const override = env[`CALLTAPE_UPSTREAM_${name.toUpperCase().replaceAll("-", "_")}`];
    upstreams[name] = { url: override || u.url, env: u.env, path: u.path ?? "" };
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
