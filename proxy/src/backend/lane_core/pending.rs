//! Our requests on the lane: fresh legacy ids, the table of pending calls (with their session
//! epoch and progress route), their completion or failure (a new session, the lane's death), and
//! the requests we cancelled that the legacy server may still answer.

use super::*;
use crate::params::OutParams;
use crate::FastHashMap;

pub(super) struct PendingEntry {
    reply: oneshot::Sender<Outcome>,
    /// The transport's session epoch at send time (HTTP re-initialization fails older calls).
    epoch: u64,
    /// Key of the progress route registered with this call, removed when it completes.
    progress: Option<String>,
}

/// The most cancelled-but-unanswered requests a lane remembers ([`LaneCore::cancels_open`]).
const MAX_CANCELS_OPEN: usize = 4096;

impl LaneCore {
    /// Notes that our request `id` was cancelled (its late output may still arrive, until its
    /// response does).
    pub fn note_cancelled(&self, id: &Value) {
        let mut state = self.state();
        state.cancelled += 1;
        if state.cancels_open.len() >= MAX_CANCELS_OPEN {
            // A server that never answers cancelled requests, on a long-lived shared lane:
            // forgetting them only makes a later grace end in a retirement, never a reuse.
            state.cancels_open.clear();
        }
        state.cancels_open.insert(value_key(id));
    }

    /// Cancelled requests of ours the legacy server has not answered yet.
    pub fn cancels_open(&self) -> usize {
        self.state().cancels_open.len()
    }

    /// A response that matched no pending request: if it answers a cancelled request, that
    /// request is finished on the legacy side. Returns whether it did.
    fn finish_cancelled(&self, id: &Value) -> bool {
        self.state().cancels_open.remove(&value_key(id))
    }

    pub(super) fn unmatched_response(&self, id: &Value) {
        if self.finish_cancelled(id) {
            tracing::debug!(parent: &self.span, id = %id, "a cancelled request finished on the legacy side");
        } else {
            tracing::debug!(parent: &self.span, id = %id, "response to no pending request dropped");
        }
    }

    /// Requests of ours cancelled so far.
    pub fn cancelled_count(&self) -> u64 {
        self.state().cancelled
    }

    /// [`LaneCore::start_request`] for lanes that hand messages to a writer (stdio, HTTP+SSE):
    /// `write` sends the request; if it cannot, the call is completed with that error.
    pub(crate) fn send_request_with(
        &self,
        method: &str,
        params: OutParams,
        progress_token: Option<Value>,
        write: impl FnOnce(Message) -> Result<(), BackendError>,
    ) -> Result<(PendingCall, Option<mpsc::Receiver<Value>>), BackendError> {
        let (message, call, progress) = self.start_request(method, params, 0, progress_token)?;
        if let Err(error) = write(message) {
            self.complete(&call.legacy_id, Err(error.clone()));
            return Err(error);
        }
        Ok((call, progress))
    }

    /// Registers a request with a fresh legacy id; the caller sends the returned message.
    /// With `progress_token`, `_meta.progressToken` is set in `params` and the call's progress
    /// notifications go to the returned receiver until the response arrives.
    pub fn start_request(
        &self,
        method: &str,
        params: impl Into<OutParams>,
        epoch: u64,
        progress_token: Option<Value>,
    ) -> Result<(Message, PendingCall, Option<mpsc::Receiver<Value>>), BackendError> {
        self.start_tagged_request(method, params.into(), epoch, progress_token, CallTag::None)
    }

