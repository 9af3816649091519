//! Command-line configuration of `mcp-mrtr-proxy`, optionally from a TOML file.
//!
//! `--config FILE` (or env `MCP_MRTR_PROXY_CONFIG`) names a TOML file whose top-level keys are
//! the long flags (kebab or snake case): `listen = "0.0.0.0:8787"`, `pool-size = 8`,
//! `root = ["file:///a", "file:///b"]` (arrays repeat a flag), `stdio = true` (booleans are bare
//! flags), and `command = ["legacy-server", "--stdio"]` (the legacy command after `--`). The file
//! becomes arguments placed before the real command line ([`load`]), so every flag — including
//! flags added later — works in the file without extra code; a flag given on the command line
//! wins over the file's key (`--upstream` and a command after `--` count as one setting).

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{ArgAction, CommandFactory as _, FromArgMatches as _, Parser};

use crate::limits;

/// Serves MCP 2026-07-28 clients from an unmodified legacy MCP server (2025-11-25, 2025-06-18,
/// 2025-03-26), turning the legacy server's mid-call requests into `input_required` rounds.
///
/// Give the legacy server either as `--upstream URL` (legacy Streamable HTTP) or as a command
/// after `--` (a legacy stdio server, spawned and supervised by the proxy).
#[derive(Debug, Parser)]
#[command(name = "mcp-mrtr-proxy", version, args_override_self = true)]
pub struct Args {
    /// A TOML file of flags (keys = long flag names; see mcp-mrtr-proxy.example.toml). Flags on
    /// the command line win. Env: MCP_MRTR_PROXY_CONFIG
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Legacy Streamable HTTP server, e.g. http://127.0.0.1:8000/mcp
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    pub upstream: Option<String>,

    /// The upstream's HTTP transport: `streamable-http` (2025-03-26 and later), `sse` (the
    /// HTTP+SSE transport of 2024-11-05: the URL is the SSE endpoint), or `auto` (Streamable
    /// HTTP, else HTTP+SSE when `initialize` is answered 400/404/405)
    #[arg(long, value_enum, default_value = "auto", value_name = "TRANSPORT")]
    pub upstream_transport: UpstreamTransportArg,

    /// Legacy stdio server command and arguments (after `--`)
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,

    /// Address of the 2026-07-28 Streamable HTTP front (endpoint `/mcp`)
    #[arg(long, default_value = "127.0.0.1:8787", value_name = "ADDR")]
    pub listen: SocketAddr,

    /// Serve the front on the proxy's own stdin/stdout instead of HTTP
    #[arg(long)]
    pub stdio: bool,

    /// Serve the HTTP front over TLS with this PEM certificate chain (leaf first; with
    /// --tls-key). Re-read on SIGHUP: new connections get the new certificate
    #[arg(long, value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,

    /// The PEM private key (PKCS#8, PKCS#1 or SEC1) of --tls-cert. Re-read on SIGHUP
    #[arg(long, value_name = "FILE")]
    pub tls_key: Option<PathBuf>,

    /// Where paused calls are recorded (and the generated state key): a directory (sled, one
    /// process), or `redis://HOST:PORT/DB` shared by several instances (give them all the same
    /// --state-key-file and each its --advertise URL)
    #[arg(long, default_value = ".mcp-mrtr-proxy", value_name = "DIR|redis://HOST:PORT/DB", value_parser = parse_store)]
    pub store: crate::store::StoreLocation,

    /// The base URL at which the other instances reach this one (e.g. `http://10.0.0.5:8787`):
    /// with a Redis store, a retry that lands on another instance is passed to this one when it
    /// holds the paused call
    #[arg(long, value_name = "URL", value_parser = parse_advertise)]
    pub advertise: Option<String>,

    /// File holding the requestState keys: a keyring of `ID KEY` lines (the last seals, all
    /// open; re-read on SIGHUP), or a single key (32 bytes as 64 hex characters or base64)
    /// (default: env MCP_MRTR_STATE_KEY, else a key generated once and kept in the store)
    #[arg(long, value_name = "FILE")]
    pub state_key_file: Option<PathBuf>,

