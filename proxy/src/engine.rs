//! The translator: 2026-07-28 requests in, legacy sessions out, pauses in between.
//!
//! - `server/discover` is answered from the legacy `InitializeResult` (T3).
//! - Pass-through requests go to a shared lane of the request's capability profile with a fresh
//!   legacy id; results get `resultType` and, where required, `ttlMs`/`cacheScope` (T5, T19).
//! - Correlatable requests (`tools/call`, `resources/read`, `prompts/get`) lease a lane for as long
//!   as the legacy call lives. The lane's events are pumped: progress and logs go to the current
//!   front request; the legacy server's requests to the client are batched for a short window and
//!   become one `input_required` round whose `requestState` is a sealed handle to the paused call
//!   (T6). The retry opens the state, claims the pause in sled (single use), delivers each
//!   `inputResponses` entry as the legacy response, and pumps again for the next round or the result.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use mcp_migrate_rules::RuleId;
use serde_json::{json, Map, Value};
use tracing::{debug, info, warn, Instrument};

use crate::backend::{BackendError, BackendEvent, LanePool, Lease, PendingCall};
use crate::capabilities::CapabilityProfile;
use crate::front::{FrontRequest, Handler, ResponseSink};
use crate::jsonrpc::{codes, ErrorObject, Message, RawResult, Reply};
use crate::limits::{self, CallLimits, StoreHealth};
use crate::param_headers::{ToolHeaderIndex, ToolHeaders};
use crate::state::{now_ms, params_digest, Claims, PauseId, Sealer};
use crate::store::{ClaimError, PauseRecord, PauseStatus, PauseStore};
use crate::subscriptions::{ListenFilter, ResourceSubscriptions};

/// The only protocol version the front speaks.
pub const FRONT_VERSION: &str = "2026-07-28";

/// Methods whose results may be `input_required`.
const CORRELATABLE: &[&str] = &["tools/call", "resources/read", "prompts/get"];
/// Methods forwarded as they are.
const PASS_THROUGH: &[&str] = &[
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "completion/complete",
];
/// Results that must carry `ttlMs` and `cacheScope` (SEP-2549).
const CACHEABLE: &[&str] = &[
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
];
/// Legacy requests that become MRTR input requests.
const INPUT_METHODS: &[&str] = &["elicitation/create", "sampling/createMessage", "roots/list"];
/// How long a call over an HTTP backend waits after its legacy response for log notifications
/// still on the way (they travel on another stream), when the front request asked for logs.
const LOG_LINGER: Duration = Duration::from_millis(100);
/// A `Mcp-Param-*` mismatch is checked again against a fresh legacy `tools/list` when what the
/// proxy knows is older than this (the legacy server may have changed a tool without saying so;
/// a client that sees the mismatch lists the tools again and retries).
const TOOL_HEADERS_RECHECK_AFTER: Duration = Duration::from_secs(2);
/// The most `tools/list` pages read to learn the tools' annotations.
const TOOL_LIST_MAX_PAGES: usize = 100;
/// How long a finished, expired, cancelled or lost pause record is kept after its deadline (the
/// margin covers wall-clock steps; retries after the deadline are refused by the state's expiry).
const RECORD_GRACE: Duration = Duration::from_secs(10);
/// Why a paused call whose legacy session ended is evicted.
const SESSION_ENDED: &str =
    "its legacy session ended (the legacy server exited or dropped the session)";
/// `_meta` key a legacy server may set on its request to choose the `inputRequests` key.
pub const INPUT_KEY_HINT: &str = "io.github.mcp-migrate/inputKey";

/// Engine settings (see the README for defaults).
#[derive(Debug, Clone)]
pub struct EngineSettings {
    /// How long a paused call waits for the client's retry.
    pub pause_ttl: Duration,
    /// How long to wait for more legacy requests after the first one, to batch them in one round.
    pub batch_window: Duration,
    /// How long a pass-through request may take on the legacy side.
    pub request_timeout: Duration,
    /// Caps on pauses, rounds, input request size, and the legacy call's silence.
    pub limits: CallLimits,
}

/// One legacy request to the client, waiting for the client's answer.
#[derive(Debug, Clone)]
struct PendingInput {
    legacy_id: Value,
    method: String,
    /// The legacy params (what the legacy server sent; `elicitationId` kept here).
    legacy_params: Value,
    /// The `InputRequest` shown to the client.
    input_request: Value,
}

/// A legacy call that is running or paused, owned by exactly one front request at a time.
struct LiveCall {
    lease: Lease,
    call: PendingCall,
    method: String,
    /// Digest of the front params; computed when the call first pauses (a call that never
    /// pauses never needs it).
    params_digest: Option<[u8; 32]>,
    principal: crate::front::Principal,
    profile: CapabilityProfile,
    round: u32,
    /// Keys handed out so far, for numbering (`elicitation_1`, `elicitation_2`, ...).
    issued: HashMap<&'static str, u32>,
    pending: BTreeMap<String, PendingInput>,
    /// Entries of the current front request's `inputResponses` that answer no pending request:
    /// a legacy request that arrives during this front request under one of these keys is
    /// answered with it at once (if it is a valid answer for its kind), without a round. Cleared
    /// when the call pauses.
    offered: Map<String, Value>,
    /// The highest progress value sent per front progress token.
    last_progress: Option<f64>,
    /// The progress token the legacy request was sent with. After a -32042 round the request is
    /// sent again with the retry's params, which match the original ones (the `requestState`
    /// digest checks that, `_meta` aside), so the params themselves are not kept.
    progress_token: Value,
    /// The legacy request has answered (its response receiver must not be polled again).
    answered: bool,
    /// The legacy server refused with -32042: once the URL elicitations are accepted, the proxy
    /// sends the original request again (T9). `Some(false)` once one was declined or cancelled.
    reissue: Option<bool>,
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
enum Step {
    /// The legacy call answered: this is the front response.
    Finished(Result<Reply, ErrorObject>),
    /// The legacy call waits for input: park it and answer `input_required`.
    Pause,
    /// The front request ends without the legacy call: answer with the error, if the client is
    /// still there, and cancel the legacy call.
    Fail(Option<ErrorObject>),
}

/// The proxy's core; shared by every front connection.
pub struct Engine {
    /// The engine's own `Arc`, for the `Handler` entry point (which receives `&self`).
    me: std::sync::Weak<Engine>,
    pool: Arc<LanePool>,
    sealer: Sealer,
    store: PauseStore,
    settings: EngineSettings,
    live: Mutex<HashMap<PauseId, LiveCall>>,
    warned: Mutex<HashSet<(String, RuleId)>>,
    store_health: Arc<StoreHealth>,
    /// The legacy tools' `x-mcp-header` annotations, for the `Mcp-Param-*` check.
    tool_headers: ToolHeaderIndex,
    /// The legacy `resources/subscribe`s of the `subscriptions/listen` streams.
    resource_subscriptions: ResourceSubscriptions,
    /// Cancelled when shutdown begins: listen streams end with their `complete` result.
    drained: tokio_util::sync::CancellationToken,
    /// Set when shutdown begins: calls in flight may finish, none pauses any more, and
    /// `/readyz` answers 503 (see [`Engine::begin_drain`]).
    draining: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

fn invalid_params(message: impl Into<String>) -> ErrorObject {
    ErrorObject::new(codes::INVALID_PARAMS, message)
}

fn internal(message: impl Into<String>) -> ErrorObject {
    ErrorObject::new(codes::INTERNAL_ERROR, message)
}

impl Engine {
    pub fn new(
        pool: Arc<LanePool>,
        sealer: Sealer,
        store: PauseStore,
        settings: EngineSettings,
    ) -> Arc<Self> {
        Engine::with_store_health(pool, sealer, store, settings, StoreHealth::new(None))
    }

