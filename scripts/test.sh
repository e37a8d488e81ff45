#!/usr/bin/env bash
# The whole test suite. Installs the system packages the tests use when missing:
# tmux for the end-to-end TUI tests; chromium to open an exported HTML page in a
# real browser; bubblewrap only so the tests also cover the sandbox's fallback
# to a system bubblewrap (codeloop's own namespaces need no package); passwd
# and util-linux for useradd and runuser, with which the sandbox is tested as
# an ordinary user. scripts/real_servers.sh installs cmake and g++ when
# missing, to build the real model servers.
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v tmux >/dev/null 2>&1 || need+=(tmux)
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v python3 >/dev/null 2>&1 || need+=(python3)
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || need+=(chromium)
command -v useradd >/dev/null 2>&1 || need+=(passwd)
command -v runuser >/dev/null 2>&1 || need+=(util-linux)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  echo "installing: ${need[*]}" >&2
  $SUDO apt-get update -qq </dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" </dev/null
fi
# The real model servers and the real model the end-to-end tests talk to
# (built from source the first time, llama.cpp once for both: measured here,
# 12 minutes of CPU time, 65 of wall time on two busy cores; cached under
# ~/.cache/codeloop/servers, so later runs take seconds).
bash scripts/real_servers.sh >/dev/null
# The compiler's rules first: formatting, and clippy with warnings denied
# (unwrap, expect and panic are denied outside tests by [workspace.lints]).
cargo fmt --all --check
# cargo fmt formats only the modules cargo reaches through plain `mod`
# lines; every .rs file in the tree (tests' shared modules, benches, anything
# a macro declares) is checked as well.
find . -name '*.rs' -not -path './target/*' -not -path './.git/*' -print0 \
  | xargs -0 rustfmt --edition 2024 --check
cargo clippy --locked --workspace --all-targets -- -D warnings
cargo test --locked --workspace --all-targets
