#!/usr/bin/env bash
# Builds the `calltape` binary of an earlier commit (by default abb27ad, the bridge before its routing
# peek used the one-pass scanner) into a cache folder outside the repository, and prints its path, for
#   CALLTAPE_BASELINE_BIN="$(benches/scripts/baseline-bin.sh)" cargo bench -p calltape-benches --bench bridge
# The commit is checked out as a git worktree of its own and built with the release profile and a
# target folder of its own, so the repository's work tree and target folder are left alone. A second
# run finds the binary built and only prints its path.
set -euo pipefail
commit="${1:-abb27ad}"
cache="${CALLTAPE_BASELINE_DIR:-${TMPDIR:-/tmp}/calltape-baseline}"
repo="$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
full="$(git -C "$repo" rev-parse --verify "$commit^{commit}")"
tree="$cache/$full"
bin="$cache/target-$full/release/calltape"
if [ ! -x "$bin" ]; then
    mkdir -p "$cache"
    if [ ! -d "$tree" ]; then
        git -C "$repo" worktree add --detach "$tree" "$full" >&2
    fi
    (cd "$tree" && CARGO_TARGET_DIR="$cache/target-$full" cargo build --release --locked -p calltape >&2)
fi
echo "$bin"
