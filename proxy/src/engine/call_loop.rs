//! A Running call: started on a leased lane (or handed back by the pause book after a claim), its
//! lane events pumped — progress and logs to the current front request (T12, T13), the legacy
//! server's requests to the client checked (T10) and batched for a short window — until the
//! legacy call answers ([`Step::Finished`]), needs input ([`Step::Pause`]: the pause book parks
//! it), or the front request ends without it ([`Step::Fail`]: the pause book abandons it).
//!
//! The call paths return what the front must be answered ([`super::Answer`]); they never write
//! the final response themselves.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use mcp_migrate_rules::RuleId;
use serde_json::{json, Map, Value};
use tracing::{debug, info, warn, Instrument};

use super::pauses::Claimed;
use super::wire::{
    backend_failure, declined_url_outcome, decorate_reply, flatten, input_request, input_responses,
    internal, legacy_response, level_rank, lost_call, refusal_for, resumed_call_failure,
    translate_error, INPUT_KEY_HINT, INPUT_METHODS,
};
use super::{client_label, Answer, Engine};
use crate::backend::{BackendError, BackendEvent, Lease, PendingCall};
use crate::capabilities::CapabilityProfile;
use crate::jsonrpc::{codes, ErrorObject, Message, Reply};
use crate::limits;
use crate::request::{FrontRequest, Principal, ResponseSink};

/// How long a call over an HTTP backend waits after its legacy response for log notifications
/// still on the way (they travel on another stream), when the front request asked for logs.
const LOG_LINGER: Duration = Duration::from_millis(100);

/// One legacy request to the client, waiting for the client's answer.
#[derive(Debug, Clone)]
pub(super) struct PendingInput {
    pub(super) legacy_id: Value,
    pub(super) method: String,
    /// The legacy params (what the legacy server sent; `elicitationId` kept here). The
    /// `InputRequest` shown to the client is built from them when the call pauses
    /// ([`input_request`]), not kept: a parked call holds the request once.
    pub(super) legacy_params: Value,
}

/// A legacy call that is running or paused, owned by exactly one front request at a time.
pub(super) struct LiveCall {
    pub(super) lease: Lease,
    pub(super) call: PendingCall,
    /// Borrowed for the 2026-07-28 methods ([`crate::metrics::method_label`]): no copy per call.
    pub(super) method: std::borrow::Cow<'static, str>,
    /// Digest of the front params; computed when the call first pauses (a call that never
    /// pauses never needs it).
    pub(super) params_digest: Option<[u8; 32]>,
    pub(super) principal: Principal,
    pub(super) profile: CapabilityProfile,
    pub(super) round: u32,
    /// Keys handed out so far, for numbering (`elicitation_1`, `elicitation_2`, ...).
    pub(super) issued: HashMap<&'static str, u32>,
    /// Boxed values: a B-tree node has room for 11, and a paused call usually holds one.
    pub(super) pending: BTreeMap<String, Box<PendingInput>>,
    /// Entries of the current front request's `inputResponses` that answer no pending request:
    /// a legacy request that arrives during this front request under one of these keys is
    /// answered with it at once (if it is a valid answer for its kind), without a round. Cleared
    /// when the call pauses.
    pub(super) offered: Map<String, Value>,
    /// The highest progress value sent per front progress token.
    pub(super) last_progress: Option<f64>,
    /// The progress token the legacy request was sent with (`Null`: none, see
    /// `progress_tokens.rs`). After a -32042 round the request is sent again with the retry's
    /// params, which match the original ones (the `requestState` digest checks that, `_meta`
    /// aside), so the params themselves are not kept.
    pub(super) progress_token: Value,
    /// The legacy call has asked the client something (a server request or a -32042 round).
    pub(super) asked: bool,
    /// The legacy request has answered (its response receiver must not be polled again).
    pub(super) answered: bool,
    /// The legacy server refused with -32042: once the URL elicitations are accepted, the proxy
    /// sends the original request again (T9). `Some(false)` once one was declined or cancelled.
    pub(super) reissue: Option<bool>,
}

