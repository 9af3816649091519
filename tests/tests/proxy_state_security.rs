//! `requestState` is attacker input (spec: integrity-protected, bound to the principal, the
//! method and a digest of the params, short-lived, single use). Every rejection is JSON-RPC
//! -32602 with a reason, and a rejected retry must not touch the paused legacy call: a correct
//! retry afterwards still completes it.

use std::time::Duration;

use mcp_migrate_tests::per_backend;
use mcp_migrate_tests::support::{
    assert_error, metric, wait_until, BackendKind, ProxyOptions, RawClient, RawResponse, Script,
    Stack,
};
use serde_json::{json, Value};

const INVALID_PARAMS: i64 = -32602;

/// Round 1 of `tool`: `(inputRequests, requestState)`, asserted to be `input_required`.
async fn round_one(client: &RawClient, tool: &str, arguments: Value) -> (Value, String) {
    let response = client.call_tool(tool, arguments).await;
    let (requests, state) = response.input_required();
    assert!(
        requests.as_object().is_some_and(|r| !r.is_empty()),
        "round 1 asks for input: {response:#?}"
    );
    (requests.clone(), state.to_string())
}

/// The scripted answers to `requests`.
fn answers(requests: &Value) -> Value {
    Script::default().answer_all(requests).unwrap()
}

/// Sends a retry and asserts that it is rejected with -32602.
async fn assert_rejected(
    client: &RawClient,
    tool: &str,
    arguments: Value,
    responses: Value,
    state: &str,
    why: &str,
) -> RawResponse {
    let request = client.retry_request(tool, arguments, responses, Some(state));
    let response = client.send(&request).await;
    let message = assert_error(&response, &request, &[INVALID_PARAMS]);
    eprintln!("{why}: rejected with {message:?}");
    response
}

/// Replaces the character in the middle of `state` by another base64url character.
fn flip_one_character(state: &str) -> String {
    let mut chars: Vec<char> = state.chars().collect();
    let middle = chars.len() / 2;
    chars[middle] = if chars[middle] == 'A' { 'B' } else { 'A' };
    chars.into_iter().collect()
}

async fn tampered_states_are_rejected_and_the_call_survives(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let raw = stack.raw();
    let (requests, state) = round_one(&raw, "ask_name", json!({})).await;
    let responses = answers(&requests);

    let appended = format!("{state}x");
    assert_rejected(
        &raw,
        "ask_name",
        json!({}),
        responses.clone(),
        &appended,
        "appended",
    )
    .await;
    let flipped = flip_one_character(&state);
    assert_ne!(flipped, state);
    assert_rejected(
        &raw,
        "ask_name",
        json!({}),
        responses.clone(),
        &flipped,
        "flipped",
    )
    .await;
    let truncated = &state[..state.len() - 1];
    assert_rejected(
        &raw,
        "ask_name",
        json!({}),
        responses.clone(),
        truncated,
        "truncated",
    )
    .await;

    let done = raw
        .retry_tool("ask_name", json!({}), responses, Some(&state))
        .await;
    assert_eq!(done.text(), "Hello, Alice!", "{done:#?}");
}

async fn another_principal_cannot_use_the_state(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let url = stack.proxy.url();
    let alice = RawClient::new(url).with_authorization("Bearer alice");
    let mallory = RawClient::new(url).with_authorization("Bearer mallory");
    let anonymous = RawClient::new(url);

    let (requests, state) = round_one(&alice, "ask_name", json!({})).await;
    let responses = answers(&requests);
    assert_rejected(
        &mallory,
        "ask_name",
        json!({}),
        responses.clone(),
        &state,
        "other bearer",
    )
    .await;
    assert_rejected(
        &anonymous,
        "ask_name",
        json!({}),
        responses.clone(),
        &state,
        "no bearer",
    )
    .await;

    let done = alice
        .retry_tool("ask_name", json!({}), responses, Some(&state))
        .await;
    assert_eq!(done.text(), "Hello, Alice!", "{done:#?}");

    // And the other way round: a state minted without credentials is not good with them.
    let (requests, state) = round_one(&anonymous, "ask_name", json!({})).await;
    assert_rejected(
        &alice,
        "ask_name",
        json!({}),
        answers(&requests),
        &state,
        "added bearer",
    )
    .await;
}

