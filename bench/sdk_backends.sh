#!/usr/bin/env bash
# The proxy in front of legacy servers of three SDKs, side by side in one run: pass-through
# `tools/call echo` straight to the legacy server (direct), through mcp-mrtr-proxy (proxy) and
# through FastMCP's translating proxy (fastmcp: fastmcp 4.1.6 `create_proxy(URL, mode="legacy")`,
# bench/fastmcp_proxy.py), in front of the TypeScript SDK 1.32.2, Python FastMCP (mcp 1.30.0) and rmcp 2.2 conformance
# servers (Streamable HTTP), at 1, 16 and 64 keep-alive connections, interleaved; then the
# proxy's CPU per call at one fixed call rate in front of each. Results: bench/sdk-backends.md.
#
# Each repetition measures direct and proxy back to back as a pair (the order alternates from one
# repetition to the next), after waiting for the rest of the machine to be quiet; the ratio
# reported is the median of the pairs' ratios. With PIN=1 (the default) every pair is measured a
# second time with the legacy server on CPU 0 and the load generator and the proxy on CPU 1
# (`taskset`), so that the proxy's own CPU does not come out of the legacy server's core.
#
# Usage: bash bench/sdk_backends.sh
# Environment: REPS (3), DURATION (5s), WARMUP (1s), CONCURRENCY ("1 16 64"), RATE (150 calls/s
#   for the fixed-rate CPU runs, 16 connections), PIN (1; 0: no pinned pairs), QUIET_MAX (20: the
#   longest wait, in seconds, for a quiet machine before a pair), FASTMCP (1; 0: skip it),
#   STDIO (1; 0: no stdio runs), HELD (1; 0: no runs behind paused calls), FIXED (1; 0: no
#   fixed-rate runs; CONCURRENCY="" skips the HTTP matrix), SDKS ("typescript python rmcp": the
#   legacy servers measured), STDIO_CONCURRENCY ("1 16": the
#   stdio peers' concurrent requests), STDIO_REPS (REPS), UPLIFT_DIR (bench/work/sdk/mcp-uplift: a checkout of
#   mcp-uplift v0.2.6), HOLD (64: paused calls held for the "behind paused calls" runs),
#   NO_BUILD (1: use target/release as it is),
#   NET (quickack: everything runs in a private network namespace, `unshare -n`, root only, whose
#   loopback routes have `quickack 1`, so the 40 ms Nagle/delayed-ACK stalls of legacy servers'
#   SSE responses do not hide the CPU cost, as in bench/proxy_load.sh; host: the machine's loopback).
# Needs: cargo, python3 with venv, npm + node >= 18, curl, taskset (PIN=1); PyPI and the npm registry reachable
# the first time (installs go to bench/work/sdk/, kept between runs).
# Writes only under bench/work/sdk/: raw.jsonl (one line per run), results.md, plot.png, logs/.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
WORK=bench/work/sdk
LOGS=$WORK/logs
REPS=${REPS:-3}
DURATION=${DURATION:-5s}
WARMUP=${WARMUP:-1s}
CONCURRENCY=${CONCURRENCY:-"1 16 64"}
RATE=${RATE:-150}
PIN=${PIN:-1}
SDKS=${SDKS:-"typescript python rmcp"}
FASTMCP=${FASTMCP:-1}
STDIO=${STDIO:-1}
HELD=${HELD:-1}
FIXED=${FIXED:-1}
STDIO_CONCURRENCY=${STDIO_CONCURRENCY:-"1 16"}
STDIO_REPS=${STDIO_REPS:-$REPS}
UPLIFT_DIR=${UPLIFT_DIR:-$WORK/mcp-uplift}
QUIET_MAX=${QUIET_MAX:-20}
BIN=target/release
NET=${NET:-quickack}
mkdir -p "$LOGS"

# start_listening, wait_healthy, check_quickack, quickack_loopback, stop_started
source bench/lib.sh

if [ "$NET" = quickack ] && [ -z "${SDK_BENCH_INNER:-}" ]; then
    check_quickack
    # The build and installs first, on the machine's network.
    if [ "${NO_BUILD:-0}" != 1 ]; then
        cargo build --release -p mcp-mrtr-proxy -p mcp-legacy-conformance-server >&2
        cargo build --release -p mcp-migrate-tests --example proxy_load >&2
    fi
    SDK_BENCH_INNER=1 NO_BUILD=1 INSTALL_ONLY=1 bash "$0"
    exec unshare -n env SDK_BENCH_INNER=1 NO_BUILD=1 bash "$0"
