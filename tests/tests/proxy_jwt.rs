//! `--principal jwt` (docs/proxy/deployment.md, "Authenticated servers"): a caller is its
//! verified access token's issuer and subject. JWTs signed by an Ed25519 key the test generates
//! (`support::tokens`), the JWKS given to the proxy as a file and as an http:// URL the test
//! serves. Two users; a paused elicitation resumes for its user's refreshed token and is refused
//! to the other user; an expired or forged token gets the proxy's own 401 `invalid_token`; a
//! refreshed token the legacy server refuses at the retry is a clear 401 to that caller.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_migrate_tests::support::legacy_post::{bearer, legacy_initialize, legacy_post};
use mcp_migrate_tests::support::protected::{AuthSdk, ProtectedServer};
use mcp_migrate_tests::support::tokens::{jwks, TokenIssuer};
use mcp_migrate_tests::support::{within, Backend, Proxy, ProxyOptions, RawClient, Script};
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(240);
const ISSUER: &str = "https://auth.example.com";
const AUDIENCE: &str = "https://mcp.example.com/mcp";

fn jwt_flags(jwks: &str, more: &[&str]) -> Vec<String> {
    let mut flags: Vec<String> = [
        "--principal",
        "jwt",
        "--jwks",
        jwks,
        "--issuer",
        ISSUER,
        "--audience",
        AUDIENCE,
    ]
    .iter()
    .map(|flag| (*flag).to_owned())
    .collect();
    flags.extend(more.iter().map(|flag| (*flag).to_owned()));
    flags
}

/// The proxy's own refusal of a token: 401, `error="invalid_token"` with why, no JSON-RPC
/// result.
fn assert_invalid_token(response: &mcp_migrate_tests::support::RawResponse, why: &str) {
    assert_eq!(response.status, 401, "{response:#?}");
    let challenge = response.www_authenticate.as_deref().unwrap_or_default();
    assert!(
        challenge.starts_with("Bearer error=\"invalid_token\"") && challenge.contains(why),
        "{challenge}"
    );
}

/// An OAuth-protected Python SDK server that verifies the same JWTs (its JWKS file holds
/// `server_keys`), and the proxy in front with `--principal jwt` (its JWKS file holds
/// `proxy_keys`).
async fn protected_stack(
    dir: &tempfile::TempDir,
    server_keys: &[&TokenIssuer],
    proxy_keys: &[&TokenIssuer],
) -> (ProtectedServer, Proxy) {
    let server_jwks = dir.path().join("server-jwks.json");
    std::fs::write(&server_jwks, jwks(server_keys).to_string()).unwrap();
    let proxy_jwks = dir.path().join("proxy-jwks.json");
    std::fs::write(&proxy_jwks, jwks(proxy_keys).to_string()).unwrap();
    let server = ProtectedServer::start_with(
        AuthSdk::Python,
        &[
            "--jwks".into(),
            server_jwks.display().to_string(),
            "--issuer".into(),
            ISSUER.into(),
            "--audience".into(),
            AUDIENCE.into(),
        ],
    )
    .await;
    let proxy = Proxy::start(ProxyOptions {
        backend: Backend::Http(server.url().to_owned()),
        extra_args: jwt_flags(&proxy_jwks.display().to_string(), &[]),
        ..ProxyOptions::default()
    })
    .await;
    (server, proxy)
}

