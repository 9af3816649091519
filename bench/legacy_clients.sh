#!/usr/bin/env bash
# Pass-through throughput of a legacy client (2025-11-25 Streamable HTTP: initialize, then
# `tools/call echo` back to back) through mcp-mrtr-proxy versus straight to the legacy fixture
# server, in the same run, interleaved. See bench/legacy-clients.md.
#
# Usage: bash bench/legacy_clients.sh
# Environment: NET (quickack: inside `unshare -n` with `quickack 1` loopback routes, root only,
#   which removes the legacy server's 40 ms Nagle/delayed-ACK stalls that the proxy's own
#   upstream connections avoid (TCP_QUICKACK), so "direct" is not handicapped; host: the
#   machine's loopback as it is), REPS (5), DURATION (5s), WARMUP (1s), CONNECTIONS (16),
#   NO_BUILD (1: use the release binaries already in target/release),
#   LOAD (the load generator; default target/release/examples/proxy_load).
# Writes only under bench/work/: legacy_clients_raw.<net>.jsonl, legacy-clients-logs/.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
WORK=bench/work
LOGS=$WORK/legacy-clients-logs
REPS=${REPS:-5}
DURATION=${DURATION:-5s}
WARMUP=${WARMUP:-1s}
CONNECTIONS=${CONNECTIONS:-16}
BIN=target/release
LOAD=${LOAD:-$BIN/examples/proxy_load}
[ -n "$LOAD" ] || LOAD=$BIN/examples/proxy_load
NET=${NET:-quickack}
if [ "$NET" = quickack ] && [ -z "${INNER:-}" ]; then
    exec unshare -n env INNER=1 NET=quickack REPS="$REPS" DURATION="$DURATION" WARMUP="$WARMUP" \
        CONNECTIONS="$CONNECTIONS" NO_BUILD="${NO_BUILD:-}" LOAD="${LOAD:-}" bash "$0"
fi
if [ -n "${INNER:-}" ]; then
    ip link set lo up
    ip route change local 127.0.0.0/8 dev lo table local proto kernel scope host src 127.0.0.1 quickack 1
    ip route change local 127.0.0.1 dev lo table local proto kernel scope host src 127.0.0.1 quickack 1
fi
mkdir -p "$LOGS"
RAW=$WORK/legacy_clients_raw.$NET.jsonl
: >"$RAW"
echo "net: $NET, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo ?)"

if [ -z "${NO_BUILD:-}" ]; then
    cargo build --release -p mcp-mrtr-proxy -p mcp-legacy-fixture-server
    cargo build --release -p mcp-migrate-tests --example proxy_load
fi

PIDS=()
cleanup() {
    for pid in "${PIDS[@]:-}"; do [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true; done
    sleep 0.5
    for pid in "${PIDS[@]:-}"; do [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

# start NAME COMMAND...: waits for its "listening on URL" line, sets URL.
start() {
    local name=$1
    shift
    : >"$LOGS/$name.out"
    "$@" >"$LOGS/$name.out" 2>"$LOGS/$name.err" &
    PIDS+=("$!")
    URL=
    for _ in $(seq 100); do
        URL=$(sed -n 's/^listening on //p' "$LOGS/$name.out")
        [ -n "$URL" ] && return 0
        sleep 0.1
    done
    echo "error: $name did not start" >&2
    tail -20 "$LOGS/$name.err" >&2
    exit 1
}

start legacy "$BIN/mcp-legacy-fixture-server" --transport http --listen 127.0.0.1:0
LEGACY_URL=$URL
STORE=$(mktemp -d)
start proxy "$BIN/mcp-mrtr-proxy" --listen 127.0.0.1:0 --store "$STORE/store" \
    --log-level warn --upstream "$LEGACY_URL"
PROXY_URL=$URL
for _ in $(seq 100); do curl -fsS -o /dev/null "${PROXY_URL%/mcp}/healthz" && break; sleep 0.1; done

measure() { # LABEL URL CONNS REP
    local line
    line=$("$LOAD" --mode direct --url "$2" --connections "$3" \
        --duration "$DURATION" --warmup "$WARMUP" 2>>"$LOGS/proxy_load.err")
    python3 -c '
import json, sys
r = json.loads(sys.argv[1]); r.update(label=sys.argv[2], rep=int(sys.argv[3]))
print(json.dumps(r))
L = r["latency_us"]
print("  %-16s rep %d: %9.1f ops/s  p50 %6d us  p99 %6d us  errors %d" % (r["label"], r["rep"],
      r["ops_per_s"], L["p50"], L["p99"], r["errors"]), file=sys.stderr)
' "$line" "$1" "$4" >>"$RAW"
}

for rep in $(seq "$REPS"); do
    measure direct "$LEGACY_URL" "$CONNECTIONS" "$rep"
    measure via-proxy "$PROXY_URL" "$CONNECTIONS" "$rep"
    measure direct-c1 "$LEGACY_URL" 1 "$rep"
    measure via-proxy-c1 "$PROXY_URL" 1 "$rep"
done

python3 - "$RAW" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
def median(label, key):
    return statistics.median(key(r) for r in runs if r["label"] == label)
print("\n| connections | direct ops/s | via proxy ops/s | ratio | direct p50 µs | via proxy p50 µs | errors |")
print("|---|---|---|---|---|---|---|")
for direct, proxied, conns in [("direct", "via-proxy", runs[0]["connections"]), ("direct-c1", "via-proxy-c1", 1)]:
    d = median(direct, lambda r: r["ops_per_s"]); p = median(proxied, lambda r: r["ops_per_s"])
    errors = sum(r["errors"] for r in runs if r["label"] in (direct, proxied))
    print(f"| {conns} | {d:.0f} | {p:.0f} | {p / d:.2f}x | {median(direct, lambda r: r['latency_us']['p50']):.0f} | "
          f"{median(proxied, lambda r: r['latency_us']['p50']):.0f} | {errors} |")
PY
