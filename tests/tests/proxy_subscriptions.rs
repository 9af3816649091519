//! `subscriptions/listen` (T16) in front of the legacy fixture server (rmcp 2.2), whose
//! `announce_changes` tool sends `notifications/tools/list_changed` and
//! `notifications/resources/list_changed` on its session and whose `touch_resource` tool sends
//! `notifications/resources/updated` to the sessions that `resources/subscribe`d the URI (it
//! answers how many it told). Every message of a stream is validated against the 2026-07-28
//! schema.

use std::time::Duration;

use mcp_migrate_tests::per_backend;
use mcp_migrate_tests::support::{
    BackendKind, ListenStream, ProxyOptions, RawClient, SpecSchema, Stack, StreamItem,
};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(10);
/// How long a stream must stay silent to count as "got nothing".
const QUIET: Duration = Duration::from_millis(400);
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The stack for these tests. Over stdio the fixture's subscriptions live in one process, so one
/// lane serves both the listen streams and the calls that trigger changes; the clients declare
/// no capabilities, the profile of the lane the proxy starts with (a client of another profile
/// would have that one lane restarted for it, and the subscriptions with it).
async fn stack(kind: BackendKind) -> Stack {
    let pool_size = match kind {
        BackendKind::Stdio => Some(1),
        BackendKind::Http => None,
    };
    Stack::start(
        kind,
        ProxyOptions {
            pool_size,
            ..ProxyOptions::default()
        },
    )
    .await
}

/// Opens a stream and checks its acknowledgement: the first message, tagged, valid, honouring
/// `honoured`.
async fn listen(
    raw: &RawClient,
    schema: &SpecSchema,
    filter: Value,
    honoured: Value,
) -> ListenStream {
    let mut stream = raw.listen(filter).await;
    assert_eq!(stream.status, 200);
    assert!(stream.sse, "a listen stream is an event stream");
    let ack = stream.expect_message(WAIT).await;
    schema.assert_valid("SubscriptionsAcknowledgedNotification", &ack);
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], stream.id, "{ack}");
    assert_eq!(ack["params"]["notifications"], honoured, "{ack}");
    stream
}

/// The next message must be `method`, tagged with the stream's id, valid as `schema_name`.
async fn expect_notification(
    stream: &mut ListenStream,
    schema: &SpecSchema,
    schema_name: &str,
    method: &str,
) -> Value {
    let message = stream.expect_message(WAIT).await;
    schema.assert_valid(schema_name, &message);
    assert_eq!(message["method"], method, "{message}");
    assert_eq!(
        message["params"]["_meta"][SUBSCRIPTION_ID], stream.id,
        "{message}"
    );
    message
}

async fn expect_quiet(stream: &mut ListenStream) {
    match stream.next_within(QUIET).await {
        StreamItem::Quiet => {}
        other => panic!("stream {} should have got nothing: {other:?}", stream.id),
    }
}

async fn touch(raw: &RawClient, uri: &str) -> String {
    let touched = raw.call_tool("touch_resource", json!({ "uri": uri })).await;
    assert_eq!(touched.status, 200, "{touched:#?}");
    touched.text()
}

async fn streams_get_what_they_asked_for_tagged_with_their_id(kind: BackendKind) {
    let stack = stack(kind).await;
    let raw = stack.raw().with_capabilities(json!({}));
    let schema = SpecSchema::load();
    // The fixture declares tools.listChanged and resources (subscribe, listChanged), no
    // prompts: promptsListChanged is not acknowledged.
    let mut tools = listen(
        &raw,
        &schema,
        json!({
            "toolsListChanged": true,
            "promptsListChanged": true,
            "resourceSubscriptions": ["test://watched", "test://watched"],
        }),
        json!({ "toolsListChanged": true, "resourceSubscriptions": ["test://watched"] }),
    )
    .await;
    let mut lists = listen(
        &raw,
        &schema,
        json!({ "resourcesListChanged": true }),
        json!({ "resourcesListChanged": true }),
    )
    .await;

    let announced = raw.call_tool("announce_changes", json!({})).await;
    assert_eq!(announced.text(), "announced", "{announced:#?}");
    expect_notification(
        &mut tools,
        &schema,
        "ToolListChangedNotification",
        "notifications/tools/list_changed",
    )
    .await;
    expect_notification(
        &mut lists,
        &schema,
        "ResourceListChangedNotification",
        "notifications/resources/list_changed",
    )
    .await;
    expect_quiet(&mut tools).await;
    expect_quiet(&mut lists).await;

    assert_eq!(touch(&raw, "test://watched").await, "told 1");
    let updated = expect_notification(
        &mut tools,
        &schema,
        "ResourceUpdatedNotification",
        "notifications/resources/updated",
    )
    .await;
    assert_eq!(updated["params"]["uri"], "test://watched");
    expect_quiet(&mut lists).await;
    // Nobody subscribed to this one.
    assert_eq!(touch(&raw, "test://other").await, "told 0");
    expect_quiet(&mut tools).await;
}

