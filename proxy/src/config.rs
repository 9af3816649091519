//! Command-line configuration of `mcp-mrtr-proxy`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use crate::limits;

/// Serves MCP 2026-07-28 clients from an unmodified legacy MCP server (2025-11-25, 2025-06-18,
/// 2025-03-26), turning the legacy server's mid-call requests into `input_required` rounds.
///
/// Give the legacy server either as `--upstream URL` (legacy Streamable HTTP) or as a command
/// after `--` (a legacy stdio server, spawned and supervised by the proxy).
#[derive(Debug, Parser)]
#[command(name = "mcp-mrtr-proxy", version)]
pub struct Args {
    /// Legacy Streamable HTTP server, e.g. http://127.0.0.1:8000/mcp
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    pub upstream: Option<String>,

    /// Legacy stdio server command and arguments (after `--`)
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,

    /// Address of the 2026-07-28 Streamable HTTP front (endpoint `/mcp`)
    #[arg(long, default_value = "127.0.0.1:8787", value_name = "ADDR")]
    pub listen: SocketAddr,

    /// Serve the front on the proxy's own stdin/stdout instead of HTTP
    #[arg(long)]
    pub stdio: bool,

    /// Directory of the sled store holding paused calls (and the generated state key)
    #[arg(long, default_value = ".mcp-mrtr-proxy", value_name = "DIR")]
    pub store: PathBuf,

    /// File holding the requestState key: 32 bytes as 64 hex characters or base64
    /// (default: env MCP_MRTR_STATE_KEY, else a key generated once and kept in the store)
    #[arg(long, value_name = "FILE")]
    pub state_key_file: Option<PathBuf>,

    /// How long a paused call waits for the client's retry
    #[arg(long, default_value = "10m", value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub pause_ttl: Duration,

    /// How long to wait for more legacy requests after the first, to send them in one round
    #[arg(long, default_value = "25ms", value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub batch_window: Duration,

    /// How long a pass-through request may take on the legacy side
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub request_timeout: Duration,

    /// Most legacy lanes at once: child processes (stdio) or sessions (HTTP). With stdio, 1 means
    /// one process for everything: calls that may need input are queued one at a time
    /// [default: 4 for stdio, 32 for HTTP]
    #[arg(long, value_name = "N")]
    pub pool_size: Option<usize>,

    /// A root to answer `roots/list` with when the legacy server asks outside any call (repeatable)
    #[arg(long = "root", value_name = "URI")]
    pub roots: Vec<String>,

    /// An extra Origin allowed on the HTTP front (loopback origins are always allowed; repeatable)
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    pub allowed_origins: Vec<String>,

    /// An extra `Host` accepted on the HTTP front (repeatable). When the front listens on a
    /// loopback address only loopback hosts are accepted otherwise (DNS-rebinding protection)
    #[arg(long = "allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,

    /// Largest request body on the HTTP front (bigger: 413)
    #[arg(long, default_value_t = limits::DEFAULT_MAX_BODY_BYTES, value_name = "BYTES")]
    pub max_body_bytes: usize,

    /// Largest request head (request line and headers) on the HTTP front (bigger: 431; at least 8192)
    #[arg(long, default_value_t = limits::DEFAULT_MAX_HEADER_BYTES, value_name = "BYTES")]
    pub max_header_bytes: usize,

    /// Most header fields in one request on the HTTP front (more: 431)
    #[arg(long, default_value_t = limits::DEFAULT_MAX_HEADERS, value_name = "N")]
    pub max_headers: usize,

    /// How long a client may take to send the request head (then the connection is closed)
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub header_read_timeout: Duration,

    /// How long a client may take to send the request body (then 408)
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub body_read_timeout: Duration,

    /// Most requests served at once on the HTTP front (more: 503 with Retry-After)
    #[arg(long, default_value_t = limits::DEFAULT_MAX_CONCURRENT_REQUESTS, value_name = "N")]
    pub max_concurrent_requests: usize,

    /// Most paused calls at once (a call that would pause beyond it is cancelled with an error)
    #[arg(long, default_value_t = limits::DEFAULT_MAX_PAUSED_CALLS, value_name = "N")]
    pub max_paused_calls: usize,

    /// Most paused calls at once per principal (`Authorization` value)
    #[arg(long, default_value_t = limits::DEFAULT_MAX_PAUSED_PER_PRINCIPAL, value_name = "N")]
    pub max_paused_per_principal: usize,

    /// Most input rounds in one call (one more: the call is cancelled with an error)
    #[arg(long, default_value_t = limits::DEFAULT_MAX_ROUNDS, value_name = "N")]
    pub max_rounds: u32,

    /// Largest legacy request forwarded as one `inputRequests` entry (bigger: refused, call cancelled)
    #[arg(long, default_value_t = limits::DEFAULT_MAX_INPUT_REQUEST_BYTES, value_name = "BYTES")]
    pub max_input_request_bytes: usize,

    /// How long the legacy server may stay silent while a client waits on a tools/call,
    /// resources/read or prompts/get (any message from it restarts the clock)
    #[arg(long, default_value = "5m", value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub call_timeout: Duration,

    /// On SIGTERM/SIGINT, how long calls in flight may still run before the proxy stops
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub shutdown_grace: Duration,
}
