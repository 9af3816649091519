//! MRTR through the proxy with real peers: an rmcp 3.11 client (2026-07-28) and raw HTTP in
//! front, the legacy rmcp 2.2 fixture server behind (over legacy Streamable HTTP and over stdio).
//!
//! The expected texts are what the fixture answers a scripted client directly
//! (`proxy_harness.rs` pins them without the proxy).

use std::collections::BTreeSet;

use mcp_migrate_tests::per_backend;
use mcp_migrate_tests::support::{
    assert_concurrent_clients_are_isolated, input_responses, json_mentions, tool_params, tool_text,
    BackendKind, FormAction, ProxyOptions, Script, Stack,
};
use rmcp::model::CallToolResponse;
use serde_json::{json, Value};

/// Options for tests that check that concurrent legacy requests form one round: a batch window
/// wide enough for a loaded 2-core machine, where the legacy process may be descheduled between
/// its three writes for more than 100 ms (each round then costs the window: 1 s).
fn batching() -> ProxyOptions {
    ProxyOptions {
        batch_window: Some("1s".into()),
        ..ProxyOptions::default()
    }
}

fn expect_input_required(response: CallToolResponse) -> rmcp::model::InputRequiredResult {
    match response {
        CallToolResponse::InputRequired(result) => result,
        other => panic!("expected input_required, got {other:?}"),
    }
}

fn expect_complete(response: CallToolResponse) -> rmcp::model::CallToolResult {
    match response {
        CallToolResponse::Complete(result) => result,
        other => panic!("expected a complete result, got {other:?}"),
    }
}

// ---- Elicitation ----

async fn ask_name_completes_with_the_form_answer(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let client = stack.modern(Script::default()).await;
    let result = client
        .call_tool("ask_name", json!({}))
        .await
        .expect("ask_name through the proxy");
    assert_eq!(tool_text(&result), "Hello, Alice!");
    assert_ne!(result.is_error, Some(true));

    let seen = client.seen();
    assert_eq!(seen.len(), 1, "one elicitation: {seen:#?}");
    assert_eq!(seen[0].method, "elicitation/create");
    assert!(
        seen[0].key.is_some(),
        "answered as an MRTR input request (string key), not a pushed request: {seen:#?}"
    );
    assert_eq!(seen[0].params["message"], "What is your name?");
    assert!(
        seen[0]
            .params
            .pointer("/requestedSchema/properties/name")
            .is_some(),
        "the legacy form schema reaches the client: {seen:#?}"
    );
    client.close().await;
}

async fn ask_twice_completes_after_two_rounds(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let client = stack.modern(Script::default()).await;
    let result = client.call_tool("ask_twice", json!({})).await.unwrap();
    assert_eq!(tool_text(&result), "Alice likes blue");

    let seen = client.seen();
    assert_eq!(seen.len(), 2, "asked twice: {seen:#?}");
    assert!(seen.iter().all(|s| s.method == "elicitation/create"));
    assert!(seen[0]
        .params
        .pointer("/requestedSchema/properties/name")
        .is_some());
    assert!(seen[1]
        .params
        .pointer("/requestedSchema/properties/color")
        .is_some());
    assert_eq!(
        seen[1].params["message"],
        "Alice, what is your favourite colour?"
    );
    client.close().await;
}

