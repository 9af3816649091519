//! The legacy Streamable HTTP lanes and the lane pool against the real legacy fixture server
//! (rmcp 2.2, stateful sessions) listening on 127.0.0.1.

mod backend_support;

use std::time::{Duration, Instant};

use backend_support::*;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use mcp_mrtr_proxy::backend::{BackendError, BackendSpec, LanePool, UpstreamTransport};
use mcp_mrtr_proxy::capabilities::CapabilityProfile;
use serde_json::json;

/// A whole test, lane starts included, on a loaded 2-core machine.
const TEST: Duration = Duration::from_secs(60);

async fn server() -> HttpFixture {
    init_tracing();
    HttpFixture::start().await
}

#[tokio::test]
async fn http_initialize_and_tools_list_on_a_shared_lane() {
    let server = server().await;
    within(TEST, initialize_and_list_tools(server.spec())).await;
}

#[tokio::test]
async fn http_tools_call_echo() {
    let server = server().await;
    within(TEST, echo(server.spec())).await;
}

#[tokio::test]
async fn http_leased_lane_receives_the_elicitation_and_resumes() {
    let server = server().await;
    within(TEST, leased_elicitation(server.spec())).await;
}

#[tokio::test]
async fn http_ask_three_delivers_three_requests_before_any_answer() {
    let server = server().await;
    within(TEST, three_concurrent_server_requests(server.spec())).await;
}

#[tokio::test]
async fn http_progress_by_token_and_on_a_lease() {
    let server = server().await;
    within(TEST, progress(server.spec())).await;
}

#[tokio::test]
async fn http_unattributed_requests_are_answered_locally() {
    let server = server().await;
    within(TEST, unattributed_requests(server.spec())).await;
}

#[tokio::test]
async fn http_dropped_lease_answers_its_unanswered_requests() {
    let server = server().await;
    within(TEST, dropped_lease_answers_its_requests(server.spec())).await;
}

#[tokio::test]
async fn http_ten_concurrent_pass_through_calls_share_one_lane() {
    let server = server().await;
    within(TEST, concurrent_pass_through(server.spec())).await;
}

#[tokio::test]
async fn http_pool_limit_makes_a_second_lease_wait() {
    let server = server().await;
    within(TEST, pool_limit(server.spec())).await;
}

#[tokio::test]
async fn http_idle_lanes_are_closed_down_to_one() {
    let server = server().await;
    within(TEST, idle_lanes_are_closed(server.spec())).await;
}

#[tokio::test]
async fn http_log_notification_reaches_the_lease() {
    let server = server().await;
    within(TEST, log_notification_on_a_lease(server.spec())).await;
}