    /// How long a paused call waits for the client's retry
    #[arg(long, default_value = "10m", value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub pause_ttl: Duration,

    /// How long to wait for more legacy requests after the first, to send them in one round
    #[arg(long, default_value = "100ms", value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub batch_window: Duration,

    /// How long a pass-through request may take on the legacy side
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub request_timeout: Duration,

    /// Most legacy lanes at once: child processes (stdio) or sessions (HTTP). With stdio, 1 means
    /// one process for everything: calls that may need input are queued one at a time. Lanes
    /// start on demand [default: 4 for stdio; for HTTP, --max-paused-calls + 32, so that paused
    /// calls that each need a session of their own all fit]
    #[arg(long, value_name = "N")]
    pub pool_size: Option<usize>,

    /// stdio: the most paused calls one legacy child holds while other calls run on it. A paused
    /// call's handler is blocked on its request, so a child runs one call at a time and keeps
    /// any number of paused ones; a resumption waits only for the call running on its own
    /// child. 0: a paused call keeps its child to itself (for a server that handles one
    /// request at a time)
    #[arg(long, default_value_t = limits::DEFAULT_MAX_PAUSED_PER_LANE, value_name = "N")]
    pub max_paused_per_lane: usize,

    /// Started, idle lanes (child processes or sessions) the pool keeps ready while it is below
    /// --pool-size, so that a new call never waits for one to start
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub spare_lanes: usize,

    /// Whether calls share legacy Streamable HTTP sessions: `auto` learns, per tool, whether the
    /// legacy server sends its mid-call requests on the call's own response stream (then calls
    /// share a session) or on the session's GET stream (then each call gets a session);
    /// `exclusive`: a session per call; `shared`: always share (requests on the GET stream are
    /// then declined)
    #[arg(long, value_enum, default_value_t = crate::backend::CallSessions::Auto, value_name = "MODE")]
    pub call_sessions: crate::backend::CallSessions,

    /// A lane (legacy child process or session) with nothing to do for this long is closed; the
    /// pool keeps its spare lanes (at least one lane) and starts more on demand
    #[arg(long, default_value = "5m", value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub lane_idle_timeout: Duration,

    /// Whether each caller's `Authorization` (and --forward-header headers) is sent on to an HTTP
    /// legacy server, on legacy sessions of the caller's own: `auto` once the server answered a
    /// credential-less `initialize` with 401/403 (an OAuth-protected server), `always`, `never`
    #[arg(long, value_enum, default_value = "auto", value_name = "WHEN")]
    pub forward_credentials: crate::backend::ForwardCredentials,

    /// A request header sent on to the legacy server with each caller's requests, besides
    /// `Authorization` (always sent), e.g. an API-key header (repeatable). Like
    /// `Authorization`, it names the caller: legacy sessions and paused calls are never shared
    /// between callers whose values differ
    #[arg(long = "forward-header", value_name = "NAME", value_parser = crate::credentials::parse_forward_header)]
    pub forward_headers: Vec<http::HeaderName>,

    /// Most callers with credentials that have legacy sessions of their own at once (a caller's
    /// sessions carry its credentials; one unused for --lane-idle-timeout is closed). One more
    /// caller while all have calls: HTTP 503 with Retry-After
    #[arg(long, default_value_t = crate::backend::DEFAULT_MAX_CREDENTIAL_POOLS, value_name = "N")]
    pub max_credential_pools: usize,

    /// The URL clients reach the proxy at, e.g. https://mcp.example.com/mcp: the legacy
    /// server's own origin is replaced by it in the `WWW-Authenticate` challenges and OAuth
    /// discovery documents the proxy relays
    #[arg(long, value_name = "URL")]
    pub public_url: Option<String>,

    /// What names a caller (the owner of its paused calls and legacy sessions): `digest` (of its
    /// `Authorization` and --forward-header values: a new token is a new caller) or `jwt` (the
    /// verified access token's issuer and subject: a refreshed token is the same caller; a
    /// token that does not verify gets 401 invalid_token). `jwt` needs --jwks, --issuer and
    /// --audience
    #[arg(long, value_enum, default_value = "digest", value_name = "MODE")]
    pub principal: crate::jwt::PrincipalMode,

