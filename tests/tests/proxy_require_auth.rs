//! `--require-auth` (docs/proxy/deployment.md, "Authenticated servers"): the proxy is the OAuth
//! resource server for a stdio legacy server without auth of its own (the Python SDK and
//! TypeScript SDK conformance servers, spawned by the proxy): no token → 401 whose
//! `resource_metadata` URL serves the proxy's own RFC 9728 metadata (with and without the path
//! suffix); an invalid token → 401 `invalid_token`; a token without the required scope → 403; a
//! valid token's calls work for 2026-07-28 and legacy (`initialize`) clients. And the startup
//! refusal to listen on a non-loopback address without authentication.

use std::time::Duration;

use mcp_migrate_tests::support::legacy_post::{bearer, legacy_initialize, legacy_post};
use mcp_migrate_tests::support::sdk_servers::{conformance_server_async, LegacySdk};
use mcp_migrate_tests::support::tokens::{jwks, TokenIssuer};
use mcp_migrate_tests::support::{within, Proxy, ProxyOptions, RawClient};
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(240);
const ISSUER: &str = "https://auth.example.com";
const AUDIENCE: &str = "https://mcp.example.com/mcp";
const SCOPE: &str = "mcp:tools";

/// The `resource_metadata` URL of a challenge.
fn metadata_url(challenge: &str) -> &str {
    challenge
        .split("resource_metadata=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no resource_metadata in {challenge}"))
}

