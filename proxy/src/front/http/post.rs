//! A POST from its body to its response: the body read within the size limit and the read
//! timeout, legacy traffic handed to [`crate::front::http_legacy`], the decision
//! ([`super::decide`]), the handler (polled by the connection's own task, [`InlineHandler`]), and
//! what it sends turned into a JSON or SSE response.

use std::time::Duration;

use bytes::Bytes;
use bytes::BytesMut;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use http::{header, HeaderMap, HeaderValue, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::Value;
use std::future::Future as _;
use tokio::sync::OwnedSemaphorePermit;
use tracing::Instrument as _;

use super::decide::{decide_post_as, PostDecision};
use super::responses::{
    body_timeout, challenge_response, empty_response, json_response, message_response, overloaded,
    rejection_response, sse_event, sse_response, too_large,
};
use super::serve::Front;
use super::sse_body::SseBody;
use super::ResponseBody;
use crate::credentials::OriginRewrite;
use crate::front::callers::Caller;
use crate::front::validate::{self, error_response, Rejection};
use crate::jsonrpc::{codes, ErrorObject};
use crate::legacy_session::Era;
use crate::limits;
use crate::quiet_waker::QuietWaker;
use crate::request::{FrontRequest, Handler, Outgoing, ResponseSink};
use crate::response_channel::{response_channel, OutgoingReceiver};

impl Front {
    /// A retry another instance passed on ([`crate::cluster`]): a sealed envelope, opened by the
    /// handler; answered like `/mcp` (JSON, or SSE once a notification comes first).
    pub(super) async fn forwarded(&self, request: Request<Incoming>) -> Response<ResponseBody> {
        let (parts, body) = request.into_parts();
        let bytes = match self.read_body(&parts.headers, body).await {
            Ok(bytes) => bytes,
            Err(response) => return response,
        };
        let request = match self.handler.open_forwarded(&bytes) {
            Ok(request) => request,
            Err(error) => {
                crate::metrics::global().rejection("forward_refused");
                tracing::warn!(message = %error.message, "refused a forwarded request");
                return json_response(StatusCode::FORBIDDEN, &error_response(None, &error));
            }
        };
        let Some(permit) = self.gate.try_enter() else {
            crate::metrics::global().rejection("limit_concurrent_requests");
            return overloaded(&request.id, &self.gate);
        };
        self.dispatch(request, true, permit, true).await
    }

    /// Reads a request body within the size limit and the read timeout.
    async fn read_body(
        &self,
        headers: &HeaderMap,
        body: Incoming,
    ) -> Result<Bytes, Response<ResponseBody>> {
        let limit = self.config.max_body_bytes;
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.trim().parse::<u64>().ok());
        if declared.is_some_and(|length| length > limit as u64) {
            crate::metrics::global().rejection("body_too_large");
            return Err(too_large(limit));
        }
        // A body that came with its head is read without starting the timeout's clock (a clock
        // read per call); one still arriving gets the whole timeout from here.
        let mut read = std::pin::pin!(read_limited(body, limit));
        let outcome = match futures_util::FutureExt::now_or_never(read.as_mut()) {
            Some(read) => Ok(read),
            None => tokio::time::timeout(self.config.body_read_timeout, read).await,
        };
        match outcome {
            Err(_) => {
                crate::metrics::global().rejection("body_read_timeout");
                Err(body_timeout(self.config.body_read_timeout))
            }
            Ok(Ok(bytes)) => Ok(bytes),
            Ok(Err(BodyError::TooLarge)) => {
                crate::metrics::global().rejection("body_too_large");
                Err(too_large(limit))
            }
            Ok(Err(BodyError::Read(error))) => {
                tracing::debug!(%error, "reading the request body failed");
                Err(rejection_response(&Rejection::new(
                    None,
                    ErrorObject::new(codes::INVALID_REQUEST, "could not read the request body"),
                    400,
                )))
            }
        }
    }

    pub(super) async fn post(
        &self,
        request: Request<Incoming>,
        caller: Caller,
    ) -> Response<ResponseBody> {
        let (parts, body) = request.into_parts();
        let bytes = match self.read_body(&parts.headers, body).await {
            Ok(bytes) => bytes,
            Err(response) => return response,
        };
        if let Some(legacy) = &self.config.legacy {
            let era = if legacy.policy().serves_legacy() {
                crate::legacy_session::era::http_post_era(&parts.headers, &bytes)
            } else {
                Era::Modern
            };
            if era == Era::Legacy {
                return crate::front::http_legacy::post(
                    legacy,
                    &parts.headers,
                    &bytes,
                    &self.gate,
                    self.config.sse_keep_alive,
                    self.callers(caller),
                )
                .await;
            }
            if !legacy.policy().serves_modern() {
                return crate::front::http_legacy::refuse_modern(&bytes);
            }
        }
        match decide_post_as(&parts.headers, &bytes, caller) {
            PostDecision::Reject(rejection) => {
                crate::metrics::global()
                    .rejection(crate::metrics::validation_reason(rejection.error.code));
                tracing::debug!(
                    code = rejection.error.code,
                    message = %rejection.error.message,
                    "rejected a request"
                );
                rejection_response(&rejection)
            }
            // On HTTP, closing the response stream is the cancellation; a notification POST has
            // nothing else to do.
            PostDecision::Accepted => empty_response(StatusCode::ACCEPTED),
            PostDecision::Dispatch {
                request,
                sse_allowed,
            } => {
                // Decided before the handler runs, so before any SSE byte.
                let Some(permit) = self.gate.try_enter() else {
                    crate::metrics::global().rejection("limit_concurrent_requests");
                    tracing::warn!(
                        max = self.gate.max(),
                        "refused a request: too many requests in flight"
                    );
                    return overloaded(&request.id, &self.gate);
                };
                self.dispatch(request, sse_allowed, permit, false).await
            }
        }
    }

    /// Runs the handler for one request and turns what it sends into a JSON or SSE response.
    async fn dispatch(
        &self,
        request: FrontRequest,
        sse_allowed: bool,
        permit: OwnedSemaphorePermit,
        forwarded: bool,
    ) -> Response<ResponseBody> {
        let id = request.id.clone();
        let span = crate::telemetry::request_span(&request, "http");
        let (tx, rx) = response_channel();
        let sink = ResponseSink::new(tx).observed(&request.method);
        let mut handler =
            InlineHandler::start(self.handler.as_ref(), request, sink, span, forwarded);
        respond_from(
            rx,
            &mut handler,
            id,
            sse_allowed,
            permit,
            self.config.sse_keep_alive,
            self.config.origin_rewrite.as_ref(),
        )
        .await
        // `handler` dropped here: still running (an SSE response, a client gone), it goes on in
        // a task of its own.
    }
}

