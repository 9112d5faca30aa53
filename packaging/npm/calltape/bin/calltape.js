#!/usr/bin/env node
// `npx calltape …`: runs this platform's calltape binary with the same arguments, standard streams
// and environment (plus CALLTAPE_LAUNCHER=npx, from which `calltape config` writes snippets that
// start calltape the same way), passes on the signals that end it, and exits as it exited.
"use strict";

const { spawn } = require("node:child_process");
const { binaryPath } = require("../lib/index.js");

let binary;
try {
  binary = binaryPath();
} catch (e) {
  process.stderr.write(`${e.message}\n`);
  process.exit(2);
}

const child = spawn(binary, process.argv.slice(2), {
  stdio: "inherit",
  env: { ...process.env, CALLTAPE_LAUNCHER: "npx" },
});
const forwarded = ["SIGINT", "SIGTERM", "SIGHUP"];
const forward = (signal) => child.kill(signal);
for (const signal of forwarded) process.on(signal, forward);

child.on("error", (e) => {
  process.stderr.write(`calltape: cannot run ${binary}: ${e.message}\n`);
  process.exit(2);
});
child.on("exit", (code, signal) => {
  if (signal) {
    // Ended by a signal: end this process by the same one, so the caller sees what happened.
    for (const s of forwarded) process.off(s, forward);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
