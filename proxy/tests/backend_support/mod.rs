//! Shared helpers and scenarios of the backend tests (`backend_stdio.rs`, `backend_http.rs`):
//! the real legacy fixture server (rmcp 2.2), built once per test binary, and transport-neutral
//! scenarios run against a [`BackendSpec`].

#![allow(dead_code)] // each test binary uses a different subset

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use mcp_mrtr_proxy::backend::{
    BackendError, BackendEvent, BackendSpec, LanePool, PendingCall, PoolSettings, UpstreamTransport,
};
use mcp_mrtr_proxy::capabilities::CapabilityProfile;
use mcp_mrtr_proxy::jsonrpc::{ErrorObject, Reply};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

pub const FIXTURE: &str = "mcp-legacy-fixture-server";

/// Logs to the test output (shown for failing tests); `RUST_LOG` filters.
pub fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "mcp_mrtr_proxy=debug".into()),
        )
        .with_test_writer()
        .try_init();
}

/// Builds the fixture server once per test binary (same cargo, target directory and profile as
/// the running test) and returns its path.
pub fn fixture_binary() -> PathBuf {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match BUILT.get_or_init(build_fixture) {
        Ok(path) => path.clone(),
        Err(why) => panic!("{why}"),
    }
}

fn build_fixture() -> Result<PathBuf, String> {
    let workspace = mcp_migrate_workspace_bins::workspace_root(env!("CARGO_MANIFEST_DIR"));
    let bin_dir = mcp_migrate_workspace_bins::build(&workspace, &[FIXTURE], &[])?;
    mcp_migrate_workspace_bins::binary_in(&bin_dir, FIXTURE)
}

/// [`fixture_binary`] from async code, before a test's timeout starts.
pub async fn fixture_binary_async() -> PathBuf {
    tokio::task::spawn_blocking(fixture_binary)
        .await
        .expect("building the fixture panicked")
}

/// The fixture over stdio (through `env`, which execs it, to keep its stderr quiet).
pub fn stdio_spec(binary: &Path) -> BackendSpec {
    BackendSpec::Stdio {
        program: "env".into(),
        args: vec![
            "RUST_LOG=warn".into(),
            binary.display().to_string(),
            "--transport".into(),
            "stdio".into(),
        ],
    }
}

/// A fixture server over HTTP, killed when dropped.
pub struct HttpFixture {
    pub child: tokio::process::Child,
    pub url: String,
}

impl HttpFixture {
    pub async fn start() -> HttpFixture {
        let binary = fixture_binary_async().await;
        let mut child = tokio::process::Command::new(binary)
            .args(["--transport", "http", "--listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the HTTP fixture");
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let url = within(Duration::from_secs(20), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(url) = line.strip_prefix("listening on ") {
                    return url.trim().to_owned();
                }
            }
            panic!("the fixture exited before listening")
        })
        .await;
        HttpFixture { child, url }
    }

    pub fn spec(&self) -> BackendSpec {
        BackendSpec::Http {
            url: self.url.clone(),
            transport: UpstreamTransport::StreamableHttp,
        }
    }
}

pub fn settings(max_lanes: usize, roots: &[&str]) -> PoolSettings {
    PoolSettings {
        max_lanes,
        roots: roots.iter().map(|root| root.to_string()).collect(),
        client_info: json!({"name": "mcp-mrtr-proxy-tests", "version": "0.0.0"}),
        request_timeout: Duration::from_secs(10),
        call_sessions: Default::default(),
        lane_idle_timeout: Duration::from_secs(300),
        credentials: Default::default(),
        credentials_wanted: Default::default(),
        paused_per_lane: mcp_mrtr_proxy::limits::DEFAULT_MAX_PAUSED_PER_LANE,
        // The pool tests count lanes: no lane starts behind their back (the spare lanes have
        // their own test).
        spare_lanes: 0,
    }
}

/// Elicitation (form), sampling and roots.
pub fn full_profile() -> CapabilityProfile {
    CapabilityProfile {
        elicitation_form: true,
        sampling: true,
        roots: true,
        ..CapabilityProfile::default()
    }
}

pub fn form_profile() -> CapabilityProfile {
    CapabilityProfile {
        elicitation_form: true,
        ..CapabilityProfile::default()
    }
}

/// Runs `future`, failing the test if it takes longer than `limit`.
pub async fn within<T>(limit: Duration, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(limit, future).await {
        Ok(value) => value,
        Err(_) => panic!("timed out after {limit:?}"),
    }
}

