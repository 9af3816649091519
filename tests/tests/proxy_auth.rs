//! The proxy in front of an OAuth-protected legacy server (docs/proxy/deployment.md,
//! "Authenticated servers"), each test against both SDKs' own auth: the Python SDK's resource
//! server (`TokenVerifier` with two users' tokens, `AuthSettings.resource_server_url` = the
//! legacy server's internal URL; `tests/sdk-servers/python/protected_server.py`) and the
//! TypeScript SDK 1.x bearer-auth middleware (`requireBearerAuth` + its metadata router;
//! `tests/sdk-servers/typescript/protected-server.mjs`), behind the proxy at its default flags
//! plus `--public-url` (the internal URL rewritten). Each caller's `Authorization` travels with its
//! calls, a legacy session opened with one token is never used for another, and the legacy
//! server's 401 with its `WWW-Authenticate` reaches the client, whose discovery document is
//! served through the proxy.

use std::time::Duration;

use mcp_migrate_tests::support::legacy_post::{bearer, legacy_initialize, legacy_post};
use mcp_migrate_tests::support::protected::{AuthSdk, ProtectedServer, ALICE_TOKEN, BOB_TOKEN};
use mcp_migrate_tests::support::{within, Backend, Proxy, ProxyOptions, RawClient, Script};
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(240);

/// The proxy in front of `server`, listening on a port chosen now so that `--public-url` can
/// name it.
async fn proxy_for(server: &ProtectedServer, extra: &[&str]) -> Proxy {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let mut extra_args = vec![
        "--public-url".to_owned(),
        format!("http://127.0.0.1:{port}/mcp"),
    ];
    extra_args.extend(extra.iter().map(|arg| (*arg).to_owned()));
    Proxy::start(ProxyOptions {
        backend: Backend::Http(server.url().to_owned()),
        listen: Some(format!("127.0.0.1:{port}")),
        extra_args,
        ..ProxyOptions::default()
    })
    .await
}

fn origin_of(url: &str) -> &str {
    url.trim_end_matches("/mcp")
}

/// A call without a token gets the legacy server's 401 with its challenge, whose
/// `resource_metadata` URL names the proxy and serves the metadata through it; a wrong token
/// gets 401 too; a burst of 40 token-less calls is answered at once (no lane back-off); the
/// proxy is ready although the legacy server wants credentials.
async fn the_discovery_flow_passes_through(sdk: AuthSdk) {
    mcp_migrate_tests::support::binaries_async().await;
    let server = ProtectedServer::start(sdk).await;
    within(LIMIT, "discovery through the proxy", async {
        let proxy = proxy_for(&server, &[]).await;
        let public = origin_of(proxy.url()).to_owned();
        let http = reqwest::Client::builder().no_proxy().build().unwrap();

        let ready = http.get(format!("{public}/readyz")).send().await.unwrap();
        assert_eq!(
            ready.status(),
            200,
            "a legacy server that wants credentials is reachable"
        );

        let anonymous = RawClient::new(proxy.url());
        let refused = anonymous.call_tool("whoami", json!({})).await;
        assert_eq!(refused.status, 401, "{refused:#?}");
        let challenge = refused.www_authenticate.clone().expect("WWW-Authenticate");
        assert!(challenge.starts_with("Bearer"), "{challenge}");
        let metadata_url = challenge
            .split("resource_metadata=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or_else(|| panic!("no resource_metadata in {challenge}"));
        assert_eq!(
            metadata_url,
            format!("{public}/.well-known/oauth-protected-resource/mcp"),
            "the legacy server's origin is rewritten to --public-url"
        );
        assert!(!refused.body.contains(server.origin()), "{}", refused.body);

        let metadata = http.get(metadata_url).send().await.unwrap();
        assert_eq!(metadata.status(), 200);
        let metadata: Value = metadata.json().await.unwrap();
        assert_eq!(metadata["resource"], format!("{public}/mcp"), "{metadata}");
        assert!(
            metadata["authorization_servers"][0]
                .as_str()
                .is_some_and(|issuer| issuer.starts_with("https://auth.example.com")),
            "{metadata}"
        );
        // Without the path suffix: relayed as the legacy server answers it.
        let direct = http
            .get(format!(
                "{}/.well-known/oauth-protected-resource",
                server.origin()
            ))
            .send()
            .await
            .unwrap()
            .status();
        let relayed = http
            .get(format!("{public}/.well-known/oauth-protected-resource"))
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(relayed, direct);

        let wrong = RawClient::new(proxy.url()).with_authorization("Bearer not-a-token");
        let refused = wrong.call_tool("whoami", json!({})).await;
        assert_eq!(refused.status, 401, "{refused:#?}");
        assert!(refused.www_authenticate.is_some());

        // 40 token-less calls at once: each answered 401 by the legacy server, none waits
        // behind a lane restart back-off.
        let started = std::time::Instant::now();
        let burst = futures_util::future::join_all(
            (0..40).map(|_| async { anonymous.call_tool("whoami", json!({})).await.status }),
        )
        .await;
        assert!(burst.iter().all(|status| *status == 401), "{burst:?}");
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the burst took {:?}",
            started.elapsed()
        );
        // The proxy never logged a token.
        assert!(!proxy
            .log_lines()
            .iter()
            .any(|line| line.contains(ALICE_TOKEN) || line.contains("not-a-token")));
    })
    .await;
}

