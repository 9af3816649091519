#!/usr/bin/env bash
# The proxy in front of legacy servers of three SDKs, side by side in one run: pass-through
# `tools/call echo` straight to the legacy server (direct), through mcp-mrtr-proxy (proxy) and
# through FastMCP's translating proxy (fastmcp: fastmcp 4.1.6 `create_proxy(URL, mode="legacy")`,
# bench/fastmcp_proxy.py), in front of the TypeScript SDK 1.32.2, Python FastMCP (mcp 1.30.0) and rmcp 2.2 conformance
# servers (Streamable HTTP), at 1, 16 and 64 keep-alive connections, interleaved; then the
# proxy's CPU per call at one fixed call rate in front of each. Results: bench/sdk-backends.md.
#
# Usage: bash bench/sdk_backends.sh
# Environment: REPS (2), DURATION (5s), WARMUP (1s), CONCURRENCY ("1 16 64"), RATE (150 calls/s
#   for the fixed-rate CPU runs, 16 connections), NO_BUILD (1: use target/release as it is),
#   NET (quickack: everything runs in a private network namespace, `unshare -n`, root only, whose
#   loopback routes have `quickack 1`, so the 40 ms Nagle/delayed-ACK stalls of legacy servers'
#   SSE responses do not hide the CPU cost, as in bench/proxy_load.sh; host: the machine's loopback).
# Needs: cargo, python3 with venv, npm + node >= 18, curl; PyPI and the npm registry reachable
# the first time (installs go to bench/work/sdk/, kept between runs).
# Writes only under bench/work/sdk/: raw.jsonl (one line per run), results.md, plot.png, logs/.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
WORK=bench/work/sdk
LOGS=$WORK/logs
REPS=${REPS:-2}
DURATION=${DURATION:-5s}
WARMUP=${WARMUP:-1s}
CONCURRENCY=${CONCURRENCY:-"1 16 64"}
RATE=${RATE:-150}
BIN=target/release
NET=${NET:-quickack}
mkdir -p "$LOGS"

if [ "$NET" = quickack ] && [ -z "${SDK_BENCH_INNER:-}" ]; then
    if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null || ! command -v ip >/dev/null; then
        echo "error: NET=quickack needs root, unshare and ip (or run with NET=host)" >&2
        exit 2
    fi
    # The build and installs first, on the machine's network.
    if [ "${NO_BUILD:-0}" != 1 ]; then
        cargo build --release -p mcp-mrtr-proxy -p mcp-legacy-conformance-server >&2
        cargo build --release -p mcp-migrate-tests --example proxy_load >&2
    fi
    SDK_BENCH_INNER=1 NO_BUILD=1 INSTALL_ONLY=1 bash "$0"
    exec unshare -n env SDK_BENCH_INNER=1 NO_BUILD=1 bash "$0"
fi
if [ "$NET" = quickack ] && [ -z "${INSTALL_ONLY:-}" ]; then
    ip link set lo up
    # `quickack 1` on the loopback routes: ACK at once instead of delaying up to 40 ms.
    ip route change local 127.0.0.0/8 dev lo table local proto kernel scope host src 127.0.0.1 quickack 1
    ip route change local 127.0.0.1 dev lo table local proto kernel scope host src 127.0.0.1 quickack 1
fi

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
if [ ! -f "$WORK/node/node_modules/@modelcontextprotocol/sdk/package.json" ]; then
    npm install --silent --no-audit --no-fund --prefix "$WORK/node" '@modelcontextprotocol/sdk@1.32.2' >&2
fi
cp tests/sdk-servers/typescript/conformance-server.mjs "$WORK/node/"
[ -n "${INSTALL_ONLY:-}" ] && exit 0

# start_listening, wait_healthy (a Python server needs more than 10 s on a busy machine)
source bench/lib.sh
START_TRIES=300

# ----- servers: one legacy server per SDK, one proxy in front of each -------------------------
declare -A LEGACY_URL LEGACY_PID PROXY_URL PROXY_PID FASTMCP_URL FASTMCP_PID
KEY=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
for sdk in typescript python rmcp; do
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
# One run: prints its JSON line with the labels added to $RAW.
run() {
    local sdk=$1 mode=$2 connections=$3 rate=${4:-}
    local url=${LEGACY_URL[$sdk]} cpu=(--cpu-pid "backend=${LEGACY_PID[$sdk]}") load_mode=$mode
    case $mode in
        proxy) url=${PROXY_URL[$sdk]}; cpu+=(--cpu-pid "proxy=${PROXY_PID[$sdk]}") ;;
        fastmcp) url=${FASTMCP_URL[$sdk]}; cpu+=(--cpu-pid "proxy=${FASTMCP_PID[$sdk]}"); load_mode=proxy ;;
    esac
    local extra=()
    [ -n "$rate" ] && extra=(--rate "$rate")
    local line
    line=$("$LOAD" --mode "$load_mode" --url "$url" --connections "$connections" \
        --duration "$DURATION" --warmup "$WARMUP" "${cpu[@]}" "${extra[@]}" 2>>"$LOGS/load.err")
    echo "$line" | "$WORK/venv/bin/python" -c '
import json, sys
line = json.loads(sys.stdin.read())
line.update(sdk=sys.argv[1], peer=sys.argv[2], connections=int(sys.argv[3]), rate=sys.argv[4] or None)
print(json.dumps(line))' "$sdk" "$mode" "$connections" "$rate" | tee -a "$RAW" >&2
}

# ----- interleaved runs -----------------------------------------------------------------------
for rep in $(seq "$REPS"); do
    for connections in $CONCURRENCY; do
        for sdk in typescript python rmcp; do
            section "rep $rep, $connections connection(s), $sdk"
            run "$sdk" direct "$connections"
            run "$sdk" proxy "$connections"
            run "$sdk" fastmcp "$connections"
        done
    done
done
for sdk in typescript python rmcp; do
    section "fixed rate $RATE calls/s, 16 connections, $sdk"
    run "$sdk" direct 16 "$RATE"
    run "$sdk" proxy 16 "$RATE"
    run "$sdk" fastmcp 16 "$RATE"
done

section "summary"
"$WORK/venv/bin/python" bench/sdk_backends_report.py "$RAW" "$WORK/results.md" "$WORK/plot.png"
cat "$WORK/results.md"
