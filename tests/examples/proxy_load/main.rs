//! Closed-loop load generator for `mcp-mrtr-proxy` and the legacy fixture server behind it.
//!
//! ```text
//! cargo run --release -p mcp-migrate-tests --example proxy_load -- \
//!     --mode direct|direct-elicit|proxy|mrtr --url URL[,URL...] [--retry-url URL[,URL...]] \
//!     [--connections 16] [--duration 10s] [--warmup 2s] [--timeout 10s]
//! ```
//!
//! Several `--url`s (proxy instances sharing a Redis store): connection `i` sends to the
//! `i`-th URL, round robin. `--retry-url`: the `mrtr` retry goes there instead (connection `i`
//! to the `i`-th), e.g. another instance than the one that paused the call.
//!
//! Modes:
//! - `direct`: legacy 2025-11-25 Streamable HTTP straight to the legacy server; each connection
//!   initializes its own session first, then sends `tools/call echo` back to back.
//!   With `--get-stream 1` each session also keeps its standalone GET stream open (as SDK
//!   clients and the proxy's lanes do); with `--progress-token 1` each call carries
//!   `_meta.progressToken` (as the proxy forwards every call).
//! - `direct-elicit`: legacy `ask_name` straight to the legacy server, answered like a legacy
//!   client does: the `tools/call` POST (SSE response kept open), the `elicitation/create` read
//!   from the session's standalone GET stream (where rmcp 2.2 sends it), the answer POSTed
//!   (202), then the result read from the first POST's SSE stream. One flow = one op; the
//!   latency is also split into "POST sent → elicitation received" and "elicitation received →
//!   result received" (the latter includes POSTing the answer).
//! - `proxy`: 2026-07-28 `tools/call echo` through the proxy. Each connection first makes one
//!   untimed call, all connections at once, as `direct` connections first initialize: the proxy
//!   starts its legacy sessions on demand, and their start-up is not what a run measures.
//! - `mrtr`: the whole 2026-07-28 `ask_name` flow through the proxy: the first request (answered
//!   `input_required`) and the retry with `inputResponses` + `requestState` (answered with the
//!   result). One flow = one op; the latency of each of the two requests is recorded too.
//! - `--authorization VALUE` / `--authorization-file FILE`: the `Authorization` header of every
//!   request (one caller), or of connection `i` (line `i mod lines`: many callers);
//!   `--mrtr-tool NAME` / `--mrtr-expect TEXT`: the tool of the `mrtr` flow and its answer, for
//!   legacy servers other than the fixture server (see `callers.rs`).
//! - `--hold-paused N` (with `proxy`): before the run, N `test_elicitation` calls are paused and
//!   never retried, so the run measures the calls that come behind paused ones (how many
//!   paused: `paused_held` in the output).
//! - `stdio-direct` / `stdio` (`--command 'CMD ARGS...'` instead of `--url`): `tools/call echo`
//!   over the stdio of one process the load generator starts: the legacy server itself
//!   (legacy, after one `initialize`) or a stdio MRTR bridge in front of it (2026-07-28); the
//!   connections are concurrent requests on its one pipe (see `stdio.rs`), and its CPU (and that
//!   of the processes it started, as `backend`) is sampled.
//!
//! Every connection is one task with its own HTTP/1.1 keep-alive `reqwest` client that sends
//! its requests back to back (closed loop). `direct-elicit` needs three HTTP connections per
//! task (the GET stream, the open `tools/call` POST and the answer POST); they all come from the
//! task's own client. Requests that start during the warm-up are not recorded. Every latency of
//! the measured window is kept (microseconds, one `Vec` per task, merged at the end).
//!
//! Output: one JSON line on stdout with ops/s, p50/p90/p99/max/mean and the error count. Any
//! non-success (HTTP status, JSON-RPC error, `isError: true`, unexpected result, timeout) counts
//! as an error; the first error is printed to stderr. After an error the task waits 10 ms before
//! its next op, so a dead peer is not hammered in a hot loop. The run always ends by itself:
//! warm-up + duration, plus at most one op timeout per task.

use std::time::{Duration, Instant};

use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, CONTENT_TYPE};
use reqwest::{Client, Response, StatusCode};
use serde_json::{json, Value};
use tokio::sync::{mpsc, Barrier};

mod callers;
mod stdio;

const FRONT_VERSION: &str = "2026-07-28";
const LEGACY_VERSION: &str = "2025-11-25";
const ACCEPT_BOTH: &str = "application/json, text/event-stream";
const ERROR_PAUSE: Duration = Duration::from_millis(10);
/// Longest accepted error body excerpt on stderr.
const MAX_ERROR_CHARS: usize = 2000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Direct,
    DirectElicit,
    Proxy,
    Mrtr,
    Stdio,
    StdioDirect,
}

impl Mode {
    fn parse(text: &str) -> Result<Self, String> {
        match text {
            "direct" => Ok(Mode::Direct),
            "direct-elicit" => Ok(Mode::DirectElicit),
            "proxy" => Ok(Mode::Proxy),
            "mrtr" => Ok(Mode::Mrtr),
            "stdio" => Ok(Mode::Stdio),
            "stdio-direct" => Ok(Mode::StdioDirect),
            other => Err(format!(
                "unknown mode `{other}` (direct, direct-elicit, proxy, mrtr, stdio, stdio-direct)"
            )),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mode::Direct => "direct",
            Mode::DirectElicit => "direct-elicit",
            Mode::Proxy => "proxy",
            Mode::Mrtr => "mrtr",
            Mode::Stdio => "stdio",
            Mode::StdioDirect => "stdio-direct",
        }
    }

