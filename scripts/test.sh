#!/usr/bin/env bash
# The whole test suite. Installs the system packages the tests use when missing
# (tmux for the end-to-end TUI test, bubblewrap for the namespace sandbox layer,
# chromium to open an exported HTML page in a real browser).
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v tmux >/dev/null 2>&1 || need+=(tmux)
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v python3 >/dev/null 2>&1 || need+=(python3)
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  echo "installing: ${need[*]}" >&2
  $SUDO apt-get update -qq </dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" </dev/null
fi
cargo test --locked --all-targets
