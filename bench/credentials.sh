#!/usr/bin/env bash
# What forwarding each caller's credentials costs the proxy per call, side by side in one run.
# The legacy server is tests/sdk-servers/typescript/protected-server.mjs (TypeScript SDK 1.32.2,
# Streamable HTTP, the SDK's `requireBearerAuth` middleware whose verifier looks the token up in a
# table: verifying a token costs the server next to nothing), started twice: `--open` (no auth
# middleware) and `--bench-tokens CALLERS` (a request needs one of its tokens). One proxy per
# variant (default flags unless said, but `--batch-window 0ms` as in bench/scale_out.sh: with the
# default 100 ms wait for more legacy requests a pause/resume flow is bound by that wait, not by
# CPU), each driven by tests/examples/proxy_load:
#   none   no credentials: clients send no `Authorization`, the open server (today's proxy:
#          the one anonymous lane pool);
#   one    one bearer token (`Bearer bench`) on every request, the protected server: the proxy
#          sees its initialize refused (401), forwards `Authorization` and serves the caller from
#          a lane pool of its own;
#   many   CALLERS tokens (connection i sends `Bearer bench-(i mod CALLERS)`), the protected
#          server: CALLERS lane pools, each with legacy sessions of its own;
#   jwt    `--principal jwt --require-auth` (the proxy is the resource server and verifies an
#          EdDSA JWT on every request) in front of the open server; CALLERS subjects, one token
#          each (minted here with openssl); nothing is forwarded (the server never refuses), so
#          this is the verification alone;
# each for pass-through (`tools/call echo`, proxy_load's `proxy` mode) and pause/resume (the
# whole `input_required` + retry flow of `ask_name`, the `mrtr` mode; every answer must name its
# own caller: `bench-3: hello Alice`), at CONNECTIONS keep-alive connections. The machine is
# shared: the variants are interleaved (the order rotates each repetition), the best of REPS is
# kept, and every run records the load the rest of the machine put on it. The proxy's CPU per
# call (`/proc/PID/stat` over the measured window) is the figure that load disturbs least.
# Results: bench/credentials.md.
#
# Usage: bash bench/credentials.sh
# Environment: REPS (3), DURATION (5s), WARMUP (1s), CONNECTIONS (16), CALLERS (16),
#   VARIANTS ("none one many jwt"), QUIET_MAX (10: the longest wait, in seconds, for a quiet
#   machine before each run), NET (quickack: inside `unshare -n` with `quickack 1` loopback
#   routes, root only, as bench/sdk_backends.sh; host: the machine's loopback), NO_BUILD (1: use
#   target/release as it is).
# Needs: cargo, node >= 18 + npm (the SDK is installed once into bench/work/sdk/node, as
#   bench/sdk_backends.sh does), curl, python3, openssl >= 3 (Ed25519).
# Writes only under bench/work/credentials/: raw.jsonl (one line per run), results.md, logs/.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
WORK=bench/work/credentials
LOGS=$WORK/logs
NODE_DIR=bench/work/sdk/node
export REPS=${REPS:-3} DURATION=${DURATION:-5s} WARMUP=${WARMUP:-1s} CONNECTIONS=${CONNECTIONS:-16}
export CALLERS=${CALLERS:-16} QUIET_MAX=${QUIET_MAX:-10} NET=${NET:-quickack}
export VARIANTS=${VARIANTS:-none one many jwt}
BIN=target/release
LOAD=$BIN/examples/proxy_load
mkdir -p "$LOGS"

# start_listening, wait_healthy, wait_quiet, check_quickack, quickack_loopback, stop_started
source bench/lib.sh

if [ -z "${CREDENTIALS_BENCH_INNER:-}" ]; then
    if [ "${NO_BUILD:-0}" != 1 ]; then
        cargo build --release -p mcp-mrtr-proxy >&2
        cargo build --release -p mcp-migrate-tests --example proxy_load >&2
    fi
    ensure_node_sdk "$NODE_DIR"
    cp tests/sdk-servers/typescript/protected-server.mjs "$NODE_DIR/"
    if [ "$NET" = quickack ]; then
        check_quickack
        exec unshare -n env CREDENTIALS_BENCH_INNER=1 bash "$0"
    fi
