/** The platforms with a binary package of their own, as `${process.platform}-${process.arch}`. */
export declare const PLATFORMS: readonly string[];

/** The package that holds the binary for `platform`-`arch` (`@calltape/linux-x64`), or null when there is none. */
export declare function platformPackage(platform?: string, arch?: string): string | null;

/**
 * The path of the calltape binary: `CALLTAPE_BIN` when set, else the one in this platform's package.
 * Throws an Error that names the missing package when it is not installed.
 */
export declare function binaryPath(env?: Record<string, string | undefined>, platform?: string, arch?: string): string;