    /// Whether the load talks to a legacy server over stdio (directly or through the proxy).
    fn is_stdio(self) -> bool {
        matches!(self, Mode::Stdio | Mode::StdioDirect)
    }

    /// Names of the two recorded phases of a flow, if the mode has phases.
    fn phase_names(self) -> Option<(&'static str, &'static str)> {
        match self {
            Mode::DirectElicit => Some(("to_elicitation_us", "to_result_us")),
            Mode::Mrtr => Some(("request1_us", "request2_us")),
            Mode::Direct | Mode::Proxy | Mode::Stdio | Mode::StdioDirect => None,
        }
    }
}

#[derive(Debug, Clone)]
struct Args {
    mode: Mode,
    url: String,
    /// `--url` split at commas; `url` is the first.
    urls: Vec<String>,
    retry_urls: Vec<String>,
    connections: usize,
    duration: Duration,
    warmup: Duration,
    timeout: Duration,
    /// `label=PID` processes whose CPU time is sampled over the measured window.
    cpu_pids: Vec<(String, u32)>,
    /// `--rate N`: calls per second over all connections, evenly paced per connection (a
    /// connection behind schedule sends at once); `None`: back to back (closed loop).
    rate: Option<f64>,
    /// `--hold-paused N` (`proxy` mode): before the run, N `test_elicitation` calls are paused
    /// (answered `input_required`) and never retried, so they stay paused throughout.
    hold_paused: usize,
    /// `--get-stream 1` (`direct` mode): each session also holds its standalone GET stream open.
    get_stream: bool,
    /// `--progress-token 1` (`direct` mode): each call carries `_meta.progressToken`.
    progress_token: bool,
    /// `--command` (split at whitespace): the stdio peer of the `stdio*` modes.
    command: Vec<String>,
    /// That peer, started once and shared by every connection.
    stdio: Option<std::sync::Arc<stdio::StdioPeer>>,
}

const USAGE: &str = "usage: proxy_load --mode direct|direct-elicit|proxy|mrtr --url URL[,URL...] \
[--retry-url URL[,URL...]] | --mode stdio|stdio-direct --command 'CMD ARGS...' \
[--connections N] [--duration 10s] [--warmup 2s] [--timeout 10s] [--rate CALLS_PER_S] \
[--cpu-pid LABEL=PID]... [--hold-paused N] [--get-stream 1] [--progress-token 1] \
[--authorization VALUE | --authorization-file FILE] [--mrtr-tool NAME] [--mrtr-expect TEXT]";

/// `10s`, `500ms`, `1.5s`, `2m`, or a bare number of seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("bad duration `{text}` (e.g. 10s, 500ms)");
    let (number, unit) = match text.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let value: f64 = number.parse().map_err(|_| bad())?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        _ => return Err(bad()),
    };
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(seconds))
}

fn parse_args() -> Result<Args, String> {
    let mut mode = None;
    let mut url: Option<String> = None;
    let mut retry_urls = Vec::new();
    let mut connections = 16;
    let mut duration = Duration::from_secs(10);
    let mut warmup = Duration::from_secs(2);
    let mut timeout = Duration::from_secs(10);
    let mut cpu_pids = Vec::new();
    let mut rate = None;
    let mut command = Vec::new();
    let mut hold_paused = 0;
    let mut get_stream = false;
    let mut progress_token = false;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "-h" || flag == "--help" {
            return Err(USAGE.to_owned());
        }
        let value = args
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        if let Some(taken) = callers::parse_flag(&flag, &value) {
            taken?;
            continue;
        }
        match flag.as_str() {
            "--mode" => mode = Some(Mode::parse(&value)?),
            "--url" => url = Some(value),
            "--command" => command = value.split_whitespace().map(str::to_owned).collect(),
            "--retry-url" => retry_urls = value.split(',').map(str::to_owned).collect(),
            "--connections" => {
                connections = value
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| format!("bad --connections `{value}`"))?;
            }
            "--get-stream" => get_stream = value == "1",
            "--progress-token" => progress_token = value == "1",
            "--hold-paused" => {
                hold_paused = value
                    .parse()
                    .map_err(|_| format!("bad --hold-paused `{value}`"))?;
            }
            "--duration" => duration = parse_duration(&value)?,
            "--warmup" => warmup = parse_duration(&value)?,
            "--timeout" => timeout = parse_duration(&value)?,
            "--rate" => {
                rate = Some(
                    value
                        .parse::<f64>()
                        .ok()
                        .filter(|r| r.is_finite() && *r > 0.0)
                        .ok_or_else(|| format!("bad --rate `{value}`"))?,
                );
            }
            "--cpu-pid" => {
                let parsed = value
                    .split_once('=')
                    .and_then(|(label, pid)| Some((label.to_owned(), pid.parse().ok()?)));
                cpu_pids.push(parsed.ok_or_else(|| format!("bad --cpu-pid `{value}`"))?);
            }
            other => return Err(format!("unknown flag `{other}`\n{USAGE}")),
        }
    }
    if duration.is_zero() {
        return Err("--duration must be positive".to_owned());
    }
    let mode = mode.ok_or_else(|| format!("--mode is required\n{USAGE}"))?;
    if mode.is_stdio() && command.is_empty() {
        return Err(format!("--mode {} needs --command\n{USAGE}", mode.name()));
    }
    let url = match url {
        Some(url) => url,
        None if mode.is_stdio() => "stdio".to_owned(),
        None => return Err(format!("--url is required\n{USAGE}")),
    };
    let urls: Vec<String> = url.split(',').map(str::to_owned).collect();
    Ok(Args {
        mode,
        url: urls[0].clone(),
        urls,
        retry_urls,
        connections,
        duration,
        warmup,
        timeout,
        cpu_pids,
        rate,
        hold_paused,
        get_stream,
        progress_token,
        command,
        stdio: None,
    })
}

