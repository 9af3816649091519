//! The stdio lanes and the lane pool against the real legacy fixture server (rmcp 2.2) spawned
//! as a child process per lane.

mod backend_support;

use std::time::{Duration, Instant};

use backend_support::*;
use mcp_mrtr_proxy::backend::{BackendError, BackendSpec, LanePool};
use mcp_mrtr_proxy::capabilities::CapabilityProfile;
use serde_json::json;

/// A whole test, lane starts included, on a loaded 2-core machine.
const TEST: Duration = Duration::from_secs(60);

async fn spec() -> BackendSpec {
    init_tracing();
    stdio_spec(&fixture_binary_async().await)
}

#[tokio::test]
async fn stdio_initialize_and_tools_list_on_a_shared_lane() {
    let spec = spec().await;
    within(TEST, initialize_and_list_tools(spec)).await;
}

#[tokio::test]
async fn stdio_tools_call_echo() {
    let spec = spec().await;
    within(TEST, echo(spec)).await;
}

#[tokio::test]
async fn stdio_leased_lane_receives_the_elicitation_and_resumes() {
    let spec = spec().await;
    within(TEST, leased_elicitation(spec)).await;
}

#[tokio::test]
async fn stdio_ask_three_delivers_three_requests_before_any_answer() {
    let spec = spec().await;
    within(TEST, three_concurrent_server_requests(spec)).await;
}

#[tokio::test]
async fn stdio_progress_by_token_and_on_a_lease() {
    let spec = spec().await;
    within(TEST, progress(spec)).await;
}

#[tokio::test]
async fn stdio_unattributed_requests_are_answered_locally() {
    let spec = spec().await;
    within(TEST, unattributed_requests(spec)).await;
}

#[tokio::test]
async fn stdio_dropped_lease_answers_its_unanswered_requests() {
    let spec = spec().await;
    within(TEST, dropped_lease_answers_its_requests(spec)).await;
}

#[tokio::test]
async fn stdio_ten_concurrent_pass_through_calls_share_one_lane() {
    let spec = spec().await;
    within(TEST, concurrent_pass_through(spec)).await;
}

#[tokio::test]
async fn stdio_pool_limit_makes_a_second_lease_wait() {
    let spec = spec().await;
    within(TEST, pool_limit(spec)).await;
}

#[tokio::test]
async fn stdio_idle_lanes_are_closed_down_to_one() {
    let spec = spec().await;
    within(TEST, idle_lanes_are_closed(spec)).await;
}

#[tokio::test]
async fn stdio_log_notification_reaches_the_lease() {
    let spec = spec().await;
    within(TEST, log_notification_on_a_lease(spec)).await;
}

