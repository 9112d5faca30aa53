// Where the calltape binary of this platform is: in the one package of @calltape/<os>-<cpu> that
// npm installed beside this one (an optional dependency for each platform, of which npm installs
// only the one whose "os" and "cpu" match), or CALLTAPE_BIN.
"use strict";

const path = require("node:path");

/** The platforms with a package of their own, as `${process.platform}-${process.arch}`. */
const PLATFORMS = ["linux-x64", "linux-arm64", "darwin-x64", "darwin-arm64", "win32-x64"];

/** The package that holds the binary for `platform`-`arch`, or null when there is none. */
function platformPackage(platform = process.platform, arch = process.arch) {
  const key = `${platform}-${arch}`;
  return PLATFORMS.includes(key) ? `@calltape/${key}` : null;
}

/**
 * The path of the calltape binary: CALLTAPE_BIN when set, else the one in this platform's package.
 * Throws an Error whose message says which package is missing and how to get it.
 */
function binaryPath(env = process.env, platform = process.platform, arch = process.arch) {
  if (env.CALLTAPE_BIN) return env.CALLTAPE_BIN;
  const pkg = platformPackage(platform, arch);
  if (pkg === null) {
    throw new Error(
      `calltape: there is no calltape binary package for ${platform}-${arch} ` +
        `(there are for ${PLATFORMS.join(", ")}); build calltape with cargo install calltape ` +
        "and set CALLTAPE_BIN to its path",
    );
  }
  let manifest;
  try {
    manifest = require.resolve(`${pkg}/package.json`);
  } catch {
    throw new Error(
      `calltape: the package ${pkg}, which holds the calltape binary for ${platform}-${arch}, is not ` +
        "installed. npm installs it with calltape as an optional dependency: install again without " +
        "--omit=optional or --no-optional (npm install calltape), or set CALLTAPE_BIN to a calltape binary",
    );
  }
  return path.join(path.dirname(manifest), "bin", platform === "win32" ? "calltape.exe" : "calltape");
}

module.exports = { PLATFORMS, binaryPath, platformPackage };
