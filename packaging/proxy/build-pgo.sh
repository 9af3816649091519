#!/usr/bin/env bash
# A profile-guided (PGO) release build of mcp-mrtr-proxy: the same code and flags as
# `cargo build --release`, laid out and inlined by LLVM for the paths a proxy actually runs.
#
#   1. an instrumented build (`-Cprofile-generate`) in TARGET/pgo-generate;
#   2. a training load against the workspace's own legacy server (the rmcp conformance server,
#      tests/conformance-server, over Streamable HTTP): 2026-07-28 pass-through calls, pause/resume
#      rounds (`input_required`, then the retry) and a legacy client's session, each under wrk;
#   3. the counts merged with the toolchain's own llvm-profdata (rustup component llvm-tools,
#      added when missing: a profile must come from the LLVM that reads it);
#   4. the optimized build (`-Cprofile-use`) in TARGET/pgo-use, copied to TARGET/pgo/mcp-mrtr-proxy.
#
# The training never meets the benchmark's legacy servers (TypeScript, Python): what the profile
# learns is the proxy's own paths. Figures: bench/proxy-vs-nginx.md ("2026-12-06 (8)").
#
# Usage: bash packaging/proxy/build-pgo.sh      (prints the binary's path last)
# Environment: TRAIN_SECONDS (5: seconds of load per workload), CONNECTIONS (16),
#   CARGO_TARGET_DIR (target).
# Needs cargo and rustup, curl, and wrk (installed with apt-get when missing, as root or with sudo).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT=$PWD
TARGET=${CARGO_TARGET_DIR:-target}
case $TARGET in /*) ;; *) TARGET=$ROOT/$TARGET ;; esac
TRAIN_SECONDS=${TRAIN_SECONDS:-5}
CONNECTIONS=${CONNECTIONS:-16}
WORK=$TARGET/pgo-work
LOGS=$WORK/logs
LEGACY_VERSION=2025-06-18
rm -rf "$WORK"
mkdir -p "$LOGS" "$TARGET/pgo"
source bench/lib.sh # start_listening, wait_healthy, open_legacy_session, stop_started

say() { echo "build-pgo: $*" >&2; }

# ----- tools ---------------------------------------------------------------------------------
host=$(rustc -vV | sed -n 's/^host: //p')
profdata=$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata
if [ ! -x "$profdata" ]; then
    say "adding the llvm-tools component (llvm-profdata)"
    rustup component add llvm-tools >&2
fi
if ! command -v wrk >/dev/null; then
    sudo=()
    [ "$(id -u)" -ne 0 ] && sudo=(sudo)
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq wrk >&2
fi

# ----- 1. the instrumented build, and the training peer ----------------------------------------
say "building the legacy server the training runs against"
cargo build --release --locked -p mcp-legacy-conformance-server >&2
# `--target`: the flags then reach the proxy and its dependencies only, not the build scripts and
# proc macros that run while it compiles (they would write profiles of their own).
say "building the instrumented proxy"
RUSTFLAGS="-Cprofile-generate=$WORK/profiles" CARGO_TARGET_DIR=$TARGET/pgo-generate \
    cargo build --release --locked --target "$host" -p mcp-mrtr-proxy >&2

# ----- 2. the training load --------------------------------------------------------------------
PIDS=()
trap stop_started EXIT
start_listening legacy "$TARGET/release/mcp-legacy-conformance-server" --transport http --listen 127.0.0.1:0
legacy_url=$STARTED_URL
start_listening proxy "$TARGET/pgo-generate/$host/release/mcp-mrtr-proxy" --listen 127.0.0.1:0 \
    --store "$WORK/store" --upstream "$legacy_url"
proxy_pid=$STARTED_PID
proxy_url=$STARTED_URL
wait_healthy "$proxy_url"

export WRK_LUA_DIR=$ROOT/bench/wrk MCP_LEGACY_VERSION=$LEGACY_VERSION
train() { # LUA_SCRIPT: one workload, every answer checked
    local out
    out=$(wrk -t 2 -c "$CONNECTIONS" -d "${TRAIN_SECONDS}s" --timeout 10s -s "bench/wrk/$1" "$proxy_url")
    echo "$out" | sed -n 's/^RESULT //p' | python3 -c '
import json, sys
r = json.load(sys.stdin)
if r["bad"] or not r["calls_ok"]:
    sys.exit(f"error: the training load {sys.argv[1]} was answered wrongly: {r}")
print("build-pgo: trained on %s: %d checked calls" % (sys.argv[1], r["calls_ok"]), file=sys.stderr)
' "$1"
}
train front_echo.lua         # 2026-07-28 tools/call, passed through
train front_input_round.lua  # input_required, then the retry that resumes the paused call
MCP_SESSION_ID=$(open_legacy_session "$proxy_url" build_pgo)
export MCP_SESSION_ID
train legacy_echo.lua        # a legacy client's session, served on the same endpoint

# The counts are written when the process exits: stop it as a service manager would.
kill -TERM "$proxy_pid"
for _ in $(seq 100); do kill -0 "$proxy_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$proxy_pid" 2>/dev/null; then
    echo "error: the instrumented proxy did not exit on SIGTERM; see $LOGS/proxy.err" >&2
    exit 1
fi

# ----- 3. the merged profile ---------------------------------------------------------------------
shopt -s nullglob
raw=("$WORK"/profiles/*.profraw)
[ ${#raw[@]} -gt 0 ] || { echo "error: the instrumented proxy wrote no profile" >&2; exit 1; }
"$profdata" merge -o "$WORK/merged.profdata" "${raw[@]}"

# ----- 4. the optimized build ----------------------------------------------------------------------
say "building the proxy with the profile"
RUSTFLAGS="-Cprofile-use=$WORK/merged.profdata -Cllvm-args=-pgo-warn-missing-function=false" \
    CARGO_TARGET_DIR=$TARGET/pgo-use cargo build --release --locked --target "$host" -p mcp-mrtr-proxy >&2
cp "$TARGET/pgo-use/$host/release/mcp-mrtr-proxy" "$TARGET/pgo/mcp-mrtr-proxy"
echo "$TARGET/pgo/mcp-mrtr-proxy"
