#!/usr/bin/env bash
# The proving ground: `codeloop bench` on the easy problem set
# (assets/easy/problems.jsonl) against the real small model,
# SmolLM2-135M-Instruct, on llama.cpp's llama-server and on llama-cpp-python's
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
#       [--ctx N] [--threads N] [-- EXTRA BENCH ARGS]
#
# The servers, the model and their flags are the end-to-end tests' own
# (scripts/real_servers.sh installs them; tests/support/real_servers.rs
# starts them alike): loopback, a free port, one slot, a 4096-token context.
# One server runs at a time, one problem at a time (`--workers 1`), so the
# time to first token is the server's, not a queue behind another problem.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
servers="llama-server,llama-cpp-python"
configs="base,candidates,review,candidates+review"
limit=""
out="$repo/target/proving-ground"
page="$repo/BENCHMARKS.md"
bin=""
problems="$repo/assets/easy/problems.jsonl"
ctx=4096
threads=2
extra=()
invocation="scripts/proving_ground.sh$(printf ' %q' "$@")"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
die() { echo "proving_ground: $*" >&2; exit 2; }
say() { echo "proving_ground: $*" >&2; }

while [ $# -gt 0 ]; do
  case "$1" in
    --servers) servers="${2:?--servers needs a list}"; shift 2 ;;
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
IFS=, read -r -a server_list <<<"$servers"
IFS=, read -r -a config_list <<<"$configs"
for s in "${server_list[@]}"; do
  case "$s" in llama-server|llama-cpp-python) ;; *) die "unknown server $s (llama-server, llama-cpp-python)" ;; esac
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
if [ -z "$bin" ]; then
  say "building codeloop (release)"
  (cd "$repo" && cargo build --release --locked --bin codeloop >&2)
  bin="$repo/target/release/codeloop"
fi
[ -x "$bin" ] || die "no codeloop at $bin"
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"

# 2. The servers and the model (installed once, then from the cache).
installed="$(bash "$repo/scripts/real_servers.sh")"
get() { sed -n "s/^$1=//p" <<<"$installed" | head -n1; }
llama_cpp_python="$(get LLAMA_CPP_PYTHON)"
llama_server="$(get LLAMA_SERVER)"
gguf="$(get SMOLLM2_GGUF)"
[ -n "$gguf" ] && [ -n "$llama_server" ] && [ -n "$llama_cpp_python" ] \
  || die "scripts/real_servers.sh did not say where the servers and the model are: $installed"

mkdir -p "$out"
out="$(cd "$out" && pwd)"
manifest="$out/runs.tsv"
: >"$manifest"
model=smollm2
server_pid=""
stop_server() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
  fi
}
trap stop_server EXIT
trap 'stop_server; exit 130' INT TERM

free_port() { "$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Start $1 on a free loopback port; sets server_pid and base_url.
start_server() {
  local kind="$1" port log
  port="$(free_port)"
  log="$out/$kind.server.log"
  case "$kind" in
    llama-server)
      "$llama_server" --model "$gguf" --alias "$model" --host 127.0.0.1 --port "$port" \
        --ctx-size "$ctx" --threads "$threads" --parallel 1 </dev/null >"$log" 2>&1 &
      ;;
    llama-cpp-python)
      "$llama_cpp_python" -m llama_cpp.server --model "$gguf" --model_alias "$model" \
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
  say "$kind is up at $base_url (log: $log)"
}

started="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
for kind in "${server_list[@]}"; do
  start_server "$kind"
  for config in "${config_list[@]}"; do
    run="$out/$kind-$config"
    rm -rf "$run"
    mkdir -p "$run"
    read -r -a flags <<<"$(config_flags "$config")"
    cmd=("$bin" bench "$problems" --base-url "$base_url" --model "$model" --workers 1
      --out "$run/results.jsonl" --html "$run/page.html")
    [ -n "$limit" ] && cmd+=(--limit "$limit")
    cmd+=("${flags[@]}" "${extra[@]}")
    shown="codeloop bench ${problems#"$repo/"} --base-url http://127.0.0.1:PORT/v1 --model $model --workers 1"
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
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$kind" "$config" "$run" "$((t1 - t0))" "$status" "$shown" >>"$manifest"
  done
  stop_server
done

