//! A call's hold on a lane ([`Lease`]): exclusive, or one call on a shared session, and what
//! happens to the lane when the lease ends ([`LeaseReturn`]: back to the pool, or retired when its
//! call was cancelled or did not finish, after a grace for the cancelled call's answer).

use super::pool::PoolShared;
use super::*;

/// How long a lane whose call was cancelled stays out of the pool waiting for the legacy server
/// to finish that call (its response to the cancelled request) before it is retired instead.
const CANCEL_GRACE: Duration = Duration::from_millis(300);

/// A lane for one correlatable call: send the call with [`Lease::request`], read what the
/// legacy server sends for it from `events`.
///
/// - **Exclusive** (stdio, HTTP+SSE, Streamable HTTP servers that send mid-call requests on the
///   session's GET stream): every [`BackendEvent`] of the lane goes to `events` while the lease
///   lives; dropping the lease returns the lane to the pool, or retires it when the call was
///   cancelled or is still running (its late output must not reach the next call).
/// - **Shared** (Streamable HTTP servers that send them on the call's own POST response stream,
///   see [`attribution`]): the lane carries other calls too; `events` gets what arrives on this
///   call's own response stream.
///
/// Keep the whole `Lease` alive for the call (moving `events` out is fine). `events` closes when
/// the lane dies. Server requests that were delivered to `events` and not answered with
/// [`Lane::respond`] by the time the lease is dropped are answered locally (as unattributed ones),
/// so the legacy server never waits forever.
#[derive(Debug)]
pub struct Lease {
    pub lane: Arc<Lane>,
    pub events: EventReceiver,
    pub(super) mode: LeaseMode,
    pub(super) _return: Option<LeaseReturn>,
}

#[derive(Debug)]
pub(super) enum LeaseMode {
    Exclusive,
    Shared {
        events: EventSender,
        kind: Arc<str>,
        /// Legacy ids of the calls sent, whose routes end with the lease.
        calls: Vec<u64>,
    },
}

impl Lease {
    /// Sends the call (or, after a -32042 round, the call again) with a fresh legacy id.
    pub async fn request(
        &mut self,
        method: &str,
        params: impl Into<crate::params::OutParams>,
    ) -> Result<PendingCall, BackendError> {
        self.send(method, params.into(), false).await
    }

    /// Like [`Lease::request`], with the call's transport left to the caller where the lane has
    /// one per call (an HTTP POST): poll [`PendingCall::driver`] with the response, or detach it
    /// (dropping it detaches it too).
    pub async fn request_driven(
        &mut self,
        method: &str,
        params: impl Into<crate::params::OutParams>,
    ) -> Result<PendingCall, BackendError> {
        self.send(method, params.into(), true).await
    }

    async fn send(
        &mut self,
        method: &str,
        params: crate::params::OutParams,
        driven: bool,
    ) -> Result<PendingCall, BackendError> {
        let tag = match &self.mode {
            LeaseMode::Exclusive => CallTag::Leased,
            LeaseMode::Shared { events, kind, .. } => CallTag::Routed {
                events: events.clone(),
                kind: Arc::clone(kind),
            },
        };
        let call = self
            .lane
            .request_tagged(method, params, tag, driven)
            .await?;
        if let (LeaseMode::Shared { calls, .. }, Some(id)) =
            (&mut self.mode, call.legacy_id.as_u64())
        {
            calls.push(id);
        }
        Ok(call)
    }

    /// Whether the call shares its legacy session with other calls.
    pub fn is_shared(&self) -> bool {
        matches!(self.mode, LeaseMode::Shared { .. })
    }

    /// Whether the call is paused and has given its lane up to other calls ([`Lease::park`]).
    pub fn is_parked(&self) -> bool {
        self._return.as_ref().is_some_and(|back| back.parked)
    }

    /// The call waits for its client: on a lane that holds many paused calls (stdio), the lane
    /// is given up to the next call; its handler on the legacy side is blocked on its request,
    /// so whatever the lane receives that names no call is the next call's. Elsewhere (an
    /// exclusive HTTP session, a shared session) nothing changes.
    pub fn park(&mut self) {
        if let Some(back) = self._return.as_mut() {
            if !back.parked
                && back.pool.holds_paused()
                && back.lane.core().park_lease(back.generation)
            {
                back.parked = true;
                back.pool.parked(&back.lane);
            }
        }
    }