/// In front of a protected legacy server over HTTP: each user's calls run as that user; alice's
/// paused elicitation resumes with her refreshed token (the legacy session she started it on
/// takes it: same user), bob's retry of it is refused; an expired token, a forged one and one
/// for another audience get the proxy's 401 `invalid_token`; a legacy client's session takes
/// its user's refreshed token and refuses bob's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refreshed_token_resumes_its_users_paused_call() {
    mcp_migrate_tests::support::binaries_async().await;
    let dir = tempfile::tempdir().unwrap();
    let key = TokenIssuer::generate("k1");
    let (_server, proxy) = protected_stack(&dir, &[&key], &[&key]).await;
    within(LIMIT, "paused calls across a token refresh", async {
        let alice_token = key.token(ISSUER, AUDIENCE, "alice", 600);
        let refreshed_token = key.token(ISSUER, AUDIENCE, "alice", 1200);
        let bob_token = key.token(ISSUER, AUDIENCE, "bob", 600);
        let alice = RawClient::new(proxy.url()).with_authorization(&bearer(&alice_token));
        let refreshed = RawClient::new(proxy.url()).with_authorization(&bearer(&refreshed_token));
        let bob = RawClient::new(proxy.url()).with_authorization(&bearer(&bob_token));

        assert_eq!(alice.call_tool("whoami", json!({})).await.text(), "alice");
        assert_eq!(bob.call_tool("whoami", json!({})).await.text(), "bob");

        let first = alice.call_tool("ask_name", json!({})).await;
        let (requests, state) = first.input_required();
        assert!(!state.contains(&alice_token), "no token in requestState");
        let answers = Script::default().answer_all(requests).unwrap();
        let stolen = bob
            .retry_tool("ask_name", json!({}), answers.clone(), Some(state))
            .await;
        assert!(stolen.error_code().is_some(), "{stolen:#?}");
        assert!(!stolen.body.contains("hello"), "{stolen:#?}");
        let resumed = refreshed
            .retry_tool("ask_name", json!({}), answers, Some(state))
            .await;
        assert_eq!(resumed.status, 200, "{resumed:#?}");
        assert_eq!(resumed.text(), "alice: hello Alice", "{resumed:#?}");
        // The refreshed token's own calls run as alice too.
        assert_eq!(
            refreshed.call_tool("whoami", json!({})).await.text(),
            "alice"
        );

        let expired = RawClient::new(proxy.url())
            .with_authorization(&bearer(&key.token(ISSUER, AUDIENCE, "alice", -600)));
        assert_invalid_token(&expired.call_tool("whoami", json!({})).await, "expired");
        let forged = TokenIssuer::generate("k1").token(ISSUER, AUDIENCE, "alice", 600);
        let forged = RawClient::new(proxy.url()).with_authorization(&bearer(&forged));
        assert_invalid_token(&forged.call_tool("whoami", json!({})).await, "signature");
        let elsewhere = key.token(ISSUER, "https://other.example.com/mcp", "alice", 600);
        let elsewhere = RawClient::new(proxy.url()).with_authorization(&bearer(&elsewhere));
        assert_invalid_token(&elsewhere.call_tool("whoami", json!({})).await, "audience");

        // A legacy (`initialize`) client: its session takes its user's refreshed token.
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        let (status, session, _, _) = legacy_post(
            &http,
            proxy.url(),
            Some(&alice_token),
            None,
            legacy_initialize(),
        )
        .await;
        assert_eq!(status, 200);
        let session = session.expect("Mcp-Session-Id");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let (status, ..) = legacy_post(
            &http,
            proxy.url(),
            Some(&alice_token),
            Some(&session),
            initialized,
        )
        .await;
        assert_eq!(status, 202);
        let whoami = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "whoami", "arguments": {}}});
        let (status, _, _, messages) = legacy_post(
            &http,
            proxy.url(),
            Some(&refreshed_token),
            Some(&session),
            whoami.clone(),
        )
        .await;
        assert_eq!(status, 200, "{messages:?}");
        let answer = messages.last().expect("a response");
        assert_eq!(answer["result"]["content"][0]["text"], "alice", "{answer}");
        let (status, _, _, messages) =
            legacy_post(&http, proxy.url(), Some(&bob_token), Some(&session), whoami).await;
        assert_eq!(status, 403, "{messages:?}");

        let logs = proxy.log_lines();
        for token in [&alice_token, &refreshed_token, &bob_token] {
            assert!(!logs.iter().any(|line| line.contains(token.as_str())));
        }
    })
    .await;
}

