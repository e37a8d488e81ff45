#!/usr/bin/env bash
# The proving ground: `codeloop bench` on the easy problem set
# (assets/easy/problems.jsonl) against a real small model (--weights coder,
# the default: Qwen2.5-Coder-0.5B-Instruct; --weights smollm2:
# SmolLM2-135M-Instruct), on llama.cpp's llama-server and on llama-cpp-python's
# server, each configuration in turn, and a Markdown page (BENCHMARKS.md) of
# what it measured: per server and configuration, first try, after repair,
# fresh starts, calls and the wasted ones, tokens, time to first token, the
# prompt prefix shared across problems, with bench's charts beside them.
#
# Slow (the model writes about 20 tokens a second on two cores): never run in
# CI; for a person, and for measuring a change before and after.
#
#   scripts/proving_ground.sh [--servers llama-server,llama-cpp-python]
#       [--configs base,candidates,review,candidates+review] [--limit N]
#       [--out DIR] [--page FILE] [--bin CODELOOP] [--problems FILE]
#       [--llama-server-url URL] [--llama-cpp-python-url URL] [--model NAME]
#       [--ctx N] [--threads N] [--weights coder|smollm2] [-- EXTRA BENCH ARGS]
#
# bench's own default feedback holds: the loop works from the docstring's
# examples and the model's own tests, the hidden tests only judge; pass
# `-- --feedback hidden` for the oracle setting (named so on the page).
#
# By default the script builds codeloop (release) and starts each server
# itself, one at a time, with the end-to-end tests' model and flags
# (scripts/real_servers.sh installs them; crates/testkit/src/real_servers.rs
# starts them alike): loopback, a free port, one slot, a --ctx-token
# context (4096), --threads threads (2). One problem runs at a time
# (`--workers 1`), so the time to first token is the server's, not a queue
# behind another problem.
#
# Servers already running: give a server's URL (`http://HOST:PORT` or
# `.../v1`) and the script uses it as it is, never starts, stops or
# installs one for it (--ctx and --threads are then the server's own);
# --servers then defaults to the servers given. The model's name is the
# first id the server lists at /v1/models, unless --model names one.
# A codeloop binary already built: --bin. Each flag has its variable
# (a flag wins over its variable):
#
#   --bin                   PROVING_GROUND_BIN
#   --llama-server-url      PROVING_GROUND_LLAMA_SERVER_URL
#   --llama-cpp-python-url  PROVING_GROUND_LLAMA_CPP_PYTHON_URL
#   --model                 PROVING_GROUND_MODEL
#
# e.g. against servers started by hand on ports 8766 and 8765:
#
#   PROVING_GROUND_BIN=target/release/codeloop \
#   PROVING_GROUND_LLAMA_SERVER_URL=http://127.0.0.1:8766 \
#   PROVING_GROUND_LLAMA_CPP_PYTHON_URL=http://127.0.0.1:8765 \
#     scripts/proving_ground.sh
#
# Each run's files land in --out (target/proving-ground): per server and
# configuration its results.jsonl, bench's page.html, summary.txt and
# progress.log. The page (--page, BENCHMARKS.md) is written at the end from
# what finished, with each run's chart beside it in a folder named after
# the page (benchmarks/).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
servers="llama-server,llama-cpp-python"
configs="base,candidates,review,candidates+review"
limit=""
out="$repo/target/proving-ground"
page="$repo/BENCHMARKS.md"
bin="${PROVING_GROUND_BIN:-}"
llama_server_url="${PROVING_GROUND_LLAMA_SERVER_URL:-}"
llama_cpp_python_url="${PROVING_GROUND_LLAMA_CPP_PYTHON_URL:-}"
model="${PROVING_GROUND_MODEL:-}"
weights="${PROVING_GROUND_WEIGHTS:-coder}"
servers_given=""
problems="$repo/assets/easy/problems.jsonl"
ctx=4096
threads=2
extra=()
invocation="scripts/proving_ground.sh$(printf ' %q' "$@")"
# The variables it read, as they were given.
given_vars=""
for v in PROVING_GROUND_BIN PROVING_GROUND_LLAMA_SERVER_URL PROVING_GROUND_LLAMA_CPP_PYTHON_URL PROVING_GROUND_MODEL; do
  [ -z "${!v:-}" ] || given_vars+="$v=$(printf '%q' "${!v}") "
