//! The router for what the legacy server sends on a lane (responses, server requests,
//! notifications), by the routing rules of the lane core (see its module documentation): one
//! unit of legacy output parsed, each message delivered to its call, the lease, the change feed
//! or the log.

use super::*;

impl LaneCore {
    /// Routes everything in one unit of legacy output (an HTTP response body, the data of an SSE
    /// `message` event, a line of a child's stdout): one message or a (2025-03-26) batch.
    /// Surrounding ASCII whitespace is ignored; output that is not JSON-RPC, and invalid entries
    /// of a batch, are logged and skipped. `source` names the unit in those logs. Returns how
    /// many messages were routed.
    pub fn handle_bytes(self: &Arc<Self>, bytes: &[u8], source: &'static str) -> usize {
        self.handle_bytes_from(bytes, source, None)
    }

    /// [`LaneCore::handle_bytes`] for output read from the POST response stream of our request
    /// `call` (a legacy id), when `Some`: server requests and notifications there belong to it.
    pub fn handle_bytes_from(
        self: &Arc<Self>,
        bytes: &[u8],
        source: &'static str,
        call: Option<&Value>,
    ) -> usize {
        let call = call.and_then(legacy_id_key);
        let bytes = bytes.trim_ascii();
        if bytes.is_empty() {
            return 0;
        }
        // Most output is a successful response: keep its result as text (no `Value` tree).
        if let Some(message) = crate::jsonrpc::parse_raw_response(bytes) {
            self.handle_from(message, call);
            return 1;
        }
        self.handle_parsed(bytes, source, call)
    }

    /// [`LaneCore::handle_bytes_from`] for output the caller hands over (an SSE event's data): a
    /// successful response's result stays in that text, not copied (callgrind,
    /// bench/proxy-vs-nginx.md).
    pub fn handle_text_from(
        self: &Arc<Self>,
        text: String,
        source: &'static str,
        call: Option<&Value>,
    ) -> usize {
        let call = call.and_then(legacy_id_key);
        if text.trim_ascii().is_empty() {
            return 0;
        }
        match crate::jsonrpc::parse_raw_text(text) {
            Ok(message) => {
                self.handle_from(message, call);
                1
            }
            Err(text) => self.handle_parsed(text.trim_ascii().as_bytes(), source, call),
        }
    }

    /// Routes output that is not a plain successful response (`bytes` trimmed, not empty).
    fn handle_parsed(
        self: &Arc<Self>,
        bytes: &[u8],
        source: &'static str,
        call: Option<u64>,
    ) -> usize {
        match Message::parse_batch(bytes) {
            Ok(messages) => {
                let mut routed = 0;
                for message in messages {
                    match message {
                        Ok(message) => {
                            self.handle_from(message, call);
                            routed += 1;
                        }
                        Err(error) => {
                            tracing::warn!(parent: &self.span, %error, source, "skipping an invalid message from the legacy server")
                        }
                    }
                }
                routed
            }
            Err(error) => {
                tracing::warn!(
                    parent: &self.span,
                    %error,
                    bytes = bytes.len(),
                    source,
                    "skipping legacy server output that is not JSON-RPC"
                );
                0
            }
        }
    }

    /// Routes one message the legacy server sent.
    #[cfg(test)]
    pub fn handle(self: &Arc<Self>, message: Message) {
        self.handle_from(message, None);
    }

    /// Routes one message; `call`: it came on the POST response stream of that request of ours.
    fn handle_from(self: &Arc<Self>, message: Message, call: Option<u64>) {
        match message.into_tree() {
            Message::Response { id, outcome } => {
                if !self.complete(&id, Ok(outcome.map(Reply::Tree))) {
                    self.unmatched_response(&id);
                }
            }
            Message::RawResponse { id, result } => {
                if !self.complete(&id, Ok(Ok(Reply::Raw(result)))) {
                    self.unmatched_response(&id);
                }
            }
            Message::Request { id, method, params } => {
                let params = params.unwrap_or_else(|| Value::Object(Map::new()));
                if method == "ping" {
                    self.send_detached(Message::response(id, Ok(json!({}))));
                    return;
                }
                if let Some((id, method, params)) = self.route_to_call(call, id, method, params) {
                    self.route_request(id, method, params, call);
                }
            }
            Message::Notification { method, params } => {
                let params = params.unwrap_or_else(|| Value::Object(Map::new()));
                self.route_notification(method, params, call);
            }
            Message::RawRequest { .. } => unreachable!("`into_tree` leaves no raw request"),
        }
    }

