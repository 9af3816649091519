#!/usr/bin/env bash
# mcp-mrtr-proxy against nginx, side by side in one run: what a plain reverse proxy costs per
# call on this machine, and what ours costs. In front of the TypeScript SDK 1.32.2, Python
# FastMCP (mcp 1.30.0) and rmcp 2.2 legacy conformance servers (Streamable HTTP, `echo`):
#   direct  wrk → legacy server, the legacy wire on one session (opened with curl)
#   nginx   wrk → nginx 1.22 (Debian package; one worker, upstream keep-alive,
#           `proxy_buffering off`) → legacy server, the same session
#   hyper   wrk → the plainest tokio + hyper reverse proxy (proxy/examples/hyper_reverse_proxy.rs:
#           the proxy's runtime and allocator, no MCP work) → legacy server, the same session: the
#           floor of the stack the proxy is built on (HYPER=0 leaves it out)
#   proxy   wrk → mcp-mrtr-proxy (defaults, `--upstream`) → legacy server, the 2026-07-28 wire
# wrk (2 threads) runs bench/wrk/*.lua, which check every answer. Each repetition runs every
# variant at each connection count, the order rotating from one repetition to the next; the
# table keeps the best of the repetitions (highest calls/s; lowest CPU per call). CPU per call:
# utime+stime deltas of /proc/PID/stat (every nginx process; the proxy; the legacy server)
# over the run, divided by the checked answers; wake-ups per call: the deltas of the context
# switches (voluntary + involuntary) summed over the process's threads. Then, per front, a short
# separate run under `strace -c -f` (attached to every thread) for syscalls per call; and the
# proxy's CPU per pause/resume round (`test_input_required_result_elicitation`, bench/wrk/front_input_round.lua) against its
# pass-through CPU per call. The foreign load (busy cores of the machine minus ours, wrk
# included) of every run is recorded beside it: the machine is shared.
#
# Usage: bash bench/proxy_vs_nginx.sh
# Environment: REPS (3), DURATION (10: seconds per run), WARMUP (2: seconds of unmeasured load
#   before each run), CONNECTIONS ("16 64"), SDKS ("typescript python rmcp"), STRACE (1; 0: skip
#   the syscall runs), STRACE_DURATION (4), ROUNDS (1; 0: skip the pause/resume runs),
#   PROXY_BIN (target/release/mcp-mrtr-proxy, built unless NO_BUILD=1; with it the `hyper`
#   variant's target/release/examples/hyper_reverse_proxy, HYPER_BIN), PGO (1: also the
#   profile-guided build of packaging/proxy/build-pgo.sh, target/pgo/mcp-mrtr-proxy, as the
#   variant `pgo`, measured first), HYPER (1), PROXY_ARGS (extra flags
#   for the proxy), PROXY_VARIANTS ("pgo=target/pgo/mcp-mrtr-proxy proxy=$PROXY_BIN", or
#   "proxy=$PROXY_BIN" with PGO=0: space-separated LABEL=BINARY pairs, each
#   a proxy of its own measured as one more interleaved variant, e.g. two builds to weigh a
#   change: "proxy=/tmp/new base=/tmp/old"; the pause/resume and ratio rows use the first), NET (quickack: a private network namespace,
#   `unshare -n`, root only, whose loopback routes ACK at once, so the 40 ms delayed-ACK stalls
#   of the legacy servers' SSE responses do not hide the CPU cost, as in bench/sdk_backends.sh;
#   host: the machine's loopback), OUT (bench/work/nginx: raw.jsonl, results.md, logs/).
# Needs root or sudo for apt-get (nginx, wrk, strace installed when missing), cargo, node >= 18
# and npm, python3 with venv. The legacy servers' installs are the tests' own (target/
# sdk-servers-node, target/legacy-sse-venv; built here the same way when missing).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
OUT=${OUT:-bench/work/nginx}
LOGS=$OUT/logs
REPS=${REPS:-3}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
CONNECTIONS=${CONNECTIONS:-"16 64"}
SDKS=${SDKS:-"typescript python rmcp"}
STRACE=${STRACE:-1}
STRACE_DURATION=${STRACE_DURATION:-4}
ROUNDS=${ROUNDS:-1}
TARGET=${CARGO_TARGET_DIR:-target}
PROXY_BIN=${PROXY_BIN:-$TARGET/release/mcp-mrtr-proxy}
PROXY_ARGS=${PROXY_ARGS:-}
PGO=${PGO:-1}
if [ "$PGO" = 1 ]; then
    PROXY_VARIANTS=${PROXY_VARIANTS:-"pgo=$TARGET/pgo/mcp-mrtr-proxy proxy=$PROXY_BIN"}
