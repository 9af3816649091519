//! Several proxy instances sharing one Redis pause store (a real `redis-server` on a free
//! loopback port) and one legacy server (HTTP; over stdio each instance runs its own legacy
//! children): a retry may land on any instance. Each instance advertises its own URL; a retry
//! for a pause another instance holds is passed to it; a replay is refused everywhere; an owner
//! that dies makes its pauses' retries fail at once with a clear error; a Redis restart gives
//! clear errors, then the cluster works again.

use std::time::{Duration, Instant};

use mcp_migrate_tests::per_backend;
use mcp_migrate_tests::support::{
    BackendKind, LegacyHttpServer, Proxy, ProxyOptions, RawClient, RawResponse, RedisServer,
};
use serde_json::{json, Value};

/// Three instances, one Redis, one legacy server (HTTP backend).
struct Cluster {
    proxies: Vec<Proxy>,
    redis: RedisServer,
    _legacy: Option<LegacyHttpServer>,
}

fn free_address() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

impl Cluster {
    async fn start(kind: BackendKind, instances: usize) -> Cluster {
        let redis = RedisServer::start().await;
        let legacy = match kind {
            BackendKind::Http => Some(LegacyHttpServer::start().await),
            BackendKind::Stdio => None,
        };
        let key: String = (0..64)
            .map(|i| char::from(b"0123456789abcdef"[(i * 7 + 3) % 16]))
            .collect();
        let mut proxies = Vec::new();
        for _ in 0..instances {
            let address = free_address();
            let options = ProxyOptions {
                backend: match &legacy {
                    Some(server) => mcp_migrate_tests::support::Backend::Http(server.url().into()),
                    None => mcp_migrate_tests::support::Backend::Stdio,
                },
                store_dir: Some(redis.url(0).into()),
                listen: Some(address.clone()),
                state_key_hex: Some(key.clone()),
                extra_args: vec!["--advertise".into(), format!("http://{address}")],
                ..ProxyOptions::default()
            };
            proxies.push(Proxy::start(options).await);
        }
        Cluster {
            proxies,
            redis,
            _legacy: legacy,
        }
    }

    fn client(&self, instance: usize) -> RawClient {
        self.proxies[instance].raw()
    }
}

/// `{key: accept with name}` for every form elicitation in `requests`.
fn named(requests: &Value, name: &str) -> Value {
    let answers: serde_json::Map<String, Value> = requests
        .as_object()
        .expect("inputRequests is an object")
        .keys()
        .map(|key| {
            (
                key.clone(),
                json!({"action": "accept", "content": {"name": name, "color": format!("{name}-blue")}}),
            )
        })
        .collect();
    Value::Object(answers)
}