/// One step (a lease that may start a lane, a response) on a loaded 2-core machine.
const STEP: Duration = Duration::from_secs(30);

/// The legacy response of a call (a raw result read as a `Value`).
pub async fn response(call: PendingCall) -> Result<Result<Value, ErrorObject>, BackendError> {
    within(STEP, call.response)
        .await
        .expect("the response sender was dropped")
        .map(|outcome| outcome.and_then(Reply::into_value))
}

/// The text of a successful `tools/call` result.
pub fn tool_text(result: &Value) -> String {
    assert_eq!(result["isError"], json!(false), "{result}");
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {result}"))
        .to_owned()
}

pub fn call_params(name: &str, arguments: Value) -> Value {
    json!({"name": name, "arguments": arguments})
}

pub async fn next_event(events: &mut mcp_mrtr_proxy::backend::EventReceiver) -> BackendEvent {
    within(STEP, events.recv())
        .await
        .expect("the lease's event channel closed")
}

/// The next server request on a lease (notifications in between are skipped).
pub async fn next_server_request(
    events: &mut mcp_mrtr_proxy::backend::EventReceiver,
) -> (Value, String, Value) {
    loop {
        if let BackendEvent::ServerRequest { id, method, params } = next_event(events).await {
            return (id, method, params);
        }
    }
}

// ---- Scenarios, shared by both transports ----

/// `initialize` outcome, readiness, and `tools/list` on a shared lane.
pub async fn initialize_and_list_tools(spec: BackendSpec) {
    let pool = LanePool::new(spec, settings(2, &[]));
    assert!(!pool.is_ready());
    let initialized = within(STEP, pool.initialized()).await.unwrap();
    assert_eq!(initialized.protocol_version, "2025-11-25");
    assert_eq!(initialized.result["serverInfo"]["name"], json!(FIXTURE));
    assert!(initialized.result["capabilities"]["tools"].is_object());
    assert!(pool.is_ready());
    let lane = within(STEP, pool.shared(&CapabilityProfile::default()))
        .await
        .unwrap();
    assert_eq!(lane.initialized(), &initialized);
    let call = lane.request("tools/list", json!({})).await.unwrap();
    let result = response(call).await.unwrap().unwrap();
    let names: Vec<&str> = result["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    for expected in [
        "echo",
        "ask_name",
        "ask_three",
        "slow_count",
        "list_workspace_roots",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    // The same lane serves the next pass-through request (no second lane for one profile).
    let again = within(STEP, pool.shared(&CapabilityProfile::default()))
        .await
        .unwrap();
    assert!(Arc::ptr_eq(&lane, &again));
    assert_eq!(pool.lane_count(), 1);
    // An unknown method is a JSON-RPC error, not a transport failure.
    let call = lane.request("no/such/method", json!({})).await.unwrap();
    let error = response(call).await.unwrap().unwrap_err();
    assert_eq!(error.code, -32601, "{error:?}");
    pool.shutdown().await;
    assert!(!pool.is_ready());
    assert!(!lane.is_alive());
    assert!(matches!(
        pool.shared(&CapabilityProfile::default()).await,
        Err(BackendError::Unavailable(_))
    ));
}

/// `tools/call echo` on a shared lane.
pub async fn echo(spec: BackendSpec) {
    let pool = LanePool::new(spec, settings(2, &[]));
    let lane = within(STEP, pool.shared(&CapabilityProfile::default()))
        .await
        .unwrap();
    let call = lane
        .request(
            "tools/call",
            call_params("echo", json!({"text": "hi there"})),
        )
        .await
        .unwrap();
    let result = response(call).await.unwrap().unwrap();
    assert_eq!(tool_text(&result), "hi there");
    pool.shutdown().await;
}

/// A leased lane gets `ask_name`'s elicitation as a server request; the answer completes the call.
pub async fn leased_elicitation(spec: BackendSpec) {
    let pool = LanePool::new(spec, settings(2, &[]));
    let mut lease = within(STEP, pool.lease(&form_profile())).await.unwrap();
    assert!(lease.lane.is_leased());
    let mut call = lease
        .lane
        .request("tools/call", call_params("ask_name", json!({})))
        .await
        .unwrap();
    let (id, method, params) = next_server_request(&mut lease.events).await;
    assert_eq!(method, "elicitation/create");
    assert_eq!(params["message"], json!("What is your name?"));
    assert_eq!(
        params["requestedSchema"]["properties"]["name"]["type"],
        json!("string")
    );
    // The call is paused on the legacy side until the answer arrives.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(matches!(
        call.response.try_recv(),
        Err(tokio::sync::oneshot::error::TryRecvError::Empty)
    ));
    lease
        .lane
        .respond(
            id,
            Ok(json!({"action": "accept", "content": {"name": "Alice"}})),
        )
        .await
        .unwrap();
    let result = response(call).await.unwrap().unwrap();
    assert_eq!(tool_text(&result), "Hello, Alice!");
    drop(lease);
    pool.shutdown().await;
}