/// Linux `USER_HZ`, the unit of `utime`/`stime` in `/proc/PID/stat` (100 on x86 and arm).
const USER_HZ: f64 = 100.0;

/// User + system CPU seconds of a process (all its threads, dead ones included), if readable.
fn cpu_seconds(pid: Option<u32>) -> Option<f64> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/stat"),
        None => "/proc/self/stat".to_owned(),
    };
    let stat = std::fs::read_to_string(path).ok()?;
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / USER_HZ)
}

/// Busy CPU seconds of the whole machine (every core), from the `cpu` line of `/proc/stat`.
fn machine_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|line| line.starts_with("cpu "))?;
    // user nice system idle iowait irq softirq steal guest guest_nice: idle and iowait are not
    // busy; guest time is already counted in user.
    let ticks: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|field| field.parse().unwrap_or(0.0))
        .collect();
    let busy: f64 = ticks
        .iter()
        .enumerate()
        .filter(|(at, _)| *at != 3 && *at != 4)
        .map(|(_, ticks)| ticks)
        .sum();
    Some(busy / USER_HZ)
}

/// CPU seconds per label (the load generator itself is `load`, the whole machine `machine`);
/// labels given twice are summed.
fn cpu_sample(pids: &[(String, u32)]) -> Vec<(String, Option<f64>)> {
    let mut samples = vec![
        ("machine".to_owned(), machine_cpu_seconds()),
        ("load".to_owned(), cpu_seconds(None)),
    ];
    for (label, pid) in pids {
        let seconds = cpu_seconds(Some(*pid));
        match samples.iter_mut().find(|(known, _)| known == label) {
            Some((_, total)) => *total = total.zip(seconds).map(|(a, b)| a + b),
            None => samples.push((label.clone(), seconds)),
        }
    }
    samples
}

// ---- HTTP and JSON-RPC helpers ----------------------------------------------------------------

/// The client of connection `task` (its `Authorization`, if any: see `callers.rs`).
fn client(task: usize) -> Result<Client, String> {
    let mut headers = HeaderMap::new();
    if let Some(value) = callers::authorization(task) {
        headers.insert(reqwest::header::AUTHORIZATION, value.clone());
    }
    Client::builder()
        .default_headers(headers)
        .http1_only()
        .no_proxy()
        .tcp_nodelay(true)
        .pool_idle_timeout(Duration::from_secs(90))
        .connect_timeout(Duration::from_secs(5))
        .build()
        .map_err(|error| format!("cannot build the HTTP client: {error}"))
}

fn excerpt(text: &str) -> String {
    if text.chars().count() <= MAX_ERROR_CHARS {
        text.to_owned()
    } else {
        let cut: String = text.chars().take(MAX_ERROR_CHARS).collect();
        format!("{cut}…")
    }
}

/// An error of a non-success HTTP response, with its body.
async fn http_error(what: &str, response: Response) -> String {
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    format!("{what}: HTTP {status}: {}", excerpt(&body))
}

/// Incremental `text/event-stream` reader yielding the JSON of each non-empty `data` event.
struct SseReader {
    response: Response,
    buffer: Vec<u8>,
}

impl SseReader {
    fn new(response: Response) -> Self {
        SseReader {
            response,
            buffer: Vec::new(),
        }
    }

    /// The next event's data, parsed; `None` at the end of the stream.
    async fn next_message(&mut self) -> Result<Option<Value>, String> {
        loop {
            while let Some(end) = self.buffer.windows(2).position(|w| w == b"\n\n") {
                let event: Vec<u8> = self.buffer.drain(..end + 2).collect();
                let event = String::from_utf8_lossy(&event);
                let data: Vec<&str> = event
                    .lines()
                    .filter_map(|line| line.strip_prefix("data:"))
                    .map(|data| data.strip_prefix(' ').unwrap_or(data))
                    .collect();
                let data = data.join("\n");
                if data.trim().is_empty() {
                    continue; // priming event, keep-alive comment, retry-only event
                }
                return serde_json::from_str(&data)
                    .map(Some)
                    .map_err(|error| format!("bad SSE data ({error}): {}", excerpt(&data)));
            }
            match self.response.chunk().await {
                Ok(Some(chunk)) => self
                    .buffer
                    .extend(chunk.iter().copied().filter(|byte| *byte != b'\r')),
                Ok(None) => return Ok(None),
                Err(error) => return Err(format!("reading the SSE stream failed: {error}")),
            }
        }
    }
}

fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim_start().starts_with("text/event-stream"))
}