async fn the_state_is_bound_to_the_tool_and_its_arguments(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let raw = stack.raw();
    let arguments = json!({"path": "/tmp/a"});
    let (requests, state) = round_one(&raw, "confirm_delete", arguments.clone()).await;
    let responses = answers(&requests);

    let other_path = json!({"path": "/tmp/b"});
    assert_rejected(
        &raw,
        "confirm_delete",
        other_path,
        responses.clone(),
        &state,
        "other path",
    )
    .await;
    let extra = json!({"path": "/tmp/a", "force": true});
    assert_rejected(
        &raw,
        "confirm_delete",
        extra,
        responses.clone(),
        &state,
        "extra argument",
    )
    .await;
    assert_rejected(
        &raw,
        "ask_name",
        json!({}),
        responses.clone(),
        &state,
        "other tool",
    )
    .await;

    let done = raw
        .retry_tool("confirm_delete", arguments, responses, Some(&state))
        .await;
    assert_eq!(done.text(), "Deletion of /tmp/a confirmed.", "{done:#?}");
}

/// Sealing keys rotate without losing paused calls (`--state-key-file` as a keyring, re-read
/// on SIGHUP): a call paused under the old single key resumes after a new key was added and
/// seals; a call paused under a key that is then retired gets "sealed with a retired key".
async fn keys_rotate_under_paused_calls(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let raw = stack.raw();
    let old_key = stack.proxy.state_key_hex().to_owned();
    let (requests, before) = round_one(&raw, "ask_name", json!({})).await;
    assert!(
        before.starts_with("mrs1."),
        "a single key file seals as before: {before}"
    );

    // Rotate: the old key listed under an id, a new key that seals from now on.
    let new_key = "7".repeat(64);
    stack
        .proxy
        .reload_state_keys(&format!("# rotated\nold {old_key}\nnew {new_key}\n"))
        .await;
    let done = raw
        .retry_tool("ask_name", json!({}), answers(&requests), Some(&before))
        .await;
    assert_eq!(done.text(), "Hello, Alice!", "{done:#?}");

    let (requests, sealed_new) = round_one(&raw, "ask_name", json!({})).await;
    assert!(sealed_new.starts_with("mrs2.new."), "{sealed_new}");
    let (_, sealed_new_too) = round_one(&raw, "ask_name", json!({})).await;
    let done = raw
        .retry_tool("ask_name", json!({}), answers(&requests), Some(&sealed_new))
        .await;
    assert_eq!(done.text(), "Hello, Alice!", "{done:#?}");

    // Retire "new": its state is refused as such, and says what to do.
    stack
        .proxy
        .reload_state_keys(&format!("newer {}\n", "8".repeat(64)))
        .await;
    let refused = raw
        .retry_tool(
            "ask_name",
            json!({}),
            answers(&requests),
            Some(&sealed_new_too),
        )
        .await;
    let message = refused.error()["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.contains("sealed with a retired key; send the original request again"),
        "{refused:#?}"
    );
}

async fn a_state_is_single_use(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let raw = stack.raw();
    let (requests, state) = round_one(&raw, "ask_name", json!({})).await;
    let responses = answers(&requests);
    let done = raw
        .retry_tool("ask_name", json!({}), responses.clone(), Some(&state))
        .await;
    assert_eq!(done.text(), "Hello, Alice!", "{done:#?}");
    assert_rejected(&raw, "ask_name", json!({}), responses, &state, "replay").await;
}

/// A retry whose `inputResponses` lack the requested key is asked again (spec: SHOULD return a
/// new `InputRequiredResult` rather than an error); answering that completes the call.
async fn a_missing_answer_is_asked_for_again(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let raw = stack.raw();
    let (requests, state) = round_one(&raw, "ask_name", json!({})).await;
    let wrong_key =
        json!({"not-a-requested-key": {"action": "accept", "content": {"name": "Eve"}}});
    let again = raw
        .retry_tool("ask_name", json!({}), wrong_key, Some(&state))
        .await;
    assert!(
        again.message.get("error").is_none(),
        "a missing answer is not an error: {again:#?}"
    );
    let (requests2, state2) = again.input_required();
    let methods: Vec<&Value> = requests2
        .as_object()
        .expect("inputRequests again")
        .values()
        .map(|r| &r["method"])
        .collect();
    assert_eq!(methods, [&json!("elicitation/create")], "{again:#?}");
    assert_eq!(
        requests2.as_object().unwrap().keys().collect::<Vec<_>>(),
        requests.as_object().unwrap().keys().collect::<Vec<_>>(),
        "the same legacy request is still pending, under the same key"
    );

    let done = raw
        .retry_tool("ask_name", json!({}), answers(requests2), Some(state2))
        .await;
    assert_eq!(done.text(), "Hello, Alice!", "{done:#?}");
}