    /// Delivers a server request that came on a routed call's own stream to that call; gives it
    /// back when `call` has no route.
    fn route_to_call(
        self: &Arc<Self>,
        call: Option<u64>,
        id: Value,
        method: String,
        params: Value,
    ) -> Option<(Value, String, Value)> {
        let Some(call) = call else {
            return Some((id, method, params));
        };
        let key = value_key(&id);
        let (sent, kind) = {
            let mut state = self.state();
            let Some(route) = state.calls.get_mut(&call) else {
                return Some((id, method, params));
            };
            let event = BackendEvent::ServerRequest {
                id: id.clone(),
                method: method.clone(),
                params,
            };
            let sent = match route.events.try_send(event) {
                Ok(()) => Ok(()),
                Err(mpsc::error::TrySendError::Full(event)) => {
                    Err(Some((route.events.clone(), event)))
                }
                Err(mpsc::error::TrySendError::Closed(_)) => Err(None),
            };
            let kind = Arc::clone(&route.kind);
            if !matches!(sent, Err(None)) {
                route.delivered.insert(
                    key.clone(),
                    Delivered {
                        id: id.clone(),
                        method: method.clone(),
                    },
                );
                state.call_requests.insert(key.clone(), call);
            }
            (sent, kind)
        };
        self.learn(|attribution| attribution.on_call_stream(&kind));
        match sent {
            Ok(()) => {}
            Err(None) => self.answer_locally(id, &method),
            Err(Some((events, event))) => {
                // The call is not reading: wait for it without blocking the stream's reader.
                let core = Arc::clone(self);
                tokio::spawn(async move {
                    if events.send(event).await.is_err() {
                        let still_ours = {
                            let mut state = core.state();
                            state.call_requests.remove(&key);
                            state
                                .calls
                                .get_mut(&call)
                                .and_then(|route| route.delivered.remove(&key))
                                .is_some()
                        };
                        if still_ours {
                            core.answer_locally(id, &method);
                        }
                    }
                });
            }
        }
        None
    }

    fn route_request(
        self: &Arc<Self>,
        id: Value,
        method: String,
        params: Value,
        call: Option<u64>,
    ) {
        enum Next {
            Local,
            Delivered,
            Later(EventSender, BackendEvent),
        }
        let event = BackendEvent::ServerRequest {
            id: id.clone(),
            method: method.clone(),
            params,
        };
        let next = {
            let mut state = self.state();
            if state.lease.is_none() && !state.calls.is_empty() {
                // On a shared session, a request that came on no call's stream names no call.
                let kinds: HashSet<Arc<str>> = state
                    .calls
                    .values()
                    .map(|route| Arc::clone(&route.kind))
                    .collect();
                drop(state);
                self.learn(|attribution| {
                    for kind in &kinds {
                        attribution.on_session_stream(kind);
                    }
                });
                state = self.state();
            }
            match state.lease.as_mut() {
                None => Next::Local,
                Some(route) => {
                    route.asked = true;
                    if let Some(kind) = &route.kind {
                        let own_stream = call.is_some_and(|call| route.calls.contains(&call));
                        let kind = Arc::clone(kind);
                        self.learn(|attribution| {
                            if own_stream {
                                attribution.on_call_stream(&kind);
                            } else {
                                attribution.on_session_stream(&kind);
                            }
                        });
                    }
                    let delivered = Delivered {
                        id: id.clone(),
                        method: method.clone(),
                    };
                    self.lease_events.fetch_add(1, Ordering::SeqCst);
                    match route.events.try_send(event) {
                        Ok(()) => {
                            route.delivered.insert(value_key(&id), delivered);
                            Next::Delivered
                        }
                        Err(mpsc::error::TrySendError::Full(event)) => {
                            route.delivered.insert(value_key(&id), delivered);
                            Next::Later(route.events.clone(), event)
                        }
                        Err(mpsc::error::TrySendError::Closed(_)) => Next::Local,
                    }
                }
            }
        };
        match next {
            Next::Local => self.answer_locally(id, &method),
            Next::Delivered => {
                tracing::debug!(parent: &self.span, method = %method, "server request routed to the lease");
            }
            Next::Later(events, event) => {
                // The lease is not reading: wait for it without blocking the lane's reader.
                let core = Arc::clone(self);
                tokio::spawn(async move {
                    if events.send(event).await.is_err() {
                        let still_ours = {
                            let mut state = core.state();
                            state
                                .lease
                                .as_mut()
                                .and_then(|route| route.delivered.remove(&value_key(&id)))
                                .is_some()
                        };
                        if still_ours {
                            core.answer_locally(id, &method);
                        }
                    }
                });
            }
        }
    }