/// Reads the JSON-RPC response with `id` from a JSON or SSE response body.
async fn read_response(response: Response, id: &Value, what: &str) -> Result<Value, String> {
    if !response.status().is_success() {
        return Err(http_error(what, response).await);
    }
    if is_event_stream(&response) {
        let mut reader = SseReader::new(response);
        while let Some(message) = reader.next_message().await? {
            if message.get("id") == Some(id) && message.get("method").is_none() {
                return Ok(message);
            }
        }
        Err(format!(
            "{what}: the SSE stream ended without response {id}"
        ))
    } else {
        let body = response
            .text()
            .await
            .map_err(|error| format!("{what}: reading the body failed: {error}"))?;
        let message: Value = serde_json::from_str(&body)
            .map_err(|error| format!("{what}: bad JSON ({error}): {}", excerpt(&body)))?;
        if message.get("id") != Some(id) {
            return Err(format!(
                "{what}: response for another id: {}",
                excerpt(&body)
            ));
        }
        Ok(message)
    }
}

/// The `result` of a successful JSON-RPC response (no `error`, no `isError: true`).
fn success<'a>(message: &'a Value, what: &str) -> Result<&'a Value, String> {
    let fail = || format!("{what}: {}", excerpt(&message.to_string()));
    if message.get("error").is_some() {
        return Err(fail());
    }
    let result = message.get("result").ok_or_else(fail)?;
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return Err(fail());
    }
    Ok(result)
}

fn first_text(result: &Value) -> Option<&str> {
    result.pointer("/content/0/text").and_then(Value::as_str)
}

fn expect_text(result: &Value, expected: &str, what: &str) -> Result<(), String> {
    if first_text(result) == Some(expected) {
        Ok(())
    } else {
        Err(format!(
            "{what}: expected text {expected:?}, got {}",
            excerpt(&result.to_string())
        ))
    }
}

// ---- Legacy (2025-11-25) side -----------------------------------------------------------------

/// A legacy session on the legacy server.
struct LegacySession {
    client: Client,
    url: String,
    headers: HeaderMap,
}

impl LegacySession {
    /// `initialize` (declaring `elicitation` when asked), then `notifications/initialized`.
    async fn open(client: Client, url: &str, elicitation: bool) -> Result<Self, String> {
        let capabilities = if elicitation {
            json!({ "elicitation": {} })
        } else {
            json!({})
        };
        let init = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": LEGACY_VERSION,
                "capabilities": capabilities,
                "clientInfo": { "name": "proxy_load", "version": "0.1.0" }
            }
        });
        let response = client
            .post(url)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, ACCEPT_BOTH)
            .json(&init)
            .send()
            .await
            .map_err(|error| format!("initialize: {error}"))?;
        let session = response
            .headers()
            .get("mcp-session-id")
            .cloned()
            .ok_or("initialize: no Mcp-Session-Id header")?;
        let message = read_response(response, &json!(0), "initialize").await?;
        success(&message, "initialize")?;
        let mut headers = HeaderMap::new();
        headers.insert("mcp-session-id", session);
        headers.insert(
            "mcp-protocol-version",
            HeaderValue::from_static(LEGACY_VERSION),
        );
        let this = LegacySession {
            client,
            url: url.to_owned(),
            headers,
        };
        let response = this
            .post(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await
            .map_err(|error| format!("notifications/initialized: {error}"))?;
        if response.status() != StatusCode::ACCEPTED {
            return Err(http_error("notifications/initialized", response).await);
        }
        Ok(this)
    }

    async fn post(&self, body: &Value) -> Result<Response, reqwest::Error> {
        self.client
            .post(&self.url)
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, ACCEPT_BOTH)
            .json(body)
            .send()
            .await
    }

    async fn call_tool(&self, id: u64, name: &str, arguments: Value) -> Result<Value, String> {
        self.call_tool_with(id, json!({ "name": name, "arguments": arguments }))
            .await
    }

    async fn call_tool_with(&self, id: u64, params: Value) -> Result<Value, String> {
        let name = params["name"].as_str().unwrap_or_default().to_owned();
        let id = json!(id);
        let request = json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params
        });
        let response = self
            .post(&request)
            .await
            .map_err(|error| format!("tools/call {name}: {error}"))?;
        read_response(response, &id, "tools/call").await
    }

    /// `progress_token`: with `_meta.progressToken`, as the proxy forwards every call (it mints
    /// one per legacy call, translation T13).
    async fn echo(&self, id: u64, progress_token: bool) -> Result<(), String> {
        let mut params = json!({ "name": "echo", "arguments": { "text": "hi" } });
        if progress_token {
            params["_meta"] = json!({ "progressToken": format!("proxy_load/{id}") });
        }
        let message = self.call_tool_with(id, params).await?;
        let result = success(&message, "tools/call echo")?;
        expect_text(result, "hi", "tools/call echo")
    }

    /// The standalone GET stream: forwards every server request (`id` + `method`) to `sink`,
    /// reconnecting when the stream ends, until the receiver is dropped.
    async fn server_requests(self, sink: mpsc::UnboundedSender<(Value, Value, Instant)>) {
        while !sink.is_closed() {
            let response = self
                .client
                .get(&self.url)
                .headers(self.headers.clone())
                .header(ACCEPT, "text/event-stream")
                .send()
                .await;
            let response = match response {
                Ok(response) if response.status().is_success() => response,
                Ok(response) => {
                    eprintln!("{}", http_error("GET stream", response).await);
                    tokio::time::sleep(ERROR_PAUSE).await;
                    continue;
                }
                Err(error) => {
                    eprintln!("GET stream: {error}");
                    tokio::time::sleep(ERROR_PAUSE).await;
                    continue;
                }
            };
            let mut reader = SseReader::new(response);
            while let Ok(Some(message)) = reader.next_message().await {
                if message.get("method").is_some() {
                    if let Some(id) = message.get("id").cloned() {
                        if sink.send((id, message, Instant::now())).is_err() {
                            return;
                        }
                    }
                }
            }
        }
    }

    async fn delete(&self) {
        let _ = self
            .client
            .delete(&self.url)
            .headers(self.headers.clone())
            .timeout(Duration::from_secs(2))
            .send()
            .await;
    }
}

