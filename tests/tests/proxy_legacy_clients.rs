//! Legacy clients and 2026-07-28 clients on one proxy endpoint, with real peers: the official
//! Python SDK 1.x (`mcp` 1.30.0) and TypeScript SDK 1.x (`@modelcontextprotocol/sdk` 1.32.2)
//! clients open legacy sessions (`initialize`) through the HTTP front and the stdio front, while
//! an rmcp 3.11 client runs MRTR flows; the legacy rmcp 2.2 fixture server is behind, over legacy
//! Streamable HTTP and over stdio.

use std::time::Duration;

use mcp_migrate_tests::per_backend;
use mcp_migrate_tests::support::{
    binaries_async, json_mentions, metric, tool_text, Backend, BackendKind, LegacyReport,
    LegacyRun, LegacySdk, LegacySseServer, LegacyTarget, Proxy, ProxyOptions, Script, Stack,
};
use serde_json::{json, Value};

/// Every legacy flow the fixture offers.
const FLOWS: &[&str] = &[
    "ping",
    "ask_name",
    "ask_twice",
    "url",
    "summarize",
    "roots",
    "logging",
    "progress",
];

/// The legacy fixture server's name (`serverInfo.name`).
const FIXTURE: &str = "mcp-legacy-fixture-server";

/// Checks a legacy client's report: its own answers in every flow it ran, its own questions
/// only, in order, and the InitializeResult of the legacy server named `server`.
#[track_caller]
fn assert_own_flows(report: &LegacyReport, run: &LegacyRun, others: &[&str], server: &str) {
    let name = &run.name;
    let mut expected_seen = Vec::new();
    for flow in &run.flows {
        match *flow {
            "ping" => assert_eq!(report.result("ping"), "pong"),
            "ask_name" => {
                assert_eq!(report.result("ask_name"), format!("Hello, {name}!"));
                expected_seen.push("elicitation/create");
            }
            "ask_twice" => {
                assert_eq!(
                    report.result("ask_twice"),
                    format!("{name} likes {}", run.color)
                );
                let colour = format!("{name}, what is your favourite colour?");
                assert!(
                    report
                        .seen()
                        .iter()
                        .any(|seen| seen["params"]["message"] == colour),
                    "{:#}",
                    report.0
                );
                expected_seen.extend(["elicitation/create"; 2]);
            }
            "url" => {
                let text = report.result("url");
                assert!(
                    text.starts_with("URL elicitation connect-account-")
                        && text.ends_with(": Accept"),
                    "{:#}",
                    report.0
                );
                let url = report
                    .seen()
                    .iter()
                    .find(|seen| seen["params"]["mode"] == "url")
                    .unwrap_or_else(|| panic!("no URL elicitation: {:#}", report.0));
                assert!(url["params"]["elicitationId"].is_string());
                expected_seen.push("elicitation/create");
            }
            "summarize" => {
                assert_eq!(report.result("summarize"), format!("Summary by {name}."));
                expected_seen.push("sampling/createMessage");
            }
            "roots" => {
                assert_eq!(report.result("roots"), format!("file:///{name}/root"));
                expected_seen.push("roots/list");
            }
            "logging" => {
                assert_eq!(report.result("logging"), format!("log of {name}"));
                assert!(
                    report
                        .logs()
                        .iter()
                        .any(|log| log["data"]["text"] == format!("log of {name}")),
                    "the log notification reached {name}: {:#}",
                    report.0
                );
            }
            "progress" => {
                assert_eq!(report.result("progress"), "counted 3");
                let progress = report.progress();
                if run.sdk == LegacySdk::Python {
                    // The Python client handles messages in order: everything arrives.
                    assert_eq!(progress, vec![1.0, 2.0, 3.0], "{:#}", report.0);
                } else {
                    // The TypeScript SDK 1.x dispatches notifications a microtask later than
                    // responses: progress read together with the response is dropped by the
                    // client itself ("unknown token"), with or without the proxy.
                    assert!(
                        !progress.is_empty() && [1.0, 2.0, 3.0].starts_with(&progress),
                        "{:#}",
                        report.0
                    );
                }
            }
            other => panic!("no check for flow {other}"),
        }
    }
    let methods: Vec<&str> = report
        .seen()
        .iter()
        .map(|seen| seen["method"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        methods, expected_seen,
        "{name} answered exactly its own server requests: {:#}",
        report.0
    );
    for other in others {
        assert!(
            !json_mentions(&report.0["seen"], other) && !json_mentions(&report.0["logs"], other),
            "{name} saw {other}'s messages: {:#}",
            report.0
        );
    }
    assert_eq!(
        report.initialize()["serverInfo"]["name"],
        server,
        "the legacy server's own InitializeResult: {:#}",
        report.0
    );
}

// ---- The HTTP front: both eras at once ----

async fn legacy_and_modern_clients_share_the_http_front(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let target = LegacyTarget::Http(stack.proxy.url().to_owned());
    let runs = [
        LegacyRun::new(LegacySdk::Python, "Pia", FLOWS),
        LegacyRun::new(LegacySdk::Python, "Paul", FLOWS),
        LegacyRun::new(LegacySdk::TypeScript, "Theo", FLOWS),
    ];
    let names: Vec<&str> = runs.iter().map(|run| run.name.as_str()).collect();
    let modern = async {
        let client = stack.modern(Script::named("Mo", "teal")).await;
        let mut texts = Vec::new();
        for _ in 0..3 {
            let (greeting, likes) = tokio::join!(
                client.call_tool("ask_name", json!({})),
                client.call_tool("ask_twice", json!({})),
            );
            texts.push(tool_text(&greeting.expect("modern ask_name")));
            texts.push(tool_text(&likes.expect("modern ask_twice")));
        }
        let seen = client.seen();
        client.close().await;
        (texts, seen)
    };
    let (pia, paul, theo, (texts, seen)) = tokio::join!(
        runs[0].run(&target),
        runs[1].run(&target),
        runs[2].run(&target),
        modern
    );
    let reports = [pia, paul, theo];
    for (run, report) in runs.iter().zip(&reports) {
        let others: Vec<&str> = names
            .iter()
            .copied()
            .chain(["Mo"])
            .filter(|other| *other != run.name)
            .collect();
        assert_own_flows(report, run, &others, FIXTURE);
    }
    assert_eq!(
        texts,
        ["Hello, Mo!", "Mo likes teal"].repeat(3),
        "the 2026-07-28 client got MRTR answers"
    );
    assert!(
        seen.iter().all(|s| s.key.is_some()),
        "the 2026-07-28 client was asked through input requests only: {seen:#?}"
    );
    for name in &names {
        assert!(seen.iter().all(|s| !json_mentions(&s.params, name)));
    }

    let metrics = stack.proxy.metrics().await;
    assert!(
        metric(&metrics, "mcp_proxy_requests_by_era_total{era=\"legacy\"}") >= 3.0 * 10.0,
        "{metrics:#?}"
    );
    assert!(
        metric(
            &metrics,
            "mcp_proxy_requests_by_era_total{era=\"2026-07-28\"}"
        ) >= 6.0
    );
    assert_eq!(
        metric(&metrics, "mcp_proxy_legacy_sessions_opened_total"),
        3.0
    );
    assert!(metric(&metrics, "mcp_proxy_legacy_sessions_max") >= 1.0);
    let logs = stack.proxy.log_lines().join("\n");
    for (client, version) in [
        ("py-Pia", "1.30.0"),
        ("py-Paul", "1.30.0"),
        ("ts-Theo", "1.32.2"),
    ] {
        for rule in [
            "legacy-sdk-version",
            "deprecated-sampling",
            "deprecated-roots",
            "deprecated-logging",
        ] {
            let warned = stack
                .proxy
                .log_lines()
                .iter()
                .filter(|line| {
                    line.contains(&format!("legacy client {client} {version}"))
                        && line.contains(&format!("rule=\"{rule}\""))
                })
                .count();
            assert_eq!(warned, 1, "{rule} once for {client}:\n{logs}");
        }
    }
}

per_backend!(240; legacy_and_modern_clients_share_the_http_front);

// ---- The stdio front ----

async fn legacy_clients_on_the_stdio_front(kind: BackendKind) {
    let binaries = binaries_async().await;
    let legacy = match kind {
        BackendKind::Http => Some(mcp_migrate_tests::support::LegacyHttpServer::start().await),
        BackendKind::Stdio => None,
    };
    let runs = [
        LegacyRun::new(LegacySdk::Python, "Sid", FLOWS),
        LegacyRun::new(LegacySdk::TypeScript, "Tom", FLOWS),
    ];
    let stores = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let target = |store: &tempfile::TempDir| {
        let mut line = vec![
            binaries.proxy.display().to_string(),
            "--stdio".into(),
            "--store".into(),
            store.path().join("store").display().to_string(),
            "--log-level".into(),
            "warn".into(),
        ];
        match &legacy {
            Some(server) => line.extend(["--upstream".into(), server.url().to_owned()]),
            None => line.extend([
                "--".into(),
                binaries.legacy_server.display().to_string(),
                "--transport".into(),
                "stdio".into(),
            ]),
        }
        LegacyTarget::Stdio(line)
    };
    let (targets0, targets1) = (target(&stores[0]), target(&stores[1]));
    let (sid, tom) = tokio::join!(runs[0].run(&targets0), runs[1].run(&targets1));
    assert_own_flows(&sid, &runs[0], &["Tom"], FIXTURE);
    assert_own_flows(&tom, &runs[1], &["Sid"], FIXTURE);
}

per_backend!(240; legacy_clients_on_the_stdio_front);

// ---- An HTTP+SSE (2024-11-05) legacy server behind ----

/// The legacy server is the official Python SDK's FastMCP over HTTP+SSE: each legacy client
/// session gets an SSE session of its own (and the proxy speaks 2024-11-05 to it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_clients_through_an_http_sse_backend() {
    binaries_async().await;
    let server = LegacySseServer::start().await;
    let proxy = Proxy::start(ProxyOptions {
        backend: Backend::Http(server.url().to_owned()),
        ..ProxyOptions::default()
    })
    .await;
    // FastMCP answers `logging/setLevel` with -32601, relayed as it is: no `logging` flow.
    let flows = &[
        "ping",
        "ask_name",
        "ask_twice",
        "summarize",
        "roots",
        "progress",
    ];
    let runs = [
        LegacyRun::new(LegacySdk::Python, "Sue", flows),
        LegacyRun::new(LegacySdk::TypeScript, "Sam", flows),
    ];
    let target = LegacyTarget::Http(proxy.url().to_owned());
    let (sue, sam) = tokio::join!(runs[0].run(&target), runs[1].run(&target));
    for (report, run, other) in [(&sue, &runs[0], "Sam"), (&sam, &runs[1], "Sue")] {
        assert_own_flows(report, run, &[other], "mcp-legacy-sse-fixture-server");
    }
}