    /// The authorization server's signing keys (a JWKS document) for --principal jwt: a file,
    /// or an http:// URL (fetched with a 10 s bound); read again when a token names a key id
    /// it does not hold (at most once per --jwks-refetch-interval) and every hour
    #[arg(long, value_name = "FILE|URL")]
    pub jwks: Option<String>,

    /// The `iss` every access token must carry (--principal jwt)
    #[arg(long, value_name = "ISSUER")]
    pub issuer: Option<String>,

    /// The `aud` every access token must include (--principal jwt), e.g. the proxy's public URL
    #[arg(long, value_name = "AUDIENCE")]
    pub audience: Option<String>,

    /// The least time between two reads of the JWKS for an unknown key id
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub jwks_refetch_interval: Duration,

    /// The proxy is the OAuth resource server (for a legacy server without auth of its own, e.g.
    /// a stdio server put online): a request to the MCP endpoint without a valid bearer token
    /// gets 401 with `WWW-Authenticate: Bearer resource_metadata=...`, and the proxy serves its
    /// own RFC 9728 metadata. Needs --principal jwt (--jwks, --issuer, --audience) and
    /// --authorization-server; the metadata names --public-url (default: the listening address)
    #[arg(long)]
    pub require_auth: bool,

    /// An authorization server clients get tokens from, listed in the proxy's protected-resource
    /// metadata (--require-auth; repeatable)
    #[arg(long = "authorization-server", value_name = "URL")]
    pub authorization_servers: Vec<String>,

    /// A scope every access token must carry, listed in the proxy's protected-resource metadata
    /// (--require-auth; repeatable; a token without it gets 403 insufficient_scope)
    #[arg(long = "scope", value_name = "SCOPE")]
    pub scopes: Vec<String>,

    /// Listen on a non-loopback address without --require-auth: the legacy server
    /// authenticates its callers itself (the proxy forwards their credentials), or the network
    /// is trusted. Without it (or --require-auth) the proxy refuses to start on such an address
    #[arg(long)]
    pub allow_unauthenticated: bool,

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

    /// Most requests served at once (more: HTTP 503 with Retry-After; on stdio the same -32000
    /// error as a JSON-RPC response)
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

    /// Threads that run the proxy (tokio workers). At ~32 µs of CPU per pass-through call (the
    /// benchmark machine) one thread has room for ~30,000 calls/s, and the other cores stay with
    /// the legacy server, which usually shares the host (a stdio backend always does); raise it
    /// when the proxy has cores of its own and more traffic than that
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..), value_name = "N")]
    pub worker_threads: u16,

    /// Which clients to serve: `both` (legacy `initialize` sessions and 2026-07-28 clients on
    /// the same endpoint), `modern-only` (legacy `initialize` refused with -32022) or
    /// `legacy-only` (2026-07-28 requests refused, so dual-era clients fall back to `initialize`)
    #[arg(long, value_enum, default_value = "both", value_name = "POLICY")]
    pub era_policy: crate::legacy_session::EraPolicy,

    /// Most legacy client sessions open at once (each holds its own legacy session, or child
    /// process with a stdio backend); one more `initialize` gets HTTP 503 with Retry-After
    #[arg(long, default_value_t = crate::legacy_session::DEFAULT_MAX_SESSIONS, value_name = "N")]
    pub max_legacy_sessions: usize,

    /// A legacy client session with no request in flight for this long ends; its client gets
    /// 404 next time and initializes again
    #[arg(long, default_value = "30m", value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub legacy_session_idle_timeout: Duration,

    /// On SIGTERM/SIGINT, how long calls in flight may still run before the proxy stops
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub shutdown_grace: Duration,

    /// Log format on stderr
    #[arg(long, value_enum, default_value = "text", value_name = "FORMAT")]
    pub log_format: crate::telemetry::LogFormat,

    /// Log filter in `tracing` EnvFilter syntax, e.g. `info` or `info,mcp_mrtr_proxy=debug`
    /// [default: env RUST_LOG, else info]
    #[arg(long, value_name = "FILTER")]
    pub log_level: Option<String>,

    /// Export traces with OpenTelemetry OTLP/HTTP (protobuf) to this URL, e.g.
    /// http://127.0.0.1:4318 (`/v1/traces` is appended unless present). Needs a build with
    /// the cargo feature `otel`
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
}

