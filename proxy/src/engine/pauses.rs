//! The multi-round call state machine, and the one owner of both halves of a pause: the live
//! call (lane lease, pending legacy requests; in this process's memory) and its durable record
//! (in the [`PauseStore`]). Nothing else locks the live map or writes a record.
//!
//! ```text
//!            start (call_loop)                    park                     claim
//!  request ───────────────────▶ Running ─────────────────────▶ Paused ─────────────────▶ Claimed
//!                                │  ▲        live map + record            record Resuming,   │
//!                                │  │        `input_required`             live taken out     │
//!                                │  └──────────────────────────────────────────────────────┘
//!                                │          hand-back: record Finished (the round is over),
//!                                │          the retry's request runs the call again
//!                                ├── finish ──▶ Finished   (the legacy call answered)
//!                                └── abandon ─▶ Abandoned  (the client left, a pause refused)
//!  Paused ── sweep ──▶ Expired (deadline)   ── evict_orphans ──▶ Evicted (its legacy session
//!  ended; the retry is told why)   ── shutdown ──▶ Lost   Claimed without a live call ──▶ Lost
//!  Claimed with a dead legacy call ──▶ Evicted
//!
//! No pause ever ends because other calls paused: a new call that finds every lane held is
//! refused by the pool (retryably), not served at a paused call's expense.
//! ```
//!
//! Each arrow is one method of [`PauseBook`]. A transition that ends a live call answers its
//! pending legacy requests (cancel or an error) and cancels the legacy call
//! ([`LiveCall::abandon`]). The store decides every race between two transitions of one
//! pause (a retry's claim against the sweep or an eviction): both compare-and-swap from
//! `Paused`, exactly one wins.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{json, Map, Value};
use tracing::{info, warn};

use super::call_loop::LiveCall;
use super::wire::{input_request, internal};
use crate::jsonrpc::ErrorObject;
use crate::limits::{self, CallLimits, StoreHealth};
use crate::refusals;
use crate::request::FrontRequest;
use crate::state::{now_ms, params_digest, Claims, PauseId, Sealer, StateError};
use crate::store::{ClaimError, Owner, PauseRecord, PauseStatus, PauseStore};

/// How long a finished, expired, cancelled or lost pause record is kept after its deadline (the
/// margin covers wall-clock steps; retries after the deadline are refused by the state's expiry).
const RECORD_GRACE: Duration = Duration::from_secs(10);

/// What a claim gave: the live call (this instance holds it), or the URL of the instance that
/// does (the retry is passed on there).
pub(super) enum Claimed {
    Here(Box<LiveCall>),
    Elsewhere(String),
}

/// The paused calls of this process and their records.
pub(super) struct PauseBook {
    store: Arc<dyn PauseStore>,
    sealer: Sealer,
    /// Boxed: the table keeps spare slots as it grows (up to half of them empty), and a slot
    /// of a pointer costs 8 bytes where an inline `LiveCall` costs hundreds.
    live: Mutex<HashMap<PauseId, Box<LiveCall>>>,
    health: StoreHealth,
    /// Set when shutdown begins: calls in flight may finish, none pauses any more.
    draining: AtomicBool,
    pause_ttl: Duration,
    limits: CallLimits,
}

impl PauseBook {
    pub(super) fn new(
        store: Arc<dyn PauseStore>,
        sealer: Sealer,
        pause_ttl: Duration,
        limits: CallLimits,
    ) -> Self {
        PauseBook {
            store,
            sealer,
            live: Mutex::new(HashMap::new()),
            health: StoreHealth::default(),
            draining: AtomicBool::new(false),
            pause_ttl,
            limits,
        }
    }