done
invocation="$given_vars$invocation"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
die() { echo "proving_ground: $*" >&2; exit 2; }
say() { echo "proving_ground: $*" >&2; }

while [ $# -gt 0 ]; do
  case "$1" in
    --servers) servers="${2:?--servers needs a list}"; servers_given=1; shift 2 ;;
    --llama-server-url) llama_server_url="${2:?--llama-server-url needs a URL}"; shift 2 ;;
    --llama-cpp-python-url) llama_cpp_python_url="${2:?--llama-cpp-python-url needs a URL}"; shift 2 ;;
    --model) model="${2:?--model needs a name}"; shift 2 ;;
    --weights) weights="${2:?--weights needs coder or smollm2}"; shift 2 ;;
    --configs) configs="${2:?--configs needs a list}"; shift 2 ;;
    --limit) limit="${2:?--limit needs a number}"; shift 2 ;;
    --out) out="${2:?--out needs a folder}"; shift 2 ;;
    --page) page="${2:?--page needs a file}"; shift 2 ;;
    --bin) bin="${2:?--bin needs a path}"; shift 2 ;;
    --problems) problems="${2:?--problems needs a file}"; shift 2 ;;
    --ctx) ctx="${2:?--ctx needs a number}"; shift 2 ;;
    --threads) threads="${2:?--threads needs a number}"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
if [ -n "$limit" ] && ! [[ "$limit" =~ ^[1-9][0-9]*$ ]]; then die "--limit must be a positive number, not $limit"; fi
[[ "$ctx" =~ ^[1-9][0-9]*$ ]] || die "--ctx must be a positive number, not $ctx"
[[ "$threads" =~ ^[1-9][0-9]*$ ]] || die "--threads must be a positive number, not $threads"
[ -f "$problems" ] || die "no problem set at $problems"
problems="$(cd "$(dirname "$problems")" && pwd)/$(basename "$problems")"
# A server's URL as bench takes it: http(s)://HOST:PORT/v1.
normal_url() {
  local url="${1%/}"
  [[ "$url" =~ ^https?://[^/[:space:]]+(/[^[:space:]]*)?$ ]] || return 1
  [[ "$url" == */v1 ]] || url="$url/v1"
  echo "$url"
}
if [ -n "$llama_server_url" ]; then
  given="$llama_server_url"
  llama_server_url="$(normal_url "$given")" || die "--llama-server-url must be http://HOST:PORT, not $given"
fi
if [ -n "$llama_cpp_python_url" ]; then
  given="$llama_cpp_python_url"
  llama_cpp_python_url="$(normal_url "$given")" || die "--llama-cpp-python-url must be http://HOST:PORT, not $given"
fi
# Servers given and no --servers: those given, never one started beside them.
if [ -z "$servers_given" ] && { [ -n "$llama_server_url" ] || [ -n "$llama_cpp_python_url" ]; }; then
  servers=""
  [ -n "$llama_server_url" ] && servers="llama-server"
  [ -n "$llama_cpp_python_url" ] && servers="${servers:+$servers,}llama-cpp-python"
fi
IFS=, read -r -a server_list <<<"$servers"
IFS=, read -r -a config_list <<<"$configs"
# The URL given for server $1, or nothing (the script starts it).
url_of() {
  case "$1" in
    llama-server) echo "$llama_server_url" ;;
    llama-cpp-python) echo "$llama_cpp_python_url" ;;
  esac
}
[ ${#server_list[@]} -gt 0 ] || die "--servers names no server (llama-server, llama-cpp-python)"
to_start=()
for s in "${server_list[@]}"; do
  case "$s" in llama-server|llama-cpp-python) ;; *) die "unknown server $s (llama-server, llama-cpp-python)" ;; esac
  [ -n "$(url_of "$s")" ] || to_start+=("$s")
done
# The flags of each configuration.
config_flags() {
  case "$1" in
    base) echo "" ;;
    candidates) echo "--candidates 3" ;;
    review) echo "--review" ;;
    candidates+review) echo "--candidates 3 --review" ;;
    *) return 1 ;;
  esac
}
for c in "${config_list[@]}"; do
  config_flags "$c" >/dev/null || die "unknown configuration $c (base, candidates, review, candidates+review)"
done

py="$(command -v python3)" || die "python3 is needed"
# pyenv's shim costs ~100 ms a start: resolve the real interpreter once.
py="$("$py" -c 'import sys; print(sys.executable)')"