/// Why a request body could not be read.
#[derive(Debug)]
enum BodyError<E> {
    /// More than the limit.
    TooLarge,
    Read(E),
}

/// Reads a request body to its end, refusing more than `limit` bytes. A body that comes in one
/// data frame (a JSON-RPC message almost always does) is kept as it came; `Limited` and
/// `collect` would queue it in a list first (a third of the read's instructions per call:
/// callgrind, bench/proxy-vs-nginx.md). Trailers are ignored, as `Collected::to_bytes` does.
async fn read_limited<B>(mut body: B, limit: usize) -> Result<Bytes, BodyError<B::Error>>
where
    B: hyper::body::Body<Data = Bytes> + Unpin,
{
    let mut first: Option<Bytes> = None;
    let mut joined = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.map_err(BodyError::Read)?.into_data() else {
            continue;
        };
        let read = first.as_ref().map_or(0, Bytes::len) + joined.len() + data.len();
        if read > limit {
            return Err(BodyError::TooLarge);
        }
        match first.take() {
            None if joined.is_empty() => first = Some(data),
            None => joined.extend_from_slice(&data),
            Some(earlier) => {
                joined.reserve(read);
                joined.extend_from_slice(&earlier);
                joined.extend_from_slice(&data);
            }
        }
    }
    Ok(first.unwrap_or_else(|| joined.freeze()))
}