impl Args {
    /// The logging/tracing settings.
    pub fn telemetry(&self) -> crate::telemetry::TelemetrySettings {
        crate::telemetry::TelemetrySettings {
            log_format: self.log_format,
            log_level: self.log_level.clone(),
            otlp_endpoint: self.otlp_endpoint.clone(),
        }
    }
}

/// The environment variable naming a config file (`--config` wins).
pub const CONFIG_ENV: &str = "MCP_MRTR_PROXY_CONFIG";

/// `--upstream-transport` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum UpstreamTransportArg {
    Auto,
    StreamableHttp,
    Sse,
}

impl From<UpstreamTransportArg> for crate::backend::UpstreamTransport {
    fn from(arg: UpstreamTransportArg) -> Self {
        match arg {
            UpstreamTransportArg::Auto => Self::Auto,
            UpstreamTransportArg::StreamableHttp => Self::StreamableHttp,
            UpstreamTransportArg::Sse => Self::Sse,
        }
    }
}

/// Why [`load`] failed.
#[derive(Debug)]
pub enum LoadError {
    /// A command-line problem, `--help` or `--version`: print it with [`clap::Error::exit`].
    Cli(clap::Error),
    /// A config file problem (unreadable, not TOML, unknown key, bad value), with file and line.
    File(String),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Cli(error) => write!(f, "{error}"),
            LoadError::File(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for LoadError {}

/// Parses `argv` (program name first) with the config file of `--config` or `env_config`.
pub fn load<I, T>(argv: I, env_config: Option<OsString>) -> Result<Args, LoadError>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    let matches = matches_with_config(argv, env_config)?;
    Args::from_arg_matches(&matches).map_err(LoadError::Cli)
}

/// One config file key that became arguments.
#[derive(Debug)]
struct FileKey {
    key: String,
    line: usize,
}

/// [`load`] without the conversion to [`Args`] (the tests look at value sources).
pub fn matches_with_config<I, T>(
    argv: I,
    env_config: Option<OsString>,
) -> Result<clap::ArgMatches, LoadError>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    let argv: Vec<OsString> = argv.into_iter().map(Into::into).collect();
    let command = Args::command();
    let Some(path) = config_path(&argv).or(env_config.filter(|path| !path.is_empty())) else {
        return command.try_get_matches_from(argv).map_err(LoadError::Cli);
    };
    let path = PathBuf::from(path);
    let text = std::fs::read_to_string(&path).map_err(|error| {
        LoadError::File(format!(
            "cannot read the config file {}: {error}",
            path.display()
        ))
    })?;
    let cli = CliFlags::scan(&argv);
    let (file_args, trailing, keys) = file_arguments(&text, &path, &cli)?;
    let mut merged = Vec::with_capacity(argv.len() + file_args.len() + trailing.len() + 1);
    merged.extend(argv.first().cloned());
    merged.extend(file_args);
    merged.extend(argv.iter().skip(1).cloned());
    if !trailing.is_empty() {
        merged.push("--".into());
        merged.extend(trailing);
    }
    command.try_get_matches_from(merged).map_err(|error| {
        // A value that came from the file: say which key and line.
        use clap::error::{ContextKind, ContextValue};
        let arg = match error.get(ContextKind::InvalidArg) {
            Some(ContextValue::String(arg)) => Some(arg.clone()),
            Some(ContextValue::Strings(args)) => args.first().cloned(),
            _ => None,
        };
        let from_file = arg.as_deref().and_then(|arg| {
            let name = arg.strip_prefix("--")?;
            let name = name.split([' ', '=']).next()?;
            keys.get(name)
        });
        match from_file {
            Some(key) => {
                let rendered = error.to_string();
                let first = rendered
                    .split("\n\n")
                    .next()
                    .unwrap_or(&rendered)
                    .trim_start_matches("error: ")
                    .trim();
                LoadError::File(format!(
                    "{}:{}: key `{}`: {first}",
                    path.display(),
                    key.line,
                    key.key
                ))
            }
            None => LoadError::Cli(error),
        }
    })
}

