# Helpers shared by the proxy's load benchmarks (sourced by proxy_load.sh and sdk_backends.sh).
# They use the caller's LOGS (a folder) and PIDS (an array of the processes to stop on exit).

# Starts "$@" in the background with stdout to $1.out / stderr to $1.err (first arg = log name);
# waits (START_TRIES x 0.1 s, default 100) for its "listening on URL" line; sets STARTED_PID and
# STARTED_URL.
start_listening() {
    local name=$1
    shift
    # Truncate first: the background child opens its files only after the fork, and a stale
    # "listening on" line of an earlier run must not be read meanwhile.
    : >"$LOGS/$name.out"
    "$@" >"$LOGS/$name.out" 2>"$LOGS/$name.err" &
    STARTED_PID=$!
    PIDS+=("$STARTED_PID")
    STARTED_URL=
    for _ in $(seq "${START_TRIES:-100}"); do
        STARTED_URL=$(sed -n 's/^listening on //p' "$LOGS/$name.out")
        [ -n "$STARTED_URL" ] && return 0
        kill -0 "$STARTED_PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "error: $name did not start; its stderr:" >&2
    tail -20 "$LOGS/$name.err" >&2
    exit 1
}

# Waits until the proxy at URL (…/mcp) answers GET /healthz with 200.
wait_healthy() {
    local base=${1%/mcp}
    for _ in $(seq 100); do
        if curl -fsS -o /dev/null "$base/healthz" 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    echo "error: $base/healthz never answered 200" >&2
    exit 1
}