else
    PROXY_VARIANTS=${PROXY_VARIANTS:-"proxy=$PROXY_BIN"}
fi
HYPER=${HYPER:-1}
PROXY_LABELS=()
for pair in $PROXY_VARIANTS; do PROXY_LABELS+=("${pair%%=*}"); done
NET=${NET:-quickack}
HYPER_BIN=${HYPER_BIN:-$TARGET/release/examples/hyper_reverse_proxy}
LEGACY_VERSION=2025-06-18
mkdir -p "$LOGS"
source bench/lib.sh # check_quickack, quickack_loopback, start_listening, wait_healthy, open_legacy_session

# ----- installs and the build, on the machine's network -----------------------------------------
if [ -z "${PVN_INNER:-}" ]; then
    missing=()
    command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
    command -v wrk >/dev/null || missing+=(wrk)
    [ "$STRACE" = 1 ] && ! command -v strace >/dev/null && missing+=(strace)
    if [ ${#missing[@]} -gt 0 ]; then
        sudo=()
        [ "$(id -u)" -ne 0 ] && sudo=(sudo)
        "${sudo[@]}" apt-get update -qq
        DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >&2
    fi
    if [ "${NO_BUILD:-0}" != 1 ]; then
        cargo build --release -p mcp-mrtr-proxy -p mcp-legacy-conformance-server >&2
        [ "$HYPER" = 1 ] && cargo build --release -p mcp-mrtr-proxy --example hyper_reverse_proxy >&2
        [ "$PGO" = 1 ] && bash packaging/proxy/build-pgo.sh >/dev/null
    fi
    node_dir=$TARGET/sdk-servers-node
    [[ " $SDKS " == *" typescript "* ]] && ensure_node_sdk "$node_dir"
    venv=$TARGET/legacy-sse-venv
    if [[ " $SDKS " == *" python "* ]] && ! "$venv/bin/python" -c 'import mcp' 2>/dev/null; then
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q --disable-pip-version-check -r tests/legacy-sse-server/requirements.txt
    fi
    if [ "$NET" = quickack ]; then
        check_quickack
        exec unshare -n env PVN_INNER=1 bash "$0"
    fi
fi
[ "$NET" = quickack ] && quickack_loopback
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
cp tests/sdk-servers/typescript/conformance-server.mjs "$TARGET/sdk-servers-node/" 2>/dev/null || true

PIDS=()
cleanup() {
    local pid
    for pid in "${PIDS[@]:-}"; do [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true; done
    sleep 0.5
    for pid in "${PIDS[@]:-}"; do [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM
section() { printf '\n== %s\n' "$*" >&2; }
START_TRIES=300

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# CPU ticks of the processes given, summed: "user system".
cpu_ticks() {
    local pid
    for pid in "$@"; do sed 's/^.*) //' "/proc/$pid/stat"; done \
        | awk '{ user += $12; kernel += $13 } END { print user + 0, kernel + 0 }'
}
# Context switches (voluntary + involuntary) of every thread of the processes given.
switches() {
    local pid
    for pid in "$@"; do cat /proc/"$pid"/task/*/status 2>/dev/null; done \
        | awk '/^(voluntary|nonvoluntary)_ctxt_switches/ { n += $2 } END { print n + 0 }'
}
# Busy jiffies of the whole machine (/proc/stat; idle and iowait excluded).
machine_busy() { head -1 /proc/stat | awk '{ print $2 + $3 + $4 + $7 + $8 + $9 }'; }
HZ=$(getconf CLK_TCK)

# ----- servers ----------------------------------------------------------------------------------
declare -A LEGACY_URL LEGACY_PID SESSION NGINX_URL NGINX_PIDS HYPER_URL HYPER_PID PROXY_URL PROXY_PID # PROXY_*: by SDK/label
start_nginx() { # SDK UPSTREAM_HOSTPORT
    local sdk=$1 upstream=$2 dir port
    dir=$(realpath -m "$OUT/nginx-$1")
    port=$(free_port)
    mkdir -p "$dir"
    nginx_conf "$dir" "$upstream" "$port" >"$dir/nginx.conf"
    "$NGINX" -p "$dir" -c "$dir/nginx.conf" >"$LOGS/nginx-$sdk.out" 2>"$LOGS/nginx-$sdk.err" &
    local master=$!
    PIDS+=("$master")
    for _ in $(seq 100); do
        curl -s -o /dev/null "http://127.0.0.1:$port/" && break
        sleep 0.1
    done
    NGINX_URL[$sdk]=http://127.0.0.1:$port/mcp
    NGINX_PIDS[$sdk]="$master $(cat "/proc/$master/task/$master/children")"
}

for sdk in $SDKS; do
    case $sdk in
        typescript) start_listening "legacy-$sdk" node "$TARGET/sdk-servers-node/conformance-server.mjs" --transport http --listen 127.0.0.1:0 ;;
        python) start_listening "legacy-$sdk" "$TARGET/legacy-sse-venv/bin/python" tests/sdk-servers/python/conformance_server.py --transport http --listen 127.0.0.1:0 ;;
        rmcp) start_listening "legacy-$sdk" "$TARGET/release/mcp-legacy-conformance-server" --transport http --listen 127.0.0.1:0 ;;
        *) echo "error: unknown SDK $sdk (typescript, python, rmcp)" >&2; exit 2 ;;
    esac
    LEGACY_URL[$sdk]=$STARTED_URL
    LEGACY_PID[$sdk]=$STARTED_PID
    SESSION[$sdk]=$(open_legacy_session "$STARTED_URL" proxy_vs_nginx)
    hostport=${STARTED_URL#http://}
    start_nginx "$sdk" "${hostport%%/*}"
    echo "$sdk: legacy ${LEGACY_URL[$sdk]} (pid ${LEGACY_PID[$sdk]}), nginx ${NGINX_URL[$sdk]} (pids ${NGINX_PIDS[$sdk]})" >&2
    if [ "$HYPER" = 1 ]; then
        start_listening "hyper-$sdk" "$HYPER_BIN" "${hostport%%/*}"
        HYPER_URL[$sdk]=$STARTED_URL
        HYPER_PID[$sdk]=$STARTED_PID
        echo "$sdk: hyper $STARTED_URL (pid $STARTED_PID)" >&2
    fi
    for pair in $PROXY_VARIANTS; do
        label=${pair%%=*}
        rm -rf "$OUT/store-$sdk-$label"
        # shellcheck disable=SC2086 # PROXY_ARGS is a list of flags
        start_listening "$label-$sdk" "${pair#*=}" --listen 127.0.0.1:0 --store "$OUT/store-$sdk-$label" \
            --upstream "${LEGACY_URL[$sdk]}" $PROXY_ARGS
        PROXY_URL[$sdk/$label]=$STARTED_URL
        PROXY_PID[$sdk/$label]=$STARTED_PID
        wait_healthy "$STARTED_URL"
        echo "$sdk: $label (${pair#*=}) $STARTED_URL (pid $STARTED_PID)" >&2
    done
done

RAW=$OUT/raw.jsonl
: >"$RAW"
export WRK_LUA_DIR=$ROOT/bench/wrk MCP_LEGACY_VERSION=$LEGACY_VERSION

# wrk against VARIANT's URL for SECONDS with CONNECTIONS; sets WRK_RESULT (its JSON line) and
# WRK_CPU (the wrk process's CPU seconds).
wrk_run() {
    local sdk=$1 variant=$2 connections=$3 seconds=$4 url script out
    case $variant in
        direct) url=${LEGACY_URL[$sdk]}; script=legacy_echo.lua ;;
        nginx) url=${NGINX_URL[$sdk]}; script=legacy_echo.lua ;;
        hyper) url=${HYPER_URL[$sdk]}; script=legacy_echo.lua ;;
        rounds) url=${PROXY_URL[$sdk/${PROXY_LABELS[0]}]}; script=front_input_round.lua ;;
        *) url=${PROXY_URL[$sdk/$variant]}; script=front_echo.lua ;;
    esac
    out=$(MCP_SESSION_ID=${SESSION[$sdk]} bash -c 'wrk "$@"; times' wrk -t 2 -c "$connections" \
        -d "${seconds}s" --timeout 10s -s "bench/wrk/$script" "$url" 2>>"$LOGS/wrk.err")
    echo "$out" >>"$LOGS/wrk.out"
    WRK_RESULT=$(echo "$out" | sed -n 's/^RESULT //p')
    # `times`: the second line is the children's user and system time, e.g. "0m1.234s 0m0.5s".
    WRK_CPU=$(echo "$out" | tail -1 | awk '{ n = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); n += a[1] * 60 + a[2] } print n }')
    [ -n "$WRK_RESULT" ] || { echo "error: wrk printed no result; see $LOGS/wrk.*" >&2; exit 1; }
}

# One measured run (after WARMUP seconds of the same load): appends a JSON line to $RAW.
measure() {
    local sdk=$1 variant=$2 connections=$3 rep=$4 front_pids=() t0 t1
    case $variant in
        nginx) read -ra front_pids <<<"${NGINX_PIDS[$sdk]}" ;;
        hyper) front_pids=("${HYPER_PID[$sdk]}") ;;
        rounds) front_pids=("${PROXY_PID[$sdk/${PROXY_LABELS[0]}]}") ;;
        direct) ;;
        *) front_pids=("${PROXY_PID[$sdk/$variant]}") ;;
    esac
    [ "$WARMUP" -gt 0 ] && wrk_run "$sdk" "$variant" "$connections" "$WARMUP"
    local legacy=${LEGACY_PID[$sdk]} f0="0 0" f1="0 0" s0=0 s1=0 l0 l1 m0 m1 load
    load=$(cut -d' ' -f1 /proc/loadavg)
    [ ${#front_pids[@]} -gt 0 ] && { f0=$(cpu_ticks "${front_pids[@]}"); s0=$(switches "${front_pids[@]}"); }
    l0=$(cpu_ticks "$legacy")
    m0=$(machine_busy)
    t0=$(date +%s.%N)
    wrk_run "$sdk" "$variant" "$connections" "$DURATION"
    t1=$(date +%s.%N)
    m1=$(machine_busy)
    l1=$(cpu_ticks "$legacy")
    [ ${#front_pids[@]} -gt 0 ] && { f1=$(cpu_ticks "${front_pids[@]}"); s1=$(switches "${front_pids[@]}"); }
    python3 - "$WRK_RESULT" "$sdk" "$variant" "$connections" "$rep" "$HZ" "$f0" "$f1" \
        "$((s1 - s0))" "$l0" "$l1" "$((m1 - m0))" "$t0" "$t1" "$WRK_CPU" "$load" <<'EOF' | tee -a "$RAW" >&2
import json, sys
(result, sdk, variant, connections, rep, hz, f0, f1, switches, l0, l1, machine, t0, t1, wrk_cpu,
 load) = sys.argv[1:]
r = json.loads(result)
hz = int(hz)
wall = float(t1) - float(t0)
calls = max(r["calls_ok"], 1)
(fu0, fs0), (fu1, fs1) = (map(int, f.split()) for f in (f0, f1))
front_user_s, front_sys_s = (fu1 - fu0) / hz, (fs1 - fs0) / hz
front_s = front_user_s + front_sys_s
legacy_s = (sum(map(int, l1.split())) - sum(map(int, l0.split()))) / hz
machine_s = int(machine) / hz
r.update(sdk=sdk, variant=variant, connections=int(connections), rep=int(rep),
         calls_per_s=r["calls_ok"] / (r["duration_us"] / 1e6),
         front_cpu_us=front_s / calls * 1e6 if variant != "direct" else None,
         front_user_us=front_user_s / calls * 1e6 if variant != "direct" else None,
         front_sys_us=front_sys_s / calls * 1e6 if variant != "direct" else None,
         front_switches=int(switches) / calls if variant != "direct" else None,
         legacy_cpu_us=legacy_s / calls * 1e6, wrk_cpu_us=float(wrk_cpu) / calls * 1e6,
         foreign_cores=max(machine_s - front_s - legacy_s - float(wrk_cpu), 0) / wall,
         loadavg=float(load))
print(json.dumps(r))
EOF
}

# ----- interleaved runs -------------------------------------------------------------------------
VARIANTS=(direct nginx "${PROXY_LABELS[@]}")
[ "$HYPER" = 1 ] && VARIANTS=(direct nginx hyper "${PROXY_LABELS[@]}")
for rep in $(seq "$REPS"); do
    for connections in $CONNECTIONS; do
        for sdk in $SDKS; do
            section "rep $rep/$REPS, $connections connections, $sdk (load average $(cut -d' ' -f1-3 /proc/loadavg))"
            # The order rotates with the repetition: each variant leads once in every n.
            n=${#VARIANTS[@]}
            for i in $(seq 0 $((n - 1))); do
                measure "$sdk" "${VARIANTS[$(((i + rep) % n))]}" "$connections" "$rep"
            done
        done
    done
done

# ----- pause/resume rounds through the proxy, beside its pass-through -------------------------
if [ "$ROUNDS" = 1 ]; then
    for sdk in $SDKS; do
        for connections in $CONNECTIONS; do
            section "pause/resume rounds, $connections connections, $sdk"
            measure "$sdk" "${PROXY_LABELS[0]}" "$connections" 0
            measure "$sdk" rounds "$connections" 0
        done
    done
fi

# ----- syscalls per call: short runs under strace -c -f ---------------------------------------
if [ "$STRACE" = 1 ]; then
    for sdk in $SDKS; do
        for variant in "${VARIANTS[@]:1}"; do
            section "strace -c -f, $variant, 16 connections, $sdk"
            case $variant in
                nginx) read -ra pids <<<"${NGINX_PIDS[$sdk]}" ;;
                hyper) pids=("${HYPER_PID[$sdk]}") ;;
                *) pids=("${PROXY_PID[$sdk/$variant]}") ;;
            esac
            attach=()
            for pid in "${pids[@]}"; do
                for task in /proc/"$pid"/task/*; do attach+=(-p "${task##*/}"); done
            done
            trace=$LOGS/strace-$variant-$sdk.txt
            strace -c -f -o "$trace" "${attach[@]}" 2>>"$LOGS/strace.err" &
            tracer=$!
            PIDS+=("$tracer")
            sleep 1
            wrk_run "$sdk" "$variant" 16 "$STRACE_DURATION"
            kill -INT "$tracer"
            wait "$tracer" || true
            python3 - "$WRK_RESULT" "$trace" "$sdk" "$variant" <<'EOF' | tee -a "$RAW" >&2
import json, re, sys
result, trace, sdk, variant = sys.argv[1:]
calls = max(json.loads(result)["calls_ok"], 1)
per = {}
for line in open(trace):
    f = line.split()
    if len(f) >= 5 and re.match(r"^[\d.]+$", f[0]) and f[3].isdigit():
        per[f[-1]] = int(f[3])
total = per.pop("total", sum(per.values()))
top = sorted(per.items(), key=lambda kv: -kv[1])[:8]
print(json.dumps(dict(sdk=sdk, variant=variant, strace=True, calls_ok=calls,
                      syscalls_per_call=total / calls,
                      top={k: round(v / calls, 2) for k, v in top})))
EOF
        done
    done
fi

section "summary"
python3 bench/proxy_vs_nginx_report.py "$RAW" "$OUT/results.md" "${PROXY_LABELS[0]}" \
    "$(date -u '+%Y-%m-%d %H:%M UTC'); REPS=$REPS DURATION=${DURATION}s WARMUP=${WARMUP}s NET=$NET; proxy variants: $PROXY_VARIANTS (tree at $(git rev-parse --short HEAD))$( [ -n "$PROXY_ARGS" ] && echo " with $PROXY_ARGS"); $(nproc) cores; legacy servers: TypeScript SDK 1.32.2, mcp 1.30.0, rmcp 2.2"
cat "$OUT/results.md"