/// Turns what a request's handler sends into its HTTP response: a final response first is a JSON
/// response with its status; a notification first (when the client takes `text/event-stream`)
/// opens an SSE stream that ends with the final response and holds `permit` until then.
/// Dropping this future (client gone before the first item) drops `rx`: the sender sees it.
pub(crate) async fn respond_from(
    mut rx: OutgoingReceiver,
    handler: &mut InlineHandler,
    id: Value,
    sse_allowed: bool,
    permit: OwnedSemaphorePermit,
    keep_alive: Option<Duration>,
    rewrite: Option<&OriginRewrite>,
) -> Response<ResponseBody> {
    loop {
        match std::future::poll_fn(|cx| handler.poll_response(&mut rx, cx)).await {
            Some(Outgoing::Final {
                message,
                http_status,
            }) => {
                let status = StatusCode::from_u16(http_status)
                    .ok()
                    .filter(|status| !status.is_informational())
                    .unwrap_or(StatusCode::OK);
                let mut response = challenge_response(status, &message, rewrite)
                    .unwrap_or_else(|| message_response(status, &message));
                if status == StatusCode::SERVICE_UNAVAILABLE {
                    response.headers_mut().insert(
                        header::RETRY_AFTER,
                        HeaderValue::from(limits::RETRY_AFTER_SECS),
                    );
                }
                return response;
            }
            Some(Outgoing::Notification(message)) if sse_allowed => {
                let body = SseBody::new(sse_event(&message), rx, id, keep_alive, permit);
                return sse_response(body);
            }
            // The client accepts only `application/json`: notifications cannot be delivered.
            Some(Outgoing::Notification(_)) => continue,
            None => {
                let error = handler_gone();
                return json_response(
                    StatusCode::from_u16(validate::http_status(error.code))
                        .unwrap_or(StatusCode::OK),
                    &error_response(Some(&id), &error),
                );
            }
        }
    }
}

/// Runs `handler.handle` in a task of its own (the stdio front, which answers many requests at
/// once on one connection). A handler that panics (while building its future or while running
/// it) drops the sink, which the front answers with `-32603`.
pub(crate) fn start_handler(
    handler: &dyn Handler,
    request: FrontRequest,
    sink: ResponseSink,
    span: tracing::Span,
    forwarded: bool,
) {
    InlineHandler::start(handler, request, sink, span, forwarded).detach();
}

type HandlerFuture = tracing::instrument::Instrumented<BoxFuture<'static, ()>>;

/// A request's handler, polled by the front connection's own task while the response is
/// awaited: a call answered by its first response costs no task of its own (a spawn, a task to
/// schedule, and a wake-up of the connection's task to hand the response over). Dropped while
/// still running (its response is an SSE stream that outlives this future, or the client went
/// away), it goes on in a task of its own ([`tokio::spawn`]), as [`start_handler`]'s would: the
/// engine then sees its sink closed and ends the call as it must.
#[derive(Default)]
pub(crate) struct InlineHandler {
    future: Option<HandlerFuture>,
    /// What the response channel is read with while the handler runs here: the handler fills
    /// it while this task polls it, and its sends need not wake this task again (it reads the
    /// channel right after). `None` when there was no handler to run.
    response_waker: Option<Arc<QuietWaker>>,
}

