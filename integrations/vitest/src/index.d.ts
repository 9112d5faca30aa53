/** What useCalltape() gives a describe block: the running test's cassette and base URLs. */
export interface Calltape {
  /** The running test's cassette file. */
  readonly cassette: string | undefined;
  /** The proxy's mode for the running test (`live` in a `{ live: true }` block). */
  readonly mode: string | undefined;
  /** Whether this block's tests go to the real API. */
  readonly live: boolean;
  /** The base URL an SDK client of `upstream` (default `openai`) should use in the running test. */
  baseURL(upstream?: string): string;
}

export interface CalltapeOptions {
  /** Send this block's tests to the real API, bypassing the proxy. */
  live?: boolean;
}

/**
 * Call inside a describe block: each test gets the cassette `<test file>/<describe path>/<test name>.jsonl`
 * and runs with the upstreams' base-URL variables pointing at it. A request that found no recording
 * fails the test that sent it.
 */
export function useCalltape(options?: CalltapeOptions): Calltape;

/** The cassette name of a Vitest test (without `.jsonl`). */
export function cassetteName(task: unknown, root: string): string;

/** The command that records one Vitest test's cassette, run from the project's root. */
export function recordCommand(task: unknown, root: string): string;

/** What useCalltapeMcp() gives a describe block: the running test's mock MCP server. */
export interface CalltapeMcp {
  /** The command of the running test's stdio MCP server, for StdioClientTransport (stdio). */
  readonly command: string | undefined;
  /** Its arguments (stdio). */
  readonly args: string[] | undefined;
  /** The running test's Streamable HTTP endpoint, for StreamableHTTPClientTransport (transport "http"). */
  readonly url: string | undefined;
  /** The running test's recording (`.mcp.jsonl`). */
  readonly recording: string | undefined;
}

export interface CalltapeMcpOptions {
  /** The real MCP server recorded from: a command as an array of words, or a Streamable HTTP URL. */
  server?: string[] | string;
  /** "stdio" (the default): a command; "http": a URL, of a `calltape serve --mock` of the test's own. */
  transport?: "stdio" | "http";
}

/**
 * Call inside a describe block: each test gets a stdio MCP server, `calltape mock` answering from its
 * own recording `<test file>/<describe path>/<test name>.mcp.jsonl`, recorded from `server` in auto
 * mode on the first run; with `transport: "http"`, a `url` served by `calltape serve --mock`. A
 * request the recording holds no answer for fails the test that sent it.
 */
export function useCalltapeMcp(options?: CalltapeMcpOptions): CalltapeMcp;
