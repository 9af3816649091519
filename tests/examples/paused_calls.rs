//! Many concurrent paused calls on one proxy in front of a real legacy HTTP server: how long it
//! takes to park them all and to resume them all (each with its own answer), what they cost in
//! proxy memory, and how many legacy sessions the proxy opened.
//!
//! ```text
//! cargo run --release -p mcp-migrate-tests --example paused_calls -- \
//!     [--backend ts|python|rmcp] [--calls 10000] [--in-flight 256] [--settle 15]
//! ```
//!
//! The example starts the legacy server (`ts`: the TypeScript SDK 1.x fixture, `python`: the
//! FastMCP fixture over Streamable HTTP, `rmcp`: the rmcp 2.2 fixture) and the proxy with its
//! default flags, except `--max-paused-calls N` and `--max-paused-per-principal 1` (so that the
//! proxy holds `N` paused calls and checks that every principal holds one). Then:
//!
//! 1. park: `N` `tools/call ask_name`, each with its own `Authorization`, at most `--in-flight`
//!    at a time; every one must answer `input_required`;
//! 2. measure: the proxy's RSS (`VmRSS`) and the legacy sessions it opened
//!    (`mcp_proxy_lane_starts_total`) while all `N` calls are paused;
//! 3. resume: the `N` retries with `inputResponses` (`name = "Person i"`) and `requestState`;
//!    each must answer `Hello, Person i!`.
//!
//! Output: one JSON line on stdout. The proxy's RSS is measured before the first call (with one
//! legacy session open, for `/healthz`), right after every call paused, and again `--settle`
//! seconds later (the allocator returns freed pages after a delay); the cost per paused call is
//! the difference over `N`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_migrate_tests::support::{
    metric, Backend, LegacyHttpServer, LegacySseServer, LegacyTsServer, Proxy, ProxyOptions,
};
use serde_json::{json, Value};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

struct Options {
    backend: String,
    calls: usize,
    in_flight: usize,
    settle: Duration,
}

