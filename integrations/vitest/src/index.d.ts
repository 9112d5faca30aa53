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
