#!/usr/bin/env bash
# The proxy in front of legacy servers of three SDKs, side by side in one run: pass-through
# `tools/call echo` straight to the legacy server (direct) and through mcp-mrtr-proxy (proxy),
# in front of the TypeScript SDK 1.32.2, Python FastMCP (mcp 1.30.0) and rmcp 2.2 conformance
# servers (Streamable HTTP), at 1, 16 and 64 keep-alive connections, interleaved; then the
# proxy's CPU per call at one fixed call rate in front of each. Results: bench/sdk-backends.md.
#
# Usage: bash bench/sdk_backends.sh
# Environment: REPS (2), DURATION (5s), WARMUP (1s), CONCURRENCY ("1 16 64"), RATE (150 calls/s
#   for the fixed-rate CPU runs, 16 connections), NO_BUILD (1: use target/release as it is).
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
mkdir -p "$LOGS"

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
    cargo build --release -p mcp-mrtr-proxy -p mcp-legacy-conformance-server \
        -p mcp-migrate-tests --example proxy_load >&2
fi
LOAD=$BIN/examples/proxy_load

section "peers"
if [ ! -x "$WORK/venv/bin/python" ] || ! "$WORK/venv/bin/python" -c 'import mcp' 2>/dev/null; then
    python3 -m venv "$WORK/venv"
    "$WORK/venv/bin/pip" install -q --disable-pip-version-check 'mcp==1.30.0' matplotlib
fi
"$WORK/venv/bin/python" -c 'import matplotlib' 2>/dev/null \
    || "$WORK/venv/bin/pip" install -q --disable-pip-version-check matplotlib
if [ ! -f "$WORK/node/node_modules/@modelcontextprotocol/sdk/package.json" ]; then
    npm install --silent --no-audit --no-fund --prefix "$WORK/node" '@modelcontextprotocol/sdk@1.32.2' >&2
fi
cp tests/sdk-servers/typescript/conformance-server.mjs "$WORK/node/"

# start_listening, wait_healthy (a Python server needs more than 10 s on a busy machine)
source bench/lib.sh
START_TRIES=300

# ----- servers: one legacy server per SDK, one proxy in front of each -------------------------
declare -A LEGACY_URL LEGACY_PID PROXY_URL PROXY_PID
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
    echo "$sdk: legacy ${LEGACY_URL[$sdk]} (pid ${LEGACY_PID[$sdk]}), proxy ${PROXY_URL[$sdk]} (pid ${PROXY_PID[$sdk]})" >&2
done

RAW=$WORK/raw.jsonl
: >"$RAW"
# One run: prints its JSON line with the labels added to $RAW.
run() {
    local sdk=$1 mode=$2 connections=$3 rate=${4:-}
    local url=${LEGACY_URL[$sdk]} cpu=(--cpu-pid "backend=${LEGACY_PID[$sdk]}")
    if [ "$mode" = proxy ]; then
        url=${PROXY_URL[$sdk]}
        cpu+=(--cpu-pid "proxy=${PROXY_PID[$sdk]}")
    fi
    local extra=()
    [ -n "$rate" ] && extra=(--rate "$rate")
    local line
    line=$("$LOAD" --mode "$mode" --url "$url" --connections "$connections" \
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
        done
    done
done
for sdk in typescript python rmcp; do
    section "fixed rate $RATE calls/s, 16 connections, $sdk"
    run "$sdk" direct 16 "$RATE"
    run "$sdk" proxy 16 "$RATE"
done

section "summary"
"$WORK/venv/bin/python" bench/sdk_backends_report.py "$RAW" "$WORK/results.md" "$WORK/plot.png"
cat "$WORK/results.md"
