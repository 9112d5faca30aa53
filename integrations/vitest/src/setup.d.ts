/** The proxy the global setup started. */
export interface CalltapeProxy {
  readonly url: string;
  readonly mode: string;
  /** The upstreams (each with its base-URL and key variables) and the cassette folder. */
  readonly settings: {
    upstreams: Record<string, { url: string; env: string; path: string; key: string }>;
    cassetteDir: string;
  };
  stop(): Promise<void>;
  log(): string;
}

/**
 * In replay mode, puts a placeholder in each upstream's key variable that `env` leaves unset and says
 * so once; returns the variables it set.
 */
export function placeholderKeys(proxy: CalltapeProxy, env?: Record<string, string | undefined>): string[];

/** Vitest global setup: starts one `calltape http` proxy for the run and stops it at the end. */
export default function setup(project: { provide(key: string, value: unknown): void; config?: { root?: string } }): Promise<() => Promise<void>>;

/** Starts a proxy for the project rooted at `root`, configured from its package.json "calltape" field. */
export function startProxy(root: string, env?: Record<string, string | undefined>): Promise<CalltapeProxy>;

/** `CALLTAPE_BIN`, else `calltape` on PATH (not npm's Node launcher), else the binary of the `calltape` package. */
export function findBinary(env?: Record<string, string | undefined>): string;
