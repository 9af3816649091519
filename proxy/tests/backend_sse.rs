//! HTTP+SSE lanes (2024-11-05 transport) against a scripted hyper server, for what a real SDK
//! server will not do on demand: refuse a POST, name another host in its `endpoint` event, end
//! its stream. (The Python SDK server covers the real flows: `tests/tests/proxy_sse_backend.rs`.)

mod backend_support;

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use backend_support::{init_tracing, settings, within};
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::TokioIo;
use mcp_mrtr_proxy::backend::{BackendError, BackendSpec, LanePool, UpstreamTransport};
use mcp_mrtr_proxy::capabilities::CapabilityProfile;
use serde_json::{json, Value};
use tokio::sync::mpsc;

/// A whole test, lane starts included, on a loaded 2-core machine.
const TEST: Duration = Duration::from_secs(60);

type Body = http_body_util::Either<
    Full<Bytes>,
    StreamBody<futures_util::stream::BoxStream<'static, Result<Frame<Bytes>, Infallible>>>,
>;

/// The server's side of the one SSE stream open right now.
#[derive(Clone, Default)]
struct Script {
    /// What the `endpoint` event says.
    endpoint: Arc<Mutex<String>>,
    stream: Arc<Mutex<Option<mpsc::UnboundedSender<String>>>>,
}

impl Script {
    fn push(&self, message: &Value) {
        if let Some(stream) = self.stream.lock().unwrap().as_ref() {
            let _ = stream.send(format!("event: message\r\ndata: {message}\r\n\r\n"));
        }
    }

    /// Ends the SSE stream (the session).
    fn end_stream(&self) {
        self.stream.lock().unwrap().take();
    }
}

async fn respond(script: Script, request: Request<Incoming>) -> Response<Body> {
    let empty = |status: StatusCode| {
        let mut response = Response::new(Body::Left(Full::new(Bytes::new())));
        *response.status_mut() = status;
        response
    };
    match (request.method(), request.uri().path()) {
        (&Method::GET, "/sse") => {
            let (tx, rx) = mpsc::unbounded_channel::<String>();
            let endpoint = script.endpoint.lock().unwrap().clone();
            let _ = tx.send(format!("event: endpoint\r\ndata: {endpoint}\r\n\r\n"));
            *script.stream.lock().unwrap() = Some(tx);
            let events = futures_util::stream::unfold(rx, |mut rx| async move {
                let event = rx.recv().await?;
                Some((Ok(Frame::data(Bytes::from(event))), rx))
            });
            let mut response = Response::new(Body::Right(StreamBody::new(Box::pin(events))));
            response
                .headers_mut()
                .insert("content-type", "text/event-stream".parse().unwrap());
            response
        }
        // What `--upstream-transport auto` tries first: not a Streamable HTTP endpoint.
        (&Method::POST, "/sse") => empty(StatusCode::METHOD_NOT_ALLOWED),
        (&Method::POST, "/messages") => {
            let body = request.into_body().collect().await.unwrap().to_bytes();
            let message: Value = serde_json::from_slice(&body).unwrap();
            let id = message.get("id").cloned();
            match message["method"].as_str() {
                Some("refuse_me") => return empty(StatusCode::BAD_REQUEST),
                Some("initialize") => script.push(&json!({
                    "jsonrpc": "2.0", "id": id, "result": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": { "tools": {} },
                        "serverInfo": { "name": "scripted-sse", "version": "0" },
                    },
                })),
                Some("tools/list") => script.push(&json!({
                    "jsonrpc": "2.0", "id": id, "result": { "tools": [] },
                })),
                // Notifications; `hang` is never answered.
                _ => {}
            }
            empty(StatusCode::ACCEPTED)
        }
        _ => empty(StatusCode::NOT_FOUND),
    }
}

/// Starts the scripted server; returns its SSE URL.
async fn server(script: &Script) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let script = script.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let script = script.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let script = script.clone();
                    async move { Ok::<_, Infallible>(respond(script, request).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    format!("http://{address}/sse")
}

fn pool(url: String, transport: UpstreamTransport) -> Arc<LanePool> {
    LanePool::new(BackendSpec::Http { url, transport }, settings(1, &[]))
}

#[tokio::test]
async fn auto_falls_back_to_sse_and_a_refused_request_fails_at_once() {
    init_tracing();
    let script = Script::default();
    *script.endpoint.lock().unwrap() = "/messages?session=1".into();
    let url = server(&script).await;
    let pool = pool(url, UpstreamTransport::Auto);
    within(TEST, async {
        let initialized = pool.initialized().await.expect("an HTTP+SSE session");
        assert_eq!(initialized.protocol_version, "2025-06-18");
        let lane = pool.shared(&CapabilityProfile::default()).await.unwrap();
        assert_eq!(lane.transport(), "sse");
        let listed = lane.request("tools/list", json!({})).await.unwrap();
        let reply = listed.response.await.unwrap().unwrap().unwrap();
        assert_eq!(reply.into_value().unwrap(), json!({ "tools": [] }));
        // Refused with 400: the call fails now, not at its 10 s timeout (8 s: a loaded machine).
        let refused = lane.request("refuse_me", json!({})).await.unwrap();
        let outcome = tokio::time::timeout(Duration::from_secs(8), refused.response)
            .await
            .expect("answered at once")
            .unwrap();
        assert!(
            matches!(&outcome, Err(BackendError::Protocol(why)) if why.contains("400")),
            "{outcome:?}"
        );
        assert!(lane.is_alive());
    })
    .await;
}

#[tokio::test]
async fn the_end_of_the_stream_is_the_end_of_the_lane() {
    init_tracing();
    let script = Script::default();
    *script.endpoint.lock().unwrap() = "messages?session=2".into(); // relative to /sse
    let url = server(&script).await;
    let pool = pool(url, UpstreamTransport::Sse);
    within(TEST, async {
        let lane = pool.shared(&CapabilityProfile::default()).await.unwrap();
        let hanging = lane.request("hang", json!({})).await.unwrap();
        script.end_stream();
        let outcome = tokio::time::timeout(Duration::from_secs(5), hanging.response)
            .await
            .expect("failed when the stream ended");
        assert!(
            matches!(outcome, Ok(Err(BackendError::Crashed)) | Err(_)),
            "{outcome:?}"
        );
        assert!(!lane.is_alive());
    })
    .await;
}

#[tokio::test]
async fn an_endpoint_on_another_server_is_refused() {
    init_tracing();
    let script = Script::default();
    *script.endpoint.lock().unwrap() = "http://attacker.example.com/messages".into();
    let url = server(&script).await;
    let pool = pool(url, UpstreamTransport::Sse);
    within(TEST, async {
        let outcome = pool.initialized().await;
        assert!(
            matches!(&outcome, Err(BackendError::Unavailable(why)) if why.contains("another server")),
            "{outcome:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn streamable_http_only_reports_what_the_server_is_not() {
    init_tracing();
    let script = Script::default();
    *script.endpoint.lock().unwrap() = "/messages".into();
    let url = server(&script).await;
    let pool = pool(url, UpstreamTransport::StreamableHttp);
    within(TEST, async {
        let outcome = pool.initialized().await;
        assert!(
            matches!(&outcome, Err(BackendError::NotStreamableHttp(why)) if why.contains("405")),
            "{outcome:?}"
        );
    })
    .await;
}