# 1. codeloop, built for release (unless one is given).
bin_given="$bin"
if [ -z "$bin" ]; then
  say "building codeloop (release)"
  (cd "$repo" && cargo build --release --locked --bin codeloop >&2)
  bin="$repo/target/release/codeloop"
fi
[ -x "$bin" ] || die "no codeloop at $bin"
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"

# 2. The servers and the model (installed once, then from the cache), for
# the servers the script starts; none for servers given by their URL.
gguf=""
if [ ${#to_start[@]} -gt 0 ]; then
  installed="$(bash "$repo/scripts/real_servers.sh")"
  get() { sed -n "s/^$1=//p" <<<"$installed" | head -n1; }
  llama_cpp_python="$(get LLAMA_CPP_PYTHON)"
  llama_server="$(get LLAMA_SERVER)"
  case "$weights" in
    coder) gguf="$(get CODER_GGUF)" ;;
    smollm2) gguf="$(get SMOLLM2_GGUF)" ;;
    *) die "--weights takes coder or smollm2, not $weights" ;;
  esac
  [ -n "$gguf" ] && [ -n "$llama_server" ] && [ -n "$llama_cpp_python" ] \
    || die "scripts/real_servers.sh did not say where the servers and the model are: $installed"
fi

mkdir -p "$out"
out="$(cd "$out" && pwd)"
manifest="$out/runs.tsv"
: >"$manifest"
server_pid=""
stop_server() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
  fi
}
trap stop_server EXIT
# Ctrl-C or a TERM: bench stops its problems and writes their results;
# no further run starts, and the page is written from the runs so far.
interrupted=""
trap 'interrupted=1' INT TERM

free_port() { "$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# The models a server lists at /v1/models, one id a line (printable
# characters only: the ids reach the terminal and the page); nothing when
# it does not answer with a list.
listed_models() {
  curl -s --max-time 10 "$1/models" | "$py" -c '
import json, sys
try:
    for m in json.load(sys.stdin).get("data", []):
        name = "".join(c for c in str(m["id"]) if c.isprintable() and c != "`")
        if name:
            print(name)
except Exception:
    pass
'
}

# Start $1 on a free loopback port; sets server_pid, base_url, run_model
# and served (how the page describes the server).
start_server() {
  local kind="$1" port log
  port="$(free_port)"
  log="$out/$kind.server.log"
  run_model="${model:-$weights}"
  case "$kind" in
    llama-server)
      "$llama_server" --model "$gguf" --alias "$run_model" --host 127.0.0.1 --port "$port" \
        --ctx-size "$ctx" --threads "$threads" --parallel 1 </dev/null >"$log" 2>&1 &
      ;;
    llama-cpp-python)
      "$llama_cpp_python" -m llama_cpp.server --model "$gguf" --model_alias "$run_model" \
        --host 127.0.0.1 --port "$port" --n_ctx "$ctx" --n_threads "$threads" --n_threads_batch "$threads" </dev/null >"$log" 2>&1 &
      ;;
  esac
  server_pid=$!
  base_url="http://127.0.0.1:$port/v1"
  local waited=0
  # llama-server answers /v1/models with 503 while it loads the model.
  until [ "$(curl -s -o /dev/null -w '%{http_code}' "$base_url/models" || true)" = 200 ]; do
    if ! kill -0 "$server_pid" 2>/dev/null; then
      tail -n 40 "$log" >&2
      die "the $kind server exited before it answered (its log: $log)"
    fi
    waited=$((waited + 1))
    [ "$waited" -lt 900 ] || die "the $kind server did not answer in 180 s (its log: $log)"
    sleep 0.2
  done
  served="started by the script: \`$(basename "$gguf")\`, one slot, a $ctx-token context, $threads threads"
  say "$kind is up at $base_url (log: $log)"
}

# Use the server already running at its URL; sets base_url, run_model and
# served. It must answer /v1/models; it is never stopped.
use_server() {
  local kind="$1" listed
  base_url="$(url_of "$kind")"
  listed="$(listed_models "$base_url" || true)"
  [ -n "$listed" ] || die "no $kind answered at $base_url/models: start it first, or give its URL (--$kind-url)"
  run_model="${model:-$(head -n1 <<<"$listed")}"
  served="already running at $base_url (its own settings), serving \`$(head -n1 <<<"$listed")\`"
  say "$kind at $base_url, model $run_model"
}