async fn ask_twice_rounds_carry_different_states(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let script = Script::default();
    let client = stack.modern(script.clone()).await;

    // Round 1: the name.
    let first = expect_input_required(
        client
            .call_tool_once(tool_params("ask_twice", json!({})))
            .await
            .unwrap(),
    );
    let requests =
        serde_json::to_value(first.input_requests.as_ref().expect("inputRequests")).unwrap();
    assert_eq!(requests.as_object().unwrap().len(), 1, "{requests:#}");
    let state1 = first.request_state.clone().expect("a requestState");
    let answers = script.answer_all(&requests).unwrap();

    // Round 2: the colour, under a new state.
    let second = expect_input_required(
        client
            .call_tool_once(
                tool_params("ask_twice", json!({}))
                    .with_input_responses(input_responses(answers))
                    .with_request_state(state1.clone()),
            )
            .await
            .unwrap(),
    );
    let state2 = second.request_state.clone().expect("a requestState");
    assert_ne!(state1, state2, "each round has its own requestState");
    let requests =
        serde_json::to_value(second.input_requests.as_ref().expect("inputRequests")).unwrap();
    let (_, request) = requests.as_object().unwrap().iter().next().unwrap();
    assert_eq!(request["method"], "elicitation/create");
    assert!(request
        .pointer("/params/requestedSchema/properties/color")
        .is_some());
    let answers = script.answer_all(&requests).unwrap();

    // Round 3: done.
    let done = expect_complete(
        client
            .call_tool_once(
                tool_params("ask_twice", json!({}))
                    .with_input_responses(input_responses(answers))
                    .with_request_state(state2),
            )
            .await
            .unwrap(),
    );
    assert_eq!(tool_text(&done), "Alice likes blue");
    client.close().await;
}

async fn confirm_delete_sends_the_boolean_form(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let client = stack.modern(Script::default()).await;
    let result = client
        .call_tool("confirm_delete", json!({"path": "/tmp/x"}))
        .await
        .unwrap();
    assert_eq!(tool_text(&result), "Deletion of /tmp/x confirmed.");
    let seen = client.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0]
            .params
            .pointer("/requestedSchema/properties/confirm/type"),
        Some(&json!("boolean"))
    );
    assert_eq!(seen[0].params["message"], "Really delete /tmp/x?");
    client.close().await;
}

async fn decline_gives_the_legacy_decline_text(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let client = stack
        .modern(Script::default().with_form_action(FormAction::Decline))
        .await;
    let result = client.call_tool("ask_name", json!({})).await.unwrap();
    assert_eq!(tool_text(&result), "No name given: the user declined.");
    assert_ne!(result.is_error, Some(true));
    assert_eq!(client.seen().len(), 1);
    client.close().await;
}

async fn cancel_gives_the_legacy_cancel_text(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let client = stack
        .modern(Script::default().with_form_action(FormAction::Cancel))
        .await;
    let result = client.call_tool("ask_name", json!({})).await.unwrap();
    assert_eq!(tool_text(&result), "No name given: the user cancelled.");
    assert_ne!(result.is_error, Some(true));
    client.close().await;
}

/// URL elicitation: the 2026 input request has `mode: "url"` and the URL but no `elicitationId`
/// (removed in 2026-07-28); accepting completes the legacy call.
async fn url_elicitation_drops_the_elicitation_id(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let raw = stack.raw();
    let first = raw.call_tool("connect_account", json!({})).await;
    let (requests, state) = first.input_required();
    let requests = requests.as_object().expect("inputRequests").clone();
    assert_eq!(requests.len(), 1, "{first:#?}");
    let (key, request) = requests.iter().next().unwrap();
    assert_eq!(request["method"], "elicitation/create");
    let params = &request["params"];
    assert_eq!(params["mode"], "url");
    assert_eq!(params["url"], "https://accounts.example.com/connect");
    assert_eq!(params["message"], "Connect your account to continue");
    assert!(
        params.get("elicitationId").is_none(),
        "2026-07-28 has no elicitationId: {params:#}"
    );

    let retry = raw
        .retry_tool(
            "connect_account",
            json!({}),
            json!({ key.as_str(): {"action": "accept"} }),
            Some(state),
        )
        .await;
    let text = retry.text();
    assert!(
        text.starts_with("URL elicitation connect-account-") && text.ends_with(": Accept"),
        "{retry:#?}"
    );
}

// ---- Sampling and roots ----

async fn summarize_returns_the_clients_sample(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let script = Script::default();
    let client = stack.modern(script.clone()).await;
    let result = client
        .call_tool("summarize", json!({"text": "The quick brown fox."}))
        .await
        .unwrap();
    assert_eq!(tool_text(&result), script.sampling_text);

    let seen = client.seen();
    assert_eq!(seen.len(), 1, "{seen:#?}");
    assert_eq!(seen[0].method, "sampling/createMessage");
    assert!(
        json_mentions(&seen[0].params["messages"], "The quick brown fox."),
        "the legacy prompt reaches the client: {seen:#?}"
    );
    assert_eq!(seen[0].params["maxTokens"], 200);
    client.close().await;
}

