//! A legacy call the front no longer wants (Running or Paused → Abandoned): its client left, did
//! not retry in time, or the call could not be paused. The legacy requests it waits on are
//! refused (elicitation `cancel`, an error otherwise), the call gets [`WIND_DOWN`] to end by
//! itself, and only a call still running after that is sent `notifications/cancelled`.
//!
//! Why not cancel at once: a cancellation races the call's own answer, and the specification asks
//! both sides to handle that race gracefully (2025-11-25, basic/utilities/cancellation). The
//! Python SDK 1.x does not: a `notifications/cancelled` that lands while the handler is writing
//! its response lets the cancellation escape the request, which ends the whole legacy session,
//! and with it every other call in flight on that session (docs/conformance.md). Most
//! calls a client leaves are about to answer: such a call needs no cancellation, and its lane
//! goes back to the pool instead of being retired (a server that never answers a cancelled
//! request, as the TypeScript SDK, would cost the lane).
//!
//! Abandonment runs in a task of its own ([`LiveCall::abandon_in_background`]): the front gets
//! its answer (an error, or nothing when the client is gone) without waiting for it, and the TTL
//! sweep does not wait for one call before it abandons the next.

use std::time::Duration;

use tracing::{info, Instrument};

use super::call_loop::LiveCall;
use super::wire::refusal_for;
use crate::backend::BackendEvent;

/// How long an abandoned call may take to end by itself before it is cancelled: a handler whose
/// elicitation was answered `cancel` usually returns at once, and a call its client left was
/// often about to answer.
const WIND_DOWN: Duration = Duration::from_secs(1);

impl LiveCall {
    /// Abandons the call in a task of its own (see the module documentation). Outside a runtime
    /// (the process is exiting) the call is dropped: its lane ends with the process.
    pub(super) fn abandon_in_background(mut self: Box<Self>, reason: &'static str) {
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let span = tracing::Span::current();
            runtime.spawn(async move { self.abandon(reason).await }.instrument(span));
        }
    }

    /// Ends the call: refuses its pending requests, lets it end by itself for a moment, and
    /// cancels it (`notifications/cancelled`) if it did not.
    pub(super) async fn abandon(&mut self, reason: &str) {
        // A paused call that gave its lane up to other calls (stdio) takes it back first, so that
        // whatever it still sends is not taken for another call's. While it winds down there,
        // the other calls wait for the lane: it gets the moment only when it had requests to
        // refuse (which usually makes a handler return). A running call holds its lane already
        // (or its own session, or its own stream of a shared one): waiting costs nobody.
        let was_parked = self.lease.is_parked();
        if was_parked && self.lease.unpark().await.is_err() {
            return;
        }
        // The call's POST, if the front's task was driving it, reads on by itself from here.
        self.call.driver.detach();
        let refused = self.refuse_pending().await;
        if self.answered {
            return;
        }
        if (refused || !was_parked) && self.wind_down().await {
            info!(legacy_id = %self.call.legacy_id, reason, refused, "the legacy call ended by itself before it was cancelled");
            return;
        }
        // `cancel` also forgets the pending request: the legacy server will not answer it.
        let sent = self.lease.lane.cancel(&self.call.legacy_id, reason).await;
        info!(legacy_id = %self.call.legacy_id, reason, delivered = sent.is_ok(), "cancelled the legacy call");
    }

    /// Answers the legacy requests still waiting for the client with their refusal (elicitation
    /// `cancel`, an error otherwise). Returns whether there was one to answer.
    async fn refuse_pending(&mut self) -> bool {
        let mut refused = false;
        for (_, pending) in std::mem::take(&mut self.pending) {
            if pending.legacy_id.is_null() {
                continue;
            }
            let _ = self
                .lease
                .lane
                .respond(pending.legacy_id, refusal_for(&pending.method))
                .await;
            refused = true;
        }
        refused
    }

    /// Waits up to [`WIND_DOWN`] for the legacy call to end by itself, refusing whatever it asks
    /// meanwhile. Returns whether it ended.
    async fn wind_down(&mut self) -> bool {
        let deadline = tokio::time::Instant::now() + WIND_DOWN;
        loop {
            tokio::select! {
                biased;
                _ = &mut self.call.response => {
                    self.answered = true;
                    return true;
                }
                event = self.lease.events.recv() => match event {
                    Some(BackendEvent::ServerRequest { id, method, .. }) => {
                        let _ = self.lease.lane.respond(id, refusal_for(&method)).await;
                    }
                    Some(BackendEvent::Notification { .. }) => {}
                    None => return false,
                },
                () = tokio::time::sleep_until(deadline) => return false,
            }
        }
    }
}
