//! Where what names no call goes: the route of the lease that runs on the lane, the routes of
//! paused calls parked on it, and the routes of shared-session calls; the server requests
//! delivered along them, answered by their call, or answered locally when nobody will
//! (translation T7 of docs/proxy/how-it-works.md).

use super::*;
use crate::FastHashMap;

impl LaneCore {
    /// Routes events to a new lease; returns its generation and receiver. `kind` names the calls
    /// the holder runs (for [`Attribution`]).
    pub fn attach_lease(&self, kind: Option<Arc<str>>) -> (u64, EventReceiver) {
        let mut state = self.state();
        let (events, receiver) = state
            .spare_events
            .take()
            .unwrap_or_else(|| crate::backend::event_channel(LEASE_EVENTS));
        state.lease_generation += 1;
        let generation = state.lease_generation;
        state.lease = Some(LeaseRoute {
            generation,
            events,
            delivered: FastHashMap::default(),
            kind,
            calls: Vec::new(),
            asked: false,
        });
        (generation, receiver)
    }

    /// About the lease `generation` while it still holds the lane: whether a server request
    /// reached it, and whether one of its calls still waits for its response.
    pub fn lease_report(&self, generation: u64) -> Option<(bool, bool)> {
        let state = self.state();
        let route = state
            .lease
            .as_ref()
            .filter(|r| r.generation == generation)
            .or_else(|| state.parked.get(&generation))?;
        let waiting = route.calls.iter().any(|id| state.pending.contains_key(id));
        Some((route.asked, waiting))
    }

    /// Ends the call routes of `ids` (a shared-session call is done with). Server requests
    /// delivered to them and never answered are answered locally.
    pub fn detach_calls(&self, ids: &[u64]) {
        let routes: Vec<CallRoute> = {
            let mut state = self.state();
            let routes: Vec<CallRoute> =
                ids.iter().filter_map(|id| state.calls.remove(id)).collect();
            for route in &routes {
                for key in route.delivered.keys() {
                    state.call_requests.remove(key);
                }
            }
            routes
        };
        for route in routes {
            self.answer_unanswered(route.delivered);
        }
    }

    fn answer_unanswered(&self, delivered: FastHashMap<String, Delivered>) {
        for (_, request) in delivered {
            tracing::warn!(
                parent: &self.span,
                method = %request.method,
                lane = self.id,
                "a server request of a finished call was never answered: answering it locally"
            );
            let outcome = self.local_answer(&request.method);
            self.send_detached(Message::response(request.id, outcome));
        }
    }

    /// Stops routing to the lease `generation`. Server requests it received and never answered
    /// are answered locally, so the legacy server does not wait for them forever. `returned`:
    /// the lease's receiver, kept for the next lease when its channel can be (see
    /// `CoreState::spare_events`).
    pub fn detach_lease(&self, generation: u64, returned: Option<EventReceiver>) {
        let mut state = self.state();
        let route = if state
            .lease
            .as_ref()
            .is_some_and(|route| route.generation == generation)
        {
            state.last_active = Some(IdleStamp::now());
            state.lease.take()
        } else {
            let parked = state.parked.remove(&generation);
            if parked.is_some() {
                state.last_active = Some(IdleStamp::now());
            }
            parked
        };
        let Some(LeaseRoute {
            events, delivered, ..
        }) = route
        else {
            return;
        };
        // The lease's channel goes to the next lease when nothing else can send on it: the
        // route held its only sender (no delivery waits for room), the receiver came back, and
        // the lane lives. What the lease did not read is dropped, as with a channel of its own.
        let unused = match returned {
            Some(mut receiver) if events.is_sole() && self.is_alive() => {
                receiver.drain();
                state.spare_events = Some((events, receiver));
                None
            }
            returned => Some((events, returned)),
        };
        drop(state);
        drop(unused);
        self.answer_unanswered(delivered);
    }

    /// The running lease `generation` gives the lane up while its call waits for its client:
    /// its route is kept aside (see `CoreState::parked`) and the lane takes another call.
    /// Returns whether that lease was the running one.
    pub fn park_lease(&self, generation: u64) -> bool {
        let mut state = self.state();
        match state.lease.take() {
            Some(route) if route.generation == generation => {
                state.parked.insert(generation, route);
                true
            }
            other => {
                state.lease = other;
                false
            }
        }
    }

    /// The parked lease `generation` runs again: its route takes the lane back. Refused while
    /// another lease runs (the pool grants the lane to one running call at a time).
    pub fn unpark_lease(&self, generation: u64) -> bool {
        let mut state = self.state();
        if state.lease.is_some() {
            return false;
        }
        match state.parked.remove(&generation) {
            Some(route) => {
                state.lease = Some(route);
                true
            }
            None => false,
        }
    }

    /// Paused calls whose routes are parked on this lane.
    #[cfg(test)]
    pub fn parked_count(&self) -> usize {
        self.state().parked.len()
    }

    /// Notes that a server request was answered (by the lease holder or a routed call).
    pub fn responded(&self, id: &Value) {
        let key = value_key(id);
        let mut state = self.state();
        if let Some(owner) = state.call_requests.remove(&key) {
            if let Some(route) = state.calls.get_mut(&owner) {
                route.delivered.remove(&key);
            }
            return;
        }
        if let Some(route) = state.lease.as_mut() {
            if route.delivered.remove(&key).is_some() {
                return;
            }
        }
        for route in state.parked.values_mut() {
            if route.delivered.remove(&key).is_some() {
                return;
            }
        }
    }

    /// The answer to a server request nobody can forward to a client (translation T7 of docs/proxy/how-it-works.md).
    pub fn local_answer(&self, method: &str) -> Result<Value, ErrorObject> {
        match method {
            "ping" => Ok(json!({})),
            "roots/list" if !self.roots.is_empty() => Ok(json!({
                "roots": self.roots.iter().map(|uri| json!({"uri": uri})).collect::<Vec<_>>()
            })),
            "roots/list" => Err(ErrorObject::new(
                codes::INTERNAL_ERROR,
                "roots are only available to the proxy during a client call",
            )),
            "elicitation/create" => Ok(json!({"action": "decline"})),
            "sampling/createMessage" => Err(ErrorObject::new(
                codes::INTERNAL_ERROR,
                "sampling is not available outside a client call",
            )),
            _ => Err(ErrorObject::new(
                codes::METHOD_NOT_FOUND,
                format!("method not supported by the proxy: {method}"),
            )),
        }
    }

    pub(super) fn answer_locally(&self, id: Value, method: &str) {
        tracing::warn!(
            parent: &self.span,
            method = %method,
            lane = self.id,
            "unattributed server request answered locally"
        );
        let outcome = self.local_answer(method);
        self.send_detached(Message::response(id, outcome));
    }
}