# 3. The page.
commit="$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)"
git -C "$repo" diff --quiet HEAD 2>/dev/null || commit="$commit (with uncommitted changes)"
"$py" - "$manifest" "$page" "$started" "$commit" "$invocation" "$gguf" "$ctx" "$threads" <<'PY'
import json, os, shutil, sys, platform

manifest, page, started, commit, invocation, gguf, ctx, threads = sys.argv[1:9]
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
        kind, config, run, wall, status, shown = line.rstrip("\n").split("\t")
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
        runs.append(dict(kind=kind, config=config, wall=int(wall), status=int(status),
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
        calls=len(calls),
        wasted=wasted,
        tin=sum(r.get("prompt_tokens", 0) for r in measured),
        tout=sum(r.get("completion_tokens", 0) for r in measured),
        med=percentile(first, 50),
        p90=percentile(first, 90),
        shared=sum(r.get("first_request_shared_chars", 0) for r in measured),
        firsts=sum(r.get("first_request_chars", 0) for r in measured),
    )


def wasted_words(w):
    n = sum(w.values())
    if n == 0:
        return "0"
    return f"{n} (" + ", ".join(f"{k} {why}" for why, k in sorted(w.items(), key=lambda x: -x[1])) + ")"


out = []
out.append("# Benchmarks: a real small model on the easy set\n")
out.append(
    "What `scripts/proving_ground.sh` measured: `codeloop bench` on the 30 easy problems of "
    "`assets/easy/problems.jsonl` (their tests hidden from the model), answered by "
    f"SmolLM2-135M-Instruct (`{os.path.basename(gguf)}`) on llama.cpp's `llama-server` and on "
    "llama-cpp-python's server, as `scripts/real_servers.sh` installs them: loopback, one slot, "
    f"a {ctx}-token context, {threads} threads, one problem at a time. Figures are over the problems "
    "measured (a problem whose model call failed is an error, left out). Wasted calls are calls whose "
    "reply was not used (stopped for looping, cut, failed, unusable or refused); time to first token "
    "is from the request to its first streamed piece, over every call that streamed (median and p90 by "
    "the nearest rank); the prefix across problems is, of each problem's first request, the longest "
    "prefix it shares with an earlier problem's first request (characters).\n"
)
out.append(f"- Date: {started} (UTC)")
out.append(f"- Machine: {cores} cores ({cpu}), {platform.system()} {platform.release()}")
out.append(f"- Commit: `{commit}`")
out.append(f"- Command: `{invocation}`")
total = sum(r["wall"] for r in runs)
out.append(f"- Wall time: {total // 60} min {total % 60} s in all\n")
out.append("| server | configuration | first try | after repair | fresh starts | calls | wasted | tokens in | tokens out | first token, median | p90 | prefix across problems | wall time |")
out.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for r in runs:
    f = figures(r["results"])
    out.append(
        f"| {r['kind']} | {r['config']} | {rate(f['first'], f['measured'])} | {rate(f['final'], f['measured'])} "
        f"| {f['fresh']} | {f['calls']} | {sum(f['wasted'].values())} | {f['tin']} | {f['tout']} "
        f"| {secs(f['med'])} | {secs(f['p90'])} | {share(f['shared'], f['firsts'])} | {r['wall'] // 60} min {r['wall'] % 60} s |"
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
        ("model calls", f["calls"]),
        ("wasted calls", wasted_words(f["wasted"])),
        ("tokens in", f["tin"]),
        ("tokens out", f["tout"]),
        ("time to first token, median", secs(f["med"])),
        ("time to first token, p90", secs(f["p90"])),
        ("prompt prefix across problems", share(f["shared"], f["firsts"])),
    ]:
        out.append(f"| {k} | {v} |")
    out.append("")
    out.append("Per problem:\n")
    out.append("| problem | outcome | passed at version | versions | fresh starts | calls | wasted | tokens in | tokens out | first token, median | p90 | first prompt shared |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for p in r["results"]:
        out.append(
            f"| {p['task_id']} | {p['status']} | {p.get('passed_at') or '-'} | {p.get('iterations', 0)} "
            f"| {p.get('fresh_starts', 0)} | {len(p.get('per_call', []))} | {p.get('wasted_calls', 0)} "
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