    fn live(&self) -> MutexGuard<'_, HashMap<PauseId, Box<LiveCall>>> {
        self.live.lock().expect("live map lock")
    }

    /// The number of calls paused in this process.
    pub(super) fn paused_calls(&self) -> usize {
        self.live().len()
    }

    /// No call may pause from now on.
    pub(super) fn begin_drain(&self) {
        self.draining.store(true, Ordering::Release);
    }

    pub(super) fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    /// Asks the store whether it takes writes; new pauses are refused while it does not.
    pub(super) async fn probe_store(&self) {
        self.health.record(self.store.health().await);
    }

    /// `Err(reason)` while the pause store cannot record pauses.
    pub(super) fn store_writable(&self) -> Result<(), String> {
        self.health.check()
    }

    /// Running → Finished: the legacy call answered; the lease goes back to the pool.
    pub(super) fn finish(&self, live: LiveCall) {
        crate::metrics::global().call_finished(live.round);
        drop(live);
    }

    /// Running or Paused → Abandoned: the front no longer wants the legacy call (engine/abandon.rs).
    pub(super) fn abandon(&self, live: LiveCall, reason: &'static str) {
        Box::new(live).abandon_in_background(reason);
    }

    /// Running → Paused: keeps the live call, records the pause, and returns the
    /// `input_required` result with its sealed `requestState` (T6). A pause that is refused
    /// (draining, store unwritable, caps, a failed write) abandons the call and returns the
    /// error for the front.
    pub(super) async fn park(
        &self,
        mut live: LiveCall,
        request: &FrontRequest,
    ) -> Result<Value, ErrorObject> {
        if self.is_draining() {
            crate::metrics::global().rejection("draining");
            self.abandon(live, "the proxy could not pause the call");
            return Err(internal("the proxy is shutting down: the call was cancelled instead of paused; send it again later"));
        }
        if let Err(reason) = self.health.check() {
            crate::metrics::global().rejection("store_unwritable");
            self.abandon(live, "the proxy could not pause the call");
            return Err(limits::limit_error(
                format!(
                    "the call needs input but cannot be paused: {reason}; the call was cancelled"
                ),
                "store-writable",
                0,
            ));
        }
        live.offered.clear();
        let pause_id = PauseId::random();
        let now = now_ms();
        let deadline = now.saturating_add(self.pause_ttl.as_millis() as u64);
        let digest = *live
            .params_digest
            .get_or_insert_with(|| params_digest(request.params.tree()));
        let input_requests: Map<String, Value> = live
            .pending
            .iter()
            .map(|(key, pending)| {
                let shown = input_request(&pending.method, &pending.legacy_params, &live.profile);
                (key.clone(), shown)
            })
            .collect();
        let input_keys: Vec<String> = live.pending.keys().cloned().collect();
        let method = live.method.to_string();
        let parked = {
            // Count and insert under one lock, so concurrent pauses cannot overshoot the caps.
            let mut paused = self.live();
            let for_principal = paused
                .values()
                .filter(|call| call.principal == live.principal)
                .count();
            match limits::check_pause(&self.limits, paused.len(), for_principal, live.round + 1) {
                Err(refusal) => Err((live, refusal)),
                Ok(()) => {
                    live.round += 1;
                    let record = PauseRecord {
                        pause_id,
                        boot_id: self.store.instance_id(),
                        status: PauseStatus::Paused,
                        method: method.clone(),
                        round: live.round,
                        principal_label: live.principal.label(),
                        created_ms: now,
                        deadline_ms: deadline,
                        input_keys,
                    };
                    let claims = Claims {
                        pause_id,
                        principal: live.principal.clone(),
                        method: method.clone(),
                        params_digest: digest,
                        round: live.round,
                        expires_at_ms: deadline,
                    };
                    let result = json!({
                        "resultType": "input_required",
                        "inputRequests": input_requests,
                        "requestState": self.sealer.seal(&claims),
                    });
                    // On a lane that holds many paused calls, the next call may run there now.
                    live.lease.park();
                    // In the map before the record exists: no retry can come before the client has the
                    // state, and an eviction or the sweep that sees it without a record leaves it be.
                    paused.insert(pause_id, Box::new(live));
                    Ok((record, result))
                }
            }
        };
        let (record, result) = match parked {
            Ok(parked) => parked,
            Err((live, refusal)) => {
                warn!(?refusal, "refused to pause a call");
                crate::metrics::global().rejection(refusal.metric_reason());
                self.abandon(live, "the proxy could not pause the call");
                return Err(refusal.to_error());
            }
        };
        if let Err(error) = self.store.park(&record).await {
            self.health
                .fail(format!("recording a pause failed: {error}"));
            let live = self.live().remove(&pause_id);
            if let Some(live) = live {
                live.abandon_in_background("the proxy could not pause the call");
            }
            return Err(internal(format!(
                "could not record the paused call: {error}"
            )));
        }
        if !self.live().contains_key(&pause_id) {
            // Shutdown took it (and ended it) while the record was being written.
            let _ = self
                .store
                .set_status(&pause_id, PauseStatus::Cancelled)
                .await;
            return Err(internal("the proxy is shutting down: the call was cancelled instead of paused; send it again later"));
        }
        crate::metrics::global().round(&method);
        info!(pause = %pause_id, round = record.round, inputs = record.input_keys.len(), "paused legacy call");
        Ok(result)
    }

    /// Paused → Claimed → Running: opens and verifies the retry's `requestState` (principal,
    /// method, params digest, expiry), claims the pause in the store (single use), takes the
    /// live call out of the map, and hands it back to the retry's request (the record becomes
    /// `Finished`: the round is over; a next round is a new pause). A claimed pause without a
    /// live call is Lost.
    pub(super) async fn claim(
        &self,
        state: &str,
        request: &FrontRequest,
        forwarded: bool,
    ) -> Result<Claimed, ErrorObject> {
        let digest = params_digest(request.params.tree());
        let claims = self
            .sealer
            .open_for(
                state,
                now_ms(),
                &request.principal,
                &request.method,
                &digest,
            )
            .map_err(|error| {
                crate::metrics::global().rejection(state_rejection_reason(&error));
                info!(reason = error.reason(), method = %request.method, "rejected requestState");
                refusals::state_refusal(&error)
            })?;
        let pause_id = claims.pause_id;
        if !forwarded && !self.live().contains_key(&pause_id) {
            if let Some(owner) = self.owner_elsewhere(&pause_id).await? {
                return Ok(Claimed::Elsewhere(owner));
            }
        }
        if let Err(error) = self.store.claim(&pause_id, now_ms()).await {
            crate::metrics::global().rejection(claim_rejection_reason(&error));
            info!(pause = %pause_id, %error, "refused retry");
            return Err(refusals::claim_refusal(&error));
        }
        let live = self.live().remove(&pause_id);
        let Some(mut live) = live else {
            return Err(self.lose(&pause_id).await);
        };
        if orphaned(&mut live) {
            // Claimed before the sweep noticed: told the same as after it.
            crate::metrics::global().pause_expired("evicted");
            let _ = self.store.set_status(&pause_id, PauseStatus::Evicted).await;
            live.abandon_in_background(SESSION_ENDED);
            return Err(refusals::claim_refusal(&ClaimError::Evicted(
                SESSION_ENDED.to_owned(),
            )));
        }
        // The hand-back: the round is over; the retry's request runs the call from here.
        let _ = self
            .store
            .set_status(&pause_id, PauseStatus::Finished)
            .await;
        Ok(Claimed::Here(live))
    }

    /// Where the live call of a pause this instance does not hold is: `Some(url)` of the live
    /// owner (the retry is passed on), `None` when the store has it as this instance's or has
    /// no record (the claim then says what happened). An owner that is gone makes the pause
    /// Lost at once.
    async fn owner_elsewhere(&self, pause_id: &PauseId) -> Result<Option<String>, ErrorObject> {
        let record = match self.store.get(pause_id).await {
            Ok(Some(record)) if record.boot_id != self.store.instance_id() => record,
            // Ours, unknown, or unreadable: the claim decides.
            _ => return Ok(None),
        };
        let why = match self.store.owner(record.boot_id).await {
            Ok(Owner::At(url)) => {
                info!(pause = %pause_id, owner = %url, "passing the retry to the instance that holds the paused call");
                return Ok(Some(url));
            }
            Ok(Owner::Me) => return Ok(None),
            Ok(Owner::Gone) => "the proxy instance that held it is gone",
            Ok(Owner::Unreachable) => {
                "the proxy instance that holds it has no --advertise URL, so no other instance can reach it"
            }
            Err(error) => {
                crate::metrics::global().rejection("store_error");
                return Err(internal(format!("the pause store failed: {error}")));
            }
        };
        crate::metrics::global().rejection("state_lost");
        if matches!(record.status, PauseStatus::Paused | PauseStatus::Resuming) {
            let _ = self
                .store
                .transition(pause_id, record.status, PauseStatus::Lost)
                .await;
        }
        info!(pause = %pause_id, why, "refused retry");
        Err(crate::cluster::lost_elsewhere(why))
    }

    /// The sealer (for requests passed between instances).
    pub(super) fn sealer(&self) -> &Sealer {
        &self.sealer
    }

    /// Claimed → Lost: the record was claimed but its live call is gone (the legacy session
    /// ended, or the call was ended at shutdown). Returns the error for the retry.
    async fn lose(&self, pause_id: &PauseId) -> ErrorObject {
        crate::metrics::global().rejection("state_lost");
        let _ = self.store.set_status(pause_id, PauseStatus::Lost).await;
        refusals::session_gone()
    }

    /// Paused → Evicted for every paused call whose legacy session ended under it (the legacy
    /// server exited or dropped the session, its response stream broke): the retry is told the
    /// call was evicted and why, rather than finding out when its answer goes nowhere.
    async fn evict_orphans(&self) {
        let orphans: Vec<PauseId> = self
            .live()
            .iter_mut()
            .filter_map(|(id, call)| orphaned(call).then_some(*id))
            .collect();
        for pause_id in orphans {
            match self.store.evict(&pause_id, SESSION_ENDED).await {
                Ok(true) => {}
                // A retry is claiming it right now: it finds the dead call itself.
                Ok(false) => continue,
                Err(error) => {
                    warn!(%error, pause = %pause_id, "could not evict a pause");
                    continue;
                }
            }
            let live = self.live().remove(&pause_id);
            if let Some(live) = live {
                crate::metrics::global().pause_expired("evicted");
                warn!(pause = %pause_id, reason = SESSION_ENDED, "evicted a paused call");
                live.abandon_in_background(SESSION_ENDED);
            }
        }
    }

    /// Paused → Expired for every pause whose deadline has passed: their legacy requests get
    /// `cancel` or an error, the legacy call is cancelled, the lane goes back to the pool. Then
    /// records that can no longer matter are deleted.
    pub(super) async fn sweep(&self) {
        self.evict_orphans().await;
        let expired = match self.store.expired(now_ms()).await {
            Ok(expired) => expired,
            Err(error) => {
                warn!(%error, "could not read expired pauses");
                return;
            }
        };
        for record in expired {
            // A retry may be claiming this pause right now: exactly one of the two wins.
            match self
                .store
                .transition(&record.pause_id, PauseStatus::Paused, PauseStatus::Expired)
                .await
            {
                Ok(true) => {}
                Ok(false) => continue,
                Err(error) => {
                    warn!(%error, pause = %record.pause_id, "could not expire a pause");
                    continue;
                }
            }
            let live = self.live().remove(&record.pause_id);
            if let Some(live) = live {
                crate::metrics::global().pause_expired("ttl");
                info!(pause = %record.pause_id, "pause expired: cancelling the legacy call");
                live.abandon_in_background("the client did not retry in time");
            }
        }
        // A record matters only until its deadline: a retry after it is refused as expired by
        // the state itself, before the store is asked. Keeping records longer only grows the
        // store (and the cost of each sweep's scan) with the number of pauses ever made.
        let _ = self
            .store
            .sweep(now_ms().saturating_sub(RECORD_GRACE.as_millis() as u64))
            .await;
    }

    /// Paused → Lost for every paused call, at shutdown: the record becomes `lost` (a retry
    /// after a restart is told so), the pending legacy requests get `cancel`/an error, the legacy
    /// call `notifications/cancelled`, and the store is flushed. Returns how many were ended.
    pub(super) async fn shutdown(&self) -> usize {
        self.begin_drain();
        let calls: Vec<(PauseId, Box<LiveCall>)> = self.live().drain().collect();
        let count = calls.len();
        // All at once: each may take a moment to end by itself.
        let mut abandoned = tokio::task::JoinSet::new();
        for (pause_id, mut live) in calls {
            if let Err(error) = self
                .store
                .transition(&pause_id, PauseStatus::Paused, PauseStatus::Lost)
                .await
            {
                warn!(%error, pause = %pause_id, "could not mark a paused call lost");
            }
            abandoned.spawn(async move { live.abandon("the proxy is shutting down").await });
        }
        while abandoned.join_next().await.is_some() {}
        if let Err(error) = self.store.flush().await {
            warn!(%error, "could not flush the pause store at shutdown");
        }
        count
    }
}