/// 40 concurrent calls of two users: each runs as its own user on the legacy server (the
/// `whoami` tool reads the token of the very request that carries the call).
async fn each_users_calls_run_as_that_user(sdk: AuthSdk) {
    mcp_migrate_tests::support::binaries_async().await;
    let server = ProtectedServer::start(sdk).await;
    within(LIMIT, "two users' calls", async {
        let proxy = proxy_for(&server, &[]).await;
        let alice = RawClient::new(proxy.url()).with_authorization(&bearer(ALICE_TOKEN));
        let bob = RawClient::new(proxy.url()).with_authorization(&bearer(BOB_TOKEN));
        let calls = (0..40).map(|at| {
            let (client, user) = if at % 2 == 0 {
                (&alice, "alice")
            } else {
                (&bob, "bob")
            };
            async move { (user, client.call_tool("whoami", json!({})).await) }
        });
        for (user, response) in futures_util::future::join_all(calls).await {
            assert_eq!(response.status, 200, "{response:#?}");
            assert_eq!(response.text(), user, "{response:#?}");
        }
        // Pass-through requests carry the caller's credentials too.
        let listed = alice.call("tools/list", json!({})).await;
        assert_eq!(listed.status, 200, "{listed:#?}");
        let discover = bob.call("server/discover", json!({})).await;
        assert_eq!(discover.status, 200, "{discover:#?}");
        assert!(!proxy
            .log_lines()
            .iter()
            .any(|line| line.contains(ALICE_TOKEN) || line.contains(BOB_TOKEN)));
    })
    .await;
}

/// An elicitation paused by alice resumes as alice; bob's retry of alice's `requestState` is
/// refused (and does not spend it).
async fn a_paused_call_resumes_as_its_user_only(sdk: AuthSdk) {
    mcp_migrate_tests::support::binaries_async().await;
    let server = ProtectedServer::start(sdk).await;
    within(LIMIT, "a paused call of one user", async {
        let proxy = proxy_for(&server, &[]).await;
        let alice = RawClient::new(proxy.url()).with_authorization(&bearer(ALICE_TOKEN));
        let bob = RawClient::new(proxy.url()).with_authorization(&bearer(BOB_TOKEN));
        let first = alice.call_tool("ask_name", json!({})).await;
        let (requests, state) = first.input_required();
        assert!(
            !state.contains(ALICE_TOKEN),
            "no credential in requestState"
        );
        let answers = Script::default().answer_all(requests).unwrap();
        let stolen = bob
            .retry_tool("ask_name", json!({}), answers.clone(), Some(state))
            .await;
        assert!(stolen.error_code().is_some(), "{stolen:#?}");
        assert!(!stolen.body.contains("hello"), "{stolen:#?}");
        let resumed = alice
            .retry_tool("ask_name", json!({}), answers, Some(state))
            .await;
        assert_eq!(resumed.status, 200, "{resumed:#?}");
        assert_eq!(resumed.text(), "alice: hello Alice", "{resumed:#?}");
    })
    .await;
}

/// A legacy client with a token gets a session of its own that runs as its user; another
/// user's token on that session is refused; `initialize` without a token gets the legacy
/// server's 401 and challenge.
async fn a_legacy_clients_session_belongs_to_its_token(sdk: AuthSdk) {
    mcp_migrate_tests::support::binaries_async().await;
    let server = ProtectedServer::start(sdk).await;
    within(LIMIT, "legacy sessions with tokens", async {
        let proxy = proxy_for(&server, &[]).await;
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        let url = proxy.url();

        let (status, _, challenge, _) =
            legacy_post(&http, url, None, None, legacy_initialize()).await;
        assert_eq!(status, 401);
        let challenge = challenge.expect("WWW-Authenticate");
        assert!(
            challenge.contains(&format!(
                "{}/.well-known/oauth-protected-resource/mcp",
                origin_of(url)
            )),
            "{challenge}"
        );

        let (status, session, _, _) =
            legacy_post(&http, url, Some(ALICE_TOKEN), None, legacy_initialize()).await;
        assert_eq!(status, 200);
        let session = session.expect("Mcp-Session-Id");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let (status, ..) =
            legacy_post(&http, url, Some(ALICE_TOKEN), Some(&session), initialized).await;
        assert_eq!(status, 202);
        let whoami = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "whoami", "arguments": {}}});
        let (status, _, _, messages) = legacy_post(
            &http,
            url,
            Some(ALICE_TOKEN),
            Some(&session),
            whoami.clone(),
        )
        .await;
        assert_eq!(status, 200, "{messages:?}");
        let answer = messages.last().expect("a response");
        assert_eq!(answer["result"]["content"][0]["text"], "alice", "{answer}");

        let (status, _, _, messages) =
            legacy_post(&http, url, Some(BOB_TOKEN), Some(&session), whoami.clone()).await;
        assert_eq!(status, 403, "{messages:?}");
        let (status, ..) = legacy_post(&http, url, None, Some(&session), whoami).await;
        assert_eq!(status, 403);
        let deleted = http
            .delete(url)
            .header("mcp-session-id", &session)
            .header("authorization", bearer(BOB_TOKEN))
            .send()
            .await
            .unwrap();
        assert_eq!(deleted.status(), 403, "another user cannot end the session");
    })
    .await;
}

/// Each test against both SDKs' auth, as `TEST::python` and `TEST::typescript`.
macro_rules! per_sdk {
    ($($test:ident),* $(,)?) => {$(
        mod $test {
            use super::AuthSdk;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn python() {
                super::$test(AuthSdk::Python).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn typescript() {
                super::$test(AuthSdk::TypeScript).await;
            }
        }
    )*};
}

per_sdk!(
    the_discovery_flow_passes_through,
    each_users_calls_run_as_that_user,
    a_paused_call_resumes_as_its_user_only,
    a_legacy_clients_session_belongs_to_its_token,
);