    /// [`LaneCore::start_request`] for a correlatable call, registered by `tag` before the
    /// request can be sent (so nothing its response stream carries can arrive unrouted).
    pub fn start_tagged_request(
        &self,
        method: &str,
        params: OutParams,
        epoch: u64,
        progress_token: Option<Value>,
        tag: CallTag,
    ) -> Result<(Message, PendingCall, Option<mpsc::Receiver<Value>>), BackendError> {
        if !self.is_alive() {
            return Err(BackendError::Crashed);
        }
        let mut params = params;
        let mut progress = None;
        if let Some(token) = progress_token {
            // A tree here: the engine writes its own token into raw params.
            let mut tree =
                std::mem::replace(&mut params, OutParams::Tree(Value::Null)).into_value();
            if tree.is_null() {
                tree = Value::Object(Map::new());
            }
            let Some(object) = tree.as_object_mut() else {
                return Err(BackendError::Protocol(
                    "progress needs object params".into(),
                ));
            };
            let meta = object
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if !meta.is_object() {
                *meta = Value::Object(Map::new());
            }
            meta["progressToken"] = token.clone();
            params = OutParams::Tree(tree);
            let (tx, rx) = mpsc::channel(PROGRESS_EVENTS);
            progress = Some((value_key(&token), tx, rx));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (reply, response) = oneshot::channel();
        let receiver = {
            let mut state = self.state();
            let key = progress.map(|(key, tx, rx)| {
                state.progress.insert(key.clone(), tx);
                (key, rx)
            });
            let (progress_key, receiver) = match key {
                Some((key, rx)) => (Some(key), Some(rx)),
                None => (None, None),
            };
            state.pending.insert(
                id,
                PendingEntry {
                    reply,
                    epoch,
                    progress: progress_key,
                },
            );
            match tag {
                CallTag::None => {}
                CallTag::Leased => {
                    if let Some(route) = state.lease.as_mut() {
                        route.calls.push(id);
                    }
                }
                CallTag::Routed { events, kind } => {
                    state.calls.insert(
                        id,
                        CallRoute {
                            events,
                            kind,
                            delivered: FastHashMap::default(),
                        },
                    );
                }
            }
            receiver
        };
        let message = match params {
            OutParams::Tree(params) => Message::Request {
                id: Value::from(id),
                method: method.to_owned(),
                params: if params.is_null() { None } else { Some(params) },
            },
            OutParams::Raw(params) => Message::RawRequest {
                id: Value::from(id),
                method: method.to_owned(),
                params,
            },
        };
        Ok((
            message,
            PendingCall {
                legacy_id: Value::from(id),
                response,
                driver: crate::backend::CallDriver::default(),
            },
            receiver,
        ))
    }

    /// Completes a pending call with `outcome` (if it is still pending).
    pub fn complete(&self, legacy_id: &Value, outcome: Outcome) -> bool {
        let Some(key) = legacy_id_key(legacy_id) else {
            return false;
        };
        let entry = {
            let mut state = self.state();
            let entry = state.pending.remove(&key);
            state.last_active = Some(IdleStamp::now());
            if let Some(progress) = entry.as_ref().and_then(|e| e.progress.as_ref()) {
                state.progress.remove(progress);
            }
            entry
        };
        match entry {
            Some(entry) => {
                let _ = entry.reply.send(outcome);
                true
            }
            None => false,
        }
    }

    pub fn is_pending(&self, legacy_id: &Value) -> bool {
        legacy_id_key(legacy_id).is_some_and(|key| self.state().pending.contains_key(&key))
    }

    /// Counts the pending call `id` as sent in session epoch `epoch` (it is being sent again on a
    /// new session).
    pub fn set_pending_epoch(&self, id: &Value, epoch: u64) {
        if let Some(key) = legacy_id_key(id) {
            if let Some(entry) = self.state().pending.get_mut(&key) {
                entry.epoch = epoch;
            }
        }
    }

    /// Fails every pending call sent in session epoch `epoch` or earlier.
    pub fn fail_pending_up_to(&self, epoch: u64, error: BackendError) {
        let failed: Vec<PendingEntry> = {
            let mut state = self.state();
            let keys: Vec<u64> = state
                .pending
                .iter()
                .filter(|(_, entry)| entry.epoch <= epoch)
                .map(|(key, _)| *key)
                .collect();
            let entries: Vec<PendingEntry> = keys
                .iter()
                .filter_map(|key| state.pending.remove(key))
                .collect();
            for entry in &entries {
                if let Some(progress) = &entry.progress {
                    state.progress.remove(progress);
                }
            }
            entries
        };
        for entry in failed {
            let _ = entry.reply.send(Err(error.clone()));
        }
    }

    /// The lane is gone: every pending call fails with `Crashed`, the lease's event channel and
    /// every progress channel close.
    pub fn mark_dead(&self) {
        if self.alive.swap(false, Ordering::SeqCst) {
            super::LANE_DEATHS.fetch_add(1, Ordering::SeqCst);
            tracing::info!(parent: &self.span, "lane is dead");
        }
        let (pending, lease, progress, calls) = {
            let mut state = self.state();
            state.call_requests.clear();
            state.spare_events = None;
            (
                std::mem::take(&mut state.pending),
                state.lease.take(),
                std::mem::take(&mut state.progress),
                std::mem::take(&mut state.calls),
            )
        };
        for (_, entry) in pending {
            let _ = entry.reply.send(Err(BackendError::Crashed));
        }
        drop(lease);
        drop(progress);
        drop(calls);
    }
}