impl InlineHandler {
    /// `handler.handle` (or `handle_forwarded`), not polled yet. A handler that panics while
    /// building its future drops the sink, which the front answers with `-32603`.
    fn start(
        handler: &dyn Handler,
        request: FrontRequest,
        sink: ResponseSink,
        span: tracing::Span,
        forwarded: bool,
    ) -> Self {
        let future = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if forwarded {
                handler.handle_forwarded(request, sink)
            } else {
                handler.handle(request, sink)
            }
        }));
        match future {
            Ok(future) => InlineHandler {
                future: Some(future.instrument(span)),
                response_waker: Some(QuietWaker::new()),
            },
            Err(_) => {
                tracing::error!(parent: &span, "the handler panicked");
                InlineHandler::default()
            }
        }
    }

    /// The next item of the handler's response channel `rx`, the handler polled first while it
    /// runs here.
    fn poll_response(
        &mut self,
        rx: &mut OutgoingReceiver,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Outgoing>> {
        let InlineHandler {
            future,
            response_waker,
        } = self;
        let Some(waker) = response_waker else {
            return rx.poll_recv(cx);
        };
        waker.quiet_while(|| Self::poll(future, cx));
        let quiet = waker.waker_for(cx);
        rx.poll_recv(&mut std::task::Context::from_waker(&quiet))
    }

    /// Polls the handler once, if it is still running. A panic ends it (as it ends a task):
    /// the sink is dropped with it, and the front answers `-32603`.
    fn poll(running: &mut Option<HandlerFuture>, cx: &mut std::task::Context<'_>) {
        let Some(future) = running.as_mut() else {
            return;
        };
        let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            std::pin::Pin::new(future).poll(cx)
        }));
        match polled {
            Ok(std::task::Poll::Pending) => return,
            Ok(std::task::Poll::Ready(())) => {}
            Err(_) => {
                if let Some(future) = running.as_ref() {
                    tracing::error!(parent: future.span(), "the handler panicked");
                }
            }
        }
        *running = None;
    }

    /// Hands the handler, if it is still running, to a task of its own.
    fn detach(&mut self) {
        if let Some(future) = self.future.take() {
            // Outside a runtime (it is shutting down) there is nothing left to run it on.
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(future);
            }
        }
    }
}

impl Drop for InlineHandler {
    fn drop(&mut self) {
        self.detach();
    }
}

/// The error sent when the handler dropped its sink without a final response.
pub(crate) fn handler_gone() -> ErrorObject {
    ErrorObject::new(
        codes::INTERNAL_ERROR,
        "internal error: the request ended without a response",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::StreamBody;
    use hyper::body::Frame;

    type Frames = Vec<Result<Frame<Bytes>, &'static str>>;
    type TestBody = StreamBody<
        futures_util::stream::Iter<std::vec::IntoIter<Result<Frame<Bytes>, &'static str>>>,
    >;

    fn body(frames: Frames) -> TestBody {
        StreamBody::new(futures_util::stream::iter(frames))
    }

    fn data(text: &'static str) -> Result<Frame<Bytes>, &'static str> {
        Ok(Frame::data(Bytes::from_static(text.as_bytes())))
    }

    #[tokio::test]
    async fn a_body_is_read_whole_whatever_its_frames() {
        let one = read_limited(body(vec![data("{\"a\":1}")]), 64).await;
        assert_eq!(one.unwrap(), "{\"a\":1}");
        let three = read_limited(body(vec![data("{\"a\""), data(""), data(":1}")]), 64).await;
        assert_eq!(three.unwrap(), "{\"a\":1}");
        let trailers = vec![data("{}"), Ok(Frame::trailers(http::HeaderMap::new()))];
        assert_eq!(read_limited(body(trailers), 64).await.unwrap(), "{}");
        assert_eq!(read_limited(body(Vec::new()), 64).await.unwrap(), "");
    }

    #[tokio::test]
    async fn a_body_over_the_limit_or_failing_is_refused() {
        assert!(matches!(
            read_limited(body(vec![data("12345")]), 4).await,
            Err(BodyError::TooLarge)
        ));
        assert!(matches!(
            read_limited(body(vec![data("12"), data("345")]), 4).await,
            Err(BodyError::TooLarge)
        ));
        assert_eq!(
            read_limited(body(vec![data("12"), data("34")]), 4)
                .await
                .unwrap(),
            "1234"
        );
        assert!(matches!(
            read_limited(body(vec![data("12"), Err("reset")]), 4).await,
            Err(BodyError::Read("reset"))
        ));
    }
}
