//! The OpenTelemetry exporter for real (feature `otel`): a tiny OTLP/HTTP collector (axum on
//! hyper) takes `POST /v1/traces`; the proxy, built with `--features mcp-mrtr-proxy/otel` and
//! started with `--otlp-endpoint`, serves a paused-and-resumed call; the collector decodes the
//! protobuf export and finds the front request spans (server kind, method, principal digest)
//! with the engine's `call` span nested inside.
//!
//! Run: `cargo test -p mcp-migrate-tests --features otel --test proxy_otel`

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use mcp_migrate_tests::support::{
    binaries_async, within, BackendKind, ProxyOptions, Script, Stack,
};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use serde_json::json;

/// One received export: its `Content-Type` and body.
type Export = (Option<String>, Bytes);

#[derive(Default, Clone)]
struct Collector {
    exports: Arc<Mutex<Vec<Export>>>,
}

async fn traces(
    State(collector): State<Collector>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, [(header::HeaderName, &'static str); 1], Vec<u8>) {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    collector.exports.lock().unwrap().push((content_type, body));
    // An empty ExportTraceServiceResponse (full success) is zero bytes of protobuf.
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/x-protobuf")],
        Vec::new(),
    )
}

/// Starts the collector on 127.0.0.1; returns its base URL.
async fn start_collector(collector: Collector) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let app = Router::new()
        .route("/v1/traces", post(traces))
        .with_state(collector);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{address}")
}

fn string_attribute<'a>(span: &'a Span, key: &str) -> Option<&'a str> {
    span.attributes
        .iter()
        .find(|attribute| attribute.key == key)
        .and_then(|attribute| attribute.value.as_ref()?.value.as_ref())
        .and_then(|value| match value {
            any_value::Value::StringValue(text) => Some(text.as_str()),
            _ => None,
        })
}

/// Every span of every export received so far, with its resource's `service.name`.
fn received(collector: &Collector) -> Vec<(String, Span)> {
    let exports = collector.exports.lock().unwrap().clone();
    let mut spans = Vec::new();
    for (content_type, body) in exports {
        assert_eq!(content_type.as_deref(), Some("application/x-protobuf"));
        let request = ExportTraceServiceRequest::decode(body)
            .unwrap_or_else(|error| panic!("the export is not OTLP protobuf: {error}"));
        for resource_spans in request.resource_spans {
            let service = resource_spans
                .resource
                .iter()
                .flat_map(|resource| resource.attributes.iter())
                .find(|attribute| attribute.key == "service.name")
                .and_then(|attribute| attribute.value.as_ref()?.value.as_ref())
                .and_then(|value| match value {
                    any_value::Value::StringValue(name) => Some(name.clone()),
                    _ => None,
                })
                .unwrap_or_default();
            for scope in resource_spans.scope_spans {
                for span in scope.spans {
                    spans.push((service.clone(), span));
                }
            }
        }
    }
    spans
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_spans_are_exported_over_otlp_http() {
    binaries_async().await;
    within(Duration::from_secs(90), "the OTLP export", async {
        let collector = Collector::default();
        let endpoint = start_collector(collector.clone()).await;
        let stack = Stack::start(
            BackendKind::Stdio,
            ProxyOptions {
                // The engine's per-call span is at debug level (it costs on every call).
                extra_args: vec![
                    "--otlp-endpoint".into(),
                    endpoint,
                    "--log-level".into(),
                    "info,mcp_mrtr_proxy::engine=debug".into(),
                ],
                ..ProxyOptions::default()
            },
        )
        .await;
        let raw = stack.raw();
        let first = raw.call_tool("ask_name", json!({})).await;
        let (requests, state) = first.input_required();
        let responses = Script::default().answer_all(requests).unwrap();
        let done = raw
            .retry_tool("ask_name", json!({}), responses, Some(state))
            .await;
        assert_eq!(done.text(), "Hello, Alice!", "{done:#?}");

        // The batch processor exports every few seconds (OTEL_BSP_SCHEDULE_DELAY, 5 s).
        let spans = loop {
            let spans = received(&collector);
            let requests = spans
                .iter()
                .filter(|(_, span)| span.name == "tools/call")
                .count();
            let calls = spans.iter().filter(|(_, span)| span.name == "call").count();
            if requests >= 2 && calls >= 2 {
                break spans;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let front: Vec<&Span> = spans
            .iter()
            .filter(|(_, span)| span.name == "tools/call")
            .map(|(_, span)| span)
            .collect();
        for (service, _) in &spans {
            assert_eq!(service, "mcp-mrtr-proxy");
        }
        for span in &front {
            assert_eq!(span.kind, SpanKind::Server as i32, "{span:#?}");
            assert_eq!(string_attribute(span, "method"), Some("tools/call"));
            assert_eq!(string_attribute(span, "front"), Some("http"));
            let principal = string_attribute(span, "principal").unwrap_or_default();
            assert!(
                principal.len() == 8 && principal.chars().all(|c| c.is_ascii_hexdigit()),
                "{span:#?}"
            );
            assert!(span.end_time_unix_nano >= span.start_time_unix_nano);
        }
        // The engine's `call` span of each round nests under its front request's span.
        for (_, call) in spans.iter().filter(|(_, span)| span.name == "call") {
            assert!(
                front
                    .iter()
                    .any(|request| request.span_id == call.parent_span_id
                        && request.trace_id == call.trace_id),
                "a call span outside any request span: {call:#?}"
            );
        }
    })
    .await;
}
