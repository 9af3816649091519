//! The body of an SSE response: the request's events as they come, the final response last,
//! and a keep-alive comment after a period of silence.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use serde_json::Value;
use tokio::sync::OwnedSemaphorePermit;

use super::post::handler_gone;
use super::responses::sse_event;
use crate::jsonrpc::Message;
use crate::request::Outgoing;
use crate::response_channel::OutgoingReceiver;

/// The SSE comment (`:`) sent after a period of silence on a stream (`None`: never).
pub(crate) struct KeepAlive(Option<(Duration, Pin<Box<tokio::time::Sleep>>)>);

impl KeepAlive {
    pub(crate) fn new(period: Option<Duration>) -> Self {
        KeepAlive(period.map(|period| (period, Box::pin(tokio::time::sleep(period)))))
    }

    /// Something was sent: the silence starts again.
    pub(crate) fn reset(&mut self) {
        if let Some((period, sleep)) = &mut self.0 {
            sleep.as_mut().reset(tokio::time::Instant::now() + *period);
        }
    }

    /// The comment frame when the silence lasted a period (registers the waker otherwise).
    pub(crate) fn poll_comment(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some((_, sleep)) = &mut self.0 {
            if sleep.as_mut().poll(cx).is_ready() {
                self.reset();
                return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b":\n\n")))));
            }
        }
        Poll::Pending
    }
}

/// An SSE response body: it owns the request's receiver, so dropping the response (client gone)
/// closes the engine's sink. Ends after the final response; a handler that drops its sink
/// without one gets a `-32603` error event. Holds the request's concurrency permit.
pub(super) struct SseBody {
    first: Option<Bytes>,
    rx: OutgoingReceiver,
    id: Value,
    keep_alive: KeepAlive,
    done: bool,
    permit: Option<OwnedSemaphorePermit>,
}

impl SseBody {
    pub(super) fn new(
        first: Bytes,
        rx: OutgoingReceiver,
        id: Value,
        keep_alive: Option<Duration>,
        permit: OwnedSemaphorePermit,
    ) -> Self {
        SseBody {
            first: Some(first),
            rx,
            id,
            keep_alive: KeepAlive::new(keep_alive),
            done: false,
            permit: Some(permit),
        }
    }

    fn data(&mut self, bytes: Bytes) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.keep_alive.reset();
        Poll::Ready(Some(Ok(Frame::data(bytes))))
    }
}

impl Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        if let Some(first) = this.first.take() {
            return this.data(first);
        }
        if this.done {
            return Poll::Ready(None);
        }
        match this.rx.poll_recv(cx) {
            Poll::Ready(Some(Outgoing::Notification(message))) => this.data(sse_event(&message)),
            Poll::Ready(Some(Outgoing::Final { message, .. })) => {
                this.done = true;
                this.permit = None;
                this.data(sse_event(&message))
            }
            Poll::Ready(None) => {
                this.done = true;
                this.permit = None;
                let error = Message::response(this.id.clone(), Err(handler_gone()));
                this.data(sse_event(&error))
            }
            Poll::Pending => this.keep_alive.poll_comment(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done && self.first.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}
