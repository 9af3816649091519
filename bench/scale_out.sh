#!/usr/bin/env bash
# Scale-out benchmark of mcp-mrtr-proxy: three instances sharing one Redis pause store and one
# legacy HTTP server (the fixture server), all on this machine's loopback. In one run, REPS
# interleaved repetitions of:
#   mrtr-owner   the ask_name pause/resume flow, the retry sent to the instance that paused it
#   mrtr-other   the same flow, the retry sent to another instance (passed on to the owner)
#   proxy-1      pass-through tools/call echo, every connection to instance 1
#   proxy-3      the same, connections spread over the three instances (round robin)
# Every instance runs with --batch-window 0ms and the same key. See bench/scale-out.md.
#
# Usage: bash bench/scale_out.sh     Environment: REPS (3), DURATION (5s), WARMUP (1s),
#   CONNECTIONS (8), NO_BUILD (1: use the binaries already in target/release).
# Needs redis-server (Debian package redis-server) and curl. Writes only under bench/work/.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
WORK=bench/work/scale-out
REPS=${REPS:-3}
DURATION=${DURATION:-5s}
WARMUP=${WARMUP:-1s}
CONNECTIONS=${CONNECTIONS:-8}
TARGET=${CARGO_TARGET_DIR:-target}/release
mkdir -p "$WORK"
RAW=$WORK/raw.jsonl
: >"$RAW"

if [ -z "${NO_BUILD:-}" ]; then
    cargo build --release -p mcp-mrtr-proxy -p mcp-legacy-fixture-server --bins
    cargo build --release -p mcp-migrate-tests --example proxy_load
fi
command -v redis-server >/dev/null || { echo "error: install redis-server" >&2; exit 1; }

PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

wait_for() { # URL
    for _ in $(seq 200); do
        curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "error: $1 did not come up" >&2
    exit 1
}

REDIS_PORT=$(free_port)
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no \
    --loglevel warning >"$WORK/redis.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done

"$TARGET/mcp-legacy-fixture-server" --transport http --listen 127.0.0.1:0 \
    >"$WORK/legacy.out" 2>"$WORK/legacy.err" &
PIDS+=($!)
LEGACY=
for _ in $(seq 100); do
    LEGACY=$(sed -n 's/^listening on //p' "$WORK/legacy.out")
    [ -n "$LEGACY" ] && break
    sleep 0.1
done
[ -n "$LEGACY" ] || { echo "error: the legacy server did not start" >&2; exit 1; }

KEY=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
echo "$KEY" >"$WORK/state.key"
URLS=()
for i in 1 2 3; do
    port=$(free_port)
    "$TARGET/mcp-mrtr-proxy" --listen "127.0.0.1:$port" --advertise "http://127.0.0.1:$port" \
        --store "redis://127.0.0.1:$REDIS_PORT/0" --state-key-file "$WORK/state.key" \
        --batch-window 0ms --pool-size 16 --log-level warn --upstream "$LEGACY" \
        >"$WORK/proxy$i.out" 2>"$WORK/proxy$i.err" &
    PIDS+=($!)
    URLS+=("http://127.0.0.1:$port/mcp")
    wait_for "http://127.0.0.1:$port/readyz"
done

run() { # label, proxy_load arguments...
    local label=$1
    shift
    local line
    line=$("$TARGET/examples/proxy_load" --connections "$CONNECTIONS" --duration "$DURATION" \
        --warmup "$WARMUP" "$@" 2>>"$WORK/load.err")
    python3 -c 'import json,sys; r=json.loads(sys.argv[2]); r["label"]=sys.argv[1]; print(json.dumps(r))' \
        "$label" "$line" >>"$RAW"
    echo "$label: $line"
}

for rep in $(seq "$REPS"); do
    echo "== repetition $rep"
    run mrtr-owner --mode mrtr --url "${URLS[0]}"
    run mrtr-other --mode mrtr --url "${URLS[0]}" --retry-url "${URLS[1]},${URLS[2]}"
    run proxy-1 --mode proxy --url "${URLS[0]}"
    run proxy-3 --mode proxy --url "${URLS[0]},${URLS[1]},${URLS[2]}"
done

python3 - "$RAW" <<'EOF'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
by = {}
for row in rows:
    by.setdefault(row["label"], []).append(row)
def med(label, key):
    values = [r[key] for r in by[label]]
    return statistics.median(values)
def lat(label, key, phase="latency_us"):
    return statistics.median(r[phase][key] for r in by[label])
print()
print("| run | ops/s (median) | p50 µs | p99 µs | retry p50 µs | retry p99 µs | errors |")
print("|---|---|---|---|---|---|---|")
for label in ("mrtr-owner", "mrtr-other", "proxy-1", "proxy-3"):
    if label not in by:
        continue
    retry = ("%d" % lat(label, "p50", "request2_us"), "%d" % lat(label, "p99", "request2_us")) \
        if "request2_us" in by[label][0] else ("", "")
    print("| %s | %.0f | %d | %d | %s | %s | %d |" % (label, med(label, "ops_per_s"),
          lat(label, "p50"), lat(label, "p99"), retry[0], retry[1],
          sum(r["errors"] for r in by[label])))
print()
ratio = lambda a, b, key: [x[key] / y[key] for x, y in zip(by[a], by[b])]
owner = [r["request2_us"]["p50"] for r in by["mrtr-owner"]]
other = [r["request2_us"]["p50"] for r in by["mrtr-other"]]
print("retry on another instance / on the owner, retry p50, per repetition:",
      ", ".join("%.2f" % (o / w) for o, w in zip(other, owner)))
print("whole round (both requests) other / owner, p50:",
      ", ".join("%.2f" % (o["latency_us"]["p50"] / w["latency_us"]["p50"]) for o, w in zip(by["mrtr-other"], by["mrtr-owner"])))
print("pass-through 3 instances / 1 instance, ops/s, per repetition:",
      ", ".join("%.2f" % v for v in ratio("proxy-3", "proxy-1", "ops_per_s")))
EOF