impl std::fmt::Debug for LiveCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveCall")
            .field("method", &self.method)
            .field("round", &self.round)
            .field("pending", &self.pending.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// Where pumping a legacy call stopped.
pub(super) enum Step {
    /// The legacy call answered: this is the front response.
    Finished(Result<Reply, ErrorObject>),
    /// The legacy call waits for input: park it and answer `input_required`.
    Pause,
    /// The front request ends without the legacy call: answer with the error, if the client is
    /// still there, and cancel the legacy call.
    Fail(Option<ErrorObject>),
}

impl Engine {
    /// Starts a correlatable call: leases a lane (exclusive for the call's life), sends the
    /// legacy request, and runs it.
    pub(super) async fn start(
        &self,
        request: &FrontRequest,
        profile: CapabilityProfile,
        sink: &mut ResponseSink,
    ) -> Answer {
        // A paused call keeps its lane (an exclusive HTTP session; on a shared session, its
        // response stream; on stdio, its place on the child, which runs other calls meanwhile)
        // until the retry or the TTL: no pause ever yields to a new call. When no lane can be
        // had, the pool refuses the *new* call (`BackendError::Exhausted`), retryably.
        let pool = match self.pool_for(request) {
            Ok(pool) => pool,
            Err(error) => return Some(Err(error)),
        };
        let lease = tokio::select! {
            biased;
            lease = pool.call_lease(&profile, &request.method, &request.params) => lease,
            () = sink.closed() => return None,
        };
        let mut lease = match lease {
            Ok(lease) => lease,
            Err(BackendError::Exhausted {
                lanes,
                paused_per_lane,
            }) => {
                warn!(
                    lanes,
                    paused_per_lane, "refused a call: every legacy lane is held by paused calls"
                );
                return Some(Err(limits::capacity_refusal(lanes, paused_per_lane)));
            }
            Err(error) => return Some(Err(backend_failure(error))),
        };
        // Unique per lane (= per legacy session), which is all a progress token needs; no
        // random bytes per call. Only for calls that may want progress (`progress_tokens.rs`).
        let token = if self
            .progress_tokens
            .wanted(&request.method, &request.params)
        {
            lease.lane.mint_progress_token()
        } else {
            Value::Null
        };
        let legacy_request = request.params.legacy(token.as_str());
        let call = match lease.request_driven(&request.method, legacy_request).await {
            Ok(call) => call,
            Err(error) => return Some(Err(backend_failure(error))),
        };
        let live = LiveCall {
            lease,
            call,
            method: crate::metrics::method_label(&request.method),
            params_digest: None,
            principal: request.principal.clone(),
            profile,
            round: 0,
            issued: HashMap::new(),
            pending: BTreeMap::new(),
            // A first call may already carry answers (a client that knows the keys, e.g. from
            // the legacy server's `inputKey` hints).
            offered: input_responses(&request.params),
            last_progress: None,
            progress_token: token,
            asked: false,
            answered: false,
            reissue: None,
        };
        self.pump(live, request, sink).await
    }

    /// Resumes a paused call: the pause book opens the `requestState` and claims the pause
    /// (single use), then the retry's `inputResponses` are delivered as legacy responses (T20)
    /// and the call runs again, to its next round or its result. A pause another instance holds
    /// is passed on to it (unless this request was itself passed on: never twice).
    pub(super) async fn resume(
        &self,
        request: &FrontRequest,
        profile: CapabilityProfile,
        state: &str,
        sink: &mut ResponseSink,
        forwarded: bool,
    ) -> Answer {
        let mut live = match self.pauses.claim(state, request, forwarded).await {
            Ok(Claimed::Here(live)) => *live,
            Ok(Claimed::Elsewhere(url)) => {
                let envelope = crate::cluster::seal_request(self.pauses.sealer(), request);
                return self.peers.forward(&url, envelope, sink).await;
            }
            Err(error) => return Some(Err(error)),
        };
        live.profile = profile;
        // The retry's credentials are the caller's newest (a refreshed token under `--principal
        // jwt`): the call's lanes send them from here on.
        self.pools.refresh(&request.principal, &request.credentials);
        // On a lane that holds many paused calls, wait for the call running there (if any) to
        // finish or pause: from here on, what the lane receives is this call's.
        let unparked = tokio::select! {
            biased;
            unparked = live.lease.unpark() => unparked,
            () = sink.closed() => {
                self.pauses.abandon(live, "the client request ended");
                return None;
            }
        };
        if let Err(error) = unparked {
            return Some(Err(lost_call(&error)));
        }
        let mut responses = input_responses(&request.params);
        let round_keys: HashSet<String> = live.pending.keys().cloned().collect();
        match self.deliver(&mut live, &responses).await {
            Ok(()) => {}
            Err(error @ BackendError::Unauthorized { .. }) => {
                return Some(Err(resumed_call_failure(error)))
            }
            Err(error) => return Some(Err(lost_call(&error))),
        }
        // The answers to nothing asked yet may answer what the legacy server asks next.
        responses.retain(|key, _| !round_keys.contains(key));
        live.offered = responses;
        if live.pending.is_empty() {
            match live.reissue {
                Some(true) => {
                    // Every URL elicitation of the -32042 round was accepted: call again (T9).
                    let sent = live
                        .lease
                        .request_driven(
                            &live.method,
                            request.params.legacy(live.progress_token.as_str()),
                        )
                        .await;
                    match sent {
                        Ok(call) => {
                            live.call = call;
                            live.answered = false;
                            live.reissue = None;
                        }
                        Err(error) => return Some(Err(backend_failure(error))),
                    }
                }
                Some(false) => return Some(declined_url_outcome(&live.method).map(Reply::Tree)),
                None => {}
            }
        }
        self.pump(live, request, sink).await
    }

    /// Sends each answered input request to the legacy server; unanswered (or malformed) ones stay
    /// pending and are asked again. Other keys are left to the caller (see `LiveCall::offered`).
    async fn deliver(
        &self,
        live: &mut LiveCall,
        responses: &Map<String, Value>,
    ) -> Result<(), BackendError> {
        let keys: Vec<String> = live.pending.keys().cloned().collect();
        for key in keys {
            let Some(answer) = responses.get(&key) else {
                continue;
            };
            let pending = &live.pending[&key];
            let Some(result) = legacy_response(&pending.method, &pending.legacy_params, answer)
            else {
                debug!(key, "malformed input response: asking again");
                continue;
            };
            let pending = live.pending.remove(&key).expect("key listed above");
            if live.reissue.is_some() {
                // A URL elicitation of a -32042 round: nobody waits for it on the legacy side.
                if result.get("action").and_then(Value::as_str) != Some("accept") {
                    live.reissue = Some(false);
                }
                continue;
            }
            live.lease
                .lane
                .respond(pending.legacy_id, Ok(result))
                .await?;
        }
        Ok(())
    }

    /// Runs the legacy call until it answers (the answer), or until it needs input (the pause
    /// book parks it: `input_required`), or until the client leaves (the pause book abandons it).
    async fn pump(
        &self,
        mut live: LiveCall,
        request: &FrontRequest,
        sink: &mut ResponseSink,
    ) -> Answer {
        // The front's `request` span already names the method and the principal; the fields of
        // this one are only computed when debug logging is on.
        let span = tracing::debug_span!(
            "call",
            method = %live.method,
            client = %client_label(request)
        );
        let step = self.run(&mut live, request, sink).instrument(span).await;
        match step {
            Step::Finished(outcome) => {
                // A call sent without a token is of a kind already known to be quiet: nothing
                // to learn (and no lock to take on the common path).
                if !live.asked && !live.progress_token.is_null() {
                    self.progress_tokens
                        .finished_quietly(&live.method, &request.params);
                }
                self.pauses.finish(live);
                Some(outcome)
            }
            Step::Pause => {
                // The paused call's POST reads on while the client is away.
                live.call.driver.detach();
                Some(
                    Box::pin(self.pauses.park(live, request))
                        .await
                        .map(Reply::Tree),
                )
            }
            Step::Fail(error) => {
                self.pauses.abandon(live, "the client request ended");
                error.map(Err)
            }
        }
    }

    async fn run(
        &self,
        live: &mut LiveCall,
        request: &FrontRequest,
        sink: &mut ResponseSink,
    ) -> Step {
        let mut window: Option<tokio::time::Instant> = if live.pending.is_empty() {
            None
        } else {
            Some(tokio::time::Instant::now() + self.settings.batch_window)
        };
        let call_timeout = self.settings.limits.call_timeout;
        // One timer for the whole call, moved on when the legacy server talks: a new `Sleep` in
        // each turn of the loop would be registered with the runtime's timer and removed again
        // every time.
        let silent = tokio::time::sleep(call_timeout);
        tokio::pin!(silent);
        loop {
            tokio::select! {
                biased;
                () = sink.closed() => return Step::Fail(None),
                // The answer, and the call's POST polled first while the call is a plain request
                // and answer (backend/call_driver.rs); the POST usually ends in the poll that
                // delivers the answer.
                response = live.call.driver.answer(&mut live.call.response), if !live.answered => {
                    live.answered = true;
                    // Late notifications may still come on the POST's stream.
                    live.call.driver.detach();
                    self.settle(live, request, sink).await;
                    // A call that was paused and whose legacy side is gone is a lost pause,
                    // whether the retry noticed the dead backend before or after delivering.
                    let outcome = match response {
                        // The legacy server refused the credentials now (they expired during
                        // the pause): the client hears 401/403 and its challenge.
                        Ok(Err(error @ BackendError::Unauthorized { .. })) if live.round > 0 => {
                            Err(resumed_call_failure(error))
                        }
                        Ok(Err(error @ BackendError::Unauthorized { .. })) => {
                            Err(backend_failure(error))
                        }
                        Ok(Err(error)) if live.round > 0 => Err(lost_call(&error)),
                        Err(_) if live.round > 0 => Err(lost_call(&BackendError::Crashed)),
                        response => flatten(response),
                    };
                    if let Err(error) = &outcome {
                        if error.code == codes::LEGACY_URL_ELICITATION_REQUIRED {
                            self.note_asked(live, request);
                            if let Some(step) = url_elicitation_round(live, sink, error) {
                                return step;
                            }
                        }
                    }
                    // Unanswered requests of a finished call are moot.
                    live.pending.clear();
                    return Step::Finished(
                        outcome
                            .and_then(|result| decorate_reply(&live.method, result))
                            .map_err(translate_error),
                    );
                }
                event = live.lease.events.recv() => {
                    let Some(event) = event else {
                        return Step::Fail(Some(internal("the legacy session ended mid-call")));
                    };
                    // The legacy server talks mid-call: its POST reads on in a task of its own
                    // while this one answers, however long that takes.
                    live.call.driver.detach();
                    silent
                        .as_mut()
                        .reset(tokio::time::Instant::now() + call_timeout);
                    if let Some(error) = Box::pin(self.on_event(live, request, sink, event)).await {
                        return Step::Fail(Some(error));
                    }
                    if window.is_none() && !live.pending.is_empty() {
                        window = Some(tokio::time::Instant::now() + self.settings.batch_window);
                    }
                }
                () = sleep_until(window) => {
                    if live.pending.is_empty() {
                        window = None;
                        continue;
                    }
                    return Step::Pause;
                }
                () = &mut silent, if live.pending.is_empty() => {
                    warn!(timeout = ?call_timeout, "the legacy server stayed silent mid-call: cancelling it");
                    return Step::Fail(Some(limits::limit_error(
                        format!(
                            "the legacy server did not answer within {} (--call-timeout): the call was cancelled",
                            humantime::format_duration(call_timeout)
                        ),
                        "call-timeout",
                        call_timeout.as_millis() as u64,
                    )));
                }
            }
        }
    }

    /// The legacy call asked the client something: its kind's calls carry a progress token.
    fn note_asked(&self, live: &mut LiveCall, request: &FrontRequest) {
        if !live.asked {
            live.asked = true;
            self.progress_tokens.asked(&live.method, &request.params);
        }
    }

    /// Delivers what the legacy server sent before its response but the proxy has not handled
    /// yet: it belongs to this request. Over an HTTP backend, logs travel on the session's GET
    /// stream, apart from the response (rmcp 2.x), and may arrive after it: when the front
    /// request asked for logs, wait `LOG_LINGER` for them.
    async fn settle(&self, live: &mut LiveCall, request: &FrontRequest, sink: &mut ResponseSink) {
        while let Ok(event) = live.lease.events.try_recv() {
            let _ = Box::pin(self.on_event(live, request, sink, event)).await;
        }
        if request.log_level.is_none() || live.lease.lane.transport() != "http" {
            return;
        }
        Box::pin(self.linger_for_logs(live, request, sink)).await;
    }

    /// The `LOG_LINGER` wait of [`Self::settle`] (boxed: only calls that asked for logs take it).
    async fn linger_for_logs(
        &self,
        live: &mut LiveCall,
        request: &FrontRequest,
        sink: &mut ResponseSink,
    ) {
        let deadline = tokio::time::Instant::now() + LOG_LINGER;
        loop {
            tokio::select! {
                event = live.lease.events.recv() => match event {
                    Some(event) => {
                        let _ = Box::pin(self.on_event(live, request, sink, event)).await;
                    }
                    None => return,
                },
                () = tokio::time::sleep_until(deadline) => return,
            }
        }
    }

    /// Handles one lane event; `Some` when the front request must be answered with that error.
    async fn on_event(
        &self,
        live: &mut LiveCall,
        request: &FrontRequest,
        sink: &mut ResponseSink,
        event: BackendEvent,
    ) -> Option<ErrorObject> {
        match event {
            BackendEvent::ServerRequest { id, method, params } => {
                self.note_asked(live, request);
                if !INPUT_METHODS.contains(&method.as_str()) {
                    let error = ErrorObject::new(
                        codes::METHOD_NOT_FOUND,
                        format!("`{method}` is not available through mcp-mrtr-proxy"),
                    );
                    let _ = live.lease.lane.respond(id, Err(error)).await;
                    return None;
                }
                match method.as_str() {
                    "sampling/createMessage" => self.warn_deprecated(
                        &client_label(request),
                        RuleId::DeprecatedSampling,
                        "the legacy server sent sampling/createMessage",
                    ),
                    "roots/list" => self.warn_deprecated(
                        &client_label(request),
                        RuleId::DeprecatedRoots,
                        "the legacy server sent roots/list",
                    ),
                    _ => {}
                }
                if let Err(required) = live.profile.admits(&method, &params) {
                    let _ = live.lease.lane.respond(id, refusal_for(&method)).await;
                    if !sink.started() && live.pending.is_empty() {
                        return Some(
                            ErrorObject::new(
                                codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
                                format!(
                                    "the legacy server needs `{method}`, which this request's clientCapabilities do not declare"
                                ),
                            )
                            .with_data(json!({ "requiredCapabilities": required })),
                        );
                    }
                    warn!(%method, "refused a legacy input request the client cannot serve");
                    return None;
                }
                let key = input_key(live, &method, &params);
                if let Some(answer) = live.offered.remove(&key) {
                    if let Some(result) = legacy_response(&method, &params, &answer) {
                        debug!(key, "answered from the request's own inputResponses");
                        if let Err(error) = live.lease.lane.respond(id, Ok(result)).await {
                            return Some(internal(format!("the legacy server is gone ({error})")));
                        }
                        return None;
                    }
                    debug!(key, "malformed input response offered up front: asking");
                }
                let size = serde_json::to_vec(&input_request(&method, &params, &live.profile))
                    .map_or(usize::MAX, |bytes| bytes.len());
                if let Some(error) = limits::input_request_too_large(
                    size,
                    self.settings.limits.max_input_request_bytes,
                ) {
                    warn!(%method, size, "refused a legacy input request too large to forward");
                    crate::metrics::global().rejection("limit_input_request_size");
                    let _ = live.lease.lane.respond(id, refusal_for(&method)).await;
                    return Some(error);
                }
                live.pending.insert(
                    key,
                    Box::new(PendingInput {
                        legacy_id: id,
                        method,
                        legacy_params: params,
                    }),
                );
                None
            }
            BackendEvent::Notification { method, params } => {
                match method.as_str() {
                    "notifications/progress" => {
                        let (Some(token), Some(progress)) = (
                            request.progress_token.clone(),
                            params.get("progress").and_then(Value::as_f64),
                        ) else {
                            return None;
                        };
                        // Progress must keep increasing per front token, across rounds too.
                        if live.last_progress.is_some_and(|last| progress <= last) {
                            return None;
                        }
                        live.last_progress = Some(progress);
                        let mut params = params;
                        params["progressToken"] = token;
                        let _ = sink
                            .notify(Message::Notification {
                                method,
                                params: Some(params),
                            })
                            .await;
                    }
                    "notifications/message" => {
                        self.warn_deprecated(
                            &client_label(request),
                            RuleId::DeprecatedLogging,
                            "the legacy server sent notifications/message",
                        );
                        let level = params
                            .get("level")
                            .and_then(Value::as_str)
                            .unwrap_or("info");
                        let wanted = request.log_level.as_deref();
                        if wanted.is_some_and(|wanted| level_rank(level) >= level_rank(wanted)) {
                            let _ = sink
                                .notify(Message::Notification {
                                    method,
                                    params: Some(params),
                                })
                                .await;
                        } else {
                            let data = params.get("data").cloned().unwrap_or(Value::Null);
                            info!(target: "legacy_log", level, %data, "legacy server log");
                        }
                    }
                    "notifications/cancelled" => {
                        // The legacy server withdrew one of its own requests.
                        let withdrawn = params.get("requestId").cloned();
                        live.pending
                            .retain(|_, pending| Some(&pending.legacy_id) != withdrawn.as_ref());
                    }
                    other => {
                        debug!(
                            method = other,
                            "legacy notification without a front equivalent dropped"
                        );
                    }
                }
                None
            }
        }
    }
}

/// Turns a legacy `-32042` (URL elicitation required, forbidden in 2026-07-28) into an MRTR round
/// of URL-mode input requests (T9). `None` when the error carries no usable elicitation.
fn url_elicitation_round(
    live: &mut LiveCall,
    sink: &ResponseSink,
    error: &ErrorObject,
) -> Option<Step> {
    let elicitations: Vec<Value> = error
        .data
        .as_ref()?
        .get("elicitations")?
        .as_array()?
        .iter()
        .filter(|e| e.get("url").and_then(Value::as_str).is_some())
        .cloned()
        .collect();
    if elicitations.is_empty() {
        return None;
    }
    if !live.profile.elicitation_url {
        if sink.started() {
            return None;
        }
        return Some(Step::Fail(Some(
            ErrorObject::new(
                codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
                "the legacy server requires a URL-mode elicitation, which this request's clientCapabilities do not declare",
            )
            .with_data(json!({"requiredCapabilities": {"elicitation": {"url": {}}}})),
        )));
    }
    for mut params in elicitations {
        params["mode"] = "url".into();
        let key = input_key(live, "elicitation/create", &params);
        live.pending.insert(
            key,
            Box::new(PendingInput {
                legacy_id: Value::Null,
                method: "elicitation/create".into(),
                legacy_params: params,
            }),
        );
    }
    live.reissue = Some(true);
    Some(Step::Pause)
}

/// The `inputRequests` key of a legacy request: the hint in its `_meta` (`INPUT_KEY_HINT`) when
/// present and unused in this round, else `<kind>_<n>` numbered within the call
/// (`elicitation_1`, `sampling_1`, `roots_1`, ...).
fn input_key(live: &mut LiveCall, method: &str, params: &Value) -> String {
    let hint = params
        .get("_meta")
        .and_then(|meta| meta.get(INPUT_KEY_HINT))
        .and_then(Value::as_str)
        .filter(|hint| !hint.is_empty() && !live.pending.contains_key(*hint));
    if let Some(hint) = hint {
        return hint.to_owned();
    }
    let kind = match method {
        "elicitation/create" => "elicitation",
        "sampling/createMessage" => "sampling",
        _ => "roots",
    };
    loop {
        let counter = live.issued.entry(kind).or_insert(0);
        *counter += 1;
        let key = format!("{kind}_{counter}");
        if !live.pending.contains_key(&key) {
            return key;
        }
    }
}

/// Waits for the batch window. A window that is already over (always so with `--batch-window 0ms`)
/// is over at once: `tokio::time::sleep_until` would still wait for the timer's next 1 ms tick.
async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) if deadline <= tokio::time::Instant::now() => {}
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}