/// Per-op outcome: the whole op, and the two phases where the mode has them.
struct OpTimes {
    phases: Option<(Duration, Duration)>,
}

/// The legacy `ask_name` flow (see the module documentation).
async fn direct_elicit(
    session: &LegacySession,
    requests: &mut mpsc::UnboundedReceiver<(Value, Value, Instant)>,
    id: u64,
    started: Instant,
) -> Result<OpTimes, String> {
    // Left-overs of a failed op would be taken for this op's elicitation.
    while requests.try_recv().is_ok() {}
    let call = async {
        let message = session.call_tool(id, "ask_name", json!({})).await?;
        Ok::<_, String>((message, Instant::now()))
    };
    let answer = async {
        let (request_id, request, received) = requests
            .recv()
            .await
            .ok_or("the GET stream reader stopped")?;
        if request.get("method").and_then(Value::as_str) != Some("elicitation/create") {
            return Err(format!(
                "expected elicitation/create on the GET stream, got {}",
                excerpt(&request.to_string())
            ));
        }
        let reply = json!({
            "jsonrpc": "2.0", "id": request_id,
            "result": { "action": "accept", "content": { "name": "Alice" } }
        });
        let response = session
            .post(&reply)
            .await
            .map_err(|error| format!("elicitation answer: {error}"))?;
        if response.status() != StatusCode::ACCEPTED {
            return Err(http_error("elicitation answer", response).await);
        }
        Ok(received)
    };
    let ((message, finished), received) = tokio::try_join!(call, answer)?;
    let result = success(&message, "tools/call ask_name")?;
    expect_text(result, "Hello, Alice!", "tools/call ask_name")?;
    Ok(OpTimes {
        phases: Some((received - started, finished - received)),
    })
}

// ---- 2026-07-28 side (through the proxy) ------------------------------------------------------

fn front_request(id: u64, name: &str, arguments: Value) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {
            "name": name,
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": FRONT_VERSION,
                "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} }
            }
        }
    })
}

async fn front_call(client: &Client, url: &str, name: &str, body: &Value) -> Result<Value, String> {
    let id = body["id"].clone();
    let response = client
        .post(url)
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, ACCEPT_BOTH)
        .header("mcp-protocol-version", FRONT_VERSION)
        .header("mcp-method", "tools/call")
        .header("mcp-name", name)
        .json(body)
        .send()
        .await
        .map_err(|error| format!("tools/call {name}: {error}"))?;
    read_response(response, &id, "tools/call").await
}

fn result_type(result: &Value) -> Option<&str> {
    result.get("resultType").and_then(Value::as_str)
}

async fn proxy_echo(client: &Client, url: &str, id: u64) -> Result<(), String> {
    let body = front_request(id, "echo", json!({ "text": "hi" }));
    let message = front_call(client, url, "echo", &body).await?;
    let result = success(&message, "tools/call echo")?;
    if result_type(result) != Some("complete") {
        return Err(format!(
            "tools/call echo: not complete: {}",
            excerpt(&result.to_string())
        ));
    }
    expect_text(result, "hi", "tools/call echo")
}

/// `--hold-paused`: that many `test_elicitation` calls through the proxy, all at once, each
/// answered `input_required` and never retried; how many paused.
async fn hold_paused(args: &Args) -> Result<usize, String> {
    if args.hold_paused == 0 {
        return Ok(0);
    }
    if args.mode != Mode::Proxy {
        return Err("only with --mode proxy".to_owned());
    }
    let client = client(0)?;
    let calls = (0..args.hold_paused).map(|n| {
        let client = client.clone();
        let url = args.urls[n % args.urls.len()].clone();
        async move {
            let arguments = json!({ "message": "held paused by the benchmark" });
            let body = front_request(n as u64, "test_elicitation", arguments);
            let message = front_call(&client, &url, "test_elicitation", &body).await?;
            let result = success(&message, "test_elicitation")?;
            match result_type(result) {
                Some("input_required") => Ok(()),
                _ => Err(format!(
                    "test_elicitation: not input_required: {}",
                    excerpt(&result.to_string())
                )),
            }
        }
    });
    let outcomes = futures_util::future::join_all(calls).await;
    let held = outcomes.iter().filter(|outcome| outcome.is_ok()).count();
    if let Some(Err(error)) = outcomes.into_iter().find(Result::is_err) {
        eprintln!(
            "--hold-paused: {} of {} did not pause: {error}",
            args.hold_paused - held,
            args.hold_paused
        );
    }
    Ok(held)
}

