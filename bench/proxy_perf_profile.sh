#!/usr/bin/env bash
# Where a pass-through call's CPU time goes, measured in time rather than counted in
# instructions: each front runs under the same wrk load in front of the TypeScript SDK 1.32.2
# legacy server (Streamable HTTP, `tools/call echo`, every answer checked), and `perf record -e
# cpu-clock` samples it (a software event: it works in virtual machines without hardware
# counters, where `perf stat -e cycles` does not). bench/proxy_perf_report.py then prints, per
# call, the CPU by category (kernel, tokio, hyper, serde_json, the allocator, memcpy, clock reads,
# tracing, the proxy's own code, ...) side by side for the fronts, and each front's functions
# with the most CPU.
#
# Callgrind (bench/proxy_vs_nginx_callgrind.sh) counts instructions; it cannot see what costs
# time without costing instructions: cache misses (a large future moved by `rep movsb` is a few
# instructions), atomic operations and locks, clock reads through the vDSO (valgrind makes them
# system calls). This script sees them.
#
# Usage: bash bench/proxy_perf_profile.sh
# Environment: PROXY_VARIANTS ("proxy=target/release/mcp-mrtr-proxy": space-separated
#   LABEL=BINARY pairs, each a proxy of its own, e.g. two builds side by side), HYPER (1: also
#   the tokio + hyper floor, proxy/examples/hyper_reverse_proxy.rs; HYPER_BIN), CONNECTIONS (16),
#   DURATION (8: seconds sampled per front), REPS (3: rounds, the fronts interleaved, so that
#   the machine's drifts fall on every front alike; the report sums them), FREQ (4000: samples per second), TOP (25), NO_BUILD (0), NET (quickack, as
#   in bench/proxy_vs_nginx.sh; host), OUT (bench/work/perf-profile).
# Needs root (perf on other processes; NET=quickack), perf (apt-get install linux-perf when
# missing), wrk, node >= 18 and npm.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
OUT=${OUT:-bench/work/perf-profile}
LOGS=$OUT/logs
CONNECTIONS=${CONNECTIONS:-16}
DURATION=${DURATION:-8}
REPS=${REPS:-3}
FREQ=${FREQ:-4000}
TOP=${TOP:-25}
HYPER=${HYPER:-1}
NET=${NET:-quickack}
TARGET=${CARGO_TARGET_DIR:-target}
PROXY_VARIANTS=${PROXY_VARIANTS:-"proxy=$TARGET/release/mcp-mrtr-proxy"}
HYPER_BIN=${HYPER_BIN:-$TARGET/release/examples/hyper_reverse_proxy}
LEGACY_VERSION=2025-06-18
mkdir -p "$LOGS"
source bench/lib.sh # check_quickack, quickack_loopback, start_listening, wait_healthy, open_legacy_session

if [ -z "${PPP_INNER:-}" ]; then
    missing=()
    command -v perf >/dev/null || missing+=(linux-perf)
    command -v wrk >/dev/null || missing+=(wrk)
    if [ ${#missing[@]} -gt 0 ]; then
        sudo=()
        [ "$(id -u)" -ne 0 ] && sudo=(sudo)
        "${sudo[@]}" apt-get update -qq
        DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >&2
    fi
    if [ "${NO_BUILD:-0}" != 1 ]; then
        cargo build --release -p mcp-mrtr-proxy >&2
        [ "$HYPER" = 1 ] && cargo build --release -p mcp-mrtr-proxy --example hyper_reverse_proxy >&2
    fi
    node_dir=$TARGET/sdk-servers-node
    ensure_node_sdk "$node_dir"
    cp tests/sdk-servers/typescript/conformance-server.mjs "$node_dir/"
    if [ "$NET" = quickack ]; then
        check_quickack
        exec unshare -n env PPP_INNER=1 bash "$0"
    fi
fi
[ "$NET" = quickack ] && quickack_loopback

PIDS=()
trap stop_started EXIT
trap 'exit 130' INT TERM
START_TRIES=300

start_listening legacy node "$TARGET/sdk-servers-node/conformance-server.mjs" --transport http --listen 127.0.0.1:0
legacy_url=$STARTED_URL
hostport=${legacy_url#http://}
hostport=${hostport%%/*}
# The floor forwards the legacy wire: it needs a legacy session.
session=$(open_legacy_session "$legacy_url" proxy_perf_profile)
export WRK_LUA_DIR=$ROOT/bench/wrk MCP_LEGACY_VERSION=$LEGACY_VERSION MCP_SESSION_ID=$session

declare -A PID URL SCRIPT
LABELS=()
for pair in $PROXY_VARIANTS; do
    label=${pair%%=*}
    rm -rf "$OUT/store-$label"
    start_listening "$label" "${pair#*=}" --listen 127.0.0.1:0 --store "$OUT/store-$label" --upstream "$legacy_url"
    wait_healthy "$STARTED_URL"
    PID[$label]=$STARTED_PID URL[$label]=$STARTED_URL SCRIPT[$label]=front_echo.lua
    LABELS+=("$label")
done
if [ "$HYPER" = 1 ]; then
    start_listening hyper "$HYPER_BIN" "$hostport"
    PID[hyper]=$STARTED_PID URL[hyper]=$STARTED_URL SCRIPT[hyper]=legacy_echo.lua
    LABELS+=(hyper)
fi

: >"$OUT/calls.txt"
for rep in $(seq "$REPS"); do
    for i in "${!LABELS[@]}"; do
        label=${LABELS[$(((i + rep) % ${#LABELS[@]}))]} # the order rotates from one round to the next
        pid=${PID[$label]}
        wrk -t 2 -c "$CONNECTIONS" -d 2s -s "bench/wrk/${SCRIPT[$label]}" "${URL[$label]}" >/dev/null # warm-up
        perf record -q -e cpu-clock -F "$FREQ" -p "$pid" -o "$OUT/$label.$rep.data" -- sleep "$DURATION" \
            2>"$LOGS/perf-$label.err" &
        recorder=$!
        out=$(wrk -t 2 -c "$CONNECTIONS" -d "${DURATION}s" --timeout 10s -s "bench/wrk/${SCRIPT[$label]}" "${URL[$label]}")
        wait "$recorder" || true
        calls=$(echo "$out" | sed -n 's/^RESULT //p' | python3 -c 'import json, sys; r = json.load(sys.stdin); print(r["calls_ok"] if r["bad"] == 0 else -1)')
        [ "$calls" -gt 0 ] || { echo "error: $label answered wrongly; see wrk's output:" >&2; echo "$out" >&2; exit 1; }
        echo "rep $rep: $label $calls checked calls in ${DURATION}s" >&2
        echo "$label $rep $calls" >>"$OUT/calls.txt"
    done
done
python3 bench/proxy_perf_report.py "$OUT" "$FREQ" "$TOP" "${LABELS[@]}" | tee "$OUT/report.md"