/// Streams that want the same URI share one legacy subscription; the last one to go takes it
/// back (`resources/unsubscribe`).
async fn resource_subscriptions_are_shared_and_given_back(kind: BackendKind) {
    let stack = stack(kind).await;
    let raw = stack.raw().with_capabilities(json!({}));
    let schema = SpecSchema::load();
    let watched = json!({ "resourceSubscriptions": ["test://shared"] });
    let mut first = listen(&raw, &schema, watched.clone(), watched.clone()).await;
    let mut second = listen(&raw, &schema, watched.clone(), watched.clone()).await;
    assert_eq!(touch(&raw, "test://shared").await, "told 1");
    for stream in [&mut first, &mut second] {
        expect_notification(
            stream,
            &schema,
            "ResourceUpdatedNotification",
            "notifications/resources/updated",
        )
        .await;
    }
    drop(first);
    tokio::time::sleep(QUIET).await;
    assert_eq!(touch(&raw, "test://shared").await, "told 1");
    expect_notification(
        &mut second,
        &schema,
        "ResourceUpdatedNotification",
        "notifications/resources/updated",
    )
    .await;
    drop(second);
    let mut told = String::new();
    for _ in 0..100 {
        told = touch(&raw, "test://shared").await;
        if told == "told 0" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        told, "told 0",
        "the last stream's subscription was not given back"
    );
}

/// At shutdown every stream ends with its `complete` result, tagged.
async fn streams_end_with_a_result_at_shutdown(kind: BackendKind) {
    let mut stack = stack(kind).await;
    let raw = stack.raw().with_capabilities(json!({}));
    let schema = SpecSchema::load();
    let mut stream = listen(
        &raw,
        &schema,
        json!({ "toolsListChanged": true }),
        json!({ "toolsListChanged": true }),
    )
    .await;
    let (status, result) = tokio::join!(stack.proxy.terminate(WAIT), stream.expect_message(WAIT));
    assert!(status.success(), "{status:?}");
    schema.assert_valid("SubscriptionsListenResultResponse", &result);
    assert_eq!(result["id"], stream.id, "{result}");
    assert_eq!(result["result"]["resultType"], "complete", "{result}");
    assert_eq!(
        result["result"]["_meta"][SUBSCRIPTION_ID], stream.id,
        "{result}"
    );
    assert_eq!(stream.next_within(WAIT).await, StreamItem::End);
}

/// Malformed filters get `-32602`; a client that takes only JSON cannot listen (406).
async fn bad_listen_requests_are_refused(kind: BackendKind) {
    let stack = stack(kind).await;
    let raw = stack.raw().with_capabilities(json!({}));
    let bad = raw
        .call(
            "subscriptions/listen",
            json!({ "notifications": { "toolsListChanged": "yes" } }),
        )
        .await;
    assert_eq!(bad.error_code(), Some(-32602), "{bad:#?}");
    let missing = raw.call("subscriptions/listen", json!({})).await;
    assert_eq!(missing.error_code(), Some(-32602), "{missing:#?}");
    let mut request = raw.request(
        "subscriptions/listen",
        json!({ "notifications": { "toolsListChanged": true } }),
    );
    request.set_header("Accept", "application/json");
    let refused = raw.send(&request).await;
    assert_eq!(refused.status, 406, "{refused:#?}");
    assert_eq!(refused.error_code(), Some(-32600), "{refused:#?}");
}

per_backend!(120;
    streams_get_what_they_asked_for_tagged_with_their_id,
    resource_subscriptions_are_shared_and_given_back,
    streams_end_with_a_result_at_shutdown,
    bad_listen_requests_are_refused,
);