// ---- Sessions: expiry, bounds, unknown ids, era policy ----

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("reqwest client")
}

fn initialize_body(version: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "raw-legacy", "version": "0.0.1"}
        }
    })
}

/// POSTs a legacy `initialize`; returns the status, the session id and the JSON body.
async fn initialize(url: &str, version: &str) -> (u16, Option<String>, Value) {
    let response = http()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .json(&initialize_body(version))
        .send()
        .await
        .expect("POST initialize");
    let status = response.status().as_u16();
    let session = response
        .headers()
        .get("mcp-session-id")
        .map(|value| value.to_str().unwrap().to_owned());
    let body = response.json().await.expect("a JSON body");
    (status, session, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_sessions_get_404_and_clients_initialize_again() {
    binaries_async().await;
    let proxy = Proxy::start(ProxyOptions {
        extra_args: vec!["--legacy-session-idle-timeout".into(), "1s".into()],
        ..ProxyOptions::default()
    })
    .await;
    let target = LegacyTarget::Http(proxy.url().to_owned());
    let mut runs = [
        LegacyRun::new(LegacySdk::Python, "Ida", &["ask_name", "idle"]),
        LegacyRun::new(LegacySdk::TypeScript, "Ivo", &["ask_name", "idle"]),
    ];
    for run in &mut runs {
        run.idle_secs = 3.0;
        run.reconnect_flows = vec!["ask_twice"];
    }
    let (ida, ivo) = tokio::join!(runs[0].run(&target), runs[1].run(&target));
    for (report, run) in [(&ida, &runs[0]), (&ivo, &runs[1])] {
        let name = &run.name;
        assert_eq!(report.result("ask_name"), format!("Hello, {name}!"));
        let error = report.error("idle").unwrap_or_else(|| {
            panic!(
                "{name}'s call after the idle timeout must fail: {:#}",
                report.0
            )
        });
        assert!(
            error.contains("Session terminated") || error.contains("404"),
            "{name}: {error}"
        );
        assert_eq!(report.sessions(), 2, "{name} initialized again");
        assert_eq!(
            report.result("ask_twice"),
            format!("{name} likes {}", run.color),
            "{name}'s new session works"
        );
    }
    let metrics = proxy.metrics().await;
    assert!(
        metric(
            &metrics,
            "mcp_proxy_legacy_sessions_ended_total{reason=\"expired\"}"
        ) >= 2.0,
        "{metrics:#?}"
    );

    // Unknown or ended sessions: 404 for every method, with a JSON-RPC error on POST.
    let (status, session, _) = initialize(proxy.url(), "2025-11-25").await;
    assert_eq!(status, 200);
    let session = session.expect("a session id");
    let client = http();
    let delete = client
        .delete(proxy.url())
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(delete.status().as_u16(), 200);
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let response = client
            .request(method.clone(), proxy.url())
            .header("mcp-session-id", &session)
            .header("accept", "text/event-stream")
            .send()
            .await
            .unwrap();
        assert_eq!(
            response.status().as_u16(),
            404,
            "{method} of an ended session"
        );
    }
    let response = client
        .post(proxy.url())
        .header("mcp-session-id", "no-such-session")
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["id"], 7);
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("Session not found"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_bounded_and_versions_negotiated() {
    binaries_async().await;
    let proxy = Proxy::start(ProxyOptions {
        extra_args: vec!["--max-legacy-sessions".into(), "1".into()],
        ..ProxyOptions::default()
    })
    .await;
    let (status, first, body) = initialize(proxy.url(), "2025-06-18").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["result"]["protocolVersion"], "2025-06-18",
        "the version the client asked for, which the legacy server speaks"
    );
    let first = first.expect("a session id");
    assert!(first.bytes().all(|byte| (0x21..=0x7e).contains(&byte)));
    // Bad input in a session: a clear error, the session goes on.
    let client = http();
    let garbage = client
        .post(proxy.url())
        .header("mcp-session-id", &first)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(garbage.status().as_u16(), 400);
    let stray = client
        .post(proxy.url())
        .header("mcp-session-id", &first)
        .json(&json!({"jsonrpc": "2.0", "id": 99, "result": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        stray.status().as_u16(),
        202,
        "a response to no server request is dropped"
    );
    let ping = client
        .post(proxy.url())
        .header("mcp-session-id", &first)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": "p", "method": "ping"}))
        .send()
        .await
        .unwrap();
    assert_eq!(ping.status().as_u16(), 200);
    let pong: Value = ping.json().await.unwrap();
    assert_eq!(pong, json!({"jsonrpc": "2.0", "id": "p", "result": {}}));

    let (status, second, body) = initialize(proxy.url(), "2025-11-25").await;
    assert_eq!(status, 503, "over --max-legacy-sessions: {body}");
    assert!(second.is_none());
    assert_eq!(proxy.metrics().await["mcp_proxy_legacy_sessions"], 1.0);
    let deleted = http()
        .delete(proxy.url())
        .header("mcp-session-id", &first)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status().as_u16(), 200);
    // A newer version than any legacy one: the newest both speak.
    let (status, _, body) = initialize(proxy.url(), "2026-07-28").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["protocolVersion"], "2025-11-25");
    // A version nobody here speaks: the spec's error.
    let (status, session, body) = initialize(proxy.url(), "2023-01-01").await;
    assert_eq!(status, 200);
    assert!(session.is_none());
    assert_eq!(body["error"]["code"], -32602, "{body}");
    assert_eq!(body["error"]["data"]["requested"], "2023-01-01");
    assert!(body["error"]["data"]["supported"]
        .as_array()
        .unwrap()
        .contains(&json!("2025-11-25")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_era_policy_refuses_one_era() {
    binaries_async().await;
    let modern_only = Proxy::start(ProxyOptions {
        extra_args: vec!["--era-policy".into(), "modern-only".into()],
        ..ProxyOptions::default()
    })
    .await;
    let (status, session, body) = initialize(modern_only.url(), "2025-11-25").await;
    assert_eq!(status, 400, "{body}");
    assert!(session.is_none());
    assert_eq!(body["error"]["code"], -32022, "{body}");
    let client = modern_only.modern(Script::default()).await;
    let result = client.call_tool("ask_name", json!({})).await.unwrap();
    assert_eq!(tool_text(&result), "Hello, Alice!");
    client.close().await;

    let legacy_only = Proxy::start(ProxyOptions {
        extra_args: vec!["--era-policy".into(), "legacy-only".into()],
        ..ProxyOptions::default()
    })
    .await;
    let raw = legacy_only.raw();
    let response = raw.send(&raw.request("tools/list", json!({}))).await;
    assert_eq!(response.status, 400, "{response:#?}");
    assert_eq!(response.message["error"]["code"], -32600, "{response:#?}");
    let run = LegacyRun::new(LegacySdk::Python, "Lou", &["ask_name"]);
    let report = run
        .run(&LegacyTarget::Http(legacy_only.url().to_owned()))
        .await;
    assert_eq!(report.result("ask_name"), "Hello, Lou!");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_request_ends_and_the_session_goes_on() {
    binaries_async().await;
    let proxy = Proxy::start(ProxyOptions::default()).await;
    let (status, session, body) = initialize(proxy.url(), "2025-11-25").await;
    assert_eq!(status, 200, "{body}");
    let session = session.expect("a session id");
    let call = |id: u64, name: &str, arguments: Value| {
        http()
            .post(proxy.url())
            .header("mcp-session-id", &session)
            .header("accept", "application/json")
            .json(&json!({
                "jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": name, "arguments": arguments, "_meta": {"progressToken": id}}
            }))
            .send()
    };
    let started = std::time::Instant::now();
    let slow = tokio::spawn(call(1, "rounds", json!({"n": 0, "sleep_ms": 20000})));
    // A cancellation that overtakes its call is ignored, as the spec says: cancel until the call
    // ends (no guess of when it reached the proxy).
    while !slow.is_finished() {
        let cancel = http()
            .post(proxy.url())
            .header("mcp-session-id", &session)
            .json(
                &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                          "params": {"requestId": 1, "reason": "the user gave up"}}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(cancel.status().as_u16(), 202);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let slow = slow.await.unwrap().expect("the cancelled POST is answered");
    let body: Value = slow.json().await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the call takes 20 s; the cancelled call ended after {:?}: {body}",
        started.elapsed()
    );
    assert!(
        body.get("result").is_none(),
        "no result for a cancelled call: {body}"
    );
    let next = call(2, "slow_count", json!({"n": 2})).await.unwrap();
    let next: Value = next.json().await.unwrap();
    assert_eq!(next["result"]["content"][0]["text"], "counted 2", "{next}");
}