/// A raw request to the fixture, outside any lane; returns the status.
async fn raw(method: &str, url: &str, session: &str, body: &str) -> http::StatusCode {
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let request = http::Request::builder()
        .method(method)
        .uri(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-11-25")
        .body(Full::new(Bytes::from(body.to_owned())))
        .unwrap();
    let response = client.request(request).await.unwrap();
    let status = response.status();
    let _ = response.into_body().collect().await;
    status
}

const TOOLS_LIST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;

/// The session is deleted behind the lane's back: the call in flight fails with `Crashed`, the
/// lane re-initializes with a new session and keeps working.
#[tokio::test]
async fn http_expired_session_reinitializes_the_lane() {
    let server = server().await;
    within(TEST, async {
        let pool = LanePool::new(server.spec(), settings(1, &[]));
        let lane = pool.shared(&CapabilityProfile::default()).await.unwrap();
        let old_session = lane.session_id().expect("rmcp assigns a session");
        let call = lane
            .request(
                "tools/call",
                // Still running when the session goes, however loaded the machine.
                json!({"name": "rounds", "arguments": {"n": 0, "sleep_ms": 60000}}),
            )
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let status = raw("DELETE", &server.url, &old_session, "").await;
        assert!(status.is_success(), "{status}");
        let outcome = response(call).await;
        assert!(matches!(outcome, Err(BackendError::Crashed)), "{outcome:?}");
        // The lane notices (GET stream or the next request) and opens a new session.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if lane.session_id().is_some_and(|id| id != old_session) {
                break;
            }
            assert!(Instant::now() < deadline, "no new session");
            // A request on the expired session triggers the re-initialization too.
            if let Ok(call) = lane.request("tools/list", json!({})).await {
                let _ = response(call).await;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(lane.is_alive());
        let call = lane
            .request(
                "tools/call",
                json!({"name": "echo", "arguments": {"text": "new session"}}),
            )
            .await
            .unwrap();
        assert_eq!(
            tool_text(&response(call).await.unwrap().unwrap()),
            "new session"
        );
        // Elicitation works on the new session (its GET stream was reopened).
        drop(lane);
        let mut lease = pool.lease(&CapabilityProfile::default()).await;
        if let Ok(lease) = lease.as_mut() {
            assert!(lease.lane.session_id().is_some());
        }
        drop(lease);
        let mut lease = pool.lease(&form_profile()).await.unwrap();
        let call = lease
            .lane
            .request("tools/call", json!({"name": "ask_name", "arguments": {}}))
            .await
            .unwrap();
        let (id, _, _) = next_server_request(&mut lease.events).await;
        lease
            .lane
            .respond(
                id,
                Ok(json!({"action": "accept", "content": {"name": "Eve"}})),
            )
            .await
            .unwrap();
        assert_eq!(
            tool_text(&response(call).await.unwrap().unwrap()),
            "Hello, Eve!"
        );
        drop(lease);
        pool.shutdown().await;
    })
    .await;
}

/// Shutdown DELETEs the session: the server no longer knows it.
#[tokio::test]
async fn http_shutdown_deletes_the_session() {
    let server = server().await;
    within(TEST, async {
        let pool = LanePool::new(server.spec(), settings(1, &[]));
        let lane = pool.shared(&CapabilityProfile::default()).await.unwrap();
        let session = lane.session_id().unwrap();
        assert_eq!(
            raw("POST", &server.url, &session, TOOLS_LIST).await,
            http::StatusCode::OK
        );
        pool.shutdown().await;
        assert!(!lane.is_alive());
        assert_eq!(
            raw("POST", &server.url, &session, TOOLS_LIST).await,
            http::StatusCode::NOT_FOUND
        );
    })
    .await;
}

/// Nothing listens: lane creation fails fast with `Unavailable`, and later attempts back off.
#[tokio::test]
async fn http_unreachable_server_is_unavailable_fast_with_backoff() {
    init_tracing();
    // Bind then drop a listener: the port is (almost certainly) closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let pool = LanePool::new(
        BackendSpec::Http {
            url: format!("http://127.0.0.1:{port}/mcp"),
            transport: UpstreamTransport::Auto,
        },
        settings(1, &[]),
    );
    within(TEST, async {
        let started = Instant::now();
        let first = pool.lease(&CapabilityProfile::default()).await;
        assert!(
            matches!(first, Err(BackendError::Unavailable(_))),
            "{first:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(2));
        let second = pool.initialized().await;
        assert!(
            matches!(second, Err(BackendError::Unavailable(_))),
            "{second:?}"
        );
        assert!(started.elapsed() >= Duration::from_millis(100));
        assert!(!pool.is_ready());
    })
    .await;
}

#[tokio::test]
async fn http_https_upstream_is_refused() {
    init_tracing();
    let pool = LanePool::new(
        BackendSpec::Http {
            url: "https://127.0.0.1:1/mcp".into(),
            transport: UpstreamTransport::Auto,
        },
        settings(1, &[]),
    );
    let outcome = within(TEST, pool.initialized()).await;
    assert!(
        matches!(outcome, Err(BackendError::Unavailable(_))),
        "{outcome:?}"
    );
}

/// The server process dies mid-call: the call fails with `Crashed` quickly, the lane is dead and
/// the pool reports the server unavailable.
#[tokio::test]
async fn http_server_killed_mid_call_fails_the_call() {
    let mut server = server().await;
    within(TEST, async {
        let pool = LanePool::new(server.spec(), settings(1, &[]));
        let lease = pool.lease(&CapabilityProfile::default()).await.unwrap();
        let call = lease
            .lane
            .request(
                "tools/call",
                // Still running at the kill, however loaded the machine.
                json!({"name": "rounds", "arguments": {"n": 0, "sleep_ms": 60000}}),
            )
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        server.child.kill().await.unwrap();
        let killed = Instant::now();
        let outcome = response(call).await;
        assert!(matches!(outcome, Err(BackendError::Crashed)), "{outcome:?}");
        // "Quickly": from the reset connection, not the 30 s idle timeout; 10 s holds on a
        // loaded 2-core machine.
        assert!(
            killed.elapsed() < Duration::from_secs(10),
            "{:?}",
            killed.elapsed()
        );
        assert!(!lease.lane.is_alive());
        drop(lease);
        let next = pool.lease(&CapabilityProfile::default()).await;
        assert!(
            matches!(next, Err(BackendError::Unavailable(_))),
            "{next:?}"
        );
    })
    .await;
}
