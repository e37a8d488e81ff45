#!/usr/bin/env bash
# Makes (once, then from the cache) a venv with real third-party packages
# for the tests that run generated code against a person's own packages
# (crates/sandbox/tests/packages.rs): numpy from PyPI by pip. Lands under
# $CODELOOP_VENV_CACHE (default ~/.cache/codeloop/venvs). Prints
# VENV_PYTHON=<path> on stdout; progress on stderr. Exits non-zero (and the
# tests skip, saying so) where pip cannot reach the registry.
set -euo pipefail
NUMPY_VERSION="${CODELOOP_TEST_NUMPY_VERSION:-2.1.3}"
cache="${CODELOOP_VENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/codeloop/venvs}"
venv="$cache/numpy-$NUMPY_VERSION"
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import numpy' >/dev/null 2>&1; then
  py="$(command -v python3)"
  real_py="$("$py" -c 'import sys; print(sys.executable)')"
  echo "data_venv: making $venv with numpy $NUMPY_VERSION" >&2
  rm -rf "$venv"
  "$real_py" -m venv "$venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "numpy==$NUMPY_VERSION" >&2
fi
echo "VENV_PYTHON=$venv/bin/python"