started="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
for kind in "${server_list[@]}"; do
  if [ -n "$(url_of "$kind")" ]; then use_server "$kind"; else start_server "$kind"; fi
  for config in "${config_list[@]}"; do
    run="$out/$kind-$config"
    rm -rf "$run"
    mkdir -p "$run"
    read -r -a flags <<<"$(config_flags "$config")"
    cmd=("$bin" bench "$problems" --base-url "$base_url" --model "$run_model" --workers 1
      --out "$run/results.jsonl" --html "$run/page.html")
    [ -n "$limit" ] && cmd+=(--limit "$limit")
    cmd+=("${flags[@]}" "${extra[@]}")
    shown_url="$base_url"
    [ -n "$(url_of "$kind")" ] || shown_url="http://127.0.0.1:PORT/v1"
    shown="codeloop bench ${problems#"$repo/"} --base-url $shown_url --model $(printf '%q' "$run_model") --workers 1"
    [ -n "$limit" ] && shown+=" --limit $limit"
    [ ${#flags[@]} -gt 0 ] && shown+=" ${flags[*]}"
    [ ${#extra[@]} -gt 0 ] && shown+="$(printf ' %q' "${extra[@]}")"
    say "$kind, $config: $shown"
    t0="$(date +%s)"
    status=0
    env -u OPENAI_API_KEY -u CODELOOP_BASE_URL -u CODELOOP_MODEL \
      CODELOOP_CONFIG=/dev/null CODELOOP_DATA_DIR="$run/data" CODELOOP_CACHE_DIR="$run/cache" \
      "${cmd[@]}" >"$run/summary.txt" 2> >(tee "$run/progress.log" >&2) || status=$?
    t1="$(date +%s)"
    say "$kind, $config: done in $((t1 - t0)) s (exit $status)"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$kind" "$config" "$run" "$((t1 - t0))" "$status" "$shown" "$served" >>"$manifest"
    # bench stopped by a signal (128 + SIGHUP, SIGINT, SIGTERM): bash runs
    # no trap for a Ctrl-C its child took and exited on, so say it here.
    case "$status" in 129|130|143) interrupted=1 ;; esac
    [ -z "$interrupted" ] || break
  done
  stop_server
  if [ -n "$interrupted" ]; then
    say "interrupted: no further run; the page from the runs so far"
    break
  fi
done

# 3. The page.
commit="$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)"
git -C "$repo" diff --quiet HEAD 2>/dev/null || commit="$commit (with uncommitted changes)"
binary="$("$bin" --version 2>/dev/null | head -n1 || true)"
if [ -n "$bin_given" ]; then
  binary="\`$bin\` ($binary), given: the commit is the script's checkout, not necessarily the binary's"
else
  binary="\`${bin#"$repo/"}\` ($binary), built from the commit"
fi
shown_problems="${problems#"$repo/"}"
"$py" - "$manifest" "$page" "$started" "$commit" "$invocation" "$binary" "$problems" "$shown_problems" "$limit" <<'PY'
import json, os, shutil, sys, platform

manifest, page, started, commit, invocation, binary, problems_path, problems, limit = sys.argv[1:10]
page_dir = os.path.dirname(os.path.abspath(page))
stem = os.path.splitext(os.path.basename(page))[0].lower()
charts = os.path.join(page_dir, stem)
os.makedirs(charts, exist_ok=True)


def percentile(values, p):
    """Nearest rank, as bench computes it (session::call_figures::percentile)."""
    values = sorted(values)
    if not values:
        return None
    rank = max(1, -(-p * len(values) // 100))
    return values[rank - 1]


def secs(ms):
    """A time as bench says it (protocol::resources::cpu_time)."""
    if ms is None:
        return "-"
    if ms < 100:
        return f"{ms} ms"
    if ms < 10_000:
        return f"{ms / 1000:.2f} s"
    if ms < 100_000:
        return f"{ms / 1000:.1f} s"
    return f"{ms // 1000} s"


def rate(k, n):
    return "-" if n == 0 else f"{100 * k / n:.1f}% ({k}/{n})"


def share(part, total):
    return "-" if total == 0 else f"{100 * part / total:.0f}% of {total} characters"


cpu = platform.processor() or platform.machine()
try:
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
except OSError:
    pass
cores = os.cpu_count()

runs = []
with open(manifest) as f:
    for line in f:
        kind, config, run, wall, status, shown, served = line.rstrip("\n").split("\t")
        results = []
        path = os.path.join(run, "results.jsonl")
        if os.path.exists(path):
            with open(path) as r:
                results = [json.loads(l) for l in r if l.strip()]
        summary = ""
        if os.path.exists(os.path.join(run, "summary.txt")):
            with open(os.path.join(run, "summary.txt")) as s:
                summary = s.read()
        name = f"{kind}-{config}"
        for src, dst in (("page.html", ".html"), ("results.jsonl", ".jsonl")):
            if os.path.exists(os.path.join(run, src)):
                shutil.copyfile(os.path.join(run, src), os.path.join(charts, name + dst))
        svg = None
        if os.path.exists(os.path.join(run, "page.html")):
            with open(os.path.join(run, "page.html")) as h:
                html = h.read()
            a, b = html.find("<svg"), html.find("</svg>")
            if a >= 0 and b > a:
                with open(os.path.join(charts, name + ".svg"), "w") as g:
                    g.write(html[a : b + len("</svg>")] + "\n")
                svg = name + ".svg"
        runs.append(dict(kind=kind, config=config, wall=int(wall), status=int(status), served=served,
                         shown=shown, results=results, summary=summary, name=name, svg=svg))


def figures(results):
    measured = [r for r in results if r["status"] in ("passed", "failed")]
    calls = [c for r in measured for c in r.get("per_call", [])]
    first = [c["first_token_ms"] for c in calls if "first_token_ms" in c]
    wasted = {}
    for c in calls:
        if c.get("waste"):
            wasted[c["waste"]] = wasted.get(c["waste"], 0) + 1
    return dict(
        measured=len(measured),
        first=sum(1 for r in measured if r["passed_first"]),
        final=sum(1 for r in measured if r["passed_final"]),
        errors=sum(1 for r in results if r["status"] == "error"),
        cancelled=sum(1 for r in results if r["status"] == "cancelled"),
        fresh=sum(r.get("fresh_starts", 0) for r in measured),
        # A binary from before bench kept each call's figures wrote none:
        # its calls are unknown, not none.
        calls=len(calls) if any("per_call" in r for r in measured) else None,
        wasted=wasted,
        tin=sum(r.get("prompt_tokens", 0) for r in measured),
        tout=sum(r.get("completion_tokens", 0) for r in measured),
        med=percentile(first, 50),
        p90=percentile(first, 90),
        shared=sum(r.get("first_request_shared_chars", 0) for r in measured),
        firsts=sum(r.get("first_request_chars", 0) for r in measured),
        first_cached=sum(r["per_call"][0].get("cached_tokens", 0) for r in measured if r.get("per_call")),
        first_told=sum(r["per_call"][0].get("prompt_tokens", 0) for r in measured
                       if r.get("per_call") and "cached_tokens" in r["per_call"][0]),
    )


def cached(f):
    if f["first_told"] == 0:
        return "-"
    return f"{100 * f['first_cached'] / f['first_told']:.0f}% of {f['first_told']} tokens"


def known(v):
    """A figure, or `-` where the results do not hold it."""
    return "-" if v is None or v is False else v


def wasted_words(w):
    n = sum(w.values())
    if n == 0:
        return "0"
    return f"{n} (" + ", ".join(f"{k} {why}" for why, k in sorted(w.items(), key=lambda x: -x[1])) + ")"


out = []
out.append("# Benchmarks: a real small model on the easy set\n")
with open(problems_path) as f:
    in_set = sum(1 for l in f if l.strip())
taken = f"the first {min(int(limit), in_set)} of the {in_set} problems" if limit else f"the {in_set} problems"
servers = {}
for r in runs:
    servers.setdefault(r["kind"], r["served"])
out.append(
    f"What `scripts/proving_ground.sh` measured: `codeloop bench` on {taken} of "
    f"`{problems}` (their tests hidden from the model, and, unless a run says ORACLE feedback, "
    "never shown to the repairs either: they judge each version afterwards), one problem at a time, answered by "
    "the model on llama.cpp's `llama-server` and on llama-cpp-python's server, as listed below "
    "(the served file is named where the script started the server from `scripts/real_servers.sh`). "
    "Figures are over the problems "
    "measured (a problem whose model call failed is an error, left out). Wasted calls are calls whose "
    "reply was not used (stopped for looping, cut, failed, unusable or refused); time to first token "
    "is from the request to its first streamed piece, over every call that streamed (median and p90 by "
    "the nearest rank); the prefix across problems is, of each problem's first request, the longest "
    "prefix it shares with an earlier problem's first request (characters), and the server's cache on "
    "each problem's first call is what the server said it took from its cache (tokens).\n"
)
out.append(f"- Date: {started} (UTC)")
out.append(f"- Machine: {cores} cores ({cpu}), {platform.system()} {platform.release()}")
out.append(f"- Commit: `{commit}`")
out.append(f"- Binary: {binary}")
for kind, served in servers.items():
    out.append(f"- {kind}: {served}")
out.append(f"- Command: `{invocation}`")
total = sum(r["wall"] for r in runs)
out.append(f"- Wall time: {total // 60} min {total % 60} s in all\n")
out.append("| server | configuration | first try | after repair | fresh starts | calls | wasted | tokens in | tokens out | first token, median | p90 | prefix across problems | server cache, first calls | wall time |")
out.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for r in runs:
    f = figures(r["results"])
    out.append(
        f"| {r['kind']} | {r['config']} | {rate(f['first'], f['measured'])} | {rate(f['final'], f['measured'])} "
        f"| {f['fresh']} | {known(f['calls'])} | {known(f['calls'] and sum(f['wasted'].values()))} | {f['tin']} | {f['tout']} "
        f"| {secs(f['med'])} | {secs(f['p90'])} | {share(f['shared'], f['firsts'])} | {cached(f)} | {r['wall'] // 60} min {r['wall'] % 60} s |"
    )
out.append("")
for r in runs:
    f = figures(r["results"])
    out.append(f"## {r['kind']}, {r['config']}\n")
    out.append(f"`{r['shown']}` (exit {r['status']}, {r['wall'] // 60} min {r['wall'] % 60} s)\n")
    if r["svg"]:
        out.append(f"![pass@1 by repair round, {r['kind']}, {r['config']}]({stem}/{r['svg']})\n")
        out.append(f"The bench's page: [{stem}/{r['name']}.html]({stem}/{r['name']}.html); its results: [{stem}/{r['name']}.jsonl]({stem}/{r['name']}.jsonl)\n")
    out.append("| figure | value |")
    out.append("|---|---|")
    for k, v in [
        ("problems measured", f["measured"]),
        ("errors (not measured)", f["errors"]),
        ("cancelled", f["cancelled"]),
        ("first try", rate(f["first"], f["measured"])),
        ("after repair", rate(f["final"], f["measured"])),
        ("fresh starts", f["fresh"]),
        ("model calls", known(f["calls"])),
        ("wasted calls", known(f["calls"] and wasted_words(f["wasted"]))),
        ("tokens in", f["tin"]),
        ("tokens out", f["tout"]),
        ("time to first token, median", secs(f["med"])),
        ("time to first token, p90", secs(f["p90"])),
        ("prompt prefix across problems", share(f["shared"], f["firsts"])),
        ("server cache on each problem's first call", cached(f)),
    ]:
        out.append(f"| {k} | {v} |")
    out.append("")
    out.append("Per problem:\n")
    out.append("| problem | outcome | passed at version | versions | fresh starts | calls | wasted | tokens in | tokens out | first token, median | p90 | first prompt shared |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for p in r["results"]:
        out.append(
            f"| {p['task_id']} | {p['status']} | {p.get('passed_at') or '-'} | {p.get('iterations', 0)} "
            f"| {p.get('fresh_starts', 0)} | {known('per_call' in p and len(p['per_call']))} | {known('per_call' in p and p.get('wasted_calls', 0))} "
            f"| {p.get('prompt_tokens', 0)} | {p.get('completion_tokens', 0)} "
            f"| {secs(p.get('first_token_median_ms'))} | {secs(p.get('first_token_p90_ms'))} "
            f"| {share(p.get('first_request_shared_chars', 0), p.get('first_request_chars', 0))} |"
        )
    out.append("")
    out.append("bench's summary:\n")
    out.append("```")
    out.append(r["summary"].rstrip())
    out.append("```\n")
with open(page, "w") as f:
    f.write("\n".join(out))
print(f"proving_ground: wrote {page} (charts in {charts})", file=sys.stderr)
PY
[ -z "$interrupted" ] || exit 130
