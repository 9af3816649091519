//! Operations of the proxy, observed from outside with real peers: `/metrics` follows real calls
//! (rounds, pauses, rejections, deprecation warnings, lanes), `/readyz` reports its checks, logs
//! come as JSON spans without credentials, a TOML config file drives the binary, and bad
//! configuration fails at start with a clear message and exit code 2.

use std::process::Stdio;
use std::time::Duration;

use mcp_migrate_rules::RuleId;
use mcp_migrate_tests::per_backend;
use mcp_migrate_tests::support::{
    assert_error, binaries_async, metric, within, BackendKind, Proxy, ProxyOptions, RawClient,
    Script, Stack,
};
use serde_json::{json, Value};

/// `http://127.0.0.1:PORT` of a proxy.
fn base_url(proxy: &Proxy) -> String {
    proxy
        .url()
        .strip_suffix("/mcp")
        .expect("the proxy URL ends with /mcp")
        .to_owned()
}

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

const ROUNDS: &str = "mcp_proxy_rounds_total{method=\"tools/call\"}";
const PAUSED: &str = "mcp_proxy_paused_calls";
const TAMPERED: &str = "mcp_proxy_rejections_total{reason=\"state_tampered\"}";
const REPLAYED: &str = "mcp_proxy_rejections_total{reason=\"state_replayed\"}";
const FOREIGN: &str = "mcp_proxy_rejections_total{reason=\"state_foreign_principal\"}";
const MISMATCH: &str = "mcp_proxy_rejections_total{reason=\"header_mismatch\"}";
const INPUT_REQUIRED: &str =
    "mcp_proxy_requests_total{method=\"tools/call\",outcome=\"input_required\"}";
const OK: &str = "mcp_proxy_requests_total{method=\"tools/call\",outcome=\"ok\"}";
const ERRORS: &str = "mcp_proxy_requests_total{method=\"tools/call\",outcome=\"error\"}";
const LATENCY_COUNT: &str = "mcp_proxy_request_duration_seconds_count{method=\"tools/call\"}";

fn deprecation(rule: RuleId) -> String {
    format!(
        "mcp_proxy_deprecation_warnings_total{{rule=\"{}\"}}",
        rule.rule().name
    )
}

/// Replaces the character in the middle of `state` by another base64url character.
fn flip_one_character(state: &str) -> String {
    let mut chars: Vec<char> = state.chars().collect();
    let middle = chars.len() / 2;
    chars[middle] = if chars[middle] == 'A' { 'B' } else { 'A' };
    chars.into_iter().collect()
}

