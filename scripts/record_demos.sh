#!/usr/bin/env bash
# Re-records the bundled demos' tapes (assets/demos/NAME/tape.jsonl) by running
# each demo for real, at the demo model's pace, in a scratch data folder.
# Run after changing a demo's replies (scripts/author_demos.py) or the engine.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for demo in wordfreq csvmeans roman collatz sales; do
  timeout=10
  [ "$demo" = collatz ] && timeout=3   # the hang is stopped sooner, for a shorter demo
  CODELOOP_DATA_DIR="$scratch/$demo" ./target/debug/codeloop run --demo "$demo" --timeout "$timeout" --no-cache 2>/dev/null || true
  tape=$(ls "$scratch/$demo"/sessions/*/tape.jsonl)
  # Neutral paths: the session's out/ folder, not this machine's scratch folder.
  session=$(dirname "$tape")
  # A demo's input files were written to the scratch data folder: named by
  # their file name alone.
  sed -e "s#\"output_dir\":\"$session/out\"#\"output_dir\":\"out\"#g" \
      -e "s#\"source_path\":\"$scratch/$demo/demos/$demo/#\"source_path\":\"#g" \
      "$tape" > "assets/demos/$demo/tape.jsonl"
  if grep -q "$scratch" "assets/demos/$demo/tape.jsonl"; then
    echo "the recorded $demo tape still names $scratch" >&2
    exit 1
  fi
  echo "recorded $demo: $(wc -l < "assets/demos/$demo/tape.jsonl") events"
done