    /// Like [`Engine::new`], with the health check of a store opened from a directory.
    pub fn with_store_health(
        pool: Arc<LanePool>,
        sealer: Sealer,
        store: PauseStore,
        settings: EngineSettings,
        store_health: StoreHealth,
    ) -> Arc<Self> {
        Arc::new_cyclic(|me| Engine {
            me: me.clone(),
            pool,
            sealer,
            store,
            settings,
            live: Mutex::new(HashMap::new()),
            warned: Mutex::new(HashSet::new()),
            store_health: Arc::new(store_health),
            tool_headers: ToolHeaderIndex::default(),
            resource_subscriptions: ResourceSubscriptions::default(),
            drained: tokio_util::sync::CancellationToken::new(),
            draining: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Registers the engine's gauges (paused calls, lanes) with the global metrics; they are
    /// read at each scrape for as long as the engine lives.
    pub fn register_metrics(self: &Arc<Self>) {
        let engine = Arc::downgrade(self);
        crate::metrics::global().on_render(Box::new(move |metrics| {
            let Some(engine) = engine.upgrade() else {
                return false;
            };
            metrics.set_paused(engine.paused_calls());
            let (open, leased) = engine.pool.lane_stats();
            metrics.set_lanes(open, leased);
            true
        }));
    }

    /// Probes whether the pause store can record pauses (see [`StoreHealth`]); the engine
    /// refuses new pauses while it cannot.
    pub fn probe_store(&self) {
        self.store_health.probe(&self.store);
    }

    /// `Err(reason)` while the pause store cannot record pauses.
    pub fn store_writable(&self) -> Result<(), String> {
        self.store_health.check()
    }

    /// Starts the shutdown: calls in flight may still finish, but none may pause any more, and
    /// `/readyz` answers 503.
    pub fn begin_drain(&self) {
        self.draining
            .store(true, std::sync::atomic::Ordering::Release);
        self.drained.cancel();
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Ends every paused call at shutdown: the record becomes `lost` (a retry after a restart
    /// is told so), the pending legacy requests get `cancel`/an error, the legacy call
    /// `notifications/cancelled`, and the store is flushed. Returns how many were ended.
    pub async fn shutdown_pauses(&self) -> usize {
        self.begin_drain();
        let calls: Vec<(PauseId, LiveCall)> =
            self.live.lock().expect("live map lock").drain().collect();
        let count = calls.len();
        for (pause_id, mut live) in calls {
            if let Err(error) =
                self.store
                    .transition(&pause_id, PauseStatus::Paused, PauseStatus::Lost)
            {
                warn!(%error, pause = %pause_id, "could not mark a paused call lost");
            }
            self.abandon(&mut live, "the proxy is shutting down").await;
        }
        if let Err(error) = self.store.flush() {
            warn!(%error, "could not flush the pause store at shutdown");
        }
        count
    }

    /// The number of calls paused in memory (for tests and metrics).
    pub fn paused_calls(&self) -> usize {
        self.live.lock().expect("live map lock").len()
    }

    /// Logs a deprecation warning once per (client, rule), under the linter's rule names.
    fn warn_deprecated(&self, client: &str, rule: RuleId, what: &str) {
        let first = self
            .warned
            .lock()
            .expect("warned set lock")
            .insert((client.to_owned(), rule));
        if first {
            let rule = rule.rule();
            crate::metrics::global().deprecation_warning(rule.name);
            warn!(
                rule = rule.name,
                code = rule.code,
                client,
                "{what}: {} (see `cargo mcp-lint --explain {}`)",
                rule.summary,
                rule.name
            );
        }
    }

    fn client_label(request: &FrontRequest) -> String {
        let name = request
            .client_info
            .as_ref()
            .and_then(|info| info.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("unnamed-client");
        format!("{name}@{}", request.principal.display_label())
    }

    fn note_client_deprecations(&self, request: &FrontRequest, profile: &CapabilityProfile) {
        if !(profile.sampling || profile.roots || profile.sampling_context) {
            return;
        }
        let client = Engine::client_label(request);
        if profile.sampling {
            self.warn_deprecated(
                &client,
                RuleId::DeprecatedSampling,
                "client declares the sampling capability",
            );
        }
        if profile.roots {
            self.warn_deprecated(
                &client,
                RuleId::DeprecatedRoots,
                "client declares the roots capability",
            );
        }
        if profile.sampling_context {
            self.warn_deprecated(
                &client,
                RuleId::DeprecatedIncludeContext,
                "client declares sampling.context",
            );
        }
    }

    /// Serves one validated front request to completion.
    pub async fn serve(self: Arc<Self>, request: FrontRequest, sink: ResponseSink) {
        let profile = CapabilityProfile::from_client_capabilities(&request.client_capabilities);
        self.note_client_deprecations(&request, &profile);
        let method = request.method.clone();
        if method == "server/discover" {
            let outcome = self.discover().await;
            sink.finish(request.id, outcome).await;
        } else if PASS_THROUGH.contains(&method.as_str()) {
            self.pass_through(request, profile, sink).await;
        } else if CORRELATABLE.contains(&method.as_str()) {
            self.correlatable(request, profile, sink).await;
        } else if method == "subscriptions/listen" {
            self.listen(request, sink).await;
        } else {
            let error = ErrorObject::new(
                codes::METHOD_NOT_FOUND,
                format!("`{method}` is not supported by mcp-mrtr-proxy"),
            );
            sink.finish(request.id, Err(error)).await;
        }
    }

    /// `subscriptions/listen` (T16, [`crate::subscriptions`]): acknowledge what the legacy
    /// server can deliver of the filter, then forward its change notifications, tagged with the
    /// subscription id, until the client leaves (or cancels), the proxy shuts down (a `complete`
    /// result), or the lane holding the stream's resource subscriptions dies (no result: the
    /// client listens again).
    async fn listen(self: Arc<Self>, request: FrontRequest, mut sink: ResponseSink) {
        let id = request.id.clone();
        let asked = match ListenFilter::parse(&request.params) {
            Ok(filter) => filter,
            Err(message) => {
                sink.finish(id, Err(invalid_params(message))).await;
                return;
            }
        };
        if self.is_draining() {
            sink.finish(id, Err(internal("the proxy is shutting down")))
                .await;
            return;
        }
        let initialized = match self.pool.initialized().await {
            Ok(initialized) => initialized,
            Err(error) => {
                sink.finish(id, Err(internal(error.to_string()))).await;
                return;
            }
        };
        let mut honoured = asked.supported_by(initialized.result.get("capabilities"));
        // From here on nothing the legacy server announces is missed.
        let mut feed = self.pool.subscribe_changes();
        let timeout = self.settings.request_timeout;
        let acquired = if honoured.resource_subscriptions.is_empty() {
            None
        } else {
            match self
                .resource_subscriptions
                .acquire(
                    &self.pool,
                    &CapabilityProfile::from_client_capabilities(&request.client_capabilities),
                    &honoured.resource_subscriptions,
                    timeout,
                )
                .await
            {
                Ok(acquired) => Some(acquired),
                Err(why) => {
                    sink.finish(id, Err(internal(why))).await;
                    return;
                }
            }
        };
        honoured.resource_subscriptions = acquired
            .as_ref()
            .map(|acquired| acquired.uris.clone())
            .unwrap_or_default();
        debug!(filter = %honoured.to_value(), "listen stream opened");
        let acknowledged = Message::Notification {
            method: crate::subscriptions::ACKNOWLEDGED.into(),
            params: Some(json!({
                "_meta": { crate::subscriptions::SUBSCRIPTION_ID: id },
                "notifications": honoured.to_value(),
            })),
        };
        let mut open = sink.notify(acknowledged).await;
        let mut lane_check = tokio::time::interval(Duration::from_secs(1));
        lane_check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let graceful = loop {
            if !open {
                break false;
            }
            tokio::select! {
                () = sink.closed() => break false,
                () = self.drained.cancelled() => break true,
                notice = feed.recv() => match notice {
                    Ok(notice) => {
                        if honoured.wants(&notice.method, &notice.params) {
                            let message = crate::subscriptions::tagged(
                                &notice.method,
                                &notice.params,
                                &id,
                            );
                            open = sink.notify(message).await;
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                        warn!(missed, "a listen stream fell behind: it is told about everything it listens to");
                        for (method, params) in honoured.catch_up() {
                            let message = crate::subscriptions::tagged(method, &params, &id);
                            if !sink.notify(message).await {
                                open = false;
                                break;
                            }
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break true,
                },
                _ = lane_check.tick() => {
                    if acquired.as_ref().is_some_and(|acquired| !acquired.still_held()) {
                        info!("the legacy session holding a listen stream's resource subscriptions ended: so does the stream");
                        let error = internal(
                            "the legacy server's session that held this stream's resource \
                             subscriptions ended (it restarted or went away): listen again",
                        );
                        sink.finish(id, Err(error)).await;
                        return;
                    }
                }
            }
        };
        if let Some(acquired) = &acquired {
            self.resource_subscriptions.release(acquired, timeout).await;
        }
        if graceful {
            let result = json!({
                "resultType": "complete",
                "_meta": { crate::subscriptions::SUBSCRIPTION_ID: id },
            });
            sink.finish(id, Ok(result)).await;
        }
    }

    async fn discover(&self) -> Result<Value, ErrorObject> {
        let initialized = self
            .pool
            .initialized()
            .await
            .map_err(|error| internal(error.to_string()))?;
        let legacy = &initialized.result;
        let capabilities = front_capabilities(legacy.get("capabilities"));
        if legacy.pointer("/capabilities/logging").is_some() {
            self.warn_deprecated(
                "legacy-server",
                RuleId::DeprecatedLogging,
                "the legacy server declares the logging capability",
            );
        }
        let mut result = json!({
            "resultType": "complete",
            "supportedVersions": [FRONT_VERSION],
            "capabilities": capabilities,
            "ttlMs": 0,
            "cacheScope": "private",
        });
        if let Some(instructions) = legacy.get("instructions") {
            result["instructions"] = instructions.clone();
        }
        if let Some(info) = legacy.get("serverInfo") {
            result["_meta"] = json!({ "io.modelcontextprotocol/serverInfo": info });
        }
        Ok(result)
    }

    /// The params to forward: the front params without MRTR fields and without the 2026-only
    /// `io.modelcontextprotocol/*` `_meta` keys; `progressToken` replaced by a proxy-minted one.
    fn legacy_params(params: &Value, progress_token: Option<&str>) -> Value {
        let Some(object) = params.as_object() else {
            return params.clone();
        };
        // Built from the kept members only: the 2026 `_meta` (capabilities, client info) and
        // the MRTR fields are never copied just to be dropped.
        let mut legacy = Map::new();
        let mut meta = Map::new();
        for (key, value) in object {
            match key.as_str() {
                "inputResponses" | "requestState" => {}
                "_meta" => {
                    for (key, value) in value.as_object().into_iter().flatten() {
                        if key != "progressToken" && !key.starts_with("io.modelcontextprotocol/") {
                            meta.insert(key.clone(), value.clone());
                        }
                    }
                }
                _ => {
                    legacy.insert(key.clone(), value.clone());
                }
            }
        }
        if let Some(token) = progress_token {
            meta.insert("progressToken".into(), token.into());
        }
        if !meta.is_empty() {
            legacy.insert("_meta".into(), Value::Object(meta));
        }
        Value::Object(legacy)
    }

    async fn pass_through(
        self: Arc<Self>,
        request: FrontRequest,
        profile: CapabilityProfile,
        sink: ResponseSink,
    ) {
        let method = request.method.clone();
        let outcome = async {
            let lane = self
                .pool
                .shared(&profile)
                .await
                .map_err(|error| internal(error.to_string()))?;
            let call = lane
                .request(&method, Engine::legacy_params(&request.params, None))
                .await
                .map_err(|error| internal(error.to_string()))?;
            let legacy_id = call.legacy_id.clone();
            tokio::select! {
                response = call.response => flatten(response),
                () = tokio::time::sleep(self.settings.request_timeout) => {
                    let _ = lane.cancel(&legacy_id, "timeout").await;
                    Err(internal(BackendError::Timeout(self.settings.request_timeout).to_string()))
                }
                () = sink.closed() => {
                    let _ = lane.cancel(&legacy_id, "the client disconnected").await;
                    Err(internal("cancelled"))
                }
            }
        }
        .await;
        let outcome = outcome
            .and_then(|result| decorate_reply(&method, result))
            .map_err(translate_error);
        sink.finish_reply(request.id, outcome).await;
    }

    async fn correlatable(
        self: Arc<Self>,
        request: FrontRequest,
        profile: CapabilityProfile,
        sink: ResponseSink,
    ) {
        if let Err(error) = self.check_param_headers(&request, &profile).await {
            sink.finish(request.id, Err(error)).await;
            return;
        }
        let state = request.params.get("requestState").cloned();
        match state {
            None => self.start(request, profile, sink).await,
            Some(Value::String(state)) => self.resume(request, profile, &state, sink).await,
            Some(_) => {
                sink.finish(
                    request.id,
                    Err(invalid_params("`requestState` must be a string")),
                )
                .await;
            }
        }
    }

    /// The `Mcp-Param-*` check of a `tools/call` over Streamable HTTP ([`crate::param_headers`]):
    /// `-32020` when the headers disagree with `arguments`. Decided before anything reaches the
    /// legacy server or the response starts.
    async fn check_param_headers(
        &self,
        request: &FrontRequest,
        profile: &CapabilityProfile,
    ) -> Result<(), ErrorObject> {
        let Some(headers) = request.param_headers.as_ref() else {
            return Ok(());
        };
        let Some(name) = request.params.get("name").and_then(Value::as_str) else {
            return Ok(());
        };
        let arguments = request.params.get("arguments");
        let verdict = |known: &ToolHeaders| {
            known.tools.get(name).map_or(Ok(()), |params| {
                crate::param_headers::check(params, arguments, headers)
            })
        };
        // Per call: decided under the index's read lock when the tools are known and current.
        let generation = self.pool.tools_generation();
        let decided = self
            .tool_headers
            .with_current(profile, generation, |known| (verdict(known), known.loaded));
        let (mut outcome, loaded) = match decided {
            Some(decided) => decided,
            None => {
                let known = self.tool_headers(profile, None).await?;
                (verdict(&known), known.loaded)
            }
        };
        if outcome.is_err() && loaded.elapsed() >= TOOL_HEADERS_RECHECK_AFTER {
            let fresh = self.tool_headers(profile, Some(loaded)).await?;
            outcome = verdict(&fresh);
        }
        outcome.map_err(|problem| {
            crate::metrics::global().rejection("header_mismatch");
            debug!(tool = name, %problem, "refused a tools/call: Mcp-Param header mismatch");
            ErrorObject::new(
                codes::HEADER_MISMATCH,
                format!("Header mismatch: {problem}"),
            )
        })
    }

    /// What the legacy `tools/list` says of the tools' annotations for `profile`: known and
    /// current, or fetched now (one fetch at a time; a list change makes it stale).
    /// `newer_than`: refetch unless what is known was loaded after that instant.
    async fn tool_headers(
        &self,
        profile: &CapabilityProfile,
        newer_than: Option<std::time::Instant>,
    ) -> Result<Arc<ToolHeaders>, ErrorObject> {
        let fresh_enough = |known: &ToolHeaders| newer_than.is_none_or(|at| known.loaded > at);
        let generation = self.pool.tools_generation();
        if let Some(known) = self.tool_headers.current(profile, generation) {
            if fresh_enough(&known) {
                return Ok(known);
            }
        }
        let _loading = self.tool_headers.loading.lock().await;
        // Read before the fetch: a change announced during it leaves the result stale.
        let generation = self.pool.tools_generation();
        if let Some(known) = self.tool_headers.current(profile, generation) {
            if fresh_enough(&known) {
                return Ok(known);
            }
        }
        let mut headers = ToolHeaders {
            generation,
            loaded: std::time::Instant::now(),
            tools: HashMap::new(),
        };
        let lane = self
            .pool
            .shared(profile)
            .await
            .map_err(|error| internal(error.to_string()))?;
        let mut cursor: Option<String> = None;
        for _ in 0..TOOL_LIST_MAX_PAGES {
            let params = match &cursor {
                Some(cursor) => json!({ "cursor": cursor }),
                None => json!({}),
            };
            let call = lane
                .request("tools/list", params)
                .await
                .map_err(|error| internal(error.to_string()))?;
            let response = tokio::time::timeout(self.settings.request_timeout, call.response)
                .await
                .map_err(|_| {
                    internal(BackendError::Timeout(self.settings.request_timeout).to_string())
                })?;
            let page = match response {
                // The server lists no tools (no `tools` capability, or it failed): nothing to
                // check against; its answer to the call itself will say more.
                Ok(Ok(Err(error))) => {
                    debug!(code = error.code, message = %error.message,
                        "the legacy tools/list failed: no Mcp-Param headers are checked");
                    break;
                }
                other => flatten(other)?.into_value()?,
            };
            for (tool, reason) in headers.add_page(&page) {
                warn!(
                    tool = %tool,
                    %reason,
                    "legacy tool with invalid x-mcp-header annotations: 2026-07-28 clients drop it, \
                     and the proxy checks none of its Mcp-Param headers"
                );
            }
            cursor = page
                .get("nextCursor")
                .and_then(Value::as_str)
                .map(str::to_owned);
            if cursor.is_none() {
                break;
            }
        }
        let headers = Arc::new(headers);
        self.tool_headers.store(profile, Arc::clone(&headers));
        Ok(headers)
    }

    async fn start(
        self: Arc<Self>,
        request: FrontRequest,
        profile: CapabilityProfile,
        sink: ResponseSink,
    ) {
        // A paused call keeps its lane (or, on a shared session, its response stream) until the
        // retry or the TTL: no pause ever yields to a new call. When no lane can be had, the
        // pool refuses the *new* call (`BackendError::Exhausted`), retryably.
        let lease = tokio::select! {
            biased;
            lease = self.pool.call_lease(&profile, &request.method, &request.params) => lease,
            () = sink.closed() => return,
        };
        let mut lease = match lease {
            Ok(lease) => lease,
            Err(BackendError::Exhausted { lanes }) => {
                warn!(
                    lanes,
                    "refused a call: every legacy lane is held by a paused call"
                );
                sink.finish(request.id, Err(limits::capacity_refusal(lanes)))
                    .await;
                return;
            }
            Err(error) => {
                sink.finish(request.id, Err(internal(error.to_string())))
                    .await;
                return;
            }
        };
        // Unique per lane (= per legacy session), which is all a progress token needs; no
        // random bytes per call.
        let token = lease.lane.mint_progress_token();
        let legacy_request = Engine::legacy_params(&request.params, token.as_str());
        let call = match lease.request(&request.method, legacy_request).await {
            Ok(call) => call,
            Err(error) => {
                sink.finish(request.id, Err(internal(error.to_string())))
                    .await;
                return;
            }
        };
        let live = LiveCall {
            lease,
            call,
            method: request.method.clone(),
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
            answered: false,
            reissue: None,
        };
        self.pump(live, &request, sink).await;
    }

    async fn resume(
        self: Arc<Self>,
        request: FrontRequest,
        profile: CapabilityProfile,
        state: &str,
        sink: ResponseSink,
    ) {
        let digest = params_digest(&request.params);
        let claims = match self.sealer.open_for(
            state,
            now_ms(),
            &request.principal,
            &request.method,
            &digest,
        ) {
            Ok(claims) => claims,
            Err(error) => {
                crate::metrics::global().rejection(state_rejection_reason(&error));
                info!(reason = error.reason(), method = %request.method, "rejected requestState");
                sink.finish(
                    request.id,
                    Err(invalid_params(format!("invalid requestState: {error}"))),
                )
                .await;
                return;
            }
        };
        if let Err(error) = self.store.claim(&claims.pause_id, now_ms()) {
            crate::metrics::global().rejection(claim_rejection_reason(&error));
            let (code, message) = match &error {
                // The state is authentic (it opened with our key), so the pause existed: its
                // record went with a crash before sled's periodic flush, or was pruned.
                ClaimError::Unknown => (
                    codes::INTERNAL_ERROR,
                    "the paused call was lost: this proxy has no record of it any more (it restarted, or the record was pruned); send the original request again without requestState".to_owned(),
                ),
                ClaimError::Lost => (
                    codes::INTERNAL_ERROR,
                    format!("the paused call was lost: {error}"),
                ),
                ClaimError::Store(_) => (codes::INTERNAL_ERROR, error.to_string()),
                ClaimError::Evicted(_) => (codes::INVALID_PARAMS, error.to_string()),
                _ => (
                    codes::INVALID_PARAMS,
                    format!("invalid requestState: {error}"),
                ),
            };
            info!(pause = %claims.pause_id, %error, "refused retry");
            sink.finish(request.id, Err(ErrorObject::new(code, message)))
                .await;
            return;
        }
        let live = self
            .live
            .lock()
            .expect("live map lock")
            .remove(&claims.pause_id);
        let Some(mut live) = live else {
            crate::metrics::global().rejection("state_lost");
            let _ = self.store.set_status(&claims.pause_id, PauseStatus::Lost);
            sink.finish(
                request.id,
                Err(internal(
                    "the paused call was lost: its legacy session is gone (the backend exited or the proxy restarted)",
                )),
            )
            .await;
            return;
        };
        if orphaned(&mut live) {
            // Claimed before the sweep noticed: told the same as after it.
            crate::metrics::global().pause_expired("evicted");
            let _ = self
                .store
                .set_status(&claims.pause_id, PauseStatus::Evicted);
            let error = ClaimError::Evicted(SESSION_ENDED.to_owned());
            sink.finish(request.id, Err(invalid_params(error.to_string())))
                .await;
            return;
        }
        let _ = self
            .store
            .set_status(&claims.pause_id, PauseStatus::Finished);
        live.profile = profile;
        let mut responses = input_responses(&request.params);
        let round_keys: HashSet<String> = live.pending.keys().cloned().collect();
        if let Err(error) = self.deliver(&mut live, &responses).await {
            sink.finish(
                request.id,
                Err(internal(format!(
                    "the paused call was lost: the legacy server is gone ({error})"
                ))),
            )
            .await;
            return;
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
                        .request(
                            &live.method,
                            Engine::legacy_params(&request.params, live.progress_token.as_str()),
                        )
                        .await;
                    match sent {
                        Ok(call) => {
                            live.call = call;
                            live.answered = false;
                            live.reissue = None;
                        }
                        Err(error) => {
                            sink.finish(request.id, Err(internal(error.to_string())))
                                .await;
                            return;
                        }
                    }
                }
                Some(false) => {
                    sink.finish(request.id, declined_url_outcome(&live.method))
                        .await;
                    return;
                }
                None => {}
            }
        }
        self.pump(live, &request, sink).await;
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

    /// Runs the legacy call until it answers (then answers the front request), or until it needs
    /// input (then parks it and answers `input_required`), or until the client leaves.
    async fn pump(&self, mut live: LiveCall, request: &FrontRequest, mut sink: ResponseSink) {
        // The front's `request` span already names the method and the principal; the fields of
        // this one are only computed when debug logging is on.
        let span = tracing::debug_span!(
            "call",
            method = %live.method,
            client = %Engine::client_label(request)
        );
        let step = self
            .run(&mut live, request, &mut sink)
            .instrument(span)
            .await;
        let id = request.id.clone();
        match step {
            Step::Finished(outcome) => {
                crate::metrics::global().call_finished(live.round);
                sink.finish_reply(id, outcome).await;
            }
            Step::Pause => match self.park(live, request) {
                Ok(result) => sink.finish(id, Ok(result)).await,
                Err(failed) => {
                    let (mut live, error) = *failed;
                    self.abandon(&mut live, "the proxy could not pause the call")
                        .await;
                    sink.finish(id, Err(error)).await;
                }
            },
            Step::Fail(error) => {
                self.abandon(&mut live, "the client request ended").await;
                if let Some(error) = error {
                    sink.finish(id, Err(error)).await;
                }
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
        let mut silent_until = tokio::time::Instant::now() + call_timeout;
        loop {
            tokio::select! {
                biased;
                () = sink.closed() => return Step::Fail(None),
                response = &mut live.call.response, if !live.answered => {
                    live.answered = true;
                    self.settle(live, request, sink).await;
                    // A call that was paused and whose legacy side is gone is a lost pause,
                    // whether the retry noticed the dead backend before or after delivering.
                    let outcome = match response {
                        Ok(Err(error)) if live.round > 0 => Err(lost_call(&error)),
                        Err(_) if live.round > 0 => Err(lost_call(&BackendError::Crashed)),
                        response => flatten(response),
                    };
                    if let Err(error) = &outcome {
                        if error.code == codes::LEGACY_URL_ELICITATION_REQUIRED {
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
                    silent_until = tokio::time::Instant::now() + call_timeout;
                    if let Some(error) = self.on_event(live, request, sink, event).await {
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
                () = tokio::time::sleep_until(silent_until), if live.pending.is_empty() => {
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

    /// Delivers what the legacy server sent before its response but the proxy has not handled
    /// yet: it belongs to this request. Over an HTTP backend, logs travel on the session's GET
    /// stream, apart from the response (rmcp 2.x), and may arrive after it: when the front
    /// request asked for logs, wait `LOG_LINGER` for them.
    async fn settle(&self, live: &mut LiveCall, request: &FrontRequest, sink: &mut ResponseSink) {
        while let Ok(event) = live.lease.events.try_recv() {
            let _ = self.on_event(live, request, sink, event).await;
        }
        if request.log_level.is_none() || live.lease.lane.transport() != "http" {
            return;
        }
        let deadline = tokio::time::Instant::now() + LOG_LINGER;
        loop {
            tokio::select! {
                event = live.lease.events.recv() => match event {
                    Some(event) => {
                        let _ = self.on_event(live, request, sink, event).await;
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
                        &Engine::client_label(request),
                        RuleId::DeprecatedSampling,
                        "the legacy server sent sampling/createMessage",
                    ),
                    "roots/list" => self.warn_deprecated(
                        &Engine::client_label(request),
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
                let input_request = input_request(&method, &params, &live.profile);
                let size =
                    serde_json::to_vec(&input_request).map_or(usize::MAX, |bytes| bytes.len());
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
                    PendingInput {
                        legacy_id: id,
                        method,
                        legacy_params: params,
                        input_request,
                    },
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
                            &Engine::client_label(request),
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

    /// Parks the call in the live map and the store; returns the `input_required` result.
    fn park(
        &self,
        mut live: LiveCall,
        request: &FrontRequest,
    ) -> Result<Value, Box<(LiveCall, ErrorObject)>> {
        if self.draining.load(std::sync::atomic::Ordering::Acquire) {
            crate::metrics::global().rejection("draining");
            return Err(Box::new((
                live,
                internal("the proxy is shutting down: the call was cancelled instead of paused; send it again later"),
            )));
        }
        if let Err(reason) = self.store_health.check() {
            crate::metrics::global().rejection("store_unwritable");
            return Err(Box::new((
                live,
                limits::limit_error(
                    format!("the call needs input but cannot be paused: {reason}; the call was cancelled"),
                    "store-writable",
                    0,
                ),
            )));
        }
        // Count and insert under one lock, so concurrent pauses cannot overshoot the caps.
        let mut paused = self.live.lock().expect("live map lock");
        let for_principal = paused
            .values()
            .filter(|call| call.principal == live.principal)
            .count();
        if let Err(refusal) = limits::check_pause(
            &self.settings.limits,
            paused.len(),
            for_principal,
            live.round + 1,
        ) {
            drop(paused);
            warn!(?refusal, "refused to pause a call");
            crate::metrics::global().rejection(refusal.metric_reason());
            return Err(Box::new((live, refusal.to_error())));
        }
        live.round += 1;
        // Answers offered by this front request apply to it only; the retry brings its own.
        live.offered.clear();
        let pause_id = PauseId::random();
        let now = now_ms();
        let deadline = now.saturating_add(self.settings.pause_ttl.as_millis() as u64);
        let record = PauseRecord {
            pause_id,
            boot_id: self.store.boot_id(),
            status: PauseStatus::Paused,
            method: live.method.clone(),
            round: live.round,
            principal_label: live.principal.label(),
            created_ms: now,
            deadline_ms: deadline,
            input_keys: live.pending.keys().cloned().collect(),
        };
        if let Err(error) = self.store.insert(&record) {
            drop(paused);
            self.store_health
                .fail(format!("recording a pause failed: {error}"));
            return Err(Box::new((
                live,
                internal(format!("could not record the paused call: {error}")),
            )));
        }
        let claims = Claims {
            pause_id,
            principal: live.principal.clone(),
            method: live.method.clone(),
            params_digest: *live
                .params_digest
                .get_or_insert_with(|| params_digest(&request.params)),
            round: live.round,
            expires_at_ms: deadline,
        };
        let input_requests: Map<String, Value> = live
            .pending
            .iter()
            .map(|(key, pending)| (key.clone(), pending.input_request.clone()))
            .collect();
        let result = json!({
            "resultType": "input_required",
            "inputRequests": input_requests,
            "requestState": self.sealer.seal(&claims),
        });
        crate::metrics::global().round(&live.method);
        info!(pause = %pause_id, round = live.round, inputs = live.pending.len(), "paused legacy call");
        paused.insert(pause_id, live);
        Ok(result)
    }

    /// Ends a legacy call the front no longer wants: answers its pending requests with cancel or
    /// an error, and sends `notifications/cancelled` for the call.
    async fn abandon(&self, live: &mut LiveCall, reason: &str) {
        for (_, pending) in std::mem::take(&mut live.pending) {
            if pending.legacy_id.is_null() {
                continue;
            }
            let _ = live
                .lease
                .lane
                .respond(pending.legacy_id, refusal_for(&pending.method))
                .await;
        }
        if live.answered {
            return;
        }
        // `cancel` also forgets the pending request: the legacy server will not answer it.
        let sent = live.lease.lane.cancel(&live.call.legacy_id, reason).await;
        info!(legacy_id = %live.call.legacy_id, reason, delivered = sent.is_ok(), "cancelled the legacy call");
    }

    /// Evicts the paused calls whose legacy session ended under them (the legacy server exited,
    /// dropped or re-initialized the session): their retries are told so rather than finding out late.
    async fn evict_orphans(&self) {
        let orphans: Vec<PauseId> = {
            let mut live = self.live.lock().expect("live map lock");
            live.iter_mut()
                .filter_map(|(id, call)| orphaned(call).then_some(*id))
                .collect()
        };
        for pause_id in orphans {
            match self.store.evict(&pause_id, SESSION_ENDED) {
                Ok(true) => {}
                // A retry is claiming it right now: it finds the dead lane itself.
                Ok(false) => continue,
                Err(error) => {
                    warn!(%error, pause = %pause_id, "could not evict a pause");
                    continue;
                }
            }
            let live = self.live.lock().expect("live map lock").remove(&pause_id);
            if let Some(mut live) = live {
                crate::metrics::global().pause_expired("evicted");
                warn!(pause = %pause_id, reason = SESSION_ENDED, "evicted a paused call");
                self.abandon(&mut live, SESSION_ENDED).await;
            }
        }
    }

    /// Expires pauses whose deadline has passed: their legacy requests get `cancel` or an error,
    /// the legacy call is cancelled, the lane goes back to the pool. Evicts those whose legacy
    /// session ended.
    pub async fn sweep(&self) {
        self.evict_orphans().await;
        let expired = match self.store.expired(now_ms()) {
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
            {
                Ok(true) => {}
                Ok(false) => continue,
                Err(error) => {
                    warn!(%error, pause = %record.pause_id, "could not expire a pause");
                    continue;
                }
            }
            let live = self
                .live
                .lock()
                .expect("live map lock")
                .remove(&record.pause_id);
            if let Some(mut live) = live {
                crate::metrics::global().pause_expired("ttl");
                info!(pause = %record.pause_id, "pause expired: cancelling the legacy call");
                self.abandon(&mut live, "the client did not retry in time")
                    .await;
            }
        }
        // A record matters only until its deadline: a retry after it is refused as expired by
        // the state itself, before the store is asked. Keeping records longer only grows the
        // store (and the cost of each sweep's scan) with the number of pauses ever made.
        let _ = self
            .store
            .prune(now_ms().saturating_sub(RECORD_GRACE.as_millis() as u64));
    }
}

impl Handler for Engine {
    fn handle(&self, request: FrontRequest, sink: ResponseSink) -> BoxFuture<'static, ()> {
        match self.me.upgrade() {
            Some(engine) => Box::pin(engine.serve(request, sink)),
            // Only during shutdown, once the last `Arc` is gone.
            None => Box::pin(async move {
                sink.finish(request.id, Err(internal("the proxy is shutting down")))
                    .await;
            }),
        }
    }

    fn is_ready(&self) -> bool {
        self.pool.is_ready()
    }

    fn readiness(&self) -> Vec<(&'static str, bool)> {
        vec![
            ("backend", self.pool.is_ready()),
            ("store", self.store_writable().is_ok()),
            ("not_draining", !self.is_draining()),
        ]
    }
}

/// The `mcp_proxy_rejections_total` reason of a `requestState` that did not open.
fn state_rejection_reason(error: &crate::state::StateError) -> &'static str {
    use crate::state::StateError;
    match error {
        StateError::Malformed => "state_malformed",
        StateError::Forged => "state_tampered",
        StateError::Expired => "state_expired",
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

/// Waits for the batch window. A window that is already over (always so with `--batch-window 0ms`)
/// is over at once: `tokio::time::sleep_until` would still wait for the timer's next 1 ms tick.
async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) if deadline <= tokio::time::Instant::now() => {}
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

type LegacyOutcome = Result<
    Result<Result<Reply, ErrorObject>, BackendError>,
    tokio::sync::oneshot::error::RecvError,
>;

/// The error of a paused call whose legacy side went away after the pause.
fn lost_call(error: &BackendError) -> ErrorObject {
    internal(format!("the paused call was lost: {error}"))
}

fn flatten(response: LegacyOutcome) -> Result<Reply, ErrorObject> {
    match response {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(error)) => Err(internal(error.to_string())),
        Err(_) => Err(internal(BackendError::Crashed.to_string())),
    }
}

/// The `server/discover` capabilities for the legacy server's `initialize` capabilities: without
/// `tasks` (T21). `listChanged` and `resources.subscribe` stay: in 2026-07-28 they say what
/// `subscriptions/listen` delivers, and the proxy serves it from the legacy notifications (T16).
fn front_capabilities(legacy: Option<&Value>) -> Value {
    let mut capabilities = legacy.cloned().unwrap_or_else(|| json!({}));
    if let Some(map) = capabilities.as_object_mut() {
        map.remove("tasks");
    }
    capabilities
}

/// Adds what 2026-07-28 requires on results: `resultType`, and `ttlMs`/`cacheScope` on cacheable
/// ones (`private`, 0 ms: the proxy cannot know whether legacy lists differ per user).
fn decorate_result(method: &str, mut result: Value) -> Value {
    if let Some(map) = result.as_object_mut() {
        map.entry("resultType").or_insert_with(|| "complete".into());
        if CACHEABLE.contains(&method) {
            map.entry("ttlMs").or_insert_with(|| 0.into());
            map.entry("cacheScope").or_insert_with(|| "private".into());
        }
    }
    result
}

/// Which of the members [`decorate_result`] adds a raw result object has already (each read
/// without building a `Value`). A duplicate of one of them fails the read (then the `Value` path,
/// whose last duplicate wins, decides).
#[derive(serde::Deserialize)]
struct DecoratedMembers {
    #[serde(rename = "resultType", default)]
    result_type: Present,
    #[serde(rename = "ttlMs", default)]
    ttl_ms: Present,
    #[serde(rename = "cacheScope", default)]
    cache_scope: Present,
}

/// Whether a member is there, whatever its value (`null` included, as `Map::entry` sees it).
#[derive(Default)]
struct Present(bool);

impl<'de> serde::Deserialize<'de> for Present {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(deserializer)?;
        Ok(Present(true))
    }
}

/// [`decorate_result`] for a reply: a raw result object gets the same members added to its text
/// (no `Value` tree); anything unusual falls back to the `Value` path.
fn decorate_reply(method: &str, reply: Reply) -> Result<Reply, ErrorObject> {
    let mut raw: RawResult = match reply {
        Reply::Tree(result) => return Ok(Reply::Tree(decorate_result(method, result))),
        Reply::Raw(raw) if !raw.is_object() => return Ok(Reply::Raw(raw)),
        Reply::Raw(raw) => raw,
    };
    let Ok(members) = serde_json::from_str::<DecoratedMembers>(raw.text()) else {
        let result = Reply::Raw(raw).into_value()?;
        return Ok(Reply::Tree(decorate_result(method, result)));
    };
    if !members.result_type.0 {
        raw.push_member(r#""resultType":"complete""#);
    }
    if CACHEABLE.contains(&method) {
        if !members.ttl_ms.0 {
            raw.push_member(r#""ttlMs":0"#);
        }
        if !members.cache_scope.0 {
            raw.push_member(r#""cacheScope":"private""#);
        }
    }
    Ok(Reply::Raw(raw))
}

/// Legacy error codes 2026-07-28 forbids or reserves (T19).
fn translate_error(mut error: ErrorObject) -> ErrorObject {
    match error.code {
        codes::LEGACY_RESOURCE_NOT_FOUND => error.code = codes::INVALID_PARAMS,
        code if (-32099..=-32020).contains(&code) => {
            error.message = format!("{} (legacy error code {code})", error.message);
            error.code = codes::INTERNAL_ERROR;
        }
        _ => {}
    }
    error
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
        let input_request = input_request("elicitation/create", &params, &live.profile);
        live.pending.insert(
            key,
            PendingInput {
                legacy_id: Value::Null,
                method: "elicitation/create".into(),
                legacy_params: params,
                input_request,
            },
        );
    }
    live.reissue = Some(true);
    Some(Step::Pause)
}

/// The front answer when the user declined a URL elicitation of a -32042 round.
fn declined_url_outcome(method: &str) -> Result<Value, ErrorObject> {
    let message = "the user did not complete the URL elicitation the legacy server requires";
    if method == "tools/call" {
        Ok(json!({
            "resultType": "complete",
            "content": [{"type": "text", "text": message}],
            "isError": true,
        }))
    } else {
        Err(internal(message))
    }
}

/// The `inputResponses` object of front request params (empty when absent or not an object).
fn input_responses(params: &Value) -> Map<String, Value> {
    params
        .get("inputResponses")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// How the proxy refuses a legacy input request on the legacy side.
fn refusal_for(method: &str) -> Result<Value, ErrorObject> {
    match method {
        "elicitation/create" => Ok(json!({"action": "cancel"})),
        _ => Err(internal("the client cannot serve this request")),
    }
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

/// The `InputRequest` for a legacy request: `{method, params}` without `jsonrpc`/`id`, legacy-only
/// fields removed (`elicitationId`, `task`, `_meta`), deprecated `includeContext` values dropped
/// unless the client declared `sampling.context` (T8, T11).
fn input_request(method: &str, params: &Value, profile: &CapabilityProfile) -> Value {
    let mut params = params.clone();
    if let Some(map) = params.as_object_mut() {
        map.remove("_meta");
        map.remove("task");
        map.remove("elicitationId");
        if method == "sampling/createMessage" && !profile.sampling_context {
            if let Some(context) = map.get("includeContext").and_then(Value::as_str) {
                if context != "none" {
                    map.insert("includeContext".into(), "none".into());
                }
            }
        }
    }
    if method == "roots/list" && params.as_object().is_none_or(Map::is_empty) {
        json!({"method": method})
    } else {
        json!({"method": method, "params": params})
    }
}

/// Checks a client's answer against the input request kind and turns it into the legacy result;
/// `None` when it is not a valid answer (it is then asked again).
fn legacy_response(method: &str, legacy_params: &Value, answer: &Value) -> Option<Value> {
    let object = answer.as_object()?;
    match method {
        "elicitation/create" => {
            let action = object.get("action")?.as_str()?;
            if !matches!(action, "accept" | "decline" | "cancel") {
                return None;
            }
            let mut result = json!({"action": action});
            let url_mode = legacy_params.get("mode").and_then(Value::as_str) == Some("url");
            if action == "accept" && !url_mode {
                let content = object.get("content")?.as_object()?;
                result["content"] = Value::Object(content.clone());
            }
            Some(result)
        }
        "sampling/createMessage" => {
            object.get("role")?.as_str()?;
            object.get("content")?;
            let mut result = answer.clone();
            if let Some(map) = result.as_object_mut() {
                map.remove("resultType");
                map.entry("model").or_insert_with(|| "unknown".into());
            }
            Some(result)
        }
        "roots/list" => {
            object.get("roots")?.as_array()?;
            let mut result = answer.clone();
            if let Some(map) = result.as_object_mut() {
                map.remove("resultType");
            }
            Some(result)
        }
        _ => None,
    }
}

fn level_rank(level: &str) -> u8 {
    match level {
        "debug" => 0,
        "info" => 1,
        "notice" => 2,
        "warning" => 3,
        "error" => 4,
        "critical" => 5,
        "alert" => 6,
        "emergency" => 7,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn readiness_names_backend_store_and_draining() {
        let pool = LanePool::new(
            crate::backend::BackendSpec::Stdio {
                program: "/nonexistent/legacy-server".into(),
                args: Vec::new(),
            },
            crate::backend::PoolSettings {
                max_lanes: 1,
                roots: Vec::new(),
                client_info: json!({"name": "test", "version": "0"}),
                request_timeout: Duration::from_secs(1),
                call_sessions: Default::default(),
            },
        );
        let engine = Engine::new(
            pool,
            Sealer::new(&crate::state::StateKey::generate()),
            PauseStore::temporary().unwrap(),
            EngineSettings {
                pause_ttl: Duration::from_secs(60),
                batch_window: Duration::from_millis(10),
                request_timeout: Duration::from_secs(1),
                limits: crate::limits::CallLimits::default(),
            },
        );
        // No lane was started: the backend is not ready; the store is writable.
        assert_eq!(
            engine.readiness(),
            vec![("backend", false), ("store", true), ("not_draining", true)]
        );
        engine.begin_drain();
        assert!(engine.is_draining());
        assert_eq!(
            engine.readiness(),
            vec![("backend", false), ("store", true), ("not_draining", false)]
        );
    }

    #[test]
    fn state_rejections_have_metric_reasons() {
        use crate::state::StateError;
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

    #[test]
    fn results_get_result_type_and_caching_fields() {
        let listed = decorate_result("tools/list", json!({"tools": []}));
        assert_eq!(
            listed,
            json!({"tools": [], "resultType": "complete", "ttlMs": 0, "cacheScope": "private"})
        );
        let called = decorate_result("tools/call", json!({"content": []}));
        assert_eq!(called, json!({"content": [], "resultType": "complete"}));
    }

    /// The raw path adds exactly what the `Value` path adds, for every method and shape.
    #[test]
    fn raw_results_are_decorated_like_value_results() {
        for method in ["tools/call", "tools/list", "resources/read"] {
            for result in [
                r#"{"content":[]}"#,
                "{}",
                r#"{"resultType":"input_required","ttlMs":5}"#,
                r#"{"resultType":null,"cacheScope":"public"}"#,
                r#"{"resultType":"a","resultType":"b"}"#,
                r#"{"a":{"resultType":1}}"#,
                "[]",
                "3",
            ] {
                let text = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#);
                let Some(Message::RawResponse { result: raw, .. }) =
                    crate::jsonrpc::parse_raw_response(text.as_bytes())
                else {
                    panic!("{text}");
                };
                let Ok(Message::Response {
                    outcome: Ok(value), ..
                }) = Message::parse(text.as_bytes())
                else {
                    panic!("{text}");
                };
                let decorated = decorate_reply(method, Reply::Raw(raw)).unwrap();
                assert_eq!(
                    decorated.into_value().unwrap(),
                    decorate_result(method, value),
                    "{method} {result}"
                );
            }
        }
    }

    #[test]
    fn discover_keeps_the_legacy_capabilities_but_tasks() {
        let legacy = json!({
            "tools": {"listChanged": true},
            "prompts": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "logging": {},
            "completions": {},
            "tasks": {"list": {}},
            "experimental": {"x": {}},
        });
        assert_eq!(
            front_capabilities(Some(&legacy)),
            json!({
                "tools": {"listChanged": true},
                "prompts": {"listChanged": true},
                "resources": {"subscribe": true, "listChanged": true},
                "logging": {},
                "completions": {},
                "experimental": {"x": {}},
            })
        );
        assert_eq!(front_capabilities(None), json!({}));
    }

    #[test]
    fn forbidden_legacy_codes_are_translated() {
        assert_eq!(
            translate_error(ErrorObject::new(-32002, "no such resource")).code,
            codes::INVALID_PARAMS
        );
        let url = translate_error(ErrorObject::new(-32042, "url required"));
        assert_eq!(url.code, codes::INTERNAL_ERROR);
        assert_eq!(translate_error(ErrorObject::new(-32000, "x")).code, -32000);
    }

    #[test]
    fn input_requests_drop_legacy_fields() {
        let profile = CapabilityProfile::default();
        let url = input_request(
            "elicitation/create",
            &json!({"mode": "url", "message": "m", "url": "https://x", "elicitationId": "e1", "_meta": {"progressToken": 1}}),
            &profile,
        );
        assert_eq!(
            url,
            json!({"method": "elicitation/create", "params": {"mode": "url", "message": "m", "url": "https://x"}})
        );
        let sampling = input_request(
            "sampling/createMessage",
            // mcp-lint: allow(deprecated-include-context) the legacy value the proxy must rewrite
            &json!({"messages": [], "maxTokens": 5, "includeContext": "thisServer"}),
            &profile,
        );
        assert_eq!(sampling["params"]["includeContext"], "none");
        assert_eq!(
            input_request("roots/list", &json!({}), &profile),
            // mcp-lint: allow(deprecated-roots) the proxy translates legacy roots requests
            json!({"method": "roots/list"})
        );
    }

    #[test]
    fn answers_are_checked_per_kind() {
        let form = json!({"message": "m", "requestedSchema": {}});
        assert_eq!(
            legacy_response(
                "elicitation/create",
                &form,
                &json!({"action": "accept", "content": {"name": "A"}})
            ),
            Some(json!({"action": "accept", "content": {"name": "A"}}))
        );
        assert_eq!(
            legacy_response("elicitation/create", &form, &json!(12345)),
            None
        );
        assert_eq!(
            legacy_response("elicitation/create", &form, &Value::Null),
            None
        );
        assert_eq!(
            legacy_response("elicitation/create", &form, &json!({"action": "accept"})),
            None
        );
        assert_eq!(
            legacy_response("elicitation/create", &form, &json!({"action": "decline"})),
            Some(json!({"action": "decline"}))
        );
        let url = json!({"mode": "url", "message": "m", "url": "https://x"});
        assert_eq!(
            legacy_response("elicitation/create", &url, &json!({"action": "accept"})),
            Some(json!({"action": "accept"}))
        );
        assert!(legacy_response("roots/list", &json!({}), &json!({"roots": []})).is_some());
        assert!(legacy_response("roots/list", &json!({}), &json!({"roots": 3})).is_none());
        assert!(legacy_response(
            "sampling/createMessage",
            &json!({}),
            &json!({"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"})
        )
        .is_some());
    }

    #[test]
    fn legacy_params_lose_mrtr_fields_and_modern_meta() {
        let params = json!({
            "name": "ask_name",
            "arguments": {},
            "inputResponses": {"a": 1},
            // mcp-lint: allow(unsigned-request-state) a client retry's echo, stripped before forwarding
            "requestState": "s",
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "progressToken": "client-token",
                "traceparent": "00-x"
            }
        });
        assert_eq!(
            Engine::legacy_params(&params, Some("mrtr-1")),
            json!({"name": "ask_name", "arguments": {}, "_meta": {"progressToken": "mrtr-1", "traceparent": "00-x"}})
        );
    }
}