/// `ask_name` (or `--mrtr-tool`) through the proxy: `input_required`, then the retry with the
/// answers, answered `expected`.
async fn mrtr_flow(
    client: &Client,
    url: &str,
    retry_url: &str,
    id: u64,
    expected: &str,
) -> Result<OpTimes, String> {
    let tool = callers::mrtr_tool();
    let started = Instant::now();
    let first = front_request(id, tool, json!({}));
    let message = front_call(client, url, tool, &first).await?;
    let between = Instant::now();
    let result = success(&message, &format!("{tool} request 1"))?;
    let (Some("input_required"), Some(requests), Some(state)) = (
        result_type(result),
        result.get("inputRequests").and_then(Value::as_object),
        result.get("requestState").and_then(Value::as_str),
    ) else {
        return Err(format!(
            "{tool} request 1: expected input_required with inputRequests and requestState: {}",
            excerpt(&result.to_string())
        ));
    };
    if requests.is_empty() {
        return Err(format!("{tool} request 1: empty inputRequests"));
    }
    let answers: serde_json::Map<String, Value> = requests
        .keys()
        .map(|key| {
            let answer = json!({ "action": "accept", "content": { "name": "Alice" } });
            (key.clone(), answer)
        })
        .collect();
    let mut retry = first;
    retry["id"] = json!(id + 1);
    retry["params"]["inputResponses"] = Value::Object(answers);
    retry["params"]["requestState"] = json!(state);
    let message = front_call(client, retry_url, tool, &retry).await?;
    let finished = Instant::now();
    let result = success(&message, &format!("{tool} request 2"))?;
    if result_type(result) != Some("complete") {
        return Err(format!(
            "{tool} request 2: not complete: {}",
            excerpt(&result.to_string())
        ));
    }
    expect_text(result, expected, &format!("{tool} request 2"))?;
    Ok(OpTimes {
        phases: Some((between - started, finished - between)),
    })
}

// ---- The load loop ----------------------------------------------------------------------------

#[derive(Debug, Default)]
struct TaskStats {
    latencies: Vec<u64>,
    phase1: Vec<u64>,
    phase2: Vec<u64>,
    errors: u64,
    warmup_errors: u64,
    first_error: Option<String>,
    /// When the task's last measured op ended.
    last_end: Option<Instant>,
}

impl TaskStats {
    fn error(&mut self, measured: bool, error: String) {
        if measured {
            self.errors += 1;
        } else {
            self.warmup_errors += 1;
        }
        self.first_error.get_or_insert(error);
    }
}

/// A session's standalone GET stream held open: what it delivers, and its reader task.
type GetStream = (
    mpsc::UnboundedReceiver<(Value, Value, Instant)>,
    tokio::task::JoinHandle<()>,
);

/// What a connection needs between ops.
enum Conn {
    /// With the session's standalone GET stream held open (`--get-stream 1`), as SDK clients
    /// and the proxy's lanes do.
    Legacy(LegacySession, Option<GetStream>),
    Elicit(
        LegacySession,
        mpsc::UnboundedReceiver<(Value, Value, Instant)>,
        tokio::task::JoinHandle<()>,
    ),
    Front(Client),
    Stdio(std::sync::Arc<stdio::StdioPeer>),
}

/// A connection's state, and the error of its untimed set-up call if that failed (counted as a
/// warm-up error; the connection still runs, so that refused calls are counted too).
async fn connect(args: &Args, task: usize) -> Result<(Conn, Option<String>), String> {
    let client = client(task)?;
    match args.mode {
        Mode::Direct => {
            let session = LegacySession::open(client.clone(), &args.url, false).await?;
            let get_stream = args.get_stream.then(|| {
                let reader = LegacySession {
                    client,
                    url: session.url.clone(),
                    headers: session.headers.clone(),
                };
                let (sink, requests) = mpsc::unbounded_channel();
                (requests, tokio::spawn(reader.server_requests(sink)))
            });
            Ok((Conn::Legacy(session, get_stream), None))
        }
        Mode::DirectElicit => {
            let session = LegacySession::open(client.clone(), &args.url, true).await?;
            let reader = LegacySession {
                client,
                url: session.url.clone(),
                headers: session.headers.clone(),
            };
            let (sink, requests) = mpsc::unbounded_channel();
            let task = tokio::spawn(reader.server_requests(sink));
            Ok((Conn::Elicit(session, requests, task), None))
        }
        Mode::Proxy => {
            // The counterpart of a direct connection's `initialize`: one untimed call per
            // connection, all at once, so the proxy has started the legacy sessions this
            // concurrency needs before the clock runs (it starts them on demand).
            let url = &args.urls[task % args.urls.len()];
            let warm = proxy_echo(&client, url, 0).await.err();
            Ok((
                Conn::Front(client),
                warm.map(|error| format!("set-up call: {error}")),
            ))
        }
        Mode::Mrtr => Ok((Conn::Front(client), None)),
        Mode::Stdio | Mode::StdioDirect => {
            let peer = args.stdio.clone().ok_or("no stdio peer")?;
            let mut warm = None;
            if args.mode == Mode::Stdio {
                // As in `proxy`: a bridge may start its legacy processes on demand.
                warm = stdio_echo(args.mode, &peer, stdio_id(task, 0)).await.err();
            }
            Ok((
                Conn::Stdio(peer),
                warm.map(|error| format!("set-up call: {error}")),
            ))
        }
    }
}

/// A request id unique among every connection's (they share one pipe).
fn stdio_id(task: usize, id: u64) -> u64 {
    ((task as u64) << 32) | id
}