    /// The paused call runs again: on a lane that holds many paused calls, waits until the call
    /// running there (if any) finishes or pauses, then holds the lane. Fails with
    /// [`BackendError::Crashed`] when the lane is gone.
    pub async fn unpark(&mut self) -> Result<(), BackendError> {
        let Some(back) = self._return.as_mut() else {
            return Ok(());
        };
        if !back.parked {
            return Ok(());
        }
        back.pool.take_back(&back.lane).await?;
        back.parked = false;
        let core = back.lane.core();
        if !core.unpark_lease(back.generation) {
            // The pool granted the lane, so no other route runs: only a lane shut down under
            // the call gets here.
            return Err(BackendError::Crashed);
        }
        // Cancellations made while this call was parked were other calls'.
        back.cancelled_before = core.cancelled_count();
        Ok(())
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        match &self.mode {
            LeaseMode::Shared { calls, .. } => self.lane.core().detach_calls(calls),
            // The receiver goes with the lane's return, which may keep its channel for the next
            // lease (`LaneCore::detach_lease`).
            LeaseMode::Exclusive => {
                if let Some(back) = self._return.as_mut() {
                    back.events = Some(self.events.take());
                }
            }
        }
    }
}

/// Returns a leased lane to the pool when dropped.
pub(super) struct LeaseReturn {
    pub(super) pool: Arc<PoolShared>,
    pub(super) lane: Arc<Lane>,
    pub(super) generation: u64,
    /// The lane's cancelled-request count when the lease began.
    pub(super) cancelled_before: u64,
    /// The kind this lease probes for [`Attribution`], if it is a probe.
    pub(super) probe: Option<Arc<str>>,
    /// The call is paused and has given the lane up (see [`Lease::park`]).
    pub(super) parked: bool,
    /// The lease's event receiver, once the lease is dropped (exclusive leases).
    pub(super) events: Option<EventReceiver>,
}

impl std::fmt::Debug for LeaseReturn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseReturn")
            .field("lane", &self.lane.id())
            .field("generation", &self.generation)
            .finish()
    }
}

impl Drop for LeaseReturn {
    fn drop(&mut self) {
        let core = self.lane.core();
        if self.parked {
            // A paused call that never ran again (its lane died, or the proxy shut down): its
            // unanswered requests are answered locally, and no call's output is its own.
            core.detach_lease(self.generation, self.events.take());
            self.pool.parked_gone(&self.lane);
            return;
        }
        let (asked, waiting) = core.lease_report(self.generation).unwrap_or((false, false));
        // A call cancelled or still running may still send output (its response, a late
        // request): the lane goes, rather than to the next call.
        let tainted = waiting || core.cancelled_count() != self.cancelled_before;
        if let Some(kind) = &self.probe {
            self.pool
                .attribution
                .probe_ended(kind, !asked && !waiting && !tainted);
        }
        let only_cancels_open = tainted && !waiting && self.lane.is_alive();
        if only_cancels_open && core.cancels_open() == 0 {
            // The cancelled calls already finished on the legacy side: nothing more will come.
            core.detach_lease(self.generation, self.events.take());
            self.pool.release(&self.lane);
            return;
        }
        if only_cancels_open {
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                // Still leased (no new call gets it) while the legacy server finishes the
                // cancelled calls; a server that never answers a cancelled request (the
                // TypeScript SDK) loses the lane after the grace.
                let (pool, lane, generation) = (
                    Arc::clone(&self.pool),
                    Arc::clone(&self.lane),
                    self.generation,
                );
                runtime.spawn(async move {
                    let deadline = Instant::now() + CANCEL_GRACE;
                    while lane.core().cancels_open() > 0 && Instant::now() < deadline {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    lane.core().detach_lease(generation, None);
                    if lane.core().cancels_open() == 0 && lane.is_alive() {
                        pool.release(&lane);
                    } else if lane.is_alive() {
                        pool.retire_or_drain(&lane);
                    } else {
                        pool.release(&lane);
                    }
                });
                return;
            }
        }
        // Detach first: from here on the lane answers server requests itself.
        core.detach_lease(self.generation, self.events.take());
        if tainted && self.lane.is_alive() {
            self.pool.retire_or_drain(&self.lane);
        } else {
            self.pool.release(&self.lane);
        }
    }
}
