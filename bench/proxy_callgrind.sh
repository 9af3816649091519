#!/usr/bin/env bash
# The proxy's CPU cost per operation in instructions (valgrind --tool=callgrind), which, unlike
# CPU time, does not depend on what else runs on the machine. See bench/PROXY.md.
#
# Usage: bash bench/proxy_callgrind.sh [PROXY_BIN] [MODE]
#   PROXY_BIN  the mcp-mrtr-proxy binary to measure (default: bench/work/bin/mcp-mrtr-proxy, as
#              copied by bench/proxy_load.sh); pass an older build to compare two versions
#   MODE       proxy (default: pass-through tools/call echo) or mrtr (the ask_name flow)
# Environment: CONNECTIONS (16), DURATION (8s, under valgrind: the proxy runs ~50x slower).
#
# Runs in a private network namespace with quickack loopback routes (as `--net quickack` of
# bench/proxy_load.sh; root only) so that no delayed-ACK stall idles the proxy. Starts the
# legacy fixture server and the proxy under callgrind (`--batch-window 0ms`), warms up for 3 s,
# zeroes the counters, runs the load, dumps the counters, and prints instructions per operation
# of the proxy process (user space only: the kernel's work is not counted). Writes only under
# bench/work/callgrind/; stops what it started.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
WORK=bench/work
OUT=$WORK/callgrind
PROXY_BIN=${1:-$WORK/bin/mcp-mrtr-proxy}
MODE=${2:-proxy}
CONNECTIONS=${CONNECTIONS:-16}
DURATION=${DURATION:-8s}

if [ "${INNER:-}" != 1 ]; then
    for tool in valgrind callgrind_control callgrind_annotate unshare ip python3 curl; do
        command -v "$tool" >/dev/null || { echo "error: $tool is needed" >&2; exit 1; }
    done
    [ "$(id -u)" -eq 0 ] || { echo "error: root is needed (unshare -n)" >&2; exit 1; }
    for file in "$PROXY_BIN" "$WORK/bin/mcp-legacy-fixture-server" "$WORK/bin/proxy_load"; do
        [ -x "$file" ] || { echo "error: $file missing (run bench/proxy_load.sh once)" >&2; exit 1; }
    done
    exec unshare -n env INNER=1 CONNECTIONS="$CONNECTIONS" DURATION="$DURATION" \
        bash "$0" "$PROXY_BIN" "$MODE"
fi

ip link set lo up
ip route change local 127.0.0.0/8 dev lo table local proto kernel scope host src 127.0.0.1 quickack 1
ip route change local 127.0.0.1 dev lo table local proto kernel scope host src 127.0.0.1 quickack 1
mkdir -p "$OUT"
PIDS=()
trap 'for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done' EXIT

start() { # NAME CMD...: waits for "listening on URL"; sets PID and URL
    local name=$1
    shift
    : >"$OUT/$name.out"
    "$@" >"$OUT/$name.out" 2>"$OUT/$name.err" &
    PID=$!
    PIDS+=("$PID")
    for _ in $(seq 600); do
        URL=$(sed -n 's/^listening on //p' "$OUT/$name.out")
        [ -n "$URL" ] && return 0
        kill -0 "$PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "error: $name did not start" >&2
    tail -20 "$OUT/$name.err" >&2
    exit 1
}

start legacy "$WORK/bin/mcp-legacy-fixture-server" --transport http --listen 127.0.0.1:0
LEGACY_URL=$URL
rm -rf "$OUT/store" "$OUT"/callgrind.out.*
start proxy valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind.out.%p" \
    "$PROXY_BIN" --listen 127.0.0.1:0 --store "$OUT/store" --upstream "$LEGACY_URL" \
    --pool-size 16 --batch-window 0ms
PROXY_PID=$PID
for _ in $(seq 600); do
    curl -fsS -o /dev/null "${URL%/mcp}/healthz" 2>/dev/null && break
    sleep 0.2
done
"$WORK/bin/proxy_load" --mode "$MODE" --url "$URL" --connections "$CONNECTIONS" --duration 3s \
    --warmup 0s >/dev/null 2>&1 || true
callgrind_control -z "$PROXY_PID" >/dev/null 2>&1
RESULT=$("$WORK/bin/proxy_load" --mode "$MODE" --url "$URL" --connections "$CONNECTIONS" \
    --duration "$DURATION" --warmup 0s 2>/dev/null)
callgrind_control -d "$PROXY_PID" >/dev/null 2>&1
sleep 1
DUMP=$(ls -t "$OUT"/callgrind.out.*.1 | head -1)
python3 - "$RESULT" "$DUMP" "$PROXY_BIN" "$MODE" "$CONNECTIONS" <<'EOF'
import json, re, subprocess, sys
result, dump, binary, mode, connections = sys.argv[1:]
ops = json.loads(result)["ops"]
totals = subprocess.run(["callgrind_annotate", dump], capture_output=True, text=True).stdout
ir = int(re.search(r"([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", totals).group(1).replace(",", ""))
print(json.dumps({"binary": binary, "mode": mode, "connections": int(connections), "ops": ops,
                  "instructions": ir, "instructions_per_op": round(ir / max(ops, 1))}))
EOF