/// The value of `--config FILE` / `--config=FILE` on the command line (before `--`).
fn config_path(argv: &[OsString]) -> Option<OsString> {
    let mut args = argv.iter().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--" {
            return None;
        }
        if arg == "--config" {
            return args.next().cloned();
        }
        if let Some(value) = arg.to_str().and_then(|arg| arg.strip_prefix("--config=")) {
            return Some(value.into());
        }
    }
    None
}

/// The long flags given on the command line (before `--`), and whether a command follows `--`.
#[derive(Debug, Default)]
struct CliFlags {
    longs: BTreeSet<String>,
    command: bool,
}

impl CliFlags {
    fn scan(argv: &[OsString]) -> Self {
        let mut flags = CliFlags::default();
        let mut args = argv.iter().skip(1);
        while let Some(arg) = args.next() {
            if arg == "--" {
                flags.command = args.next().is_some();
                break;
            }
            if let Some(name) = arg.to_str().and_then(|arg| arg.strip_prefix("--")) {
                let name = name.split('=').next().unwrap_or(name);
                flags.longs.insert(name.to_owned());
            }
        }
        flags
    }

    /// Whether the command line sets what the file key `long` sets.
    fn overrides(&self, long: &str) -> bool {
        match long {
            // One setting: the legacy server.
            "upstream" | "command" => self.command || self.longs.contains("upstream"),
            _ => self.longs.contains(long),
        }
    }
}

/// How a flag takes values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Switch,
    Single,
    Repeated,
}

/// The long flags a config file may set: `long name → kind` (`--config`, `--help` and
/// `--version` excluded).
fn settable_flags() -> BTreeMap<String, Kind> {
    Args::command()
        .get_arguments()
        .filter_map(|arg| {
            let long = arg.get_long()?;
            if matches!(long, "config" | "help" | "version") {
                return None;
            }
            let kind = match arg.get_action() {
                ArgAction::SetTrue | ArgAction::SetFalse | ArgAction::Count => Kind::Switch,
                ArgAction::Append => Kind::Repeated,
                _ => Kind::Single,
            };
            Some((long.to_owned(), kind))
        })
        .collect()
}

type FileArguments = (Vec<OsString>, Vec<OsString>, BTreeMap<String, FileKey>);