/// Keys the proxy did not ask for are ignored (spec: SHOULD ignore unknown keys).
async fn unknown_answer_keys_are_ignored(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let raw = stack.raw();
    let (requests, state) = round_one(&raw, "ask_name", json!({})).await;
    let mut responses = answers(&requests);
    responses["junk"] = json!({"action": "accept", "content": {"name": "Eve"}});
    let done = raw
        .retry_tool("ask_name", json!({}), responses, Some(&state))
        .await;
    assert_eq!(done.text(), "Hello, Alice!", "{done:#?}");
}

/// `inputResponses` without a `requestState` belong to no pause: the call starts afresh and
/// asks for input (conformance `missing-input-response`).
async fn answers_without_a_state_start_a_new_call(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let raw = stack.raw();
    let response = raw
        .retry_tool(
            "ask_name",
            json!({}),
            json!({"user_name": {"action": "accept", "content": {"name": "Alice"}}}),
            None,
        )
        .await;
    let (requests, _) = response.input_required();
    assert!(
        requests.as_object().is_some_and(|r| r.len() == 1),
        "{response:#?}"
    );
}

/// States the proxy never minted are refused.
async fn forged_states_are_rejected(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let raw = stack.raw();
    for forged in [
        "not a state",
        "mrs1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    ] {
        let request = raw.retry_request("ask_name", json!({}), Value::Null, Some(forged));
        let response = raw.send(&request).await;
        assert_error(&response, &request, &[INVALID_PARAMS]);
    }
}

/// `--pause-ttl 1s`: a retry 2.5 s after round 1 is refused as expired, and the expired pause
/// let go of the legacy call (the legacy server was answered and told), so with a single lane a
/// new call still runs.
async fn an_expired_pause_is_rejected_and_frees_the_lane(kind: BackendKind) {
    let stack = Stack::start(
        kind,
        ProxyOptions {
            pool_size: Some(1),
            pause_ttl: Some("1s".into()),
            ..ProxyOptions::default()
        },
    )
    .await;
    let raw = stack.raw();
    let (requests, state) = round_one(&raw, "ask_name", json!({})).await;
    // The TTL sweep (every second) expires the pause and frees its lane.
    let expired = "mcp_proxy_pause_expiries_total{cause=\"ttl\"}";
    wait_until(Duration::from_secs(30), expired, || async {
        metric(&stack.proxy.metrics().await, expired) == 1.0
    })
    .await;
    let request = raw.retry_request("ask_name", json!({}), answers(&requests), Some(&state));
    let response = raw.send(&request).await;
    let message = assert_error(&response, &request, &[INVALID_PARAMS]);
    assert!(
        message.to_lowercase().contains("expire"),
        "the error says the state expired: {message:?}"
    );

    let client = stack.modern(Script::default()).await;
    let result = tokio::time::timeout(
        Duration::from_secs(30),
        client.call_tool("ask_name", json!({})),
    )
    .await
    .expect("the expired pause still holds the only lane")
    .unwrap();
    assert_eq!(
        mcp_migrate_tests::support::tool_text(&result),
        "Hello, Alice!"
    );
    client.close().await;
}

per_backend!(120;
    keys_rotate_under_paused_calls,
    tampered_states_are_rejected_and_the_call_survives,
    another_principal_cannot_use_the_state,
    the_state_is_bound_to_the_tool_and_its_arguments,
    a_state_is_single_use,
    a_missing_answer_is_asked_for_again,
    unknown_answer_keys_are_ignored,
    answers_without_a_state_start_a_new_call,
    forged_states_are_rejected,
    an_expired_pause_is_rejected_and_frees_the_lane,
);