fi
[ "$NET" = quickack ] && quickack_loopback

PIDS=()
trap stop_started EXIT
trap 'exit 130' INT TERM
START_TRIES=300

echo "net: $NET, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start, $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo ?)" >&2

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The two legacy servers.
declare -A LEGACY_URL LEGACY_PID
for server in open protected; do
    port=$(free_port)
    flags=(--open)
    [ "$server" = protected ] && flags=(--bench-tokens "$CALLERS")
    start_listening "legacy-$server" node "$NODE_DIR/protected-server.mjs" --port "$port" \
        --resource-url "http://127.0.0.1:$port/mcp" "${flags[@]}"
    LEGACY_URL[$server]=$STARTED_URL
    LEGACY_PID[$server]=$STARTED_PID
done

# Each variant's `Authorization` values (one a line), legacy server, expected `ask_name` answer.
JWT_ISSUER=https://auth.bench.example
JWT_AUDIENCE=https://mcp.bench.example/mcp
b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }
openssl genpkey -algorithm ed25519 -out "$WORK/jwt-key.pem" 2>/dev/null
x=$(openssl pkey -in "$WORK/jwt-key.pem" -pubout -outform DER | tail -c 32 | b64url)
printf '{"keys":[{"kty":"OKP","crv":"Ed25519","x":"%s","kid":"bench","alg":"EdDSA","use":"sig"}]}\n' "$x" >"$WORK/jwks.json"
: >"$WORK/authorization-jwt"
: >"$WORK/authorization-many"
header=$(printf '{"alg":"EdDSA","typ":"JWT","kid":"bench"}' | b64url)
exp=$(($(date +%s) + 86400))
for i in $(seq 0 $((CALLERS - 1))); do
    echo "Bearer bench-$i" >>"$WORK/authorization-many"
    claims=$(printf '{"iss":"%s","aud":"%s","sub":"bench-%d","exp":%d}' "$JWT_ISSUER" "$JWT_AUDIENCE" "$i" "$exp" | b64url)
    printf '%s.%s' "$header" "$claims" >"$WORK/jwt-signed"
    signature=$(openssl pkeyutl -sign -inkey "$WORK/jwt-key.pem" -rawin -in "$WORK/jwt-signed" | b64url)
    echo "Bearer $header.$claims.$signature" >>"$WORK/authorization-jwt"
done
echo "Bearer bench" >"$WORK/authorization-one"

declare -A PROXY_URL PROXY_PID SERVER_OF
KEY=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
for variant in $VARIANTS; do
    extra=()
    case $variant in
        none) SERVER_OF[$variant]=open ;;
        one | many) SERVER_OF[$variant]=protected ;;
        jwt)
            SERVER_OF[$variant]=open
            extra=(--principal jwt --jwks "$WORK/jwks.json" --issuer "$JWT_ISSUER"
                --audience "$JWT_AUDIENCE" --require-auth --authorization-server "$JWT_ISSUER")
            ;;
        *) echo "error: unknown variant $variant (none one many jwt)" >&2; exit 2 ;;
    esac
    rm -rf "$WORK/store-$variant"
    MCP_MRTR_STATE_KEY=$KEY start_listening "proxy-$variant" "$BIN/mcp-mrtr-proxy" \
        --listen 127.0.0.1:0 --store "$WORK/store-$variant" --log-level warn --batch-window 0ms \
        --upstream "${LEGACY_URL[${SERVER_OF[$variant]}]}" "${extra[@]}"
    PROXY_URL[$variant]=$STARTED_URL
    PROXY_PID[$variant]=$STARTED_PID
    wait_healthy "$STARTED_URL"
done

RAW=$WORK/raw.jsonl
: >"$RAW"

