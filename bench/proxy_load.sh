#!/usr/bin/env bash
# Load benchmark of mcp-mrtr-proxy against the legacy fixture server it fronts: pass-through
# `tools/call` throughput and latency, direct versus through the proxy, and the cost of one MRTR
# pause/resume round (`ask_name`). See bench/PROXY.md for what is measured and the results.
#
# Usage: bash bench/proxy_load.sh [--net host|quickack|both] [--profile]
#   --net host      the machine's loopback as it is (Linux delayed ACKs on)
#   --net quickack  a private network namespace (`unshare -n`, root only) whose loopback routes
#                   have `quickack 1` (no delayed ACKs): removes the 40 ms Nagle/delayed-ACK
#                   stalls of the legacy server's SSE responses, leaving CPU as the limit
#   --net both      (default) quickack, then host
#   --profile       also record the proxy with `perf record -g` during one extra proxy run
#                   (per network setting) and print where its CPU time goes
# Environment: REPS (3), DURATION (10s), WARMUP (2s), CONNECTIONS (16), C1_DURATION (5s),
#   POOL_SIZE (16: the proxy's --pool-size; another value writes *-pool<N> result files),
#   QUIET_MAX (300: the longest wait, in seconds, for other work on the machine to stop before a run),
#   NO_BUILD (1: skip the build and use the binaries already copied to bench/work/bin).
#
# Per network setting: one legacy HTTP server; two proxies in front of it (default settings, and
# `--batch-window 0ms`); REPS interleaved repetitions of
#   direct, proxy, mrtr, direct-elicit, mrtr-bw0          (CONNECTIONS connections, DURATION)
#   direct-c1, proxy-c1, direct-elicit-c1, mrtr-bw0-c1    (1 connection, C1_DURATION)
# then, once, the stdio backend (proxy spawning the fixture server over stdio): proxy and mrtr
# with default settings, mrtr with --batch-window 0ms.
# Runtime with the defaults: about 6 minutes per network setting, plus any waits for a quiet machine.
#
# Writes only under bench/work/: bin/ (copies of the binaries), proxy_raw_<net>.jsonl,
# proxy_results.json, proxy_results.md, proxy_load.log, proxy-logs/, proxy-store-*/, proxy-perf.*.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
WORK=bench/work
REPS=${REPS:-3}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
CONNECTIONS=${CONNECTIONS:-16}
C1_DURATION=${C1_DURATION:-5s}
POOL_SIZE=${POOL_SIZE:-16}
QUIET_MAX=${QUIET_MAX:-300}
BIN=$WORK/bin
LOGS=$WORK/proxy-logs
# Results of another pool size do not overwrite those of the default one.
SUFFIX=
[ "$POOL_SIZE" = 16 ] || SUFFIX=-pool$POOL_SIZE

NET=both
PROFILE=0
INNER=
while [ $# -gt 0 ]; do
    case $1 in
        --net) NET=${2:?--net needs a value}; shift ;;
        --profile) PROFILE=1 ;;
        --inner) INNER=${2:?}; shift ;; # internal: already inside the network namespace
        *) echo "usage: bash bench/proxy_load.sh [--net host|quickack|both] [--profile]" >&2; exit 2 ;;
    esac
    shift
done
case $NET in host|quickack|both) ;; *) echo "error: --net host|quickack|both" >&2; exit 2 ;; esac

section() { printf '\n== %s\n' "$*"; }

