// useCalltape(): each test of a describe block gets a cassette of its own,
// <test file>/<describe path>/<test name>.jsonl under the cassette folder, through per-test base URLs.

import { spawn } from "node:child_process";
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

import { afterEach, beforeEach, inject } from "vitest";

import { baseURL, fileSafe, loadSettings } from "./config.js";
import { findBinary } from "./setup.js";

/** A test's file relative to `root`, and its describe blocks' names. */
function located(task, root) {
  const file = task.file?.filepath ? path.relative(root, task.file.filepath) : task.file?.name ?? "unknown";
  const suites = [];
  for (let s = task.suite; s && s.type === "suite" && s !== task.file && s.name; s = s.suite) suites.unshift(s.name);
  return { file, suites };
}

/** The cassette name of a Vitest test: its file (without extension), its describe blocks, its name. */
export function cassetteName(task, root) {
  const { file, suites } = located(task, root);
  const parts = [fileSafe(path.basename(file).replace(/\.[cm]?[jt]sx?$/, ""))];
  for (const s of suites) parts.push(fileSafe(s));
  parts.push(fileSafe(task.name));
  return parts.join("/");
}

/** `text` as one shell word. */
function shellWord(text) {
  return /^[A-Za-z0-9_\/.,:=@%+-]+$/.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`;
}

/** The command that records this one test's cassette, from the project's root. */
export function recordCommand(task, root) {
  const { file, suites } = located(task, root);
  const fullName = [...suites, task.name].join(" ").replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return `CALLTAPE_MODE=record npx vitest run ${shellWord(file)} -t ${shellWord(`^${fullName}$`)}`;
}

async function query(url, name) {
  const resp = await fetch(`${url}/_calltape/cassette/${name}`);
  if (!resp.ok) throw new Error(`calltape: cannot ask the proxy about cassette ${name}: ${resp.status} ${await resp.text()}`);
  return resp.json();
}

/**
 * Call inside a describe block. Each test then runs with the upstreams' base-URL variables
 * (OPENAI_BASE_URL, ...) pointing at its own cassette; `{ live: true }` points them at the real API.
 * A request that found no recording (or drifted) fails the test that sent it.
 */
export function useCalltape(options = {}) {
  const live = Boolean(options.live);
  const state = { current: null };
  const handle = {
    get cassette() {
      return state.current?.cassette;
    },
    get mode() {
      return state.current?.mode;
    },
    get live() {
      return live;
    },
    baseURL(upstream = "openai") {
      const urls = state.current?.urls;
      if (!urls) throw new Error("calltape: baseURL() is only known while a test of this describe block runs");
      if (!(upstream in urls)) throw new Error(`calltape: no upstream named ${upstream}; calltape knows ${Object.keys(urls).join(", ")}`);
      return urls[upstream];
    },
  };

  beforeEach(async (ctx) => {
    const proxy = inject("calltape");
    if (!proxy) throw new Error('calltape: the proxy is not running; add globalSetup: ["calltape-vitest/setup"] to the test config');
    const settings = loadSettings(proxy.root);
    const name = cassetteName(ctx.task, proxy.root);
    const urls = {};
    const env = {};
    for (const [up, u] of Object.entries(settings.upstreams)) {
      // The name's `/` written `%2F`, so the name stays one path segment.
      urls[up] = baseURL(u, live ? u.url : `${proxy.url}/_cassette/${name.replaceAll("/", "%2F")}/${up}`);
      env[u.env] = urls[up];
    }
    const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
    const before = live ? 0 : (await query(proxy.url, name)).failures;
    Object.assign(process.env, env);
    state.current = {
      name,
      urls,
      saved,
      before,
      proxy,
      mode: live ? "live" : proxy.mode,
      cassette: path.join(settings.cassetteDir, `${name}.jsonl`),
      record: recordCommand(ctx.task, proxy.root),
    };
  });

  afterEach(async () => {
    const cur = state.current;
    state.current = null;
    if (!cur) return;
    for (const [k, v] of Object.entries(cur.saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    if (live) return;
    const answer = await query(cur.proxy.url, cur.name);
    const failed = answer.failures - cur.before;
    if (failed > 0 && answer.cassette.missing) {
      const shown = path.relative(cur.proxy.root, cur.cassette);
      throw new Error(`calltape: no cassette at ${shown}; record it with: ${cur.record}\n${answer.text}`);
    }
    if (failed > 0) {
      throw new Error(
        `calltape: ${failed} request(s) of this test failed against cassette ${cur.cassette} (${answer.mode} mode); ` +
          `record it again with CALLTAPE_MODE=record if the change is intended\n${answer.text}`,
      );
    }
  });

  return handle;
}

// What `calltape mock` reads to choose its mode; an MCP client starts its server with an environment
// of its own, so the mock is handed them on its command line.
const MODE_VARIABLES = ["CALLTAPE_MODE", "LLM_TEST_MODE", "UPDATE_RECORDINGS", "RECORD_LLM", "CI"];

/** The lines of a mock's stderr that say what missed: its summary and one line per miss. */
function missLines(text) {
  return text
    .split("\n")
    .filter((line) => line.startsWith("  miss: ") || (/^calltape mock.* missed$/.test(line) && !line.endsWith(" 0 missed")));
}

/** Waits (a few seconds at most) until the mock has said its last line, once its client is gone. */
async function finished(log) {
  for (let waited = 0; waited < 5000; waited += 50) {
    const text = existsSync(log) ? readFileSync(log, "utf8") : "";
    if (text.includes("calltape mock")) return text;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return existsSync(log) ? readFileSync(log, "utf8") : "";
}

/**
 * Call inside a describe block: each test gets a stdio MCP server (`command` and `args`, as the MCP
 * SDK's StdioClientTransport takes them) that answers from the test's own recording,
 * `<test file>/<describe path>/<test name>.mcp.jsonl` under the cassette folder: `calltape mock`,
 * recording from `options.server` (a command as an array of words, or a Streamable HTTP URL) in auto
 * mode on the first run. With `transport: "http"` each test gets a `url` instead, of a `calltape serve
 * --mock --cassette-dir` of its own that answers the same recording over Streamable HTTP. A request
 * the recording holds no answer for fails the test that sent it, with the closest recorded call.
 */
export function useCalltapeMcp(options = {}) {
  const http = options.transport === "http";
  if (options.transport !== undefined && options.transport !== "http" && options.transport !== "stdio") {
    throw new Error(`calltape: useCalltapeMcp takes transport "stdio" or "http", not ${JSON.stringify(options.transport)}`);
  }
  const state = { current: null };
  const handle = {
    get command() {
      return state.current?.command;
    },
    get args() {
      return state.current?.args;
    },
    get url() {
      return state.current?.url;
    },
    get recording() {
      return state.current?.recording;
    },
  };

  beforeEach(async (ctx) => {
    const root = inject("calltape")?.root ?? process.cwd();
    const settings = loadSettings(root);
    const name = `${cassetteName(ctx.task, root)}.mcp`;
    const recording = path.join(settings.cassetteDir, `${name}.jsonl`);
    const work = mkdtempSync(path.join(tmpdir(), "calltape-vitest-mcp-"));
    const log = path.join(work, "mock.log");
    const server = [];
    if (typeof options.server === "string") server.push("--url", options.server);
    else if (options.server?.length) server.push("--", ...options.server.map(String));
    if (http) {
      state.current = { recording, log, work, root };
      const serve = ["serve", "--mock", "--cassette-dir", settings.cassetteDir, "--listen", "127.0.0.1:0", ...server];
      const { child, base } = await startServe(findBinary(), serve, log);
      state.current.child = child;
      state.current.url = `${base}/_cassette/${name.replaceAll("/", "%2F")}/mcp`;
      return;
    }
    const mock = [findBinary(), "mock", recording, ...server];
    const given = MODE_VARIABLES.filter((name) => process.env[name] !== undefined).map((name) => `${name}=${process.env[name]}`);
    // The mock's stderr goes to a file of the test's, read when the test ends.
    const args = ["-c", 'log="$1"; shift; exec env "$@" 2>>"$log"', "sh", log, ...given, ...mock];
    state.current = { command: "sh", args, recording, log, work, root };
  });

  afterEach(async () => {
    const cur = state.current;
    state.current = null;
    if (!cur) return;
    let misses = [];
    if (cur.child) {
      // Stopped, serve writes the recording and lists its misses.
      await stopServe(cur.child);
      misses = missLines(readFileSync(cur.log, "utf8"));
    } else if (existsSync(cur.log)) {
      misses = missLines(await finished(cur.log));
    }
    rmSync(cur.work, { recursive: true, force: true });
    if (misses.length > 0) {
      const shown = path.relative(cur.root, cur.recording);
      throw new Error(
        `calltape: MCP request(s) of this test found no answer in ${shown}; record it again with ` +
          `CALLTAPE_MODE=record (and the real server) if the change is intended\n${misses.join("\n")}`,
      );
    }
  });

  return handle;
}

/** Starts `calltape serve` with `args`, its stderr to `log`; resolves once it printed its URL
 * (`http://127.0.0.1:PORT/mcp`, its first line on stdout) with the URL's base. */
function startServe(binary, args, log) {
  const stderr = openSync(log, "a");
  const child = spawn(binary, args, { stdio: ["ignore", "pipe", stderr] });
  closeSync(stderr);
  return new Promise((resolve, reject) => {
    let out = "";
    const failed = (why) => {
      const said = existsSync(log) ? readFileSync(log, "utf8").trim() : "";
      reject(new Error(`calltape: calltape serve did not start: ${said || why}`));
    };
    child.on("error", (error) => failed(String(error)));
    child.on("exit", () => failed("it exited"));
    child.stdout.on("data", (chunk) => {
      out += chunk;
      const end = out.indexOf("\n");
      if (end < 0) return;
      const line = out.slice(0, end).trim();
      child.removeAllListeners("exit");
      if (!line.startsWith("http://") || !line.endsWith("/mcp")) {
        child.kill("SIGTERM");
        failed(`it printed ${JSON.stringify(line)}`);
        return;
      }
      resolve({ child, base: line.slice(0, -"/mcp".length) });
    });
  });
}

/** Stops a `calltape serve` (SIGTERM) and waits until it has exited. */
function stopServe(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
  });
}