/// `ask_three` sends three server requests at once; all arrive before any is answered.
pub async fn three_concurrent_server_requests(spec: BackendSpec) {
    let pool = LanePool::new(spec, settings(2, &[]));
    let mut lease = within(STEP, pool.lease(&full_profile())).await.unwrap();
    let call = lease
        .lane
        .request("tools/call", call_params("ask_three", json!({})))
        .await
        .unwrap();
    let mut requests = Vec::new();
    for _ in 0..3 {
        requests.push(next_server_request(&mut lease.events).await);
    }
    let mut methods: Vec<&str> = requests.iter().map(|(_, m, _)| m.as_str()).collect();
    methods.sort_unstable();
    assert_eq!(
        methods,
        ["elicitation/create", "roots/list", "sampling/createMessage"]
    );
    for (id, method, _) in requests {
        let answer = match method.as_str() {
            "elicitation/create" => json!({"action": "accept", "content": {"name": "Bob"}}),
            "sampling/createMessage" => json!({
                "role": "assistant",
                "content": {"type": "text", "text": "Hi Bob"},
                "model": "test-model"
            }),
            _ => json!({"roots": [{"uri": "file:///a"}, {"uri": "file:///b"}]}),
        };
        lease.lane.respond(id, Ok(answer)).await.unwrap();
    }
    let result = response(call).await.unwrap().unwrap();
    assert_eq!(
        tool_text(&result),
        "name: Bob\nsample: Hi Bob\nroots: file:///a, file:///b"
    );
    drop(lease);
    pool.shutdown().await;
}