async fn metrics_follow_paused_calls_and_rejections(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let proxy = &stack.proxy;
    let raw = stack.raw();
    let start = proxy.metrics().await;
    assert_eq!(metric(&start, ROUNDS), 0.0, "{start:#?}");
    assert_eq!(start.get(PAUSED), Some(&0.0), "{start:#?}");
    assert!(metric(&start, "mcp_proxy_lanes_open") >= 1.0, "{start:#?}");
    assert!(
        metric(&start, "mcp_proxy_lane_starts_total") >= 1.0,
        "{start:#?}"
    );

    // Round 1: paused.
    let first = raw.call_tool("ask_name", json!({})).await;
    let (requests, state) = first.input_required();
    let state = state.to_owned();
    let responses = Script::default().answer_all(requests).unwrap();
    let paused = proxy.metrics().await;
    assert_eq!(metric(&paused, ROUNDS), 1.0, "{paused:#?}");
    assert_eq!(metric(&paused, PAUSED), 1.0, "{paused:#?}");
    assert_eq!(metric(&paused, INPUT_REQUIRED), 1.0, "{paused:#?}");
    assert_eq!(
        metric(&paused, "mcp_proxy_lanes_leased"),
        1.0,
        "{paused:#?}"
    );

    // A tampered state and another principal are refused; the pause survives both.
    let tampered = raw.retry_request(
        "ask_name",
        json!({}),
        responses.clone(),
        Some(&flip_one_character(&state)),
    );
    assert_error(&raw.send(&tampered).await, &tampered, &[-32602]);
    let mallory = RawClient::new(proxy.url()).with_authorization("Bearer mallory");
    let foreign = mallory.retry_request("ask_name", json!({}), responses.clone(), Some(&state));
    assert_error(&mallory.send(&foreign).await, &foreign, &[-32602]);
    let refused = proxy.metrics().await;
    assert_eq!(metric(&refused, TAMPERED), 1.0, "{refused:#?}");
    assert_eq!(metric(&refused, FOREIGN), 1.0, "{refused:#?}");
    assert_eq!(metric(&refused, PAUSED), 1.0, "{refused:#?}");
    assert_eq!(metric(&refused, ERRORS), 2.0, "{refused:#?}");

    // The retry completes the call: paused back to 0, still one round, one call of one round.
    let done = raw
        .retry_tool("ask_name", json!({}), responses.clone(), Some(&state))
        .await;
    assert_eq!(done.text(), "Hello, Alice!", "{done:#?}");
    let finished = proxy.metrics().await;
    assert_eq!(metric(&finished, PAUSED), 0.0, "{finished:#?}");
    assert_eq!(metric(&finished, ROUNDS), 1.0, "{finished:#?}");
    assert_eq!(metric(&finished, OK), 1.0, "{finished:#?}");
    assert_eq!(
        metric(&finished, "mcp_proxy_call_rounds_count"),
        1.0,
        "{finished:#?}"
    );
    assert_eq!(
        metric(&finished, "mcp_proxy_call_rounds_sum"),
        1.0,
        "{finished:#?}"
    );
    assert_eq!(metric(&finished, LATENCY_COUNT), 4.0, "{finished:#?}");
    assert_eq!(
        metric(&finished, "mcp_proxy_requests_in_flight"),
        0.0,
        "{finished:#?}"
    );
    assert_eq!(
        metric(&finished, "mcp_proxy_lanes_leased"),
        0.0,
        "{finished:#?}"
    );

    // The same state again: replayed.
    let replay = raw.retry_request("ask_name", json!({}), responses, Some(&state));
    assert_error(&raw.send(&replay).await, &replay, &[-32602]);
    // A header that disagrees with the body: refused by validation.
    let mut mismatch = raw.tool_request("echo", json!({"text": "x"}));
    mismatch.set_header("Mcp-Method", "tools/list");
    let response = raw.send(&mismatch).await;
    assert_eq!(response.status, 400, "{response:#?}");
    let after = proxy.metrics().await;
    assert_eq!(metric(&after, REPLAYED), 1.0, "{after:#?}");
    assert_eq!(metric(&after, MISMATCH), 1.0, "{after:#?}");
    assert_eq!(metric(&after, TAMPERED), 1.0, "{after:#?}");

    // The raw client declares sampling and roots: one warning per (client, rule), however many
    // requests it sends; mallory is another client.
    for rule in [RuleId::DeprecatedSampling, RuleId::DeprecatedRoots] {
        assert_eq!(
            metric(&after, &deprecation(rule)),
            2.0,
            "{rule:?}: {after:#?}"
        );
    }
}