# One run: VARIANT MODE REP; prints a summary line on stderr, its JSON line (labels added) to $RAW.
measure() {
    local variant=$1 mode=$2 rep=$3 line expect='nobody: hello Alice'
    local -a credentials=()
    if [ "$variant" != none ]; then
        credentials=(--authorization-file "$WORK/authorization-$variant")
    fi
    [ "${SERVER_OF[$variant]}" = protected ] && expect='{token}: hello Alice'
    wait_quiet
    line=$("$LOAD" --mode "$mode" --url "${PROXY_URL[$variant]}" --connections "$CONNECTIONS" \
        --duration "$DURATION" --warmup "$WARMUP" "${credentials[@]}" --mrtr-expect "$expect" \
        --cpu-pid "proxy=${PROXY_PID[$variant]}" --cpu-pid "legacy=${LEGACY_PID[${SERVER_OF[$variant]}]}" \
        2>>"$LOGS/proxy_load.err")
    python3 -c '
import json, sys
r = json.loads(sys.argv[1]); r.update(variant=sys.argv[2], rep=int(sys.argv[3]))
print(json.dumps(r))
cpu = r.get("cpu", {})
print("  %-5s %-5s rep %d: %8.1f ops/s  p50 %6d us  proxy %6.1f us/op  legacy %7.1f us/op  other load %.2f cores  errors %d" % (
    r["variant"], r["mode"], r["rep"], r["ops_per_s"], r["latency_us"]["p50"],
    (cpu.get("proxy") or {}).get("us_per_op") or 0, (cpu.get("legacy") or {}).get("us_per_op") or 0,
    cpu.get("other_cores") or 0, r["errors"]), file=sys.stderr)
' "$line" "$variant" "$rep" >>"$RAW"
}

read -r -a order <<<"$VARIANTS"
for rep in $(seq "$REPS"); do
    for mode in proxy mrtr; do
        for variant in "${order[@]}"; do
            measure "$variant" "$mode" "$rep"
        done
    done
    # Rotate the order, so that no variant always runs first (or right after a mode change).
    order=("${order[@]:1}" "${order[0]}")
done
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at the end" >&2

python3 - "$RAW" "$CALLERS" "$CONNECTIONS" "$(cut -d' ' -f1-3 /proc/loadavg)" >"$WORK/results.md" <<'PY'
import json, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
callers, connections, load = sys.argv[2], sys.argv[3], sys.argv[4]
names = {"none": "none (open server)", "one": "one bearer token", "many": f"{callers} tokens",
         "jwt": f"JWT, {callers} subjects (open server)"}
modes = {"proxy": "pass-through `tools/call`", "mrtr": "pause/resume flow (2 requests)"}
variants = [v for v in names if any(r["variant"] == v for r in runs)]
def best(variant, mode):
    rows = [r for r in runs if r["variant"] == variant and r["mode"] == mode]
    cpu = [r["cpu"]["proxy"]["us_per_op"] for r in rows if ((r.get("cpu") or {}).get("proxy") or {}).get("us_per_op")]
    legacy = [r["cpu"]["legacy"]["us_per_op"] for r in rows if ((r.get("cpu") or {}).get("legacy") or {}).get("us_per_op")]
    return max(rows, key=lambda r: r["ops_per_s"]), min(cpu or [float("nan")]), min(legacy or [float("nan")]), rows
reps = len(set(r["rep"] for r in runs))
print(f"{connections} connections; best of {reps} interleaved runs (highest ops/s, lowest CPU per op); "
      f"load average at the end {load}\n")
print("| flow | credentials | ops/s | ratio | p50 µs | proxy CPU µs/op | ratio | legacy CPU µs/op | other load (cores) | errors |")
print("|---|---|---:|---:|---:|---:|---:|---:|---|---:|")
for mode in modes:
    if "none" not in variants:
        break
    base, base_cpu, _, _ = best("none", mode)
    for variant in variants:
        top, cpu, legacy, rows = best(variant, mode)
        others = [r["cpu"].get("other_cores") or 0 for r in rows if r.get("cpu")]
        print(f"| {modes[mode]} | {names[variant]} | {top['ops_per_s']:,.0f} | {top['ops_per_s'] / base['ops_per_s']:.2f} | "
              f"{top['latency_us']['p50']:,} | {cpu:.0f} | {cpu / base_cpu:.2f} | {legacy:.0f} | "
              f"{min(others):.2f}–{max(others):.2f} | {sum(r['errors'] for r in rows)} |")
PY
cat "$WORK/results.md"
