//! TLS on the proxy's HTTP front (`--tls-cert`, `--tls-key`; docs/proxy/deployment.md, "TLS on
//! the front"), with certificates issued in the test by a certificate authority of its own
//! (`support::tls::TestCa`), in front of the real legacy fixture server over Streamable HTTP:
//! a 2026-07-28 call and a legacy client session (the TypeScript SDK 1.x) over HTTPS, the
//! health and metrics routes on the same listener, plain HTTP to the TLS port answered 400, a
//! SIGHUP that serves a new certificate to new connections while a paused call and a connection
//! opened before it carry on, and bad files refused at start-up with a sentence.

use std::process::Stdio;
use std::time::Duration;

use mcp_migrate_tests::support::legacy_clients::{LegacyRun, LegacySdk, LegacyTarget};
use mcp_migrate_tests::support::tls::{HttpsClient, ServerCert, TestCa};
use mcp_migrate_tests::support::{
    binaries_async, wait_until, within, Backend, LegacyHttpServer, Proxy, ProxyOptions, RawClient,
    Script,
};
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(240);

/// The proxy in front of `legacy`, serving `cert` over TLS, once `GET /healthz` over HTTPS
/// answers 200.
async fn tls_proxy(legacy: &LegacyHttpServer, cert: &ServerCert, https: &HttpsClient) -> Proxy {
    let proxy = Proxy::start_unready(ProxyOptions {
        backend: Backend::Http(legacy.url().to_owned()),
        extra_args: vec![
            "--tls-cert".into(),
            cert.cert.display().to_string(),
            "--tls-key".into(),
            cert.key.display().to_string(),
        ],
        ..ProxyOptions::default()
    })
    .await;
    assert!(
        proxy.url().starts_with("https://"),
        "the listening line names https: {}",
        proxy.url()
    );
    let health = proxy.healthz_url();
    wait_until(
        Duration::from_secs(60),
        "GET /healthz over HTTPS",
        || async {
            match https.try_connect(&health).await {
                Ok(mut connection) => connection.get(&health).await.0 == 200,
                Err(_) => false,
            }
        },
    )
    .await;
    proxy
}

/// A 2026-07-28 call that pauses and resumes, a legacy (`initialize`) session of the TypeScript
/// SDK 1.x client, `/healthz`, `/readyz` and `/metrics`: all over HTTPS, ALPN `http/1.1`, with
/// the certificate given.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_and_a_legacy_session_over_https() {
    binaries_async().await;
    within(LIMIT, "both eras over HTTPS", async {
        let legacy = LegacyHttpServer::start().await;
        let ca = TestCa::new();
        let cert = ca.issue();
        let https = ca.client();
        let proxy = tls_proxy(&legacy, &cert, &https).await;
        let url = proxy.url().to_owned();

        let mut connection = https.connect(&url).await;
        assert_eq!(connection.peer_certificate, cert.der);
        assert_eq!(connection.alpn.as_deref(), Some(&b"http/1.1"[..]));
        let raw = RawClient::new(&url);
        let first = connection
            .send(&url, &raw.tool_request("ask_name", json!({})))
            .await;
        let (requests, state) = first.input_required();
        let retry = raw.retry_request(
            "ask_name",
            json!({}),
            Script::default().answer_all(requests).unwrap(),
            Some(state),
        );
        let resumed = connection.send(&url, &retry).await;
        assert_eq!(resumed.status, 200, "{resumed:#?}");
        assert_eq!(resumed.text(), "Hello, Alice!", "{resumed:#?}");

        let base = url.trim_end_matches("/mcp");
        let (status, body) = connection.get(&format!("{base}/readyz")).await;
        assert_eq!(status, 200, "{body}");
        let (status, metrics) = connection.get(&format!("{base}/metrics")).await;
        assert_eq!(status, 200);
        assert!(metrics.ends_with("# EOF\n"), "{metrics}");
        assert!(metrics.contains("mcp_proxy_requests_total"), "{metrics}");

        let mut run = LegacyRun::new(LegacySdk::TypeScript, "Tess", &["ping", "ask_name"]);
        run.extra_ca_file = Some(ca.ca_file());
        let report = run.run(&LegacyTarget::Http(url.clone())).await;
        assert_eq!(report.error("ask_name"), None, "{:#}", report.0);
        assert_eq!(report.result("ask_name"), "Hello, Tess!", "{:#}", report.0);
    })
    .await;
}

/// Plain HTTP to the TLS port gets 400 and a sentence naming `https://`, and a TLS client that
/// does not trust the certificate is refused in the handshake; the port keeps serving HTTPS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_to_the_tls_port_fails_cleanly() {
    binaries_async().await;
    within(LIMIT, "plain HTTP to the TLS port", async {
        let legacy = LegacyHttpServer::start().await;
        let ca = TestCa::new();
        let https = ca.client();
        let proxy = tls_proxy(&legacy, &ca.issue(), &https).await;
        let plain_url = proxy.url().replacen("https://", "http://", 1);

        let plain = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap();
        let answer = plain
            .post(&plain_url)
            .header("Content-Type", "application/json")
            .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#)
            .send()
            .await
            .expect("plain HTTP gets an answer, not a reset");
        assert_eq!(answer.status(), 400);
        let text = answer.text().await.unwrap();
        assert!(text.contains("https://"), "{text}");

        let stranger = TestCa::new().client();
        let refused = stranger.try_connect(proxy.url()).await;
        assert!(
            refused
                .as_ref()
                .is_err_and(|error| error.contains("TLS handshake")),
            "a client that does not trust the certificate: {:?}",
            refused.map(|_| "connected")
        );

        let mut connection = https.connect(proxy.url()).await;
        let (status, _) = connection.get(&proxy.healthz_url()).await;
        assert_eq!(status, 200);
    })
    .await;
}