/// Why a paused call whose legacy session ended is evicted.
const SESSION_ENDED: &str =
    "its legacy session ended (the legacy server exited or dropped the session)";

/// Whether a parked call can no longer be resumed: its lane is dead, or its legacy call failed
/// on the transport while parked (the session was re-initialized under it, its response stream
/// broke or ended without the response). A legacy *response* that arrived while parked is kept
/// for the retry.
fn orphaned(live: &mut LiveCall) -> bool {
    use tokio::sync::oneshot::error::TryRecvError;
    if live.answered {
        return false;
    }
    if !live.lease.lane.is_alive() {
        return true;
    }
    let call = &mut live.call;
    match call.response.try_recv() {
        Err(TryRecvError::Empty) => false,
        Err(TryRecvError::Closed) | Ok(Err(_)) => true,
        Ok(outcome) => {
            let (keep, again) = tokio::sync::oneshot::channel();
            let _ = keep.send(outcome);
            call.response = again;
            false
        }
    }
}

/// The `mcp_proxy_rejections_total` reason of a `requestState` that did not open.
fn state_rejection_reason(error: &StateError) -> &'static str {
    match error {
        StateError::Malformed => "state_malformed",
        StateError::Forged => "state_tampered",
        StateError::Expired => "state_expired",
        StateError::RetiredKey => "state_retired_key",
        StateError::WrongPrincipal => "state_foreign_principal",
        StateError::WrongMethod | StateError::WrongParams => "state_other_params",
    }
}

/// The `mcp_proxy_rejections_total` reason of a `requestState` whose pause could not be claimed.
fn claim_rejection_reason(error: &ClaimError) -> &'static str {
    match error {
        ClaimError::AlreadyUsed => "state_replayed",
        ClaimError::Expired => "state_expired",
        ClaimError::Cancelled => "state_cancelled",
        ClaimError::Unknown | ClaimError::Lost => "state_lost",
        ClaimError::Evicted(_) => "state_evicted",
        ClaimError::Store(_) => "store_error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_rejections_have_metric_reasons() {
        assert_eq!(
            state_rejection_reason(&StateError::Forged),
            "state_tampered"
        );
        assert_eq!(
            state_rejection_reason(&StateError::WrongPrincipal),
            "state_foreign_principal"
        );
        assert_eq!(
            claim_rejection_reason(&ClaimError::AlreadyUsed),
            "state_replayed"
        );
        assert_eq!(
            claim_rejection_reason(&ClaimError::Expired),
            "state_expired"
        );
    }
}