# ----- processes we start, stopped on exit ------------------------------------------------------
PIDS=()
cleanup() {
    local pid
    for pid in "${PIDS[@]:-}"; do
        [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in "${PIDS[@]:-}"; do
        [ -n "$pid" ] || continue
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.2
        done
        kill -KILL "$pid" 2>/dev/null || true
    done
    PIDS=()
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start_listening, wait_healthy
source bench/lib.sh

stop() {
    local pid=$1 left=() p
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 25); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    for p in "${PIDS[@]}"; do [ "$p" = "$pid" ] || left+=("$p"); done
    PIDS=("${left[@]:-}")
}

# proxy_load with --cpu-pid for every process of interest; appends one tagged JSON line to $RAW.
# Usage: measure LABEL REP MODE URL CONNS DURATION CPU_ARGS...
measure() {
    local label=$1 rep=$2 mode=$3 url=$4 conns=$5 duration=$6
    shift 6
    local line errors=$LOGS/proxy_load.last.err
    wait_quiet
    line=$("$BIN/proxy_load" --mode "$mode" --url "$url" --connections "$conns" \
        --duration "$duration" --warmup "$WARMUP" "$@" 2>"$errors")
    if [ -s "$errors" ]; then
        sed "s/^/  [$label] /" "$errors" | cut -c1-400 >&2
        cat "$errors" >>"$LOGS/proxy_load.err"
    fi
    python3 -c '
import json, sys
record = json.loads(sys.argv[1])
record.update(net=sys.argv[2], label=sys.argv[3], rep=int(sys.argv[4]))
print(json.dumps(record))
L = record["latency_us"]
print("  %-18s rep %d: %9.1f ops/s  p50 %6d us  p99 %6d us  errors %d" % (record["label"],
      record["rep"], record["ops_per_s"], L["p50"], L["p99"], record["errors"]), file=sys.stderr)
' "$line" "$NET_NAME" "$label" "$rep" >>"$RAW"
}

children_cpu_args() { # --cpu-pid legacy=PID for every child of $1 (stdio lanes)
    local child
    for child in $(pgrep -P "$1" || true); do printf -- '--cpu-pid legacy=%s ' "$child"; done
}

run_profile() { # perf record -g of the proxy during one extra proxy (echo) run
    local proxy_pid=$1 url=$2 cpu=$3
    if ! command -v perf >/dev/null; then
        echo "perf is not installed (apt-get install -y linux-perf): no profile" >&2
        return 0
    fi
    local data=$WORK/proxy-perf.$NET_NAME.data
    section "[$NET_NAME] profile: perf record -g on the proxy during a proxy run"
    wait_quiet
    # shellcheck disable=SC2086
    "$BIN/proxy_load" --mode proxy --url "$url" --connections "$CONNECTIONS" --duration 8s \
        --warmup 1s $cpu >"$WORK/proxy-perf.$NET_NAME.load.json" 2>>"$LOGS/proxy_load.err" &
    local load=$!
    sleep 2
    perf record -F 999 -g --call-graph dwarf,16384 -p "$proxy_pid" -o "$data" -- sleep 5 \
        >/dev/null 2>"$WORK/proxy-perf.$NET_NAME.record.log" || true
    wait "$load" || true
    perf report -i "$data" --no-children --sort sym --stdio -g none 2>/dev/null \
        >"$WORK/proxy-perf.$NET_NAME.self.txt" || true
    python3 - "$WORK/proxy-perf.$NET_NAME.self.txt" <<'EOF'
import re, sys
buckets = [
    ("kernel: TCP/IP, syscalls, scheduler", r"^\[k\]"),
    ("allocator (malloc/free)", r"malloc|_int_free|cfree|realloc|unlink_chunk|_int_realloc|__libc_calloc"),
    ("memcpy/memcmp", r"mem(move|cpy|cmp|set)"),
    ("hyper / httparse / http", r"hyper|httparse|\bhttp::"),
    ("serde_json", r"serde_json|serde_core|serde::"),
    ("tracing / tracing_subscriber", r"tracing"),
    ("tokio runtime", r"tokio"),
    ("sled / crypto / hashing", r"sled|sha2|chacha|poly1305|blake|getrandom|rand"),
    ("mcp_mrtr_proxy", r"mcp_mrtr_proxy"),
    ("std/core/alloc collections", r"alloc::|core::|std::|btree|hashbrown"),
    ("bytes", r"bytes::"),
]
totals = {name: 0.0 for name, _ in buckets}
totals["other"] = 0.0
top = []
for line in open(sys.argv[1]):
    m = re.match(r"\s*([\d.]+)%\s+(\[[k.]\])\s+(.*)", line)
    if not m:
        continue
    pct, kind, sym = float(m.group(1)), m.group(2), m.group(3).strip()
    text = f"{kind} {sym}"
    top.append((pct, text))
    for name, pattern in buckets:
        if re.search(pattern, text):
            totals[name] += pct
            break
    else:
        totals["other"] += pct
print("self time of the proxy process, by component (% of its samples):")
for name, pct in sorted(totals.items(), key=lambda kv: -kv[1]):
    print(f"  {pct:6.1f}%  {name}")
print("top self symbols:")
for pct, text in sorted(top, reverse=True)[:15]:
    print(f"  {pct:6.2f}%  {text[:110]}")
EOF
    echo "(full report: perf report -i $data)"
}

# Everything for one network setting; results go to $RAW.
run_net() {
    NET_NAME=$1
    RAW=$WORK/proxy_raw_$NET_NAME$SUFFIX.jsonl
    : >"$RAW"
    section "[$NET_NAME] legacy HTTP server and proxies (--pool-size $POOL_SIZE)"
    start_listening "legacy-$NET_NAME" "$BIN/mcp-legacy-fixture-server" --transport http --listen 127.0.0.1:0
    local legacy=$STARTED_PID legacy_url=$STARTED_URL
    rm -rf "$WORK/proxy-store-$NET_NAME" "$WORK/proxy-store-$NET_NAME-bw0"
    start_listening "proxy-$NET_NAME" "$BIN/mcp-mrtr-proxy" --listen 127.0.0.1:0 \
        --store "$WORK/proxy-store-$NET_NAME" --upstream "$legacy_url" --pool-size "$POOL_SIZE"
    local proxy=$STARTED_PID proxy_url=$STARTED_URL
    start_listening "proxy-$NET_NAME-bw0" "$BIN/mcp-mrtr-proxy" --listen 127.0.0.1:0 \
        --store "$WORK/proxy-store-$NET_NAME-bw0" --upstream "$legacy_url" --pool-size "$POOL_SIZE" \
        --batch-window 0ms
    local proxy0=$STARTED_PID proxy0_url=$STARTED_URL
    wait_healthy "$proxy_url"
    wait_healthy "$proxy0_url"
    echo "legacy $legacy_url (pid $legacy), proxy $proxy_url (pid $proxy), proxy --batch-window 0ms $proxy0_url (pid $proxy0)"
    local cpu_d="--cpu-pid legacy=$legacy"
    local cpu_p="--cpu-pid legacy=$legacy --cpu-pid proxy=$proxy"
    local cpu_p0="--cpu-pid legacy=$legacy --cpu-pid proxy=$proxy0"
    local c=$CONNECTIONS d=$DURATION d1=$C1_DURATION rep
    for rep in $(seq "$REPS"); do
        section "[$NET_NAME] repetition $rep/$REPS"
        # shellcheck disable=SC2086
        {
            measure direct "$rep" direct "$legacy_url" "$c" "$d" $cpu_d
            measure proxy "$rep" proxy "$proxy_url" "$c" "$d" $cpu_p
            measure mrtr "$rep" mrtr "$proxy_url" "$c" "$d" $cpu_p
            measure direct-elicit "$rep" direct-elicit "$legacy_url" "$c" "$d" $cpu_d
            measure mrtr-bw0 "$rep" mrtr "$proxy0_url" "$c" "$d" $cpu_p0
            measure direct-c1 "$rep" direct "$legacy_url" 1 "$d1" $cpu_d
            measure proxy-c1 "$rep" proxy "$proxy_url" 1 "$d1" $cpu_p
            measure direct-elicit-c1 "$rep" direct-elicit "$legacy_url" 1 "$d1" $cpu_d
            measure mrtr-bw0-c1 "$rep" mrtr "$proxy0_url" 1 "$d1" $cpu_p0
        }
    done
    if [ "$PROFILE" = 1 ]; then run_profile "$proxy" "$proxy_url" "$cpu_p"; fi
    stop "$proxy"
    stop "$proxy0"
    stop "$legacy"

    section "[$NET_NAME] stdio backend (once): proxy --pool-size $POOL_SIZE -- mcp-legacy-fixture-server --transport stdio"
    local window
    for window in 25ms 0ms; do
        rm -rf "$WORK/proxy-store-$NET_NAME-stdio"
        start_listening "proxy-$NET_NAME-stdio-$window" "$BIN/mcp-mrtr-proxy" --listen 127.0.0.1:0 \
            --store "$WORK/proxy-store-$NET_NAME-stdio" --pool-size "$POOL_SIZE" --batch-window "$window" \
            -- "$BIN/mcp-legacy-fixture-server" --transport stdio
        local sp=$STARTED_PID surl=$STARTED_URL
        wait_healthy "$surl"
        # Start every lane (child process) first, so that their CPU time can be sampled.
        "$BIN/proxy_load" --mode mrtr --url "$surl" --connections "$c" --duration 1s --warmup 0s \
            >/dev/null 2>>"$LOGS/proxy_load.err"
        local cpu_s
        cpu_s="--cpu-pid proxy=$sp $(children_cpu_args "$sp")"
        echo "proxy pid $sp, $(pgrep -P "$sp" | wc -l) legacy child processes, --batch-window $window"
        # shellcheck disable=SC2086
        if [ "$window" = 25ms ]; then
            measure stdio-proxy 1 proxy "$surl" "$c" "$d" $cpu_s
            measure stdio-mrtr 1 mrtr "$surl" "$c" "$d" $cpu_s
        else
            measure stdio-mrtr-bw0 1 mrtr "$surl" "$c" "$d" $cpu_s
        fi
        stop "$sp"
    done
}

# ----- inside the private network namespace -----------------------------------------------------
if [ -n "$INNER" ]; then
    mkdir -p "$LOGS"
    ip link set lo up
    # `quickack 1` on the loopback routes: ACK at once instead of delaying up to 40 ms.
    ip route change local 127.0.0.0/8 dev lo table local proto kernel scope host src 127.0.0.1 quickack 1
    ip route change local 127.0.0.1 dev lo table local proto kernel scope host src 127.0.0.1 quickack 1
    run_net "$INNER"
    exit 0
fi

# ----- build and machine facts ------------------------------------------------------------------
mkdir -p "$WORK" "$LOGS"
exec > >(tee "$WORK/proxy_load.log") 2>&1
: >"$LOGS/proxy_load.err"
command -v python3 >/dev/null || { echo "error: python3 is needed" >&2; exit 1; }
command -v curl >/dev/null || { echo "error: curl is needed" >&2; exit 1; }

if [ "${NO_BUILD:-0}" = 1 ]; then
    section "build skipped (NO_BUILD=1): using the binaries in $BIN"
    for file in mcp-mrtr-proxy mcp-legacy-fixture-server proxy_load; do
        [ -x "$BIN/$file" ] || { echo "error: $BIN/$file is missing" >&2; exit 1; }
    done
else
    section build
    # Two commands: with `--example`, cargo builds only that example, not the other packages'
    # binaries.
    cargo build --release -p mcp-mrtr-proxy -p mcp-legacy-fixture-server
    cargo build --release -p mcp-migrate-tests --example proxy_load
    # Benchmark copies: other builds in this checkout must not swap a binary mid-run.
    TARGET=${CARGO_TARGET_DIR:-target}/release
    mkdir -p "$BIN"
    for file in "$TARGET/mcp-mrtr-proxy" "$TARGET/mcp-legacy-fixture-server" "$TARGET/examples/proxy_load"; do
        cp "$file" "$BIN/.$(basename "$file").new" # then rename: works while an old copy still runs
        mv -f "$BIN/.$(basename "$file").new" "$BIN/$(basename "$file")"
    done
fi

section machine
MACHINE_JSON=$(python3 - <<'EOF'
import json, os, platform, re, subprocess
cpu = "?"
for line in open("/proc/cpuinfo"):
    if line.startswith("model name"):
        cpu = line.split(":", 1)[1].strip()
        break
mem_kb = int(re.search(r"MemTotal:\s+(\d+)", open("/proc/meminfo").read()).group(1))
def out(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()
    except OSError:
        return "?"
commit = out("git", "rev-parse", "--short", "HEAD")
dirty = out("git", "status", "--porcelain", "--", "proxy", "tests/legacy-server", "Cargo.lock")
print(json.dumps({
    "nproc": os.cpu_count(), "cpu": cpu, "mem_gib": round(mem_kb / 1048576, 1),
    "kernel": platform.release(), "rustc": out("rustc", "--version"),
    "commit": commit + (" (proxy/, tests/legacy-server/ or Cargo.lock modified)" if dirty else ""),
    "loadavg_before": open("/proc/loadavg").read().split()[:3],
}))
EOF
)
echo "$MACHINE_JSON"

NETS=()
case $NET in
    host) NETS=(host) ;;
    quickack) NETS=(quickack) ;;
    both) NETS=(quickack host) ;;