/// Replaces the files the proxy was started with by `next`'s, sends SIGHUP and waits for the log
/// line `expected`.
async fn reload(proxy: &Proxy, started_with: &ServerCert, next: (&str, &str), expected: &str) {
    let before = proxy
        .log_lines()
        .iter()
        .filter(|line| line.contains(expected))
        .count();
    std::fs::write(&started_with.cert, next.0).unwrap();
    std::fs::write(&started_with.key, next.1).unwrap();
    proxy.hangup();
    wait_until(Duration::from_secs(30), expected, || async {
        proxy
            .log_lines()
            .iter()
            .filter(|line| line.contains(expected))
            .count()
            > before
    })
    .await;
}

/// SIGHUP with a new certificate in the files: new connections are served the new certificate,
/// a connection opened before keeps the old one and keeps working, a call paused before resumes
/// after; files that do not parse leave the certificate in use (logged), and the keyring is
/// re-read by the same signal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_serves_a_new_certificate_to_new_connections() {
    binaries_async().await;
    within(LIMIT, "certificate reload", async {
        let legacy = LegacyHttpServer::start().await;
        let ca = TestCa::new();
        let first = ca.issue();
        let https = ca.client();
        let proxy = tls_proxy(&legacy, &first, &https).await;
        let url = proxy.url().to_owned();

        let mut before = https.connect(&url).await;
        assert_eq!(before.peer_certificate, first.der);
        let raw = RawClient::new(&url);
        let paused = before
            .send(&url, &raw.tool_request("ask_name", json!({})))
            .await;
        let (requests, state) = paused.input_required();
        let answers = Script::default().answer_all(requests).unwrap();

        let second = ca.issue();
        let (cert_pem, key_pem) = (
            std::fs::read_to_string(&second.cert).unwrap(),
            std::fs::read_to_string(&second.key).unwrap(),
        );
        reload(
            &proxy,
            &first,
            (&cert_pem, &key_pem),
            "TLS certificate reloaded",
        )
        .await;
        assert!(
            proxy
                .log_lines()
                .iter()
                .any(|line| line.contains("requestState keys reloaded")),
            "the same SIGHUP re-reads the keyring"
        );

        let mut after = https.connect(&url).await;
        assert_eq!(
            after.peer_certificate, second.der,
            "a new connection is served the new certificate"
        );
        let resumed = after
            .send(
                &url,
                &raw.retry_request("ask_name", json!({}), answers, Some(state)),
            )
            .await;
        assert_eq!(resumed.text(), "Hello, Alice!", "{resumed:#?}");
        let (status, _) = before.get(&proxy.healthz_url()).await;
        assert_eq!(
            status, 200,
            "the connection opened before the reload still works"
        );
        assert_eq!(before.peer_certificate, first.der);

        reload(
            &proxy,
            &first,
            ("not a certificate", "not a key"),
            "TLS certificate was not reloaded",
        )
        .await;
        let mut unchanged = https.connect(&url).await;
        assert_eq!(
            unchanged.peer_certificate, second.der,
            "files that do not parse keep the certificate in use"
        );
        let answer = unchanged
            .send(
                &url,
                &raw.tool_request("echo", json!({"text": "still here"})),
            )
            .await;
        assert_eq!(answer.status, 200, "{answer:#?}");
    })
    .await;
}

/// Runs the proxy binary with `args` (and a legacy server it never reaches) and returns its exit
/// status and stderr; it must exit on its own.
async fn start_up_error(args: &[&str]) -> (std::process::ExitStatus, String) {
    let binaries = binaries_async().await;
    let store = tempfile::tempdir().unwrap();
    let child = tokio::process::Command::new(&binaries.proxy)
        .args(["--listen", "127.0.0.1:0", "--store"])
        .arg(store.path())
        .args(["--upstream", "http://127.0.0.1:9/mcp"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the proxy");
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the proxy exits at once on a bad certificate")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!stdout.contains("listening on"), "{stdout}");
    (
        output.status,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A certificate file without a certificate, a key that is not the certificate's, a missing
/// file, or one flag without the other: the proxy exits with a sentence naming the flag and
/// file, never a panic, never listening.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_certificate_files_stop_the_start_up_with_a_sentence() {
    within(LIMIT, "start-up errors", async {
        let ca = TestCa::new();
        let cert = ca.issue();
        let other = ca.issue();
        let (garbage, _) = ca.write("garbage", "not a certificate\n", "");
        let cert_path = cert.cert.display().to_string();
        let key_path = cert.key.display().to_string();
        let other_key = other.key.display().to_string();
        let garbage = garbage.display().to_string();
        let missing = ca.dir().join("missing.pem").display().to_string();
        let cases: [(Vec<&str>, &[&str]); 4] = [
            (
                vec!["--tls-cert", &garbage, "--tls-key", &key_path],
                &["--tls-cert", "garbage.crt", "no PEM certificate"],
            ),
            (
                vec!["--tls-cert", &cert_path, "--tls-key", &other_key],
                &["do not make a usable pair"],
            ),
            (
                vec!["--tls-cert", &cert_path, "--tls-key", &missing],
                &["could not read --tls-key", "missing.pem"],
            ),
            (vec!["--tls-cert", &cert_path], &["go together"]),
        ];
        for (args, expected) in cases {
            let (status, stderr) = start_up_error(&args).await;
            assert!(!status.success(), "{args:?}: {stderr}");
            assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
            for needle in expected {
                assert!(stderr.contains(needle), "{args:?}: {needle:?} in {stderr}");
            }
        }
    })
    .await;
}