fi
if [ "$NET" = quickack ] && [ -z "${INSTALL_ONLY:-}" ]; then
    quickack_loopback
fi

PIDS=()
trap stop_started EXIT
trap 'exit 130' INT TERM

section() { printf '\n== %s\n' "$*" >&2; }

# ----- build and install ----------------------------------------------------------------------
if [ "${NO_BUILD:-0}" != 1 ]; then
    section "build (release)"
    # Two commands: with `--example`, cargo builds only the examples of the packages named.
    cargo build --release -p mcp-mrtr-proxy -p mcp-legacy-conformance-server >&2
    cargo build --release -p mcp-migrate-tests --example proxy_load >&2
fi
LOAD=$BIN/examples/proxy_load

section "peers"
if [ ! -x "$WORK/venv/bin/python" ] || ! "$WORK/venv/bin/python" -c 'import mcp' 2>/dev/null; then
    python3 -m venv "$WORK/venv"
    "$WORK/venv/bin/pip" install -q --disable-pip-version-check 'mcp==1.30.0' matplotlib
fi
"$WORK/venv/bin/python" -c 'import matplotlib' 2>/dev/null \
    || "$WORK/venv/bin/pip" install -q --disable-pip-version-check matplotlib
# FastMCP 4 depends on mcp 2.x: a venv of its own.
if ! "$WORK/fastmcp-venv/bin/python" -c 'import fastmcp' 2>/dev/null; then
    python3 -m venv "$WORK/fastmcp-venv"
    "$WORK/fastmcp-venv/bin/pip" install -q --disable-pip-version-check 'fastmcp==4.1.6'
fi
ensure_node_sdk "$WORK/node"
cp tests/sdk-servers/typescript/conformance-server.mjs "$WORK/node/"
# mcp-uplift 0.2.6 (a stdio MRTR bridge in Node, no dependencies) is published on no registry:
# a checkout of its repository's v0.2.6 tag (UPLIFT_DIR), cloned from GitHub when missing.
if [ ! -f "$UPLIFT_DIR/src/cli.js" ]; then
    git clone -q --depth 1 --branch v0.2.6 https://github.com/MohibShaikh/mcp-uplift "$UPLIFT_DIR" >&2 \
        || echo "warning: no mcp-uplift checkout in $UPLIFT_DIR (clone failed): its runs are skipped" >&2
fi
[ -n "${INSTALL_ONLY:-}" ] && exit 0

# A Python server needs more than 10 s to start on a busy machine.
START_TRIES=300

# ----- servers: one legacy server per SDK, one proxy in front of each -------------------------
declare -A LEGACY_URL LEGACY_PID PROXY_URL PROXY_PID FASTMCP_URL FASTMCP_PID
KEY=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
for sdk in $SDKS; do
    case $sdk in
        typescript) start_listening "legacy-$sdk" node "$WORK/node/conformance-server.mjs" --transport http --listen 127.0.0.1:0 ;;
        python) start_listening "legacy-$sdk" "$WORK/venv/bin/python" tests/sdk-servers/python/conformance_server.py --transport http --listen 127.0.0.1:0 ;;
        rmcp) start_listening "legacy-$sdk" "$BIN/mcp-legacy-conformance-server" --transport http --listen 127.0.0.1:0 ;;
    esac
    LEGACY_URL[$sdk]=$STARTED_URL
    LEGACY_PID[$sdk]=$STARTED_PID
    rm -rf "$WORK/store-$sdk"
    MCP_MRTR_STATE_KEY=$KEY start_listening "proxy-$sdk" "$BIN/mcp-mrtr-proxy" \
        --listen 127.0.0.1:0 --store "$WORK/store-$sdk" --pool-size 64 --upstream "$STARTED_URL"
    PROXY_URL[$sdk]=$STARTED_URL
    PROXY_PID[$sdk]=$STARTED_PID
    wait_healthy "$STARTED_URL"
    start_listening "fastmcp-$sdk" "$WORK/fastmcp-venv/bin/python" bench/fastmcp_proxy.py "${LEGACY_URL[$sdk]}"
    FASTMCP_URL[$sdk]=$STARTED_URL
    FASTMCP_PID[$sdk]=$STARTED_PID
    echo "$sdk: legacy ${LEGACY_URL[$sdk]} (pid ${LEGACY_PID[$sdk]}), proxy ${PROXY_URL[$sdk]} (pid ${PROXY_PID[$sdk]})" >&2
done