    fn route_notification(&self, method: String, params: Value, call: Option<u64>) {
        if CHANGE_NOTIFICATIONS.contains(&method.as_str()) {
            // List changes and resource updates belong to no call, even when a call holds the
            // lane: they go to the `subscriptions/listen` streams.
            {
                tracing::debug!(parent: &self.span, method = %method, "change notification");
            }
            self.changes.publish(self.id, method, params);
            return;
        }
        let mut state = self.state();
        if method == "notifications/progress" {
            if let Some(token) = params.get("progressToken") {
                let key = value_key(token);
                if let Some(progress) = state.progress.get(&key) {
                    match progress.try_send(params) {
                        Ok(()) => {}
                        Err(mpsc::error::TrySendError::Full(_)) => {
                            tracing::debug!(parent: &self.span, "progress channel full: progress dropped");
                        }
                        Err(mpsc::error::TrySendError::Closed(_)) => {
                            state.progress.remove(&key);
                        }
                    }
                    return;
                }
            }
        }
        if method == "notifications/cancelled" && !state.parked.is_empty() {
            // The legacy server withdrawing a request it sent to a paused call: that call's.
            let withdrawn = params.get("requestId").map(value_key);
            let owner = withdrawn.and_then(|key| {
                state
                    .parked
                    .values()
                    .find(|route| route.delivered.contains_key(&key))
            });
            if let Some(route) = owner {
                let event = BackendEvent::Notification {
                    method: method.clone(),
                    params,
                };
                if route.events.try_send(event).is_err() {
                    tracing::debug!(parent: &self.span, "a paused call's withdrawal could not be queued");
                }
                return;
            }
        }
        if let Some(route) = call.and_then(|call| state.calls.get(&call)) {
            let event = BackendEvent::Notification {
                method: method.clone(),
                params,
            };
            match route.events.try_send(event) {
                Ok(()) => return,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    tracing::warn!(parent: &self.span, method = %method, "call event channel full: notification dropped");
                    return;
                }
                Err(mpsc::error::TrySendError::Closed(BackendEvent::Notification {
                    params,
                    ..
                })) => {
                    drop(state);
                    self.log_notification(&method, &params);
                    return;
                }
                Err(mpsc::error::TrySendError::Closed(_)) => return,
            }
        }
        let params = if let Some(route) = state.lease.as_mut() {
            let event = BackendEvent::Notification {
                method: method.clone(),
                params,
            };
            self.lease_events.fetch_add(1, Ordering::SeqCst);
            match route.events.try_send(event) {
                Ok(()) => return,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    tracing::warn!(parent: &self.span, method = %method, "lease event channel full: notification dropped");
                    return;
                }
                Err(mpsc::error::TrySendError::Closed(BackendEvent::Notification {
                    params,
                    ..
                })) => params,
                Err(mpsc::error::TrySendError::Closed(_)) => return,
            }
        } else {
            params
        };
        drop(state);
        self.log_notification(&method, &params);
    }

    /// A notification nobody takes: the proxy's own log.
    fn log_notification(&self, method: &str, params: &Value) {
        if method == "notifications/message" {
            let level = params
                .get("level")
                .and_then(Value::as_str)
                .unwrap_or("info");
            let logger = params
                .get("logger")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let data = params.get("data").cloned().unwrap_or(Value::Null);
            tracing::info!(
                parent: &self.span,
                lane = self.id,
                level,
                logger,
                data = %data,
                "legacy server log message"
            );
        } else {
            tracing::debug!(parent: &self.span, lane = self.id, method = %method, "unattributed notification");
        }
    }
}