/// `slow_count` progress: by token on a shared lane, and as lease events on a leased lane.
pub async fn progress(spec: BackendSpec) {
    let pool = LanePool::new(spec, settings(2, &[]));
    let lane = within(STEP, pool.shared(&CapabilityProfile::default()))
        .await
        .unwrap();
    let token = lane.mint_progress_token();
    let (call, mut progress) = lane
        .request_with_progress(
            "tools/call",
            call_params("slow_count", json!({"n": 5})),
            token.clone(),
        )
        .await
        .unwrap();
    let mut seen = Vec::new();
    while let Some(params) = within(STEP, progress.recv()).await {
        assert_eq!(params["progressToken"], token);
        seen.push(params["progress"].as_f64().unwrap());
    }
    assert_eq!(seen, vec![1.0, 2.0, 3.0, 4.0, 5.0]);
    let result = response(call).await.unwrap().unwrap();
    assert_eq!(tool_text(&result), "counted 5");

    // Leased, with the caller's own token: progress arrives as lease events.
    let mut lease = within(STEP, pool.lease(&CapabilityProfile::default()))
        .await
        .unwrap();
    let mut params = call_params("slow_count", json!({"n": 3}));
    params["_meta"] = json!({"progressToken": "leased-1"});
    let call = lease.lane.request("tools/call", params).await.unwrap();
    let mut progress = Vec::new();
    while progress.len() < 3 {
        match next_event(&mut lease.events).await {
            BackendEvent::Notification { method, params } if method == "notifications/progress" => {
                assert_eq!(params["progressToken"], json!("leased-1"));
                progress.push(params["progress"].as_f64().unwrap());
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(progress, vec![1.0, 2.0, 3.0]);
    assert_eq!(
        tool_text(&response(call).await.unwrap().unwrap()),
        "counted 3"
    );
    drop(lease);
    pool.shutdown().await;
}

/// Server requests on a lane nobody leases are answered by the lane (translation T7 of docs/proxy/how-it-works.md).
pub async fn unattributed_requests(spec: BackendSpec) {
    // With --root: roots/list is answered from it.
    let pool = LanePool::new(spec.clone(), settings(2, &["file:///configured/root"]));
    let lane = within(STEP, pool.shared(&full_profile())).await.unwrap();
    assert!(!lane.is_leased());
    let call = lane
        .request("tools/call", call_params("list_workspace_roots", json!({})))
        .await
        .unwrap();
    let result = response(call).await.unwrap().unwrap();
    assert_eq!(tool_text(&result), "file:///configured/root");
    // Elicitation is declined.
    let call = lane
        .request("tools/call", call_params("ask_name", json!({})))
        .await
        .unwrap();
    let result = response(call).await.unwrap().unwrap();
    assert_eq!(tool_text(&result), "No name given: the user declined.");
    // Sampling is refused with an error, which the tool reports.
    let call = lane
        .request("tools/call", call_params("summarize", json!({"text": "x"})))
        .await
        .unwrap();
    let outcome = response(call).await.unwrap();
    let text = match outcome {
        Ok(result) => result.to_string(),
        Err(error) => error.message,
    };
    assert!(
        text.contains("sampling is not available outside a client call"),
        "{text}"
    );
    pool.shutdown().await;

    // Without roots: an error (not an empty list), which the tool reports.
    let pool = LanePool::new(spec, settings(2, &[]));
    let lane = within(STEP, pool.shared(&full_profile())).await.unwrap();
    let call = lane
        .request("tools/call", call_params("list_workspace_roots", json!({})))
        .await
        .unwrap();
    let outcome = response(call).await.unwrap();
    let text = match outcome {
        Ok(result) => {
            assert_eq!(result["isError"], json!(true), "{result}");
            result.to_string()
        }
        Err(error) => error.message,
    };
    assert!(
        text.contains("roots are only available to the proxy during a client call"),
        "{text}"
    );
    pool.shutdown().await;
}

/// A server request delivered to a lease that is dropped unanswered is answered locally, so the
/// legacy call still finishes; the lane is then reusable.
pub async fn dropped_lease_answers_its_requests(spec: BackendSpec) {
    let pool = LanePool::new(spec, settings(1, &[]));
    let mut lease = within(STEP, pool.lease(&form_profile())).await.unwrap();
    let lane_id = lease.lane.id();
    let call = lease
        .lane
        .request("tools/call", call_params("ask_name", json!({})))
        .await
        .unwrap();
    let (_, method, _) = next_server_request(&mut lease.events).await;
    assert_eq!(method, "elicitation/create");
    drop(lease);
    let result = response(call).await.unwrap().unwrap();
    assert_eq!(tool_text(&result), "No name given: the user declined.");
    let lease = within(STEP, pool.lease(&form_profile())).await.unwrap();
    assert_eq!(lease.lane.id(), lane_id, "the returned lane is reused");
    drop(lease);
    pool.shutdown().await;
}

/// Ten concurrent pass-through calls, each asking the pool for a shared lane, all complete
/// (matched by legacy id) on the one lane started for them.
pub async fn concurrent_pass_through(spec: BackendSpec) {
    let pool = LanePool::new(spec, settings(4, &[]));
    let calls = (0..10).map(|i| {
        let pool = Arc::clone(&pool);
        async move {
            let lane = pool.shared(&CapabilityProfile::default()).await.unwrap();
            let call = lane
                .request(
                    "tools/call",
                    call_params("echo", json!({"text": format!("echo {i}")})),
                )
                .await
                .unwrap();
            let result = response(call).await.unwrap().unwrap();
            assert_eq!(tool_text(&result), format!("echo {i}"));
            lane.id()
        }
    });
    let lanes = within(STEP, futures_util::future::join_all(calls)).await;
    assert!(lanes.iter().all(|id| *id == lanes[0]), "{lanes:?}");
    assert_eq!(pool.lane_count(), 1);
    pool.shutdown().await;
}

/// A log notification sent during a leased call reaches the lease. Over rmcp 2.x HTTP it travels
/// on the GET stream and may arrive after the call's result.
pub async fn log_notification_on_a_lease(spec: BackendSpec) {
    let pool = LanePool::new(spec, settings(1, &[]));
    let mut lease = within(STEP, pool.lease(&CapabilityProfile::default()))
        .await
        .unwrap();
    let call = lease
        .lane
        .request(
            "tools/call",
            call_params("log_and_echo", json!({"text": "logged"})),
        )
        .await
        .unwrap();
    assert_eq!(tool_text(&response(call).await.unwrap().unwrap()), "logged");
    match next_event(&mut lease.events).await {
        BackendEvent::Notification { method, params } => {
            assert_eq!(method, "notifications/message");
            assert_eq!(params["level"], json!("info"));
            assert_eq!(params["data"]["text"], json!("logged"));
        }
        other => panic!("unexpected {other:?}"),
    }
    drop(lease);
    pool.shutdown().await;
}

/// `max_lanes = 1`: a second lease waits until the first is dropped, then gets the same lane;
/// a lease for another profile then recycles it.
/// Lanes with nothing to do for `lane_idle_timeout` are closed, the longest idle first, down to
/// one; a busy lane (leased, a request in flight, or held outside the pool) is never closed.
pub async fn idle_lanes_are_closed(spec: BackendSpec) {
    // The sleeps outlast the timeout whatever the load; a lane just returned is checked right
    // after, and a loaded machine may stall that long between two statements: 1 s, not 400 ms.
    let pool = LanePool::new(
        spec,
        PoolSettings {
            lane_idle_timeout: Duration::from_secs(1),
            ..settings(4, &[])
        },
    );
    // Three lanes at once (leases are exclusive), then all returned.
    let profile = form_profile();
    let leases = futures_util::future::join_all((0..3).map(|_| pool.lease(&profile))).await;
    let leases: Vec<_> = leases.into_iter().map(Result::unwrap).collect();
    let lanes: Vec<_> = leases.iter().map(|lease| Arc::clone(&lease.lane)).collect();
    assert_eq!(pool.lane_count(), 3);
    assert_eq!(pool.close_idle_lanes(), 0, "leased lanes are busy");
    let mut leases = leases.into_iter();
    let kept = leases.next_back().unwrap();
    drop(leases);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        pool.close_idle_lanes(),
        0,
        "a lane held outside the pool is not closed"
    );
    drop(lanes);
    // Two returned lanes idle, one still leased: both idle ones go (the leased one stays).
    assert_eq!(pool.close_idle_lanes(), 2);
    assert_eq!(pool.lane_count(), 1);
    drop(kept);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(pool.close_idle_lanes(), 0, "the last lane is kept");
    // A lane is idle from its last request or lease, not from its creation.
    let busy = within(STEP, pool.lease(&form_profile())).await.unwrap();
    let extra = within(STEP, pool.lease(&form_profile())).await.unwrap();
    let extra_id = extra.lane.id();
    drop(busy);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    drop(extra);
    assert_eq!(
        pool.close_idle_lanes(),
        1,
        "only the lane idle for the timeout"
    );
    assert_eq!(pool.lane_count(), 1);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(pool.close_idle_lanes(), 0, "the last lane is kept");
    // The kept lane still works.
    let again = within(STEP, pool.lease(&form_profile())).await.unwrap();
    assert_eq!(again.lane.id(), extra_id);
    let call = again
        .lane
        .request("tools/call", call_params("echo", json!({"text": "kept"})))
        .await
        .unwrap();
    assert_eq!(tool_text(&response(call).await.unwrap().unwrap()), "kept");
    pool.shutdown().await;
}

pub async fn pool_limit(spec: BackendSpec) {
    let pool = LanePool::new(spec, settings(1, &[]));
    let first = within(STEP, pool.lease(&form_profile())).await.unwrap();
    let first_id = first.lane.id();
    let waiting = {
        let pool = Arc::clone(&pool);
        tokio::spawn(async move { pool.lease(&form_profile()).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "the second lease must wait");
    assert_eq!(pool.lane_count(), 1);
    // Pass-through still works meanwhile, on the leased lane.
    let shared = within(STEP, pool.shared(&form_profile())).await.unwrap();
    assert_eq!(shared.id(), first_id);
    let released = Instant::now();
    drop(first);
    let second = within(STEP, waiting).await.unwrap().unwrap();
    assert!(released.elapsed() < Duration::from_secs(2));
    assert_eq!(second.lane.id(), first_id);
    let other = {
        let pool = Arc::clone(&pool);
        tokio::spawn(async move { pool.lease(&full_profile()).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!other.is_finished(), "another profile waits too");
    drop(second);
    let other = within(STEP, other).await.unwrap().unwrap();
    assert_ne!(other.lane.id(), first_id, "recycled for the other profile");
    assert_eq!(other.lane.profile(), &full_profile());
    assert!(!shared.is_alive(), "the old lane was shut down");
    assert_eq!(pool.lane_count(), 1);
    let call = other
        .lane
        .request(
            "tools/call",
            call_params("echo", json!({"text": "recycled"})),
        )
        .await
        .unwrap();
    assert_eq!(
        tool_text(&response(call).await.unwrap().unwrap()),
        "recycled"
    );
    drop(other);
    pool.shutdown().await;
}