/// `tools/call echo` on the stdio peer: legacy (`stdio-direct`) or 2026-07-28 (`stdio`).
async fn stdio_echo(mode: Mode, peer: &stdio::StdioPeer, id: u64) -> Result<(), String> {
    let params = match mode {
        Mode::StdioDirect => json!({ "name": "echo", "arguments": { "text": "hi" } }),
        _ => front_request(id, "echo", json!({ "text": "hi" }))["params"].take(),
    };
    let message = peer.request(id, "tools/call", params).await?;
    let result = success(&message, "tools/call echo")?;
    if mode == Mode::Stdio && result_type(result) != Some("complete") {
        return Err(format!(
            "tools/call echo: not complete: {}",
            excerpt(&result.to_string())
        ));
    }
    expect_text(result, "hi", "tools/call echo")
}

async fn one_op(
    args: &Args,
    task: usize,
    conn: &mut Conn,
    id: u64,
    started: Instant,
) -> Result<OpTimes, String> {
    match conn {
        Conn::Legacy(session, _) => {
            session.echo(id, args.progress_token).await?;
            Ok(OpTimes { phases: None })
        }
        Conn::Elicit(session, requests, _) => direct_elicit(session, requests, id, started).await,
        Conn::Front(client) if args.mode == Mode::Mrtr => {
            let url = &args.urls[task % args.urls.len()];
            let retry_url = match args.retry_urls.len() {
                0 => url,
                n => &args.retry_urls[task % n],
            };
            mrtr_flow(client, url, retry_url, id, &callers::mrtr_expected(task)).await
        }
        Conn::Front(client) => {
            proxy_echo(client, &args.urls[task % args.urls.len()], id).await?;
            Ok(OpTimes { phases: None })
        }
        Conn::Stdio(peer) => {
            stdio_echo(args.mode, peer, stdio_id(task, id)).await?;
            Ok(OpTimes { phases: None })
        }
    }
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

async fn run_connection(
    args: Args,
    task: usize,
    barrier: std::sync::Arc<Barrier>,
    setup_deadline: Instant,
) -> TaskStats {
    let mut stats = TaskStats::default();
    let connected = tokio::time::timeout_at(setup_deadline.into(), connect(&args, task)).await;
    let conn = match connected {
        Ok(Ok((conn, warm_error))) => {
            if let Some(error) = warm_error {
                stats.error(false, format!("connection {task}: {error}"));
            }
            Some(conn)
        }
        Ok(Err(error)) => {
            stats.error(true, format!("connection {task}: setup: {error}"));
            None
        }
        Err(_) => {
            stats.error(true, format!("connection {task}: setup timed out"));
            None
        }
    };
    barrier.wait().await;
    let Some(mut conn) = conn else {
        return stats;
    };
    let start = Instant::now();
    let measure_from = start + args.warmup;
    let end = measure_from + args.duration;
    let mut id: u64 = 1;
    // Paced: this connection's share of --rate, its first call offset so connections interleave.
    let interval = args
        .rate
        .map(|rate| Duration::from_secs_f64(args.connections as f64 / rate));
    let mut next_at =
        interval.map(|interval| start + interval.mul_f64(task as f64 / args.connections as f64));
    loop {
        if let (Some(at), Some(interval)) = (next_at.as_mut(), interval) {
            tokio::time::sleep_until((*at).into()).await;
            *at += interval;
        }
        let started = Instant::now();
        if started >= end {
            break;
        }
        let measured = started >= measure_from;
        let outcome =
            tokio::time::timeout(args.timeout, one_op(&args, task, &mut conn, id, started)).await;
        let finished = Instant::now();
        id += 2;
        match outcome {
            Ok(Ok(times)) => {
                if measured {
                    stats.latencies.push(micros(finished - started));
                    if let Some((first, second)) = times.phases {
                        stats.phase1.push(micros(first));
                        stats.phase2.push(micros(second));
                    }
                    stats.last_end = Some(finished);
                }
            }
            Ok(Err(error)) => {
                stats.error(measured, error);
                tokio::time::sleep(ERROR_PAUSE).await;
            }
            Err(_) => {
                stats.error(measured, format!("op timed out after {:?}", args.timeout));
            }
        }
    }
    match conn {
        Conn::Legacy(session, get_stream) => {
            if let Some((_, reader)) = get_stream {
                reader.abort();
            }
            session.delete().await;
        }
        Conn::Elicit(session, requests, reader) => {
            drop(requests);
            reader.abort();
            session.delete().await;
        }
        Conn::Front(_) | Conn::Stdio(_) => {}
    }
    stats
}

/// Nearest-rank percentile of sorted samples.
fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn summary(mut samples: Vec<u64>) -> Value {
    samples.sort_unstable();
    let count = samples.len();
    let mean = if count == 0 {
        0.0
    } else {
        samples.iter().map(|v| *v as f64).sum::<f64>() / count as f64
    };
    json!({
        "count": count,
        "p50": percentile(&samples, 50.0),
        "p90": percentile(&samples, 90.0),
        "p99": percentile(&samples, 99.0),
        "max": samples.last().copied().unwrap_or(0),
        "mean": (mean * 10.0).round() / 10.0,
    })
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let mut args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            return std::process::ExitCode::from(2);
        }
    };
    let held = match hold_paused(&args).await {
        Ok(held) => held,
        Err(error) => {
            eprintln!("--hold-paused: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    if args.mode.is_stdio() {
        match stdio::StdioPeer::spawn(&args.command, args.mode == Mode::StdioDirect).await {
            Ok(peer) => args.stdio = Some(peer),
            Err(error) => {
                eprintln!("stdio peer: {error}");
                return std::process::ExitCode::FAILURE;
            }
        }
    }
    let barrier = std::sync::Arc::new(Barrier::new(args.connections + 1));
    let setup_deadline = Instant::now() + args.timeout;
    let tasks: Vec<_> = (0..args.connections)
        .map(|task| {
            tokio::spawn(run_connection(
                args.clone(),
                task,
                std::sync::Arc::clone(&barrier),
                setup_deadline,
            ))
        })
        .collect();
    barrier.wait().await;
    let measure_from = Instant::now() + args.warmup;
    let sampler = {
        let mut pids = args.cpu_pids.clone();
        let duration = args.duration;
        let peer = args.stdio.clone();
        let mode = args.mode;
        tokio::spawn(async move {
            tokio::time::sleep_until(measure_from.into()).await;
            // A stdio peer: the legacy server itself (`stdio-direct`), or a bridge and the
            // legacy servers it started (those alive when the measured window opens).
            if let Some(peer) = peer {
                if mode == Mode::StdioDirect {
                    pids.push(("backend".to_owned(), peer.pid()));
                } else {
                    pids.push(("proxy".to_owned(), peer.pid()));
                    for child in peer.children() {
                        pids.push(("backend".to_owned(), child));
                    }
                }
            }
            let before = cpu_sample(&pids);
            tokio::time::sleep_until((measure_from + duration).into()).await;
            let after = cpu_sample(&pids);
            before
                .into_iter()
                .zip(after)
                .map(|((label, start), (_, end))| (label, start.zip(end).map(|(a, b)| b - a)))
                .collect::<Vec<_>>()
        })
    };
    let mut all = TaskStats::default();
    for task in tasks {
        let stats = match task.await {
            Ok(stats) => stats,
            Err(error) => {
                all.error(true, format!("a connection task failed: {error}"));
                continue;
            }
        };
        all.latencies.extend(stats.latencies);
        all.phase1.extend(stats.phase1);
        all.phase2.extend(stats.phase2);
        all.errors += stats.errors;
        all.warmup_errors += stats.warmup_errors;
        if let Some(error) = stats.first_error {
            all.first_error.get_or_insert(error);
        }
        all.last_end = all.last_end.max(stats.last_end);
    }
    // The measured window: from the end of the warm-up to the end of the last measured op.
    let elapsed = all
        .last_end
        .map(|end| end.saturating_duration_since(measure_from))
        .filter(|elapsed| !elapsed.is_zero())
        .unwrap_or(args.duration);
    let ops = all.latencies.len();
    let mut report = json!({
        "mode": args.mode.name(),
        "url": args.urls.join(","),
        "retry_url": args.retry_urls.join(","),
        "connections": args.connections,
        "warmup_s": args.warmup.as_secs_f64(),
        "duration_s": args.duration.as_secs_f64(),
        "elapsed_s": (elapsed.as_secs_f64() * 1e4).round() / 1e4,
        "ops": ops,
        "ops_per_s": ((ops as f64 / elapsed.as_secs_f64()) * 10.0).round() / 10.0,
        "errors": all.errors,
        "warmup_errors": all.warmup_errors,
        "latency_us": summary(all.latencies),
    });
    if args.hold_paused > 0 {
        report["paused_held"] = json!(held);
    }
    if let Some((first, second)) = args.mode.phase_names() {
        report[first] = summary(all.phase1);
        report[second] = summary(all.phase2);
    }
    // CPU over the measured window (warm-up end to warm-up end + duration), USER_HZ resolution.
    if let Ok(cpu) = sampler.await {
        let window = args.duration.as_secs_f64();
        let mut map = serde_json::Map::new();
        // What the rest of the machine used meanwhile (other users, the kernel's own threads):
        // the machine's busy time minus that of the processes watched here.
        let ours: Option<f64> = cpu
            .iter()
            .filter(|(label, _)| label != "machine")
            .map(|(_, seconds)| *seconds)
            .sum();
        let machine = cpu
            .iter()
            .find(|(label, _)| label == "machine")
            .and_then(|(_, seconds)| *seconds);
        if let (Some(machine), Some(ours)) = (machine, ours) {
            map.insert(
                "other_cores".to_owned(),
                json!(((machine - ours).max(0.0) / window * 1000.0).round() / 1000.0),
            );
        }
        for (label, seconds) in cpu {
            let Some(seconds) = seconds else {
                map.insert(label, Value::Null);
                continue;
            };
            let per_op = if ops == 0 {
                Value::Null
            } else {
                json!((seconds / ops as f64 * 1e6 * 10.0).round() / 10.0)
            };
            map.insert(
                label,
                json!({
                    "cpu_s": (seconds * 100.0).round() / 100.0,
                    "cores": (seconds / window * 1000.0).round() / 1000.0,
                    "us_per_op": per_op,
                }),
            );
        }
        report["cpu"] = Value::Object(map);
    }
    println!("{report}");
    if let Some(error) = all.first_error {
        eprintln!(
            "first error ({} measured, {} during warm-up/setup): {error}",
            all.errors, all.warmup_errors
        );
    }
    std::process::ExitCode::SUCCESS
}