RAW=$WORK/raw.jsonl
: >"$RAW"
# One run: prints its JSON line with the labels added to $RAW. MODE: direct, proxy, fastmcp, or
# direct@pinned / proxy@pinned (the legacy server's threads on CPU 0, the load generator's and
# the proxy's on CPU 1 for the run; every process may use both cores again afterwards).
run() {
    local sdk=$1 peer=$2 connections=$3 rate=${4:-} rep=${5:-0}
    local mode=${peer%@pinned} pin=()
    local url=${LEGACY_URL[$sdk]} cpu=(--cpu-pid "backend=${LEGACY_PID[$sdk]}") load_mode=$mode
    case $mode in
        proxy) url=${PROXY_URL[$sdk]}; cpu+=(--cpu-pid "proxy=${PROXY_PID[$sdk]}") ;;
        fastmcp) url=${FASTMCP_URL[$sdk]}; cpu+=(--cpu-pid "proxy=${FASTMCP_PID[$sdk]}"); load_mode=proxy ;;
    esac
    if [ "$peer" != "$mode" ]; then
        taskset -apc 0 "${LEGACY_PID[$sdk]}" >/dev/null
        taskset -apc 1 "${PROXY_PID[$sdk]}" >/dev/null
        pin=(taskset -c 1)
    fi
    local extra=()
    [ -n "$rate" ] && extra=(--rate "$rate")
    local line
    line=$("${pin[@]}" "$LOAD" --mode "$load_mode" --url "$url" --connections "$connections" \
        --duration "$DURATION" --warmup "$WARMUP" "${cpu[@]}" "${extra[@]}" 2>>"$LOGS/load.err")
    if [ "$peer" != "$mode" ]; then
        taskset -apc 0-1 "${LEGACY_PID[$sdk]}" >/dev/null
        taskset -apc 0-1 "${PROXY_PID[$sdk]}" >/dev/null
    fi
    echo "$line" | "$WORK/venv/bin/python" -c '
import json, sys
line = json.loads(sys.stdin.read())
line.update(sdk=sys.argv[1], peer=sys.argv[2], connections=int(sys.argv[3]), rate=sys.argv[4] or None,
            rep=int(sys.argv[5]))
print(json.dumps(line))' "$sdk" "$peer" "$connections" "$rate" "$rep" | tee -a "$RAW" >&2
}

# direct and proxy back to back (a pair), the order alternating with the repetition.
pair() {
    local sdk=$1 connections=$2 rep=$3 suffix=${4:-}
    wait_quiet
    if [ $((rep % 2)) = 1 ]; then
        run "$sdk" "direct$suffix" "$connections" "" "$rep"
        run "$sdk" "proxy$suffix" "$connections" "" "$rep"
    else
        run "$sdk" "proxy$suffix" "$connections" "" "$rep"
        run "$sdk" "direct$suffix" "$connections" "" "$rep"
    fi
}

# ----- interleaved runs -----------------------------------------------------------------------
for rep in $(seq "$REPS"); do
    for connections in $CONCURRENCY; do
        for sdk in $SDKS; do
            section "rep $rep, $connections connection(s), $sdk"
            pair "$sdk" "$connections" "$rep"
            [ "$PIN" = 1 ] && pair "$sdk" "$connections" "$rep" @pinned
            [ "$FASTMCP" = 1 ] && run "$sdk" fastmcp "$connections" "" "$rep"
        done
    done
done
# ----- stdio peers -----------------------------------------------------------------------------
# The legacy server over stdio as its client would launch it (stdio-direct), behind
# `mcp-mrtr-proxy --stdio` (proxy-stdio) and behind mcp-uplift (uplift): one process per run,
# started by the load generator; the connections are concurrent requests on its pipe.
legacy_stdio() {
    case $1 in
        typescript) echo "node $WORK/node/conformance-server.mjs --transport stdio" ;;
        python) echo "$WORK/venv/bin/python tests/sdk-servers/python/conformance_server.py --transport stdio" ;;
        rmcp) echo "$BIN/mcp-legacy-conformance-server --transport stdio" ;;
    esac
}
stdio_run() {
    local sdk=$1 peer=$2 connections=$3 rep=$4 mode=stdio command line
    command=$(legacy_stdio "$sdk")
    case $peer in
        stdio-direct) mode=stdio-direct ;;
        proxy-stdio)
            rm -rf "$WORK/store-stdio"
            command="$BIN/mcp-mrtr-proxy --stdio --store $WORK/store-stdio --pool-size 64 -- $command" ;;
        uplift) command="node $UPLIFT_DIR/src/cli.js --inherit-env --max-in-flight 64 -- $command" ;;
    esac
    # A bridge starts its legacy processes during the set-up call of each connection: time.
    line=$(MCP_MRTR_STATE_KEY=$KEY "$LOAD" --mode "$mode" --command "$command" \
        --connections "$connections" --duration "$DURATION" --warmup "$WARMUP" --timeout 60s \
        2>>"$LOGS/load.err")
    echo "$line" | "$WORK/venv/bin/python" -c '