/// The arguments a config file stands for: `(flags, command after --, long name → key)`.
fn file_arguments(text: &str, path: &Path, cli: &CliFlags) -> Result<FileArguments, LoadError> {
    let doc = toml_edit::ImDocument::parse(text).map_err(|error| {
        LoadError::File(format!(
            "{} is not valid TOML: {}",
            path.display(),
            error.to_string().trim_end()
        ))
    })?;
    let flags = settable_flags();
    let line_of = |span: Option<std::ops::Range<usize>>| {
        span.map_or(0, |span| {
            text[..span.start.min(text.len())].matches('\n').count() + 1
        })
    };
    let mut args = Vec::new();
    let mut trailing = Vec::new();
    let mut keys = BTreeMap::new();
    for (key, item) in doc.as_table().iter() {
        let line = line_of(doc.as_table().key(key).and_then(|key| key.span()));
        let at = |message: String| {
            LoadError::File(format!("{}:{line}: key `{key}`: {message}", path.display()))
        };
        let long = key.replace('_', "-");
        if long == "config" {
            return Err(at("a config file cannot name another config file".into()));
        }
        let kind = if long == "command" {
            None
        } else {
            match flags.get(&long) {
                Some(kind) => Some(*kind),
                None => {
                    let known: Vec<&str> = flags.keys().map(String::as_str).collect();
                    return Err(at(format!(
                        "unknown key; the keys are the long flags of `mcp-mrtr-proxy --help` and `command`: {}",
                        known.join(", ")
                    )));
                }
            }
        };
        if keys.contains_key(&long) {
            return Err(at(
                "given twice (kebab and snake case name the same flag)".into()
            ));
        }
        keys.insert(
            long.clone(),
            FileKey {
                key: key.to_owned(),
                line,
            },
        );
        if cli.overrides(&long) {
            continue;
        }
        let Some(value) = item.as_value() else {
            return Err(at("expected a value, not a table".into()));
        };
        match kind {
            None => {
                let Some(array) = value.as_array() else {
                    return Err(at(
                        "expected an array of strings: [\"program\", \"arg\", ...]".into(),
                    ));
                };
                for element in array.iter() {
                    let Some(part) = element.as_str() else {
                        return Err(at("expected an array of strings".into()));
                    };
                    trailing.push(part.into());
                }
            }
            Some(Kind::Switch) => match value.as_bool() {
                Some(true) => args.push(format!("--{long}").into()),
                Some(false) => {}
                None => return Err(at("expected true or false".into())),
            },
            Some(Kind::Single) => {
                let scalar = scalar(value).map_err(|message| at(message.into()))?;
                args.push(format!("--{long}={scalar}").into());
            }
            Some(Kind::Repeated) => {
                let values: Vec<&toml_edit::Value> = match value.as_array() {
                    Some(array) => array.iter().collect(),
                    None => vec![value],
                };
                for value in values {
                    let scalar = scalar(value).map_err(|message| at(message.into()))?;
                    args.push(format!("--{long}={scalar}").into());
                }
            }
        }
    }
    Ok((args, trailing, keys))
}

/// A string, number, boolean or date as the flag's text.
fn scalar(value: &toml_edit::Value) -> Result<String, &'static str> {
    use toml_edit::Value;
    match value {
        Value::String(s) => Ok(s.value().clone()),
        Value::Integer(i) => Ok(i.value().to_string()),
        Value::Float(f) => Ok(f.value().to_string()),
        Value::Boolean(b) => Ok(b.value().to_string()),
        Value::Datetime(d) => Ok(d.value().to_string()),
        Value::Array(_) => Err("expected a single value, not an array"),
        Value::InlineTable(_) => Err("expected a value, not a table"),
    }
}

fn parse_store(text: &str) -> Result<crate::store::StoreLocation, String> {
    if text.is_empty() {
        return Err("give a directory or redis://HOST:PORT/DB".to_owned());
    }
    Ok(crate::store::StoreLocation::parse(text))
}

