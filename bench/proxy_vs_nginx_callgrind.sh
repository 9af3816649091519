#!/usr/bin/env bash
# User-space instructions per pass-through call of nginx and of mcp-mrtr-proxy, each in front of
# the TypeScript SDK 1.32.2 legacy server (`echo`), counted by valgrind's callgrind: unlike CPU
# time, the count does not depend on what else runs on the machine (bench/proxy-vs-nginx.md).
# The same fronts as bench/proxy_vs_nginx.sh (nginx 1.22, one worker, upstream keep-alive,
# `proxy_buffering off`; the proxy with its defaults and `--upstream`), the same wrk scripts
# (every answer checked). For each front: started under callgrind, warmed up for WARMUP, the
# counters zeroed, DURATION of load, the counters dumped; instructions / checked answers.
# Kernel work (system calls, TCP) is not counted: see the strace runs of bench/proxy_vs_nginx.sh.
#
# Usage: bash bench/proxy_vs_nginx_callgrind.sh [PROXY_BIN...]
#   PROXY_BIN  proxy builds to count, each beside the others and nginx (default
#              target/release/mcp-mrtr-proxy; not built here)
# Environment: CONNECTIONS (16), DURATION (8: seconds; under valgrind a front runs ~50x slower),
#   WARMUP (3), FRONTS ("nginx hyper proxy"; hyper: the plainest tokio + hyper reverse proxy,
#   proxy/examples/hyper_reverse_proxy.rs, HYPER_BIN, default
#   target/release/examples/hyper_reverse_proxy, not built here), OUT (bench/work/nginx-callgrind).
# Needs root (`unshare -n`: a private loopback whose routes ACK at once, as NET=quickack of
# bench/proxy_vs_nginx.sh), valgrind, nginx, wrk, node (target/sdk-servers-node installed).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
OUT=${OUT:-bench/work/nginx-callgrind}
LOGS=$OUT/logs
CONNECTIONS=${CONNECTIONS:-16}
DURATION=${DURATION:-8}
WARMUP=${WARMUP:-3}
FRONTS=${FRONTS:-"nginx hyper proxy"}
TARGET=${CARGO_TARGET_DIR:-target}
HYPER_BIN=${HYPER_BIN:-$TARGET/release/examples/hyper_reverse_proxy}
LEGACY_VERSION=2025-06-18
[ $# -gt 0 ] || set -- "$TARGET/release/mcp-mrtr-proxy"

if [ -z "${PVNC_INNER:-}" ]; then
    for tool in valgrind callgrind_control callgrind_annotate wrk unshare ip curl python3; do
        command -v "$tool" >/dev/null || { echo "error: $tool is needed" >&2; exit 1; }
    done
    [ "$(id -u)" -eq 0 ] || { echo "error: root is needed (unshare -n)" >&2; exit 1; }
    exec unshare -n env PVNC_INNER=1 bash "$0" "$@"
fi
source bench/lib.sh # quickack_loopback, start_listening, wait_healthy, open_legacy_session
quickack_loopback
mkdir -p "$LOGS"
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
cp tests/sdk-servers/typescript/conformance-server.mjs "$TARGET/sdk-servers-node/"

PIDS=()
cleanup() {
    local pid
    for pid in "${PIDS[@]:-}"; do [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT
START_TRIES=600
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

start_listening legacy node "$TARGET/sdk-servers-node/conformance-server.mjs" --transport http --listen 127.0.0.1:0
LEGACY_URL=$STARTED_URL
hostport=${LEGACY_URL#http://}
UPSTREAM=${hostport%%/*}
SESSION=$(open_legacy_session "$LEGACY_URL" callgrind)
export WRK_LUA_DIR=$ROOT/bench/wrk MCP_LEGACY_VERSION=$LEGACY_VERSION MCP_SESSION_ID=$SESSION

wrk_calls() { # URL SCRIPT SECONDS: prints the checked answers
    local out
    out=$(wrk -t 2 -c "$CONNECTIONS" -d "${3}s" --timeout 30s -s "bench/wrk/$2" "$1" 2>>"$LOGS/wrk.err")
    echo "$out" >>"$LOGS/wrk.out"
    echo "$out" | sed -n 's/^RESULT //p' | python3 -c 'import json, sys; r = json.load(sys.stdin); assert r["bad"] == 0, r; print(r["calls_ok"])'
}

# Counts one front: PID (the process callgrind runs in) URL SCRIPT LABEL.
count() {
    local pid=$1 url=$2 script=$3 label=$4 calls dump
    wrk_calls "$url" "$script" "$WARMUP" >/dev/null
    callgrind_control -z "$pid" >/dev/null
    calls=$(wrk_calls "$url" "$script" "$DURATION")
    callgrind_control -d "$pid" >/dev/null
    sleep 1
    dump=$(ls -t "$OUT"/callgrind."$label".*.[0-9]* | head -1)
    python3 - "$label" "$calls" "$dump" "$CONNECTIONS" <<'EOF' | tee -a "$OUT/results.jsonl"
import json, re, subprocess, sys
label, calls, dump, connections = sys.argv[1:]
totals = subprocess.run(["callgrind_annotate", dump], capture_output=True, text=True).stdout
ir = int(re.search(r"([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", totals).group(1).replace(",", ""))
print(json.dumps({"front": label, "connections": int(connections), "calls": int(calls),
                  "instructions": ir, "instructions_per_call": round(ir / max(int(calls), 1)),
                  "dump": dump}))
EOF
}

: >"$OUT/results.jsonl"
rm -f "$OUT"/callgrind.*
for front in $FRONTS; do
    case $front in
        nginx)
            dir=$(realpath -m "$OUT/nginx")
            port=$(free_port)
            mkdir -p "$dir"
            nginx_conf "$dir" "$UPSTREAM" "$port" "master_process off;" >"$dir/nginx.conf"
            # `master_process off`: the one process that serves is the one callgrind counts.
            valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind.nginx.%p" \
                "$NGINX" -p "$dir" -c "$dir/nginx.conf" >"$LOGS/nginx.out" 2>"$LOGS/nginx.err" &
            pid=$!
            PIDS+=("$pid")
            for _ in $(seq 300); do
                curl -s -o /dev/null "http://127.0.0.1:$port/" && break
                sleep 0.2
            done
            count "$pid" "http://127.0.0.1:$port/mcp" legacy_echo.lua nginx
            kill -TERM "$pid"
            ;;
        hyper)
            start_listening hyper valgrind --tool=callgrind \
                --callgrind-out-file="$OUT/callgrind.hyper.%p" "$HYPER_BIN" "$UPSTREAM"
            pid=$STARTED_PID
            count "$pid" "$STARTED_URL" legacy_echo.lua hyper
            kill -TERM "$pid"
            ;;
        proxy)
            i=0
            for bin in "$@"; do
                i=$((i + 1))
                label=proxy$i
                rm -rf "$OUT/store-$label"
                start_listening "$label" valgrind --tool=callgrind --fair-sched=yes \
                    --callgrind-out-file="$OUT/callgrind.$label.%p" "$bin" --listen 127.0.0.1:0 \
                    --store "$OUT/store-$label" --upstream "$LEGACY_URL"
                pid=$STARTED_PID
                for _ in $(seq 300); do
                    curl -fsS -o /dev/null "${STARTED_URL%/mcp}/healthz" 2>/dev/null && break
                    sleep 0.2
                done
                echo "$label: $bin" >&2
                count "$pid" "$STARTED_URL" front_echo.lua "$label"
                kill -TERM "$pid"
            done
            ;;
        *) echo "error: unknown front $front (nginx, hyper, proxy)" >&2; exit 2 ;;
    esac
done
