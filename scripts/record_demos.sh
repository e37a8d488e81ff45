#!/usr/bin/env bash
# Re-records the bundled demos' tapes (assets/demos/NAME/tape.jsonl) by running
# each demo for real, at the demo model's pace, in a scratch data folder.
# Run after changing a demo's replies (scripts/author_demos.py) or the engine.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for demo in wordfreq csvmeans roman collatz; do
  timeout=10
  [ "$demo" = collatz ] && timeout=3   # the hang is stopped sooner, for a shorter demo
  CODELOOP_DATA_DIR="$scratch/$demo" ./target/debug/codeloop run --demo "$demo" --timeout "$timeout" --no-cache 2>/dev/null || true
  tape=$(ls "$scratch/$demo"/sessions/*/tape.jsonl)
  cp "$tape" "assets/demos/$demo/tape.jsonl"
  echo "recorded $demo: $(wc -l < "assets/demos/$demo/tape.jsonl") events"
done
