// Vitest global setup: one `calltape http` proxy per run, on a free loopback port, stopped at the end.
//
//   // vitest.config.ts
//   export default defineConfig({ test: { globalSetup: ["calltape-vitest/setup"] } });

import { spawn } from "node:child_process";
import { accessSync, constants, mkdtempSync, openSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";

import { PLACEHOLDER_KEY, loadSettings, unsetKeyVariables } from "./config.js";

const require = createRequire(import.meta.url);

const MODES = ["auto", "replay", "record", "update", "append", "live", "verify"];

/**
 * `CALLTAPE_BIN`, else `calltape` on PATH (a build from source wins), else the binary of the
 * `calltape` package this one depends on. npm's own `calltape` command on PATH (node_modules/.bin,
 * under `npx vitest`) is that package's Node launcher: the binary is run directly instead, so the
 * proxy is the process the setup stops.
 */
export function findBinary(env = process.env) {
  if (env.CALLTAPE_BIN) {
    try {
      accessSync(env.CALLTAPE_BIN, constants.X_OK);
    } catch {
      throw new Error(`calltape: CALLTAPE_BIN=${env.CALLTAPE_BIN} is not an executable file; point it at the calltape binary`);
    }
    return env.CALLTAPE_BIN;
  }
  for (const dir of (env.PATH ?? "").split(path.delimiter)) {
    const candidate = path.join(dir || ".", "calltape");
    try {
      accessSync(candidate, constants.X_OK);
      if (realpathSync(candidate).endsWith(".js")) continue;
      return candidate;
    } catch {}
  }
  let pkg;
  try {
    pkg = require("calltape");
  } catch (e) {
    if (e.code !== "MODULE_NOT_FOUND") throw e;
    throw new Error(
      "calltape: the calltape binary is not on PATH and the calltape package is not installed; " +
        "install it (npm install -D calltape) or set CALLTAPE_BIN to the calltape binary",
    );
  }
  const binary = pkg.binaryPath(env);
  try {
    accessSync(binary, constants.X_OK);
  } catch {
    throw new Error(`calltape: ${binary} (from the calltape package) is not an executable file; install calltape again (npm install -D calltape)`);
  }
  return binary;
}

/** Starts the proxy and resolves to `{ url, mode, stop() }`. */
export async function startProxy(root, env = process.env) {
  const settings = loadSettings(root, env);
  if (env.CALLTAPE_MODE && !MODES.includes(env.CALLTAPE_MODE)) {
    throw new Error(`calltape: CALLTAPE_MODE=${env.CALLTAPE_MODE} is not a mode; use one of ${MODES.join(", ")}`);
  }
  const work = mkdtempSync(path.join(tmpdir(), "calltape-vitest-"));
  const logPath = path.join(work, "proxy.log");
  const args = ["http", "--listen", "127.0.0.1:0", "--cassette-dir", settings.cassetteDir, "--allow-misses"];
  // Served only under a random per-run path prefix, which the URLs it prints carry: no other local
  // user can use this proxy.
  args.push("--path-token", path.join(work, "path-token"));
  for (const [name, u] of Object.entries(settings.upstreams)) args.push("--upstream", `${name}=${u.url}`);
  const child = spawn(findBinary(env), args, { cwd: root, env, stdio: ["ignore", "pipe", openSync(logPath, "w")] });
  const log = () => readFileSync(logPath, "utf8");
  const lines = [];
  const want = Object.keys(settings.upstreams).length + 1;
  const url = await new Promise((resolve, reject) => {
    child.once("error", (e) => reject(new Error(`calltape: cannot start the proxy: ${e.message}`)));
    child.once("exit", () => reject(new Error(`calltape: calltape http did not start:\n${log()}`)));
    // One `NAME URL` line per upstream, then the proxy's root URL.
    createInterface({ input: child.stdout }).on("line", (line) => {
      lines.push(line);
      if (lines.length === want) resolve(line.trim());
    });
  });
  child.removeAllListeners("exit");
  const probe = await fetch(`${url}/_calltape/cassette/_`);
  const { mode } = await probe.json();
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
    rmSync(work, { recursive: true, force: true });
  };
  return { url, mode, settings, stop, log };
}

/**
 * In replay mode, puts a placeholder in each upstream's key variable that `env` leaves unset (an SDK
 * refuses to start without a key before any request reaches the proxy, and in replay nothing reaches
 * the real API) and says so once. Returns the variables it set.
 */
export function placeholderKeys(proxy, env = process.env) {
  if (proxy.mode !== "replay") return [];
  const unset = unsetKeyVariables(proxy.settings.upstreams, env);
  for (const name of unset) env[name] = PLACEHOLDER_KEY;
  if (unset.length > 0) {
    console.log(`calltape: ${unset.join(", ")} unset, so a placeholder key stands in for this replay run (it sends nothing to the real API)`);
  }
  return unset;
}

export default async function setup(project) {
  const root = project?.config?.root ?? process.cwd();
  const proxy = await startProxy(root);
  // Set in this process before the test workers start: they inherit it.
  const placeholders = placeholderKeys(proxy);
  project.provide("calltape", { url: proxy.url, mode: proxy.mode, root });
  return async () => {
    for (const name of placeholders) if (process.env[name] === PLACEHOLDER_KEY) delete process.env[name];
    await proxy.stop();
  };
}
