//! End-to-end flows through the proxy in front of the legacy servers of three SDKs (rmcp 2.2,
//! Python FastMCP `mcp` 1.30.0, TypeScript SDK 1.32.2: their conformance servers, which share
//! tool names), over both backend transports, through one harness: form and URL elicitation,
//! sampling, roots, two rounds, logging, progress (and which calls carry a progress token),
//! cancellation.
//!
//! Each test starts one proxy and runs every flow in turn, so a failure names the SDK, the
//! transport and the flow.

use std::time::Duration;

use mcp_migrate_tests::support::sdk_servers::{conformance_server_async, LegacySdk};
use mcp_migrate_tests::support::{
    binaries_async, within, BackendKind, ProxyOptions, RawClient, Script, Stack,
};
use serde_json::{json, Value};

/// Calls `tool`, expects `rounds` input_required rounds answered by the default [`Script`]
/// (Alice, blue, the sampling text, its roots), and returns the final response's text and the
/// input requests of every round.
async fn call_through_rounds(
    raw: &RawClient,
    what: &str,
    tool: &str,
    rounds: usize,
) -> (String, Vec<Value>) {
    let script = Script::default();
    let mut asked = Vec::new();
    let mut response = raw.call_tool(tool, json!({})).await;
    for round in 1..=rounds {
        assert_eq!(
            response.result_type(),
            Some("input_required"),
            "{what}: round {round} of {tool} must ask for input: {response:#?}"
        );
        let (requests, state) = response.input_required();
        asked.push(requests.clone());
        let answers = script
            .answer_all(requests)
            .unwrap_or_else(|why| panic!("{what}: {why}"));
        let retry = raw.retry_request(tool, json!({}), answers, Some(state));
        response = raw.send(&retry).await;
    }
    assert_ne!(
        response.result_type(),
        Some("input_required"),
        "{what}: {tool} asked for more than {rounds} round(s): {response:#?}"
    );
    (response.text(), asked)
}

/// The single input request of a round: `(key, method, params)`.
fn only_request(what: &str, requests: &Value) -> (String, String, Value) {
    let map = requests
        .as_object()
        .unwrap_or_else(|| panic!("{what}: {requests}"));
    assert_eq!(map.len(), 1, "{what}: one input request: {requests}");
    let (key, request) = map.iter().next().unwrap();
    (
        key.clone(),
        request["method"].as_str().unwrap_or_default().to_owned(),
        request["params"].clone(),
    )
}

async fn form_elicitation(raw: &RawClient, what: &str) {
    let (text, asked) =
        call_through_rounds(raw, what, "test_input_required_result_elicitation", 1).await;
    let (key, method, params) = only_request(what, &asked[0]);
    assert_eq!(
        (key.as_str(), method.as_str()),
        ("user_name", "elicitation/create"),
        "{what}"
    );
    assert_eq!(params["message"], "What is your name?", "{what}");
    assert_eq!(text, "Hello, Alice!", "{what}");
}

async fn url_elicitation(raw: &RawClient, what: &str) {
    let (text, asked) = call_through_rounds(raw, what, "test_url_elicitation", 1).await;
    let (key, method, params) = only_request(what, &asked[0]);
    assert_eq!(
        (key.as_str(), method.as_str()),
        ("consent", "elicitation/create"),
        "{what}"
    );
    assert_eq!(params["mode"], "url", "{what}: {params}");
    assert_eq!(params["url"], "https://example.com/consent", "{what}");
    // 2026-07-28 has no elicitationId: the input request's key identifies it.
    assert!(params.get("elicitationId").is_none(), "{what}: {params}");
    assert_eq!(text, "URL elicitation: accept", "{what}");
}

async fn sampling(raw: &RawClient, what: &str) {
    let (text, asked) =
        call_through_rounds(raw, what, "test_input_required_result_sampling", 1).await;
    let (key, method, params) = only_request(what, &asked[0]);
    assert_eq!(
        (key.as_str(), method.as_str()),
        ("capital_question", "sampling/createMessage"),
        "{what}"
    );
    assert_eq!(params["maxTokens"], 100, "{what}");
    let expected = format!(
        "Sampling result: {}",
        Script::default().sample()["content"]["text"]
            .as_str()
            .unwrap()
    );
    assert_eq!(text, expected, "{what}");
}