/// The message of a JSON-RPC error response (empty when it is not one).
fn error_message(response: &RawResponse) -> String {
    response.error()["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The `ask_name` retry with `state`, answering `name`, sent to `instance`.
async fn retry_on(
    cluster: &Cluster,
    instance: usize,
    requests: &Value,
    state: &str,
    name: &str,
) -> RawResponse {
    cluster
        .client(instance)
        .retry_tool("ask_name", json!({}), named(requests, name), Some(state))
        .await
}

fn state_of(response: &RawResponse) -> (Value, String) {
    let (requests, state) = response.input_required();
    (requests.clone(), state.to_owned())
}

async fn a_pause_on_one_instance_resumes_on_another(kind: BackendKind) {
    let cluster = Cluster::start(kind, 3).await;
    let first = cluster.client(0).call_tool("ask_name", json!({})).await;
    let (requests, state) = state_of(&first);
    let retry = retry_on(&cluster, 1, &requests, &state, "Ada").await;
    assert_eq!(retry.text(), "Hello, Ada!", "{retry:#?}");
    // The state was used: refused on every instance, the owner included.
    for instance in 0..3 {
        let replay = retry_on(&cluster, instance, &requests, &state, "Eve").await;
        let message = error_message(&replay);
        assert!(
            message.contains("already used") || message.contains("one retry"),
            "instance {instance}: {replay:#?}"
        );
    }
}

async fn two_rounds_hit_three_instances(kind: BackendKind) {
    let cluster = Cluster::start(kind, 3).await;
    let mut response = cluster.client(0).call_tool("ask_twice", json!({})).await;
    // Round 1 resumed on instance 1 (it pauses again there), round 2 on instance 2.
    for instance in [1, 2] {
        let (requests, state) = state_of(&response);
        response = cluster
            .client(instance)
            .retry_tool(
                "ask_twice",
                json!({}),
                named(&requests, "Grace"),
                Some(&state),
            )
            .await;
    }
    assert_eq!(response.text(), "Grace likes Grace-blue", "{response:#?}");
}

async fn concurrent_calls_retried_elsewhere_never_cross(kind: BackendKind) {
    let cluster = Cluster::start(kind, 3).await;
    let clients: Vec<RawClient> = (0..3).map(|i| cluster.client(i)).collect();
    let calls = (0..20).map(|call| {
        let clients = &clients;
        async move {
            let name = format!("user-{call}");
            let start = call % 3;
            let first = clients[start].call_tool("ask_name", json!({})).await;
            let (requests, state) = state_of(&first);
            // Another instance, chosen per call.
            let other = (start + 1 + (call * 7 % 2)) % 3;
            assert_ne!(other, start);
            let retry = clients[other]
                .retry_tool("ask_name", json!({}), named(&requests, &name), Some(&state))
                .await;
            (name, retry.text())
        }
    });
    for (name, text) in futures_util::future::join_all(calls).await {
        assert_eq!(text, format!("Hello, {name}!"));
    }
}

async fn a_killed_owner_gives_a_clear_error_at_once(kind: BackendKind) {
    let mut cluster = Cluster::start(kind, 3).await;
    let first = cluster.client(0).call_tool("ask_name", json!({})).await;
    let (requests, state) = state_of(&first);
    cluster.proxies[0].kill();
    let started = Instant::now();
    let retry = retry_on(&cluster, 1, &requests, &state, "Ada").await;
    // "At once": the dead owner refuses the forward; a forward left to time out would take the
    // 30 s idle timeout. 15 s holds on a loaded 2-core machine.
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "answered in {:?}",
        started.elapsed()
    );
    let message = error_message(&retry);
    assert!(message.contains("the paused call was lost"), "{retry:#?}");
    assert!(
        message.contains("send the original request again"),
        "{message}"
    );
    // Once the registration has gone too (Redis expires it 3 s after the last heartbeat, by its
    // own clock), the answer is the same, from the store alone.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let again = retry_on(&cluster, 2, &requests, &state, "Ada").await;
    let message = error_message(&again);
    assert!(message.contains("the paused call was lost"), "{again:#?}");
    // A fresh call works on the survivors, across them.
    let fresh = cluster.client(1).call_tool("ask_name", json!({})).await;
    let (requests, state) = state_of(&fresh);
    let done = retry_on(&cluster, 2, &requests, &state, "Bea").await;
    assert_eq!(done.text(), "Hello, Bea!");
}

async fn a_restarted_redis_gives_clear_errors_then_recovers(kind: BackendKind) {
    let mut cluster = Cluster::start(kind, 3).await;
    let first = cluster.client(0).call_tool("ask_name", json!({})).await;
    let (requests, state) = state_of(&first);
    cluster.redis.kill();
    // Redis down: a retry and a new pause get errors (not hangs).
    let started = Instant::now();
    let retry = retry_on(&cluster, 1, &requests, &state, "Ada").await;
    assert!(retry.error_code().is_some(), "{retry:#?}");
    let paused = cluster.client(2).call_tool("ask_name", json!({})).await;
    assert!(
        paused.error_code().is_some(),
        "no pause without the store: {paused:#?}"
    );
    // Errors, not hangs (unbounded); 30 s holds on a loaded 2-core machine.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    // Redis back (empty): the old pause is lost, clearly; new calls pause and resume anywhere.
    cluster.redis.restart().await;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let fresh = cluster.client(1).call_tool("ask_name", json!({})).await;
        if fresh.result_type() == Some("input_required") {
            let (requests, state) = state_of(&fresh);
            let done = retry_on(&cluster, 2, &requests, &state, "Cy").await;
            assert_eq!(done.text(), "Hello, Cy!", "{done:#?}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the cluster did not recover: {fresh:#?}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let old = retry_on(&cluster, 0, &requests, &state, "Ada").await;
    let message = error_message(&old);
    assert!(message.contains("the paused call was lost"), "{old:#?}");
}

per_backend!(120;
    a_pause_on_one_instance_resumes_on_another,
    two_rounds_hit_three_instances,
    concurrent_calls_retried_elsewhere_never_cross,
    a_killed_owner_gives_a_clear_error_at_once,
    a_restarted_redis_gives_clear_errors_then_recovers,
);