async fn list_workspace_roots_returns_the_clients_roots(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let script = Script::default();
    let client = stack.modern(script.clone()).await;
    let result = client
        .call_tool("list_workspace_roots", json!({}))
        .await
        .unwrap();
    assert_eq!(tool_text(&result), script.root_uris("\n"));
    let seen = client.seen();
    assert_eq!(seen.len(), 1, "{seen:#?}");
    assert_eq!(seen[0].method, "roots/list");
    client.close().await;
}

/// `ask_three` sends elicitation, sampling and roots concurrently: the proxy must batch them
/// into ONE `input_required` round.
async fn ask_three_batches_three_requests_into_one_round(kind: BackendKind) {
    let stack = Stack::start(kind, batching()).await;
    let script = Script::default();
    let client = stack.modern(script.clone()).await;

    let first = expect_input_required(
        client
            .call_tool_once(tool_params("ask_three", json!({})))
            .await
            .unwrap(),
    );
    let requests =
        serde_json::to_value(first.input_requests.as_ref().expect("inputRequests")).unwrap();
    let methods: BTreeSet<&str> = requests
        .as_object()
        .unwrap()
        .values()
        .map(|request| request["method"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(
        requests.as_object().unwrap().len(),
        3,
        "one round with three input requests: {requests:#}"
    );
    assert_eq!(
        methods,
        BTreeSet::from(["elicitation/create", "roots/list", "sampling/createMessage"])
    );
    let state = first.request_state.clone().expect("a requestState");

    let done = expect_complete(
        client
            .call_tool_once(
                tool_params("ask_three", json!({}))
                    .with_input_responses(input_responses(script.answer_all(&requests).unwrap()))
                    .with_request_state(state),
            )
            .await
            .unwrap(),
    );
    assert_eq!(
        tool_text(&done),
        format!(
            "name: Alice\nsample: {}\nroots: {}",
            script.sampling_text,
            script.root_uris(", ")
        )
    );

    // The same through rmcp's own MRTR loop.
    let result = client.call_tool("ask_three", json!({})).await.unwrap();
    assert!(tool_text(&result).starts_with("name: Alice\n"));
    assert_eq!(client.seen().len(), 3, "{:#?}", client.seen());
    client.close().await;
}

// ---- Pass-through and progress ----

async fn echo_passes_through_as_complete(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let response = stack.raw().call_tool("echo", json!({"text": "hi"})).await;
    assert_eq!(response.status, 200, "{response:#?}");
    assert_eq!(response.result_type(), Some("complete"), "{response:#?}");
    assert_eq!(response.text(), "hi");
    let result = response.result();
    assert!(result.get("inputRequests").is_none() && result.get("requestState").is_none());

    let client = stack.modern(Script::default()).await;
    let result = client
        .call_tool("echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(tool_text(&result), "hi");
    assert!(client.seen().is_empty());
    client.close().await;
}

/// Progress of the legacy call reaches the client on the request's SSE stream, under the
/// client's own token, before the final result.
async fn slow_count_progress_reaches_the_client(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let raw = stack.raw();
    let token = "e2e-progress-1";
    let response = raw
        .call(
            "tools/call",
            json!({"name": "slow_count", "arguments": {"n": 5}, "_meta": {"progressToken": token}}),
        )
        .await;
    assert!(
        response.is_sse(),
        "progress needs an SSE response: {response:#?}"
    );
    assert_eq!(response.text(), "counted 5", "{response:#?}");
    let progress: Vec<&Value> = response
        .notifications
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .collect();
    assert!(
        !progress.is_empty(),
        "no progress reached the client: {response:#?}"
    );
    let mut last = f64::MIN;
    for notification in &progress {
        assert_eq!(
            notification["params"]["progressToken"], token,
            "progress carries the client's token: {notification:#}"
        );
        let value = notification["params"]["progress"].as_f64().unwrap();
        assert!(value > last, "progress must increase: {progress:#?}");
        last = value;
    }
    assert!(
        response.notifications.iter().all(|n| n.get("id").is_none()),
        "only notifications before the result, no requests: {response:#?}"
    );
}

/// Without a `progressToken` the client gets no progress (the proxy gives the legacy server a
/// token of its own and must drop what comes back for it).
async fn slow_count_without_a_token_sends_no_progress(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let response = stack.raw().call_tool("slow_count", json!({"n": 3})).await;
    assert_eq!(response.text(), "counted 3", "{response:#?}");
    assert!(
        response
            .notifications
            .iter()
            .all(|n| n["method"] != "notifications/progress"),
        "{response:#?}"
    );
}

// ---- Isolation ----

/// Eight clients (distinct `Authorization`, distinct answers), each running `ask_name` and
/// `ask_twice` at the same time, over a pool of 4 lanes: each gets its own answers back and
/// each handler is asked only its own questions.
async fn concurrent_clients_are_isolated(kind: BackendKind) {
    const CLIENTS: usize = 8;
    let stack = Stack::start(
        kind,
        ProxyOptions {
            pool_size: Some(4),
            ..ProxyOptions::default()
        },
    )
    .await;
    assert_concurrent_clients_are_isolated(stack.proxy.url(), CLIENTS).await;
}

// ---- Answers given up front ----

/// `inputResponses` entries that answer nothing pending are kept for the length of the front
/// request: a legacy request that arrives under the same key is answered with them at once. So a
/// first call that already carries the answer completes in one round (unknown keys ignored), and
/// a retry may answer the next round too; a wrongly keyed or malformed answer gets
/// `input_required` as usual (the conformance suite's `ignore-extra-params` / `validate-input`).
async fn answers_given_up_front_are_used(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let raw = stack.raw();
    let alice = json!({"action": "accept", "content": {"name": "Alice"}});
    let blue = json!({"action": "accept", "content": {"color": "blue"}});

    let junk = json!({"action": "accept", "content": {"foo": "bar"}});
    let offered = json!({"elicitation_1": alice, "unknown_extra_key": junk});
    let done = raw.retry_tool("ask_name", json!({}), offered, None).await;
    assert_eq!(done.result_type(), Some("complete"), "{done:#?}");
    assert_eq!(done.text(), "Hello, Alice!");

    for offered in [json!({"wrong_key": alice}), json!({"elicitation_1": 12345})] {
        let again = raw.retry_tool("ask_name", json!({}), offered, None).await;
        let (requests, _) = again.input_required();
        assert!(requests.get("elicitation_1").is_some(), "{again:#?}");
    }

    // ask_twice: round 1's retry also answers round 2's question, which is asked meanwhile.
    let first = raw.call_tool("ask_twice", json!({})).await;
    let (requests, state) = first.input_required();
    assert!(requests.get("elicitation_1").is_some(), "{first:#?}");
    let both = json!({"elicitation_1": alice, "elicitation_2": blue});
    let done = raw
        .retry_tool("ask_twice", json!({}), both, Some(state))
        .await;
    assert_eq!(done.result_type(), Some("complete"), "{done:#?}");
    assert_eq!(done.text(), "Alice likes blue");
}

per_backend!(120;
    ask_name_completes_with_the_form_answer,
    ask_twice_completes_after_two_rounds,
    ask_twice_rounds_carry_different_states,
    confirm_delete_sends_the_boolean_form,
    decline_gives_the_legacy_decline_text,
    cancel_gives_the_legacy_cancel_text,
    url_elicitation_drops_the_elicitation_id,
    summarize_returns_the_clients_sample,
    list_workspace_roots_returns_the_clients_roots,
    ask_three_batches_three_requests_into_one_round,
    echo_passes_through_as_complete,
    slow_count_progress_reaches_the_client,
    slow_count_without_a_token_sends_no_progress,
    answers_given_up_front_are_used,
);

per_backend!(240; concurrent_clients_are_isolated);