import json, sys
line = json.loads(sys.stdin.read())
line.update(sdk=sys.argv[1], peer=sys.argv[2], connections=int(sys.argv[3]), rate=None,
            rep=int(sys.argv[4]), transport="stdio")
print(json.dumps(line))' "$sdk" "$peer" "$connections" "$rep" | tee -a "$RAW" >&2
}
if [ "$STDIO" = 1 ]; then
    STDIO_PEERS="stdio-direct proxy-stdio"
    [ -f "$UPLIFT_DIR/src/cli.js" ] && STDIO_PEERS+=" uplift"
    for rep in $(seq "$STDIO_REPS"); do
        for connections in $STDIO_CONCURRENCY; do
            for sdk in $SDKS; do
                section "stdio, rep $rep, $connections concurrent request(s), $sdk"
                wait_quiet
                peers=$STDIO_PEERS
                # The order alternates with the repetition, as for the HTTP pairs.
                [ $((rep % 2)) = 0 ] && peers=$(echo "$peers" | tr ' ' '\n' | tac | tr '\n' ' ')
                for peer in $peers; do stdio_run "$sdk" "$peer" "$connections" "$rep"; done
            done
        done
    done
fi

# ----- calls behind paused ones -----------------------------------------------------------------
# A second proxy per backend (same settings) with HOLD `test_elicitation` calls paused and never
# retried, then echo at 16 connections through it, right after the same load through a proxy
# with no pause: what the paused calls cost the others (refused calls count as errors).
HOLD=${HOLD:-64}
held_run() {
    local sdk=$1 peer=$2 url=$3 pid=$4 hold=$5 line
    line=$("$LOAD" --mode proxy --url "$url" --connections 16 --duration "$DURATION" \
        --warmup "$WARMUP" --hold-paused "$hold" --cpu-pid "backend=${LEGACY_PID[$sdk]}" \
        --cpu-pid "proxy=$pid" 2>>"$LOGS/load.err")
    echo "$line" | "$WORK/venv/bin/python" -c '
import json, sys
line = json.loads(sys.stdin.read())
line.update(sdk=sys.argv[1], peer=sys.argv[2], connections=16, rate=None, rep=0, held=True)
print(json.dumps(line))' "$sdk" "$peer" | tee -a "$RAW" >&2
}
if [ "$HELD" = 1 ]; then
    for sdk in $SDKS; do
        section "16 connections behind $HOLD paused calls, $sdk"
        rm -rf "$WORK/store-held-$sdk" "$WORK/store-unheld-$sdk"
        MCP_MRTR_STATE_KEY=$KEY start_listening "proxy-unheld-$sdk" "$BIN/mcp-mrtr-proxy" \
            --listen 127.0.0.1:0 --store "$WORK/store-unheld-$sdk" --pool-size 64 --upstream "${LEGACY_URL[$sdk]}"
        unheld_url=$STARTED_URL unheld_pid=$STARTED_PID
        MCP_MRTR_STATE_KEY=$KEY start_listening "proxy-held-$sdk" "$BIN/mcp-mrtr-proxy" \
            --listen 127.0.0.1:0 --store "$WORK/store-held-$sdk" --pool-size 64 --upstream "${LEGACY_URL[$sdk]}"
        wait_healthy "$unheld_url"
        wait_healthy "$STARTED_URL"
        wait_quiet
        held_run "$sdk" "proxy, no pause" "$unheld_url" "$unheld_pid" 0
        held_run "$sdk" "proxy, $HOLD paused" "$STARTED_URL" "$STARTED_PID" "$HOLD"
        kill -TERM "$unheld_pid" "$STARTED_PID" 2>/dev/null || true
    done
fi

if [ "$FIXED" = 1 ]; then
    for sdk in $SDKS; do
        section "fixed rate $RATE calls/s, 16 connections, $sdk"
        wait_quiet
        run "$sdk" direct 16 "$RATE"
        run "$sdk" proxy 16 "$RATE"
        run "$sdk" fastmcp 16 "$RATE"
    done
fi

section "summary"
"$WORK/venv/bin/python" bench/sdk_backends_report.py "$RAW" "$WORK/results.md" "$WORK/plot.png"
cat "$WORK/results.md"