/// A token the proxy accepts but the legacy server does not (signed by a key only the proxy's
/// JWKS holds) at the retry of a paused call: that caller gets 401 with the legacy server's
/// challenge and a message that the call is lost; nobody else's identity is used.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_the_legacy_server_refuses_at_the_retry_is_a_clear_401() {
    mcp_migrate_tests::support::binaries_async().await;
    let dir = tempfile::tempdir().unwrap();
    let old = TokenIssuer::generate("old");
    let new = TokenIssuer::generate("new");
    let (server, proxy) = protected_stack(&dir, &[&old], &[&old, &new]).await;
    within(LIMIT, "a refused refreshed token", async {
        let alice = RawClient::new(proxy.url())
            .with_authorization(&bearer(&old.token(ISSUER, AUDIENCE, "alice", 600)));
        let first = alice.call_tool("ask_name", json!({})).await;
        let (requests, state) = first.input_required();
        let answers = Script::default().answer_all(requests).unwrap();
        let unknown_to_the_server = RawClient::new(proxy.url())
            .with_authorization(&bearer(&new.token(ISSUER, AUDIENCE, "alice", 600)));
        let refused = unknown_to_the_server
            .retry_tool("ask_name", json!({}), answers, Some(state))
            .await;
        assert_eq!(refused.status, 401, "{refused:#?}");
        assert!(
            refused.body.contains("the call is lost"),
            "{}",
            refused.body
        );
        let challenge = refused.www_authenticate.clone().expect("WWW-Authenticate");
        assert!(challenge.contains("resource_metadata"), "{challenge}");
        assert!(!refused.body.contains("hello"), "{refused:#?}");
        drop(server);
    })
    .await;
}

/// A JWKS served over http:// (by the test): read at startup, read again when a token names a
/// key it does not hold (`--jwks-refetch-interval 0s`); in front of a stdio legacy server (no
/// credentials travel): a paused call resumes for its user's refreshed token, not for bob's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jwks_url_is_fetched_again_for_a_new_key() {
    mcp_migrate_tests::support::binaries_async().await;
    let first = TokenIssuer::generate("first");
    let second = TokenIssuer::generate("second");
    let served = Arc::new(Mutex::new(jwks(&[&first])));
    let fetches = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let router = {
        let served = Arc::clone(&served);
        let fetches = Arc::clone(&fetches);
        axum::Router::new().route(
            "/jwks.json",
            axum::routing::get(move || {
                let document = served.lock().unwrap().to_string();
                fetches.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                async move { ([("content-type", "application/json")], document) }
            }),
        )
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    let proxy = Proxy::start(ProxyOptions {
        extra_args: jwt_flags(
            &format!("http://{address}/jwks.json"),
            &["--jwks-refetch-interval", "0s"],
        ),
        ..ProxyOptions::default()
    })
    .await;
    within(LIMIT, "a JWKS from a URL", async {
        let alice = RawClient::new(proxy.url())
            .with_authorization(&bearer(&first.token(ISSUER, AUDIENCE, "alice", 600)));
        let bob = RawClient::new(proxy.url())
            .with_authorization(&bearer(&first.token(ISSUER, AUDIENCE, "bob", 600)));
        let paused = alice.call_tool("ask_name", json!({})).await;
        let (requests, state) = paused.input_required();
        let answers = Script::default().answer_all(requests).unwrap();
        let stolen = bob
            .retry_tool("ask_name", json!({}), answers.clone(), Some(state))
            .await;
        assert!(stolen.error_code().is_some(), "{stolen:#?}");

        // The authorization server rotates: alice's refreshed token is signed by a new key.
        let refreshed = RawClient::new(proxy.url())
            .with_authorization(&bearer(&second.token(ISSUER, AUDIENCE, "alice", 1200)));
        let before = fetches.load(std::sync::atomic::Ordering::SeqCst);
        assert_invalid_token(
            &refreshed.call("tools/list", json!({})).await,
            "no key `second`",
        );
        assert!(fetches.load(std::sync::atomic::Ordering::SeqCst) > before);
        *served.lock().unwrap() = jwks(&[&first, &second]);
        let resumed = refreshed
            .retry_tool("ask_name", json!({}), answers, Some(state))
            .await;
        assert_eq!(resumed.status, 200, "{resumed:#?}");
        assert!(resumed.text().contains("Alice"), "{resumed:#?}");

        let expired = RawClient::new(proxy.url())
            .with_authorization(&bearer(&second.token(ISSUER, AUDIENCE, "alice", -600)));
        assert_invalid_token(&expired.call("tools/list", json!({})).await, "expired");
        // Without a token: the anonymous caller, served (the stdio server wants none).
        let anonymous = RawClient::new(proxy.url())
            .call("tools/list", json!({}))
            .await;
        assert_eq!(anonymous.status, 200, "{anonymous:#?}");
    })
    .await;
}
