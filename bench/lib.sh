# Helpers shared by the benchmarks: the proxy's load benchmarks (proxy_load.sh, sdk_backends.sh,
# credentials.sh and the proxy-vs-nginx scripts: start_listening, wait_healthy, busy_cores,
# wait_quiet, check_quickack, quickack_loopback, open_legacy_session, which use the caller's
# LOGS, a folder, and PIDS, an array of the processes to stop on exit) and the linter's
# real-project benchmarks (lint-real-projects.sh and lint-typescript.sh: lint_bench_setup).

# The setup of a linter benchmark against ripgrep: installs ripgrep and hyperfine if missing,
# builds the linter (release) and times a copy of it, so that other builds in this checkout do
# not swap the binary mid-run. Run from the repository root; sets LINT (the copy's path).
lint_bench_setup() {
    local sudo= missing=()
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    command -v rg >/dev/null || missing+=(ripgrep)
    command -v hyperfine >/dev/null || missing+=(hyperfine)
    if [ ${#missing[@]} -gt 0 ]; then
        $sudo apt-get install -y "${missing[@]}" || { $sudo apt-get update && $sudo apt-get install -y "${missing[@]}"; }
    fi
    mkdir -p bench/work/bin
    cargo build --release -p cargo-mcp-lint
    cp "${CARGO_TARGET_DIR:-target}/release/cargo-mcp-lint" bench/work/bin/cargo-mcp-lint
    LINT=bench/work/bin/cargo-mcp-lint
}

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

# Busy cores of the whole machine over one second (/proc/stat; idle and iowait excluded).
busy_cores() {
    local a b
    a=$(head -1 /proc/stat)
    sleep 1
    b=$(head -1 /proc/stat)
    awk -v a="$a" -v b="$b" 'BEGIN {
        split(a, x); split(b, y); busy = 0
        for (i = 2; i <= 9; i++) if (i != 5 && i != 6) busy += y[i] - x[i]
        printf "%.2f", busy / 100 }'
}

# This machine is shared: before each run, wait (at most QUIET_MAX seconds, default 300) until
# the rest of the machine is quiet (< 0.15 busy cores while our servers idle). Each run records
# the foreign load it still saw (`cpu.other_cores`), shown in the results table.
wait_quiet() {
    local waited=0 busy
    while :; do
        busy=$(busy_cores)
        awk -v b="$busy" 'BEGIN { exit !(b < 0.15) }' && return 0
        if [ "$waited" -ge "${QUIET_MAX:-300}" ]; then
            echo "  (machine still busy: $busy cores used by others; measuring anyway)" >&2
            return 0
        fi
        [ "$waited" = 0 ] && echo "  (waiting for the machine to be quiet: $busy cores busy)" >&2
        waited=$((waited + 1))
    done
}

# NET=quickack needs root, unshare and ip: exits with an error otherwise.
check_quickack() {
    if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null || ! command -v ip >/dev/null; then
        echo "error: NET=quickack needs root, unshare and ip (or run with NET=host)" >&2
        exit 2
    fi
}

# Inside `unshare -n`: the loopback up, with `quickack 1` on its routes (ACK at once instead of
# delaying up to 40 ms).
quickack_loopback() {
    ip link set lo up
    ip route change local 127.0.0.0/8 dev lo table local proto kernel scope host src 127.0.0.1 quickack 1
    ip route change local 127.0.0.1 dev lo table local proto kernel scope host src 127.0.0.1 quickack 1
}

# Opens an initialized legacy session on the Streamable HTTP server at URL (`initialize` with
# protocol version LEGACY_VERSION, then `notifications/initialized`), as the legacy-wire fronts
# of the proxy-vs-nginx benchmarks share one; prints its Mcp-Session-Id. NAME: the clientInfo name.
open_legacy_session() {
    local url=$1 name=$2 headers session
    headers=$(curl -fsS -D - -o /dev/null -H 'Content-Type: application/json' \
        -H 'Accept: application/json, text/event-stream' \
        -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"'"$LEGACY_VERSION"'","capabilities":{},"clientInfo":{"name":"'"$name"'","version":"0"}}}' "$url")
    session=$(echo "$headers" | tr -d '\r' | sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: //p')
    [ -n "$session" ] || { echo "error: no Mcp-Session-Id from $url" >&2; exit 1; }
    curl -fsS -o /dev/null -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
        -H "Mcp-Session-Id: $session" -H "Mcp-Protocol-Version: $LEGACY_VERSION" \
        -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$url"
    echo "$session"
}

# The TypeScript SDK the legacy servers of the proxy benchmarks run on (the tests' version),
# installed into DIR (node_modules) unless it is there already.
ensure_node_sdk() {
    local dir=$1
    if [ ! -f "$dir/node_modules/@modelcontextprotocol/sdk/package.json" ]; then
        npm install --silent --no-audit --no-fund --prefix "$dir" '@modelcontextprotocol/sdk@1.32.2' >&2
    fi
}

# Stops the processes in PIDS (TERM, half a second, then KILL): a benchmark's EXIT trap.
stop_started() {
    local pid
    for pid in "${PIDS[@]:-}"; do [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true; done
    sleep 0.5
    for pid in "${PIDS[@]:-}"; do [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true; done
}

# The nginx configuration of the proxy benchmarks (bench/proxy-vs-nginx.md), on stdout:
# one worker, upstream keep-alive, `proxy_buffering off`, every path under DIR.
# Usage: nginx_conf DIR UPSTREAM_HOSTPORT PORT [MAIN_DIRECTIVE...] (e.g. "master_process off;")
nginx_conf() {
    local dir=$1 upstream=$2 port=$3 directive
    shift 3
    echo "worker_processes 1;"
    for directive in "$@"; do echo "$directive"; done
    cat <<EOF_NGINX
daemon off;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $dir/client_body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
    keepalive_requests 1000000;
    upstream legacy {
        server $upstream;
        keepalive 128;
        keepalive_requests 1000000;
    }
    server {
        listen 127.0.0.1:$port;
        location / {
            proxy_pass http://legacy;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$http_host;
            proxy_buffering off;
        }
    }
}
EOF_NGINX
}