async fn paused_calls_expire_in_the_metrics(kind: BackendKind) {
    let stack = Stack::start(
        kind,
        ProxyOptions {
            pause_ttl: Some("300ms".into()),
            ..ProxyOptions::default()
        },
    )
    .await;
    let raw = stack.raw();
    let first = raw.call_tool("ask_name", json!({})).await;
    first.input_required();
    assert_eq!(metric(&stack.proxy.metrics().await, PAUSED), 1.0);
    // The sweep runs every second; 60 s holds on a loaded 2-core machine.
    within(Duration::from_secs(60), "the pause to expire", async {
        loop {
            let metrics = stack.proxy.metrics().await;
            if metric(&metrics, "mcp_proxy_pause_expiries_total{cause=\"ttl\"}") == 1.0 {
                assert_eq!(metric(&metrics, PAUSED), 0.0, "{metrics:#?}");
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
}

per_backend!(120;
    metrics_follow_paused_calls_and_rejections,
    paused_calls_expire_in_the_metrics,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_reports_its_checks() {
    binaries_async().await;
    within(Duration::from_secs(60), "readyz", async {
        let stack = Stack::start(BackendKind::Stdio, ProxyOptions::default()).await;
        let response = http()
            .get(format!("{}/readyz", base_url(&stack.proxy)))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200);
        let body: Value = response.json().await.unwrap();
        assert_eq!(
            body,
            json!({
                "ready": true,
                "checks": {"backend": true, "store": true, "not_draining": true},
                "failed": [],
            })
        );
        let health = http().get(stack.proxy.healthz_url()).send().await.unwrap();
        assert_eq!(health.status().as_u16(), 200);
    })
    .await;
}

/// The config file sets JSON logs; the command line sets the rest. With the request span's target
/// enabled, each request is a span with its method and the principal's digest label, and no line
/// carries the bearer token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_from_a_config_file() {
    binaries_async().await;
    within(Duration::from_secs(60), "json logs", async {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("proxy.toml");
        std::fs::write(
            &config,
            // The request span is at debug level (it costs on every call): asked for by target.
            "log-format = \"json\"\nlog_level = \"info,mcp_mrtr_proxy::request=debug\"\nbatch-window = \"50ms\"\n",
        )
        .unwrap();
        let stack = Stack::start(
            BackendKind::Stdio,
            ProxyOptions {
                extra_args: vec!["--config".into(), config.display().to_string()],
                ..ProxyOptions::default()
            },
        )
        .await;
        let secret = "Bearer very-secret-token-4711";
        let raw = RawClient::new(stack.proxy.url()).with_authorization(secret);
        raw.call_tool("ask_name", json!({})).await.input_required();
        // The pause is logged before the response is sent; the harness reads the pipe async.
        let mut lines = stack.proxy.log_lines();
        while !lines.iter().any(|line| line.contains("paused legacy call")) {
            tokio::time::sleep(Duration::from_millis(50)).await;
            lines = stack.proxy.log_lines();
        }
        assert!(
            lines.iter().all(|line| !line.contains("very-secret-token")),
            "a log line carries the credential"
        );
        let events: Vec<Value> = lines
            .iter()
            .filter(|line| line.starts_with('{'))
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
            .collect();
        assert!(!events.is_empty(), "no JSON log lines in {lines:#?}");
        let paused = events
            .iter()
            .find(|event| event["fields"]["message"] == "paused legacy call")
            .unwrap_or_else(|| panic!("no pause event in {events:#?}"));
        let request = paused["spans"]
            .as_array()
            .and_then(|spans| spans.iter().find(|span| span["name"] == "request"))
            .unwrap_or_else(|| panic!("the pause is not inside a request span: {paused:#}"));
        assert_eq!(request["method"], "tools/call", "{request:#}");
        assert_eq!(request["front"], "http", "{request:#}");
        assert!(request["request_id"].is_string(), "{request:#}");
        let principal = request["principal"].as_str().unwrap_or_default();
        assert!(
            principal.len() == 8 && principal.chars().all(|c| c.is_ascii_hexdigit()),
            "the principal is a digest label: {request:#}"
        );
    })
    .await;
}

/// Runs the proxy binary with `args` until it exits (it must, quickly): `(exit code, stderr)`.
async fn run_to_exit(args: &[&str]) -> (Option<i32>, String) {
    let binaries = binaries_async().await;
    let output = within(
        Duration::from_secs(20),
        "the proxy to exit",
        tokio::process::Command::new(&binaries.proxy)
            .args(args)
            .env_remove("MCP_MRTR_PROXY_CONFIG")
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_config_files_fail_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("proxy.toml");
    std::fs::write(
        &path,
        "listen = \"127.0.0.1:0\"\n# typo below\npool-sise = 3\n",
    )
    .unwrap();
    let path = path.to_str().unwrap();
    let (code, stderr) = run_to_exit(&["--config", path, "--", "true"]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("{path}:3: key `pool-sise`: unknown key")),
        "{stderr}"
    );
    std::fs::write(dir.path().join("proxy.toml"), "pause-ttl = \"soon\"\n").unwrap();
    let (code, stderr) = run_to_exit(&["--config", path, "--", "true"]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("{path}:1: key `pause-ttl`: invalid value 'soon'")),
        "{stderr}"
    );
    let (code, stderr) = run_to_exit(&["--log-level", "info,=[", "--", "true"]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("invalid --log-level"), "{stderr}");
}

#[cfg(not(feature = "otel"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otlp_needs_the_otel_feature() {
    let (code, stderr) =
        run_to_exit(&["--otlp-endpoint", "http://127.0.0.1:4318", "--", "true"]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("built without OpenTelemetry support")
            && stderr.contains("--features otel"),
        "{stderr}"
    );
}