esac
for net in "${NETS[@]}"; do
    if [ "$net" = host ]; then
        run_net host
    elif [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null && command -v ip >/dev/null; then
        section "quickack: re-running inside unshare -n"
        args=(--inner quickack)
        [ "$PROFILE" = 1 ] && args+=(--profile)
        unshare -n env REPS="$REPS" DURATION="$DURATION" WARMUP="$WARMUP" CONNECTIONS="$CONNECTIONS" \
            C1_DURATION="$C1_DURATION" POOL_SIZE="$POOL_SIZE" QUIET_MAX="$QUIET_MAX" bash "$0" "${args[@]}" &
        PIDS+=("$!")
        wait "$!"
    else
        echo "skipping quickack: needs root, unshare and ip" >&2
    fi
done

# ----- results ----------------------------------------------------------------------------------
section results
python3 - "$WORK" "$MACHINE_JSON" "$POOL_SIZE" "$REPS" "$DURATION" "$CONNECTIONS" "$SUFFIX" "${NETS[@]}" <<'EOF'
import json, os, statistics, sys
work, machine, pool, reps, duration, conns, suffix = sys.argv[1:8]
nets = sys.argv[8:]
machine = json.loads(machine)
machine["loadavg_after"] = open("/proc/loadavg").read().split()[:3]

def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None

def spread(values):
    values = [v for v in values if v is not None]
    return [min(values), max(values)] if values else None

def summarize(rows):
    """Median and [min, max] over repetitions of the interesting numbers."""
    out = {"reps": len(rows), "errors": sum(r["errors"] for r in rows)}
    def put(name, values):
        out[name] = {"median": med(values), "range": spread(values)}
    put("ops_per_s", [r["ops_per_s"] for r in rows])
    for q in ("p50", "p90", "p99", "max"):
        put(q + "_us", [r["latency_us"][q] for r in rows])
    for phase in ("request1_us", "request2_us", "to_elicitation_us", "to_result_us"):
        if phase in rows[0]:
            for q in ("p50", "p99"):
                put(f"{phase[:-3]}_{q}_us", [r[phase][q] for r in rows])
    put("other_cores", [r.get("cpu", {}).get("other_cores") for r in rows])
    for who in ("proxy", "legacy", "load"):
        if rows[0].get("cpu", {}).get(who):
            put(f"cpu_{who}_us_per_op", [r["cpu"][who]["us_per_op"] for r in rows])
            put(f"cpu_{who}_cores", [r["cpu"][who]["cores"] for r in rows])
    return out

def paired(by_rep, a, b, fn):
    """fn(row_a, row_b) per repetition where both exist: median and range."""
    values = [fn(by_rep[a][rep], by_rep[b][rep]) for rep in by_rep.get(a, {}) if rep in by_rep.get(b, {})]
    return {"median": med(values), "range": spread(values), "per_rep": values}

results = {"machine": machine, "settings": {"pool_size": int(pool), "reps": int(reps),
           "duration": duration, "connections": int(conns)}, "nets": {}}
for net in nets:
    path = os.path.join(work, f"proxy_raw_{net}{suffix}.jsonl")
    if not os.path.exists(path):
        continue
    rows = [json.loads(line) for line in open(path) if line.strip()]
    by_label, by_rep = {}, {}
    for r in rows:
        by_label.setdefault(r["label"], []).append(r)
        by_rep.setdefault(r["label"], {})[r["rep"]] = r
    summary = {label: summarize(rs) for label, rs in by_label.items()}
    tput = lambda p, d: round(p["ops_per_s"] / d["ops_per_s"], 3)
    add = lambda q: (lambda p, d: p["latency_us"][q] - d["latency_us"][q])
    ratios = {
        "throughput_proxy_over_direct": paired(by_rep, "proxy", "direct", tput),
        "p99_added_us": paired(by_rep, "proxy", "direct", add("p99")),
        "p50_added_us": paired(by_rep, "proxy", "direct", add("p50")),
        "c1_p50_added_us": paired(by_rep, "proxy-c1", "direct-c1", add("p50")),
        "c1_p99_added_us": paired(by_rep, "proxy-c1", "direct-c1", add("p99")),
        "round_added_p50_us": paired(by_rep, "mrtr", "direct-elicit", add("p50")),
        "round_bw0_added_p50_us": paired(by_rep, "mrtr-bw0", "direct-elicit", add("p50")),
        "round_bw0_added_p99_us": paired(by_rep, "mrtr-bw0", "direct-elicit", add("p99")),
        "c1_round_bw0_added_p50_us": paired(by_rep, "mrtr-bw0-c1", "direct-elicit-c1", add("p50")),
        "c1_round_bw0_added_p99_us": paired(by_rep, "mrtr-bw0-c1", "direct-elicit-c1", add("p99")),
    }
    results["nets"][net] = {"summary": summary, "ratios": ratios}
json.dump(results, open(os.path.join(work, f"proxy_results{suffix}.json"), "w"), indent=1)

def fmt(cell, unit=""):
    if not cell or cell["median"] is None:
        return "–"
    m, (lo, hi) = cell["median"], cell["range"]
    if isinstance(m, float) and not m.is_integer():
        return f"{m:,.1f}{unit} ({lo:,.1f}–{hi:,.1f})"
    return f"{m:,.0f}{unit} ({lo:,.0f}–{hi:,.0f})"

def fmt2(cell):
    if not cell or cell["median"] is None:
        return "–"
    return f"{cell['median']:.2f} ({cell['range'][0]:.2f}–{cell['range'][1]:.2f})"

lines = []
for net, data in results["nets"].items():
    s, r = data["summary"], data["ratios"]
    lines.append(f"\n### {net}: {conns} connections × {duration} (c1 rows: 1 connection), "
                 f"median (min–max) over {reps} repetitions, --pool-size {pool}\n")
    lines.append("| run | ops/s | p50 µs | p90 µs | p99 µs | max µs | phase p50 / p99 µs | proxy CPU µs/op | legacy CPU µs/op | loadgen CPU µs/op | foreign load (cores) | errors |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for label, c in s.items():
        phases = ""
        for a in ("request1", "request2", "to_elicitation", "to_result"):
            if f"{a}_p50_us" in c:
                phases += f"{a}: {fmt(c[a + '_p50_us'])} / {fmt(c[a + '_p99_us'])}<br>"
        lines.append("| " + " | ".join([label, fmt(c["ops_per_s"]), fmt(c["p50_us"]), fmt(c["p90_us"]),
            fmt(c["p99_us"]), fmt(c["max_us"]), phases.removesuffix("<br>") or "–",
            fmt(c.get("cpu_proxy_us_per_op")), fmt(c.get("cpu_legacy_us_per_op")),
            fmt(c.get("cpu_load_us_per_op")), fmt2(c.get("other_cores")), str(c["errors"])]) + " |")
    def rv(name, unit="", scale=1):
        x = r[name]
        if x["median"] is None:
            return "–"
        return f"{x['median']*scale:,.1f}{unit} (" + ", ".join(f"{v*scale:,.1f}" for v in x["per_rep"]) + ")"
    lines.append("")
    lines.append("| ratio (paired per repetition; median, then each repetition) | value | target |")
    lines.append("|---|---|---|")
    lines.append(f"| proxy / direct throughput | {rv('throughput_proxy_over_direct', '', 100)} % | ≥ 80 % |")
    lines.append(f"| p99 added (proxy p99 − direct p99), {conns} conns | {rv('p99_added_us')} µs | < 1000 µs |")
    lines.append(f"| p50 added, {conns} conns | {rv('p50_added_us')} µs | – |")
    lines.append(f"| p50 / p99 added, 1 conn | {rv('c1_p50_added_us')} / {rv('c1_p99_added_us')} µs | – |")
    lines.append(f"| pause/resume round: mrtr − direct-elicit p50, default 25 ms batch window | {rv('round_added_p50_us')} µs | < 2000 µs |")
    lines.append(f"| pause/resume round, --batch-window 0ms, p50 / p99, {conns} conns | {rv('round_bw0_added_p50_us')} / {rv('round_bw0_added_p99_us')} µs | < 2000 µs |")
    lines.append(f"| pause/resume round, --batch-window 0ms, p50 / p99, 1 conn | {rv('c1_round_bw0_added_p50_us')} / {rv('c1_round_bw0_added_p99_us')} µs | < 2000 µs |")
text = "\n".join(lines) + "\n"
open(os.path.join(work, f"proxy_results{suffix}.md"), "w").write(text)
print(text)
print(f"machine: {json.dumps(machine)}")
print(f"written: {work}/proxy_results{suffix}.json, {work}/proxy_results{suffix}.md")
EOF