fn parse() -> Result<Options, String> {
    let mut options = Options {
        backend: "ts".into(),
        calls: 10_000,
        in_flight: 256,
        settle: Duration::from_secs(15),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--backend" => options.backend = value()?,
            "--calls" => options.calls = value()?.parse().map_err(|e| format!("--calls: {e}"))?,
            "--in-flight" => {
                options.in_flight = value()?.parse().map_err(|e| format!("--in-flight: {e}"))?
            }
            "--settle" => {
                options.settle =
                    Duration::from_secs(value()?.parse().map_err(|e| format!("--settle: {e}"))?)
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if !matches!(options.backend.as_str(), "ts" | "python" | "rmcp") {
        return Err(format!(
            "unknown backend `{}` (ts, python, rmcp)",
            options.backend
        ));
    }
    Ok(options)
}

/// The legacy server, kept alive for the run.
enum Legacy {
    Ts(LegacyTsServer),
    Python(LegacySseServer),
    Rmcp(LegacyHttpServer),
}

impl Legacy {
    fn url(&self) -> &str {
        match self {
            Legacy::Ts(server) => server.url(),
            Legacy::Python(server) => server.url(),
            Legacy::Rmcp(server) => server.url(),
        }
    }

    fn pid(&self) -> u32 {
        match self {
            Legacy::Ts(server) => server.pid(),
            Legacy::Python(server) => server.pid(),
            Legacy::Rmcp(server) => server.pid(),
        }
    }
}

/// `VmRSS` of a process in KiB.
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmRSS:"))
                .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Runs `job(i)` for every `i < calls`, at most `in_flight` at a time; returns the outcomes by
/// `i` and the elapsed time.
async fn run_all<F, Fut>(calls: usize, in_flight: usize, job: F) -> (Vec<Value>, Duration)
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Value> + Send + 'static,
{
    let gate = Arc::new(Semaphore::new(in_flight));
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for i in 0..calls {
        let permit = Arc::clone(&gate)
            .acquire_owned()
            .await
            .expect("open semaphore");
        let future = job(i);
        tasks.spawn(async move {
            let outcome = future.await;
            drop(permit);
            (i, outcome)
        });
    }
    let mut outcomes = vec![Value::Null; calls];
    while let Some(done) = tasks.join_next().await {
        let (i, outcome) = done.expect("a call task");
        outcomes[i] = outcome;
    }
    (outcomes, started.elapsed())
}

fn bearer(i: usize) -> String {
    format!("Bearer person-{i}")
}

#[tokio::main]
async fn main() {
    let options = match parse() {
        Ok(options) => options,
        Err(why) => {
            eprintln!("paused_calls: {why}");
            std::process::exit(2);
        }
    };
    let legacy = match options.backend.as_str() {
        "ts" => Legacy::Ts(LegacyTsServer::start().await),
        "python" => Legacy::Python(LegacySseServer::start_streamable_http().await),
        _ => Legacy::Rmcp(LegacyHttpServer::start().await),
    };
    let calls = options.calls;
    let proxy = Proxy::start(ProxyOptions {
        backend: Backend::Http(legacy.url().to_owned()),
        extra_args: vec![
            "--max-paused-calls".into(),
            calls.to_string(),
            "--max-paused-per-principal".into(),
            "1".into(),
            "--log-level".into(),
            "warn".into(),
        ],
        ..ProxyOptions::default()
    })
    .await;
    let rss_before = proxy.rss_kib();
    let legacy_rss_before = rss_kib(legacy.pid());
    let raw = Arc::new(proxy.raw());

    let park = {
        let raw = Arc::clone(&raw);
        move |i: usize| {
            let raw = Arc::clone(&raw);
            async move {
                let mut request = raw.tool_request("ask_name", json!({}));
                request.set_header("Authorization", &bearer(i));
                raw.send(&request).await.message
            }
        }
    };
    let (paused, park_time) = run_all(calls, options.in_flight, park).await;
    let mut states = Vec::with_capacity(calls);
    for (i, message) in paused.iter().enumerate() {
        let result = &message["result"];
        if result["resultType"] != "input_required" {
            eprintln!("call {i} did not pause: {message}");
            std::process::exit(1);
        }
        let key = result["inputRequests"]
            .as_object()
            .and_then(|map| map.keys().next().cloned())
            .unwrap_or_default();
        let state = result["requestState"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        states.push((key, state));
    }
    let metrics = proxy.metrics().await;
    let paused_now = metric(&metrics, "mcp_proxy_paused_calls");
    let sessions = metric(&metrics, "mcp_proxy_lane_starts_total");
    let rss_paused = proxy.rss_kib();
    let legacy_rss_paused = rss_kib(legacy.pid());
    // The allocator gives back what parking used and freed only after a while (jemalloc's
    // dirty-page decay): what the paused calls keep is the RSS once that settled.
    tokio::time::sleep(options.settle).await;
    let rss_settled = proxy.rss_kib();

    let states = Arc::new(states);
    let resume = {
        let raw = Arc::clone(&raw);
        move |i: usize| {
            let raw = Arc::clone(&raw);
            let states = Arc::clone(&states);
            async move {
                let (key, state) = &states[i];
                let answers = json!({ key: {"action": "accept", "content": {"name": format!("Person {i}")}} });
                let mut request = raw.retry_request("ask_name", json!({}), answers, Some(state));
                request.set_header("Authorization", &bearer(i));
                raw.send(&request).await.message
            }
        }
    };
    let (resumed, resume_time) = run_all(calls, options.in_flight, resume).await;
    let mut wrong = 0;
    for (i, message) in resumed.iter().enumerate() {
        let text = message["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        if text != format!("Hello, Person {i}!") {
            if wrong == 0 {
                eprintln!("retry {i} got: {message}");
            }
            wrong += 1;
        }
    }
    let line = json!({
        "backend": options.backend,
        "calls": calls,
        "in_flight": options.in_flight,
        "paused_at_once": paused_now,
        "legacy_sessions_opened": sessions,
        "park_s": park_time.as_secs_f64(),
        "resume_s": resume_time.as_secs_f64(),
        "proxy_rss_before_kib": rss_before,
        "proxy_rss_paused_kib": rss_paused,
        "proxy_kib_per_paused_call": (rss_paused.saturating_sub(rss_before)) as f64 / calls as f64,
        "settle_s": options.settle.as_secs(),
        "proxy_rss_settled_kib": rss_settled,
        "proxy_kib_per_paused_call_settled":
            (rss_settled.saturating_sub(rss_before)) as f64 / calls as f64,
        "legacy_rss_before_kib": legacy_rss_before,
        "legacy_rss_paused_kib": legacy_rss_paused,
        "wrong_or_failed_retries": wrong,
    });
    println!("{line}");
    drop(proxy);
    drop(legacy);
    if wrong > 0 || paused_now as usize != calls {
        std::process::exit(1);
    }
}
