//! Reading a response body, `application/json` or `text/event-stream`, through the lane's
//! router; for an SSE stream with event ids, what resuming it needs.

use std::time::Duration;

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http_body_util::BodyExt as _;
use serde_json::Value;

use super::{HttpShared, StreamEnd, DEFAULT_RETRY, MAX_JSON_BODY};
use crate::backend::sse::SseParser;

fn is_event_stream(content_type: &str) -> bool {
    const EVENT_STREAM: &str = "text/event-stream";
    content_type
        .trim_start()
        .get(..EVENT_STREAM.len())
        .is_some_and(|start| start.eq_ignore_ascii_case(EVENT_STREAM))
}

impl HttpShared {
    /// Reads a response body (JSON or SSE) through the router. For an SSE stream with event ids,
    /// returns what a resumption needs.
    /// `call`: the response belongs to that request of ours (what its stream carries is the
    /// call's); `None` for the answer to a POSTed response or notification.
    pub(super) async fn read_response<B>(
        &self,
        response: http::Response<B>,
        call: Option<&Value>,
    ) -> Option<StreamEnd>
    where
        B: hyper::body::Body<Data = Bytes>,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>> + std::fmt::Display,
    {
        // A reference-counted copy, not a `String`: only a JSON body's debug line shows it.
        let content_type = response.headers().get(CONTENT_TYPE).cloned();
        let content_type = content_type
            .as_ref()
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default();
        if is_event_stream(content_type) {
            let mut parser = SseParser::new();
            let clean = self.read_sse(response.into_body(), &mut parser, call).await;
            let retry = parser
                .retry_ms()
                .map(Duration::from_millis)
                .unwrap_or(DEFAULT_RETRY);
            return parser
                .last_event_id()
                .filter(|last| !last.is_empty())
                .map(|last| StreamEnd {
                    last_event_id: last.to_owned(),
                    retry,
                    clean,
                });
        }
        let body = match http_body_util::Limited::new(response.into_body(), MAX_JSON_BODY)
            .collect()
            .await
        {
            Ok(body) => body.to_bytes(),
            Err(error) => {
                tracing::warn!(parent: &self.core.span, %error, "reading a response body failed");
                return None;
            }
        };
        if body.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        self.process_bytes(&body, call);
        if call.is_some_and(|id| self.core.is_pending(id)) && !content_type.contains("json") {
            tracing::debug!(parent: &self.core.span, %content_type, "unexpected response content type");
        }
        None
    }

    /// Reads SSE events until the body ends, routing each `message` event. Returns whether the
    /// stream ended cleanly (rather than with a broken connection).
    pub(super) async fn read_sse<B>(
        &self,
        body: B,
        parser: &mut SseParser,
        call: Option<&Value>,
    ) -> bool
    where
        B: hyper::body::Body<Data = Bytes>,
        B::Error: std::fmt::Display,
    {
        let mut body = std::pin::pin!(body);
        let clean = loop {
            match body.frame().await {
                None => break true,
                Some(Err(error)) => {
                    tracing::debug!(parent: &self.core.span, %error, "SSE stream broke");
                    break false;
                }
                Some(Ok(frame)) => {
                    if let Some(data) = frame.data_ref() {
                        parser.feed_with(data, |event, data| {
                            if event == "message" {
                                self.core.handle_text_from(data, "http response", call);
                            } else {
                                tracing::debug!(parent: &self.core.span, event, "SSE event of another type ignored");
                            }
                        });
                    }
                }
            }
        };
        parser.finish();
        clean
    }

    fn process_bytes(&self, bytes: &[u8], call: Option<&Value>) {
        self.core.handle_bytes_from(bytes, "http response", call);
    }
}