async fn behind_require_auth(sdk: LegacySdk) {
    mcp_migrate_tests::support::binaries_async().await;
    let backend = conformance_server_async(sdk).await;
    let dir = tempfile::tempdir().unwrap();
    let key = TokenIssuer::generate("k1");
    let jwks_file = dir.path().join("jwks.json");
    std::fs::write(&jwks_file, jwks(&[&key]).to_string()).unwrap();
    let extra_args = [
        "--require-auth",
        "--principal",
        "jwt",
        "--jwks",
        jwks_file.to_str().unwrap(),
        "--issuer",
        ISSUER,
        "--audience",
        AUDIENCE,
        "--authorization-server",
        ISSUER,
        "--scope",
        SCOPE,
    ]
    .iter()
    .map(|arg| (*arg).to_owned())
    .collect();
    let proxy = Proxy::start(backend.into_options(ProxyOptions {
        extra_args,
        ..ProxyOptions::default()
    }))
    .await;
    within(
        LIMIT,
        &format!("{} behind --require-auth", sdk.name()),
        async {
            let http = reqwest::Client::builder().no_proxy().build().unwrap();
            let url = proxy.url();
            let origin = url.trim_end_matches("/mcp");

            // No token: 401, the challenge names the proxy's own metadata.
            let refused = RawClient::new(url)
                .call_tool("test_simple_text", json!({}))
                .await;
            assert_eq!(refused.status, 401, "{refused:#?}");
            let challenge = refused.www_authenticate.clone().expect("WWW-Authenticate");
            assert!(challenge.starts_with("Bearer "), "{challenge}");
            assert!(
                challenge.contains(&format!("scope=\"{SCOPE}\"")),
                "{challenge}"
            );
            let metadata = metadata_url(&challenge);
            assert_eq!(
                metadata,
                format!("{origin}/.well-known/oauth-protected-resource/mcp")
            );
            let expected = json!({
                "resource": url,
                "authorization_servers": [ISSUER],
                "bearer_methods_supported": ["header"],
                "scopes_supported": [SCOPE],
            });
            for at in [
                metadata.to_owned(),
                format!("{origin}/.well-known/oauth-protected-resource"),
            ] {
                let response = http.get(&at).send().await.unwrap();
                assert_eq!(response.status(), 200, "{at}");
                let document: Value = response.json().await.unwrap();
                assert_eq!(document, expected, "{at}");
            }

            // An expired token, and one without the scope.
            let expired = RawClient::new(url).with_authorization(&bearer(&key.token_with(
                ISSUER,
                AUDIENCE,
                "alice",
                -600,
                json!({"scope": SCOPE}),
            )));
            let refused = expired.call_tool("test_simple_text", json!({})).await;
            assert_eq!(refused.status, 401, "{refused:#?}");
            let challenge = refused.www_authenticate.clone().unwrap_or_default();
            assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
            assert_eq!(metadata_url(&challenge), metadata);
            let unscoped = RawClient::new(url)
                .with_authorization(&bearer(&key.token(ISSUER, AUDIENCE, "alice", 600)));
            let refused = unscoped.call_tool("test_simple_text", json!({})).await;
            assert_eq!(refused.status, 403, "{refused:#?}");
            assert!(refused
                .www_authenticate
                .as_deref()
                .is_some_and(|challenge| challenge.contains("insufficient_scope")));

            // A valid token: a 2026-07-28 call.
            let token = key.token_with(ISSUER, AUDIENCE, "alice", 600, json!({"scope": SCOPE}));
            let alice = RawClient::new(url).with_authorization(&bearer(&token));
            let answered = alice.call_tool("test_simple_text", json!({})).await;
            assert_eq!(answered.status, 200, "{answered:#?}");
            assert!(answered.text().contains("simple text"), "{answered:#?}");

            // A legacy client: initialize without a token is refused, with one it gets a session.
            let (status, ..) = legacy_post(&http, url, None, None, legacy_initialize()).await;
            assert_eq!(status, 401);
            let (status, session, _, _) =
                legacy_post(&http, url, Some(&token), None, legacy_initialize()).await;
            assert_eq!(status, 200);
            let session = session.expect("Mcp-Session-Id");
            let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            let (status, ..) =
                legacy_post(&http, url, Some(&token), Some(&session), initialized).await;
            assert_eq!(status, 202);
            let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "test_simple_text", "arguments": {}}});
            let (status, _, _, messages) =
                legacy_post(&http, url, Some(&token), Some(&session), call.clone()).await;
            assert_eq!(status, 200, "{messages:?}");
            let text = messages.last().expect("a response")["result"]["content"][0]["text"].clone();
            assert!(
                text.as_str()
                    .is_some_and(|text| text.contains("simple text")),
                "{messages:?}"
            );
            let (status, ..) = legacy_post(&http, url, None, Some(&session), call.clone()).await;
            assert_eq!(status, 401, "the session needs the token too");
            // Another user's valid token on alice's session: refused (the session is hers).
            let bob = key.token_with(ISSUER, AUDIENCE, "bob", 600, json!({"scope": SCOPE}));
            let (status, ..) = legacy_post(&http, url, Some(&bob), Some(&session), call).await;
            assert_eq!(status, 403, "another user's token on the session");

            // The operations endpoints stay open (probes carry no token).
            let health = http.get(format!("{origin}/healthz")).send().await.unwrap();
            assert_eq!(health.status(), 200);
            assert!(!proxy.log_lines().iter().any(|line| line.contains(&token)));
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_stdio_server_behind_require_auth() {
    behind_require_auth(LegacySdk::Python).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typescript_stdio_server_behind_require_auth() {
    behind_require_auth(LegacySdk::TypeScript).await;
}

/// A non-loopback listen address without --require-auth is refused at startup, naming both
/// flags; --require-auth there needs --public-url; --allow-unauthenticated starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_loopback_address_needs_authentication_or_an_explicit_opt_out() {
    let binaries = mcp_migrate_tests::support::binaries_async().await;
    let dir = tempfile::tempdir().unwrap();
    let jwks_file = dir.path().join("jwks.json");
    std::fs::write(
        &jwks_file,
        jwks(&[&TokenIssuer::generate("k1")]).to_string(),
    )
    .unwrap();
    let jwks_file = jwks_file.to_str().unwrap().to_owned();
    let run = |args: Vec<&str>| {
        let mut command = tokio::process::Command::new(&binaries.proxy);
        command
            .args(["--store", dir.path().join("store").to_str().unwrap()])
            .args(args)
            .args(["--", "/nonexistent-legacy-server"])
            .kill_on_drop(true);
        async move { command.output().await.expect("running the proxy") }
    };
    within(LIMIT, "the non-loopback refusal", async {
        let refused = run(vec!["--listen", "0.0.0.0:0"]).await;
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(!refused.status.success(), "{stderr}");
        assert!(
            stderr.contains("refusing to listen on 0.0.0.0:0")
                && stderr.contains("--require-auth")
                && stderr.contains("--allow-unauthenticated"),
            "{stderr}"
        );
        let refused = run(vec!["--listen", "[::]:0"]).await;
        assert!(!refused.status.success());
        let refused = run(vec![
            "--listen",
            "0.0.0.0:0",
            "--require-auth",
            "--principal",
            "jwt",
            "--jwks",
            &jwks_file,
            "--issuer",
            ISSUER,
            "--audience",
            AUDIENCE,
            "--authorization-server",
            ISSUER,
        ])
        .await;
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(!refused.status.success(), "{stderr}");
        assert!(stderr.contains("--public-url"), "{stderr}");
        let refused = run(vec!["--require-auth"]).await;
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(stderr.contains("--principal jwt"), "{stderr}");
    })
    .await;
    // Told so, it listens there.
    let proxy = Proxy::start(ProxyOptions {
        listen: Some("0.0.0.0:0".into()),
        extra_args: vec!["--allow-unauthenticated".into()],
        ..ProxyOptions::default()
    })
    .await;
    assert!(proxy.url().contains("0.0.0.0:"), "{}", proxy.url());
}