fn parse_advertise(text: &str) -> Result<String, String> {
    let url = url::Url::parse(text).map_err(|error| format!("not a URL: {error}"))?;
    if url.scheme() != "http" || url.host_str().is_none() {
        return Err("give an http:// URL with a host, e.g. http://10.0.0.5:8787".to_owned());
    }
    Ok(text.trim_end_matches('/').to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A valid value for a flag without a default, by its value name.
    fn sample(value_name: &str) -> Option<&'static str> {
        Some(match value_name {
            "URL" => "http://127.0.0.1:9/mcp",
            "ADDR" => "127.0.0.1:9",
            "DIR" | "FILE" => "/tmp/mcp-mrtr-proxy-test",
            "DURATION" => "3s",
            "N" | "COUNT" | "BYTES" | "SIZE" => "3",
            "URI" => "file:///tmp",
            "ORIGIN" => "https://app.example.com",
            "HOST" => "proxy.example.com",
            "FILTER" => "debug",
            "NAME" => "X-Api-Key",
            "FILE|URL" => "/tmp/jwks.json",
            "ISSUER" => "https://auth.example.com",
            "AUDIENCE" => "https://mcp.example.com/mcp",
            "SCOPE" => "mcp:tools",
            _ => return None,
        })
    }

    /// `(long, TOML value)` for every settable flag, with a non-default value where possible.
    fn every_flag() -> Vec<(String, String, String)> {
        Args::command()
            .get_arguments()
            .filter_map(|arg| {
                let long = arg.get_long()?.to_owned();
                if matches!(long.as_str(), "config" | "help" | "version") {
                    return None;
                }
                let id = arg.get_id().to_string();
                if matches!(arg.get_action(), ArgAction::SetTrue) {
                    return Some((id, long, "true".to_owned()));
                }
                let value_name = arg
                    .get_value_names()
                    .and_then(|names| names.first())
                    .map(|name| name.to_string())
                    .unwrap_or_default();
                let value = sample(&value_name)
                    .map(str::to_owned)
                    .or_else(|| {
                        arg.get_possible_values()
                            .last()
                            .map(|value| value.get_name().to_owned())
                    })
                    .or_else(|| {
                        arg.get_default_values()
                            .first()
                            .map(|value| value.to_string_lossy().into_owned())
                    })
                    .unwrap_or_else(|| {
                        panic!("--{long}: add a sample value for value name `{value_name}` to config::tests::sample")
                    });
                let value = toml_edit::Value::from(value).to_string();
                let value = if matches!(arg.get_action(), ArgAction::Append) {
                    format!("[{value}]")
                } else {
                    value
                };
                Some((id, long, value))
            })
            .collect()
    }

    fn write(dir: &tempfile::TempDir, text: &str) -> PathBuf {
        let path = dir.path().join("proxy.toml");
        std::fs::write(&path, text).unwrap();
        path
    }

    fn file_error(result: Result<clap::ArgMatches, LoadError>) -> String {
        match result {
            Err(LoadError::File(message)) => message,
            other => panic!("expected a config file error, got {other:?}"),
        }
    }

    #[test]
    fn every_long_flag_is_accepted_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let flags = every_flag();
        assert!(flags.len() >= 10, "{flags:?}");
        for (id, long, value) in &flags {
            for key in [long.clone(), long.replace('-', "_")] {
                let path = write(&dir, &format!("{key} = {value}\n"));
                let matches = matches_with_config(
                    ["mcp-mrtr-proxy", "--config", path.to_str().unwrap()],
                    None,
                )
                .unwrap_or_else(|error| panic!("{key} = {value}: {error}"));
                assert_eq!(
                    matches.value_source(id),
                    Some(clap::parser::ValueSource::CommandLine),
                    "{key} = {value} did not set --{long}"
                );
            }
        }
    }

    #[test]
    fn values_arrays_switches_and_command() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            &dir,
            "listen = \"127.0.0.1:9999\"\npool_size = 7\nroot = [\"file:///a\", \"file:///b\"]\nstdio = true\npause-ttl = \"2m\"\ncommand = [\"legacy\", \"--flag\", \"-x\"]\n",
        );
        let args = load(["mcp-mrtr-proxy"], Some(path.clone().into())).unwrap();
        assert_eq!(args.listen, "127.0.0.1:9999".parse().unwrap());
        assert_eq!(args.pool_size, Some(7));
        assert_eq!(args.roots, ["file:///a", "file:///b"]);
        assert!(args.stdio);
        assert_eq!(args.pause_ttl, Duration::from_secs(120));
        assert_eq!(args.command, ["legacy", "--flag", "-x"]);
        let args = load(
            [
                "mcp-mrtr-proxy",
                "--config",
                path.to_str().unwrap(),
                "--upstream",
                "http://h/mcp",
            ],
            None,
        )
        .unwrap();
        assert_eq!(args.upstream.as_deref(), Some("http://h/mcp"));
        assert!(args.command.is_empty(), "the command line's backend wins");
        let path = write(&dir, "stdio = false\n");
        assert!(
            !load(["x", "--config", path.to_str().unwrap()], None)
                .unwrap()
                .stdio
        );
    }

    #[test]
    fn the_command_line_wins() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            &dir,
            "pool-size = 7\nroot = [\"file:///a\"]\nbatch-window = \"1s\"\n",
        );
        let path = path.to_str().unwrap();
        let args = load(
            [
                "mcp-mrtr-proxy",
                "--pool-size",
                "2",
                "--config",
                path,
                "--root=file:///c",
            ],
            None,
        )
        .unwrap();
        assert_eq!(args.pool_size, Some(2));
        assert_eq!(args.roots, ["file:///c"]);
        assert_eq!(args.batch_window, Duration::from_secs(1));
        // --config beats the environment variable.
        let other = write(&tempfile::tempdir().unwrap(), "pool-size = 9\n");
        let args = load(["mcp-mrtr-proxy", "--config", path], Some(other.into())).unwrap();
        assert_eq!(args.pool_size, Some(7));
    }

    #[test]
    fn bad_files_are_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let run = |text: &str| {
            let path = write(&dir, text);
            file_error(matches_with_config(
                ["mcp-mrtr-proxy", "--config", path.to_str().unwrap()],
                None,
            ))
        };
        let unknown = run("listen = \"127.0.0.1:1\"\n\npool-sise = 3\n");
        assert!(
            unknown.contains("proxy.toml:3: key `pool-sise`: unknown key")
                && unknown.contains("pool-size"),
            "{unknown}"
        );
        let bad = run("# comment\npause-ttl = \"soon\"\n");
        assert!(bad.contains("proxy.toml:2: key `pause-ttl`"), "{bad}");
        assert!(bad.contains("soon"), "{bad}");
        let bad = run("pool-size = \"many\"\n");
        assert!(
            bad.contains(":1: key `pool-size`") && bad.contains("many"),
            "{bad}"
        );
        let bad = run("stdio = \"yes\"\n");
        assert!(bad.contains("expected true or false"), "{bad}");
        let bad = run("listen = [\"a\", \"b\"]\n");
        assert!(bad.contains("not an array"), "{bad}");
        let bad = run("[server]\nlisten = \"x\"\n");
        assert!(bad.contains("key `server`"), "{bad}");
        let bad = run("listen = \n");
        assert!(bad.contains("not valid TOML"), "{bad}");
        let bad = run("config = \"other.toml\"\n");
        assert!(bad.contains("another config file"), "{bad}");
        let bad = run("pool-size = 1\npool_size = 2\n");
        assert!(bad.contains("given twice"), "{bad}");
        let missing = file_error(matches_with_config(
            ["mcp-mrtr-proxy", "--config", "/nonexistent/proxy.toml"],
            None,
        ));
        assert!(
            missing.contains("cannot read the config file /nonexistent/proxy.toml"),
            "{missing}"
        );
        // A bad value on the command line stays a command-line error.
        let path = write(&dir, "pool-size = 3\n");
        let cli = matches_with_config(
            [
                "mcp-mrtr-proxy",
                "--config",
                path.to_str().unwrap(),
                "--pause-ttl",
                "soon",
            ],
            None,
        );
        assert!(matches!(cli, Err(LoadError::Cli(_))), "{cli:?}");
    }

    const EXAMPLE: &str = include_str!("../mcp-mrtr-proxy.example.toml");

    /// Keys set or shown commented out (`# key = value`) in the example file.
    fn example_keys() -> BTreeSet<String> {
        EXAMPLE
            .lines()
            .filter_map(|line| {
                let line = line.trim();
                let line = line.strip_prefix('#').map_or(line, str::trim_start);
                let (key, _) = line.split_once(" = ")?;
                key.chars()
                    .all(|c| c.is_ascii_lowercase() || c == '-' || c == '_')
                    .then(|| key.to_owned())
            })
            .collect()
    }

    #[test]
    fn the_example_file_lists_every_flag_with_its_default() {
        let mut expected: BTreeSet<String> = settable_flags().into_keys().collect();
        expected.insert("command".into());
        assert_eq!(
            example_keys(),
            expected,
            "mcp-mrtr-proxy.example.toml must list every flag"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = write(&dir, EXAMPLE);
        let mut from_file = load(["mcp-mrtr-proxy", "--config", path.to_str().unwrap()], None)
            .unwrap_or_else(|error| panic!("the example does not load: {error}"));
        from_file.config = None;
        let defaults = Args::try_parse_from(["mcp-mrtr-proxy"]).unwrap();
        assert_eq!(
            format!("{from_file:?}"),
            format!("{defaults:?}"),
            "the example's active keys must be the defaults"
        );
    }
}