fn process_exists(pid: u32) -> bool {
    std::process::Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

#[tokio::test]
async fn stdio_crash_mid_call_fails_the_call_and_the_next_lease_gets_a_fresh_lane() {
    let spec = spec().await;
    within(TEST, async {
        let pool = LanePool::new(spec, settings(1, &[]));
        let mut lease = pool.lease(&CapabilityProfile::default()).await.unwrap();
        let pid = lease.lane.pid().unwrap();
        let call = lease
            .lane
            .request(
                "tools/call",
                json!({"name": "slow_count", "arguments": {"n": 100}}),
            )
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let killed = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        assert!(matches!(response(call).await, Err(BackendError::Crashed)));
        // The lease's event channel closes with the lane.
        assert!(within(Duration::from_secs(5), lease.events.recv())
            .await
            .is_none());
        assert!(!lease.lane.is_alive());
        assert!(matches!(
            lease.lane.request("tools/list", json!({})).await,
            Err(BackendError::Crashed)
        ));
        let old_id = lease.lane.id();
        drop(lease);

        let lease = pool.lease(&CapabilityProfile::default()).await.unwrap();
        assert_ne!(lease.lane.id(), old_id);
        assert_ne!(lease.lane.pid(), Some(pid));
        assert!(lease.lane.is_alive());
        let call = lease
            .lane
            .request(
                "tools/call",
                json!({"name": "echo", "arguments": {"text": "again"}}),
            )
            .await
            .unwrap();
        assert_eq!(tool_text(&response(call).await.unwrap().unwrap()), "again");
        assert_eq!(pool.lane_count(), 1);
        drop(lease);
        pool.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn stdio_shutdown_ends_the_children() {
    let spec = spec().await;
    within(TEST, async {
        let pool = LanePool::new(spec, settings(2, &[]));
        let a = pool.shared(&CapabilityProfile::default()).await.unwrap();
        let b = pool.lease(&form_profile()).await.unwrap();
        let pids = [a.pid().unwrap(), b.lane.pid().unwrap()];
        assert!(pids.iter().all(|pid| process_exists(*pid)));
        let started = Instant::now();
        pool.shutdown().await;
        // Closing stdin is enough for rmcp: no need to wait for the kill.
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(!a.is_alive() && !b.lane.is_alive());
        // Reaped by the lane, so the pids are gone.
        assert!(pids.iter().all(|pid| !process_exists(*pid)));
        assert!(matches!(
            pool.lease(&CapabilityProfile::default()).await,
            Err(BackendError::Unavailable(_))
        ));
    })
    .await;
}

#[tokio::test]
async fn stdio_server_crashing_at_startup_is_retried_with_backoff() {
    init_tracing();
    within(TEST, async {
        let pool = LanePool::new(
            BackendSpec::Stdio {
                program: "sh".into(),
                args: vec!["-c".into(), "echo dying >&2; exit 3".into()],
            },
            settings(1, &[]),
        );
        let started = Instant::now();
        for _ in 0..4 {
            let outcome = pool.lease(&CapabilityProfile::default()).await;
            assert!(
                matches!(outcome, Err(BackendError::Unavailable(_))),
                "{outcome:?}"
            );
        }
        // Attempts 2, 3 and 4 wait 100, 200 and 400 ms.
        let elapsed = started.elapsed();
        assert!(elapsed >= Duration::from_millis(700), "{elapsed:?}");
        assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
        assert_eq!(pool.lane_count(), 0);
        assert!(!pool.is_ready());
    })
    .await;
}

#[tokio::test]
async fn stdio_missing_program_is_unavailable() {
    init_tracing();
    let pool = LanePool::new(
        BackendSpec::Stdio {
            program: "/nonexistent/legacy-server".into(),
            args: vec![],
        },
        settings(1, &[]),
    );
    let outcome = within(TEST, pool.initialized()).await;
    assert!(
        matches!(outcome, Err(BackendError::Unavailable(_))),
        "{outcome:?}"
    );
}

/// Junk, a blank line and a 2025-03-26-style batch on stdout before the real server starts: the
/// reader skips what is malformed and reads the batch.
#[tokio::test]
async fn stdio_malformed_lines_and_batches_are_tolerated() {
    let binary = fixture_binary_async().await;
    init_tracing();
    let script = format!(
        "echo 'this is not json'; echo; echo '{{\"jsonrpc\":\"2.0\"}}'; \
         echo '[{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{\"level\":\"info\",\"data\":\"early\"}}}},{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}},7]'; \
         exec env RUST_LOG=warn '{}' --transport stdio",
        binary.display()
    );
    let long = "x".repeat(1 << 20);
    within(TEST, async {
        let pool = LanePool::new(
            BackendSpec::Stdio {
                program: "sh".into(),
                args: vec!["-c".into(), script],
            },
            settings(1, &[]),
        );
        let lane = pool.shared(&CapabilityProfile::default()).await.unwrap();
        // A 1 MiB line each way.
        let call = lane
            .request(
                "tools/call",
                json!({"name": "echo", "arguments": {"text": long}}),
            )
            .await
            .unwrap();
        assert_eq!(tool_text(&response(call).await.unwrap().unwrap()), long);
        pool.shutdown().await;
    })
    .await;
}

/// A cancelled request is forgotten at once: the legacy server never answers it, so otherwise
/// every abandoned call would stay pending on the lane for as long as the lane lives.
#[tokio::test]
async fn stdio_cancelled_requests_are_not_left_pending() {
    let spec = spec().await;
    within(TEST, async {
        let pool = LanePool::new(spec, settings(1, &[]));
        let lane = pool.shared(&CapabilityProfile::default()).await.unwrap();
        let call = lane
            .request(
                "tools/call",
                call_params("rounds", json!({"n": 0, "sleep_ms": 60000})),
            )
            .await
            .unwrap();
        assert_eq!(lane.pending_calls(), 1);
        lane.cancel(&call.legacy_id, "test").await.unwrap();
        assert_eq!(lane.pending_calls(), 0);
        match response(call).await {
            Err(BackendError::Unavailable(why)) => assert!(why.contains("cancelled"), "{why}"),
            other => panic!("a cancelled call resolves as cancelled: {other:?}"),
        }
        // The lane keeps serving.
        let call = lane
            .request("tools/call", call_params("echo", json!({"text": "after"})))
            .await
            .unwrap();
        assert_eq!(tool_text(&response(call).await.unwrap().unwrap()), "after");
        assert_eq!(lane.pending_calls(), 0);
        pool.shutdown().await;
    })
    .await;
}
