//! A lane coming back from a call: released when its lease ends (retired instead if it drains),
//! parked by a paused call so that it takes another call (stdio, `--max-paused-per-lane`) and
//! taken back when that call resumes, or drained after a cancelled call.

use super::*;

/// Counts a paused call waiting to run again on its lane (`Slot::resuming`) while it waits; the
/// count is given back when the wait ends without the lane (also on cancellation).
struct Resuming<'a>(&'a PoolShared, &'a Arc<Lane>, bool);

impl Drop for Resuming<'_> {
    fn drop(&mut self) {
        if self.2 {
            if let Some(slot) = self.0.state().slot_mut(self.1) {
                slot.resuming = slot.resuming.saturating_sub(1);
            }
            self.0.changed.notify_waiters();
        }
    }
}

impl PoolShared {
    /// Whether this pool's lanes hold many paused calls each (stdio, `--max-paused-per-lane`
    /// above 0): a paused call gives its lane up to the next call and takes it back to resume,
    /// since a legacy handler blocked on its request sends nothing until it is answered. HTTP
    /// lanes stay exclusive: a session is cheap and the pool is sized to the paused calls.
    pub(in crate::backend) fn holds_paused(&self) -> bool {
        self.settings.paused_per_lane > 0 && matches!(self.spec, BackendSpec::Stdio { .. })
    }

    /// A running call on `lane` paused: the lane takes another call.
    pub(in crate::backend) fn parked(&self, lane: &Arc<Lane>) {
        {
            let mut state = self.state();
            if let Some(slot) = state.slot_mut(lane) {
                slot.leased = false;
                slot.parked += 1;
            }
        }
        self.changed.notify_waiters();
    }

    /// A paused call on `lane` runs again: waits until no call runs there (paused calls waiting
    /// to resume go before new calls), then holds the lane. Fails when the lane is gone.
    pub(in crate::backend) async fn take_back(&self, lane: &Arc<Lane>) -> Result<(), BackendError> {
        let mut waiting = Resuming(self, lane, false);
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            {
                let mut state = self.state();
                let Some(slot) = state.slot_mut(lane) else {
                    return Err(BackendError::Crashed);
                };
                if !slot.lane.is_alive() {
                    return Err(BackendError::Crashed);
                }
                if !slot.leased {
                    slot.leased = true;
                    slot.parked = slot.parked.saturating_sub(1);
                    if std::mem::take(&mut waiting.2) {
                        slot.resuming = slot.resuming.saturating_sub(1);
                    }
                    return Ok(());
                }
                if !waiting.2 {
                    slot.resuming += 1;
                    waiting.2 = true;
                }
            }
            let _ = tokio::time::timeout(RESCAN, changed).await;
        }
    }

    /// A paused call on `lane` ended without running again (its lane died, or the proxy shut
    /// down): a draining lane with nothing left on it is retired.
    pub(in crate::backend) fn parked_gone(self: &Arc<Self>, lane: &Arc<Lane>) {
        let done = {
            let mut state = self.state();
            match state.slot_mut(lane) {
                Some(slot) => {
                    slot.parked = slot.parked.saturating_sub(1);
                    slot.draining && slot.parked == 0 && !slot.leased && slot.resuming == 0
                }
                None => false,
            }
        };
        if done {
            self.retire(lane);
        } else {
            self.changed.notify_waiters();
        }
    }

    /// Takes a lane out of service: retired at once, or, on a lane that still holds paused
    /// calls, draining (no new call starts there; retired when the last one is done).
    pub(in crate::backend) fn retire_or_drain(self: &Arc<Self>, lane: &Arc<Lane>) {
        let draining = {
            let mut state = self.state();
            match state.slot_mut(lane) {
                Some(slot) if slot.parked > 0 || slot.resuming > 0 => {
                    slot.leased = false;
                    slot.draining = true;
                    true
                }
                _ => false,
            }
        };
        if draining {
            lane.core().span.in_scope(|| {
                tracing::info!(
                    "a cancelled call may still send output: no new call starts on this lane; \
                     it is retired once its paused calls are done"
                )
            });
            self.changed.notify_waiters();
        } else {
            self.retire(lane);
        }
    }

    pub(in crate::backend) fn release(self: &Arc<Self>, lane: &Arc<Lane>) {
        let retire = {
            let mut state = self.state();
            let retire = match state.slot_mut(lane) {
                Some(slot) => {
                    slot.leased = false;
                    slot.draining && slot.parked == 0 && slot.resuming == 0
                }
                None => false,
            };
            self.prune(&mut state);
            retire
        };
        if retire {
            self.retire(lane);
        } else {
            self.changed.notify_waiters();
        }
    }
}