async fn roots(raw: &RawClient, what: &str) {
    let (text, asked) =
        call_through_rounds(raw, what, "test_input_required_result_list_roots", 1).await;
    let (_, method, _) = only_request(what, &asked[0]);
    assert_eq!(method, "roots/list", "{what}");
    let count = Script::default().list_roots()["roots"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(text, format!("Found {count} root(s)"), "{what}");
}

async fn two_rounds(raw: &RawClient, what: &str) {
    let (text, asked) =
        call_through_rounds(raw, what, "test_input_required_result_multi_round", 2).await;
    assert_eq!(only_request(what, &asked[0]).0, "step1", "{what}");
    assert_eq!(only_request(what, &asked[1]).0, "step2", "{what}");
    assert_eq!(
        text, "Multi-round complete for Alice who likes blue",
        "{what}"
    );
}

/// Logs reach a request that asked for them (`_meta` log level), and no other.
async fn logging(raw: &RawClient, what: &str) {
    let logs = |response: &mcp_migrate_tests::support::RawResponse| -> Vec<Value> {
        response
            .notifications
            .iter()
            .filter(|n| n["method"] == "notifications/message")
            .cloned()
            .collect()
    };
    let mut request = raw.tool_request("test_tool_with_logging", json!({}));
    request.body["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("debug");
    let asked = raw.send(&request).await;
    assert_eq!(
        asked.text(),
        "Tool with logging executed successfully",
        "{what}"
    );
    let messages = logs(&asked);
    let data: Vec<&Value> = messages.iter().map(|m| &m["params"]["data"]).collect();
    assert_eq!(
        data,
        [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed"
        ],
        "{what}: {asked:#?}"
    );
    assert!(
        messages.iter().all(|m| m["params"]["level"] == "info"),
        "{what}"
    );

    let plain = raw.call_tool("test_tool_with_logging", json!({})).await;
    assert_eq!(
        plain.text(),
        "Tool with logging executed successfully",
        "{what}"
    );
    assert!(
        logs(&plain).is_empty(),
        "{what}: logs nobody asked for: {plain:#?}"
    );
}

/// The proxy gives a call a progress token of its own only when it may need one
/// (proxy/src/engine/progress_tokens.rs): the first call of a tool (it may pause, and progress may
/// be asked for in a later round), not the next ones once that finished without asking the
/// client anything, unless their client asks for progress ([`progress`], run after this).
async fn progress_tokens_only_where_wanted(raw: &RawClient, what: &str) {
    let first = raw.call_tool("test_tool_with_progress", json!({})).await;
    let token = first.text();
    assert!(
        !token.is_empty() && token != "no progress token",
        "{what}: the first call of a tool may pause: it carries a token: {first:#?}"
    );
    let next = raw.call_tool("test_tool_with_progress", json!({})).await;
    assert_eq!(
        next.text(),
        "no progress token",
        "{what}: the tool finished without asking: {next:#?}"
    );
}

async fn progress(raw: &RawClient, what: &str) {
    let mut request = raw.tool_request("test_tool_with_progress", json!({}));
    request.body["params"]["_meta"]["progressToken"] = json!("flow-progress");
    let response = raw.send(&request).await;
    // The legacy server sees a token of the proxy's own (mapped back on the way out), and
    // returns it.
    let legacy_token = response.text();
    assert!(
        !legacy_token.is_empty() && legacy_token != "no progress token",
        "{what}: the legacy server got no progress token: {response:#?}"
    );
    let steps: Vec<(Value, Value)> = response
        .notifications
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .map(|n| {
            assert_eq!(n["params"]["progressToken"], "flow-progress", "{what}: {n}");
            (
                n["params"]["progress"].clone(),
                n["params"]["total"].clone(),
            )
        })
        .collect();
    let expected: Vec<(Value, Value)> = [0, 50, 100]
        .into_iter()
        .map(|p| (json!(p), json!(100)))
        .collect();
    // Numbers may come back as 0 or 0.0 depending on the SDK.
    let as_f64 = |steps: &[(Value, Value)]| -> Vec<(f64, f64)> {
        steps
            .iter()
            .map(|(p, t)| (p.as_f64().unwrap_or(-1.0), t.as_f64().unwrap_or(-1.0)))
            .collect()
    };
    assert_eq!(as_f64(&steps), as_f64(&expected), "{what}: {response:#?}");
}

/// A client that gives up mid-call (disconnects) cancels the legacy call
/// (`notifications/cancelled` delivered to the legacy server), and the next call is served.
async fn cancellation(stack: &Stack, raw: &RawClient, what: &str) {
    let request = raw.tool_request("test_cancellable", json!({}));
    // The call runs 5 s and sends nothing meanwhile: hang up after 2 s, by when a loaded machine
    // has forwarded it to the legacy server (hanging up before that cancels nothing there).
    let outcome = raw.give_up_after(&request, Duration::from_secs(2)).await;
    assert!(
        outcome.is_err(),
        "{what}: test_cancellable finished early: {outcome:?}"
    );
    let cancelled = stack.proxy.logs_delivered_cancellation().await;
    assert!(cancelled, "{what}: {:#?}", stack.proxy.log_lines());
    form_elicitation(raw, &format!("{what}, after the cancellation")).await;
}

async fn every_flow(sdk: LegacySdk, kind: BackendKind) {
    binaries_async().await;
    let backend = conformance_server_async(sdk).await;
    let what = format!("{} over {kind:?}", sdk.name());
    within(Duration::from_secs(180), &what.clone(), async move {
        let stack = Stack::start(kind, backend.into_options(ProxyOptions::default())).await;
        let raw = stack.raw();
        form_elicitation(&raw, &format!("{what}: form elicitation")).await;
        url_elicitation(&raw, &format!("{what}: URL elicitation")).await;
        sampling(&raw, &format!("{what}: sampling")).await;
        roots(&raw, &format!("{what}: roots")).await;
        two_rounds(&raw, &format!("{what}: two rounds")).await;
        logging(&raw, &format!("{what}: logging")).await;
        progress_tokens_only_where_wanted(&raw, &format!("{what}: progress tokens")).await;
        progress(&raw, &format!("{what}: progress")).await;
        cancellation(&stack, &raw, &format!("{what}: cancellation")).await;
    })
    .await;
}

macro_rules! per_sdk_and_transport {
    ($($name:ident: $sdk:expr, $kind:expr;)+) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            every_flow($sdk, $kind).await;
        }
    )+};
}

per_sdk_and_transport! {
    rmcp_over_http: LegacySdk::Rmcp, BackendKind::Http;
    rmcp_over_stdio: LegacySdk::Rmcp, BackendKind::Stdio;
    python_over_http: LegacySdk::Python, BackendKind::Http;
    python_over_stdio: LegacySdk::Python, BackendKind::Stdio;
    typescript_over_http: LegacySdk::TypeScript, BackendKind::Http;
    typescript_over_stdio: LegacySdk::TypeScript, BackendKind::Stdio;
}
