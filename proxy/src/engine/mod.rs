//! The translator: 2026-07-28 requests in, legacy sessions out, pauses in between.
//!
//! [`Engine::serve_as`] is the router: it sends each validated request down one call path and
//! answers the front (the request's [`ResponseSink`]) in one place with what the path returns
//! ([`Answer`]). The paths, one concern per module:
//!
//! - [`discover`]: `server/discover` from the legacy `InitializeResult` (T3);
//! - [`pass_through`]: `tools/list` & co. on a shared lane (T5, T19);
//! - [`listen`]: `subscriptions/listen` (T16);
//! - [`headers`]: the `Mcp-Param-*` check of a `tools/call`;
//! - [`call_loop`]: a correlatable call (`tools/call`, `resources/read`, `prompts/get`) while it
//!   runs: started on a leased lane, its lane events pumped until it answers or needs input;
//! - [`pauses`]: the multi-round state machine (Running → Paused → Claimed → Finished, and
//!   Abandoned / Expired / Evicted / Lost), sole owner of the live calls and their records;
//! - [`wire`]: pure translation helpers.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use mcp_migrate_rules::RuleId;
use serde_json::Value;
use tracing::warn;

use crate::backend::{LanePool, PrincipalPools};
use crate::capabilities::CapabilityProfile;
use crate::jsonrpc::{codes, ErrorObject, Reply};
use crate::limits::CallLimits;
use crate::param_headers::ToolHeaderIndex;
use crate::request::{FrontRequest, Handler, ResponseSink};
use crate::state::Sealer;
use crate::store::PauseStore;
use crate::subscriptions::ResourceSubscriptions;

mod abandon;
mod call_loop;
mod discover;
mod headers;
mod listen;
mod pass_through;
mod pauses;
mod progress_tokens;
mod wire;

pub use wire::INPUT_KEY_HINT;

/// The only protocol version the front speaks.
pub const FRONT_VERSION: &str = "2026-07-28";

/// Methods whose results may be `input_required`.
const CORRELATABLE: &[&str] = &["tools/call", "resources/read", "prompts/get"];

/// What a call path returns for the front: the final response, or `None` when the client is
/// gone and nothing is to be answered.
type Answer = Option<Result<Reply, ErrorObject>>;

/// Engine settings (defaults: docs/proxy/operations.md).
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

/// The proxy's core; shared by every front connection.
pub struct Engine {
    /// The engine's own `Arc`, for the `Handler` entry point (which receives `&self`).
    me: std::sync::Weak<Engine>,
    /// The legacy server's lanes, one pool per caller with credentials.
    pools: Arc<PrincipalPools>,
    settings: EngineSettings,
    /// The paused calls and their records (the multi-round state machine).
    pauses: pauses::PauseBook,
    warned: Mutex<HashSet<(String, RuleId)>>,
    /// The legacy tools' `x-mcp-header` annotations, for the `Mcp-Param-*` check.
    tool_headers: ToolHeaderIndex,
    /// The legacy `resources/subscribe`s of the `subscriptions/listen` streams.
    resource_subscriptions: ResourceSubscriptions,
    /// Cancelled when shutdown begins: listen streams end with their `complete` result.
    drained: tokio_util::sync::CancellationToken,
    /// Connections to the other instances, for retries of pauses they hold.
    peers: crate::cluster::Peers,
    /// Which calls are sent with a progress token of the proxy's (learnt per call kind).
    progress_tokens: progress_tokens::ProgressTokens,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// Where a method goes.
enum Route {
    Discover,
    PassThrough,
    Call,
    Listen,
    Unknown,
}

fn route(method: &str) -> Route {
    match method {
        "server/discover" => Route::Discover,
        "subscriptions/listen" => Route::Listen,
        method if pass_through::PASS_THROUGH.contains(&method) => Route::PassThrough,
        method if CORRELATABLE.contains(&method) => Route::Call,
        _ => Route::Unknown,
    }
}

/// `client name@principal label`, for deprecation warnings and spans.
fn client_label(request: &FrontRequest) -> String {
    let name = request
        .client_info
        .as_ref()
        .and_then(|info| info.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("unnamed-client");
    format!("{name}@{}", request.principal.display_label())
}

impl Engine {
    pub fn new(
        pools: Arc<PrincipalPools>,
        sealer: Sealer,
        store: Arc<dyn PauseStore>,
        settings: EngineSettings,
    ) -> Arc<Self> {
        Arc::new_cyclic(|me| Engine {
            me: me.clone(),
            pools,
            pauses: pauses::PauseBook::new(
                store,
                sealer,
                settings.pause_ttl,
                settings.limits.clone(),
            ),
            settings,
            warned: Mutex::new(HashSet::new()),
            tool_headers: ToolHeaderIndex::default(),
            resource_subscriptions: ResourceSubscriptions::default(),
            drained: tokio_util::sync::CancellationToken::new(),
            peers: crate::cluster::Peers::default(),
            progress_tokens: progress_tokens::ProgressTokens::default(),
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
            let (open, leased) = engine.pools.lane_stats();
            metrics.set_lanes(open, leased);
            true
        }));
    }

    /// Probes whether the pause store can record pauses; the engine refuses new pauses while
    /// it cannot.
    pub async fn probe_store(&self) {
        self.pauses.probe_store().await;
    }

    /// `Err(reason)` while the pause store cannot record pauses.
    pub fn store_writable(&self) -> Result<(), String> {
        self.pauses.store_writable()
    }

    /// Starts the shutdown: calls in flight may still finish, but none may pause any more, and
    /// `/readyz` answers 503.
    pub fn begin_drain(&self) {
        self.pauses.begin_drain();
        self.drained.cancel();
    }

    pub fn is_draining(&self) -> bool {
        self.pauses.is_draining()
    }

    /// Ends every paused call at shutdown (see the pause book's `shutdown`). Returns how many
    /// were ended.
    pub async fn shutdown_pauses(&self) -> usize {
        self.begin_drain();
        self.pauses.shutdown().await
    }

    /// The number of calls paused in memory (for tests and metrics).
    pub fn paused_calls(&self) -> usize {
        self.pauses.paused_calls()
    }

    /// Expires pauses whose deadline has passed (run periodically).
    pub async fn sweep(&self) {
        self.pauses.sweep().await;
    }

    /// The lanes of the request's caller: its own pool when it sent credentials to an HTTP
    /// legacy server, else the anonymous one.
    fn pool_for(&self, request: &FrontRequest) -> Result<Arc<LanePool>, ErrorObject> {
        self.pools
            .for_caller(&request.principal, &request.credentials)
            .map_err(wire::backend_failure)
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

    fn note_client_deprecations(&self, request: &FrontRequest, profile: &CapabilityProfile) {
        if !(profile.sampling || profile.roots || profile.sampling_context) {
            return;
        }
        let client = client_label(request);
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

    /// Serves one validated front request to completion: routes it, then answers the front
    /// with what the path returned (the only place a final response is written). `forwarded`
    /// when another instance passed the request on.
    async fn serve_as(
        self: Arc<Self>,
        request: FrontRequest,
        mut sink: ResponseSink,
        forwarded: bool,
    ) {
        let profile = request.client_capabilities.profile().clone();
        self.note_client_deprecations(&request, &profile);
        // The future of a request is as large as its largest path, and it is moved into its
        // task on every request: the paths other than a new call's are boxed, so only the ones
        // that take them pay for them (bench/proxy-vs-nginx.md).
        let answer: Answer = match route(&request.method) {
            Route::Discover => Some(Box::pin(self.discover(&request)).await.map(Reply::Tree)),
            Route::PassThrough => {
                Some(Box::pin(self.pass_through(&request, &profile, &mut sink)).await)
            }
            Route::Call => self.call(&request, profile, &mut sink, forwarded).await,
            Route::Listen => Box::pin(self.listen(&request, &mut sink))
                .await
                .map(|outcome| outcome.map(Reply::Tree)),
            Route::Unknown => Some(Err(ErrorObject::new(
                codes::METHOD_NOT_FOUND,
                format!("`{}` is not supported by mcp-mrtr-proxy", request.method),
            ))),
        };
        if let Some(outcome) = answer {
            sink.finish_reply(request.id, outcome).await;
        }
    }

    /// A correlatable call: the `Mcp-Param-*` check, then a new call or the retry of a paused
    /// one.
    async fn call(
        &self,
        request: &FrontRequest,
        profile: CapabilityProfile,
        sink: &mut ResponseSink,
        forwarded: bool,
    ) -> Answer {
        if let Err(error) = self.check_param_headers(request, &profile).await {
            return Some(Err(error));
        }
        match request.params.get("requestState") {
            None => self.start(request, profile, sink).await,
            Some(Value::String(state)) => {
                Box::pin(self.resume(request, profile, state, sink, forwarded)).await
            }
            Some(_) => Some(Err(wire::invalid_params("`requestState` must be a string"))),
        }
    }
}

impl Handler for Engine {
    fn handle(&self, request: FrontRequest, sink: ResponseSink) -> BoxFuture<'static, ()> {
        match self.me.upgrade() {
            Some(engine) => Box::pin(engine.serve_as(request, sink, false)),
            // Only during shutdown, once the last `Arc` is gone.
            None => Box::pin(async move {
                sink.finish(
                    request.id,
                    Err(wire::internal("the proxy is shutting down")),
                )
                .await;
            }),
        }
    }

    fn open_forwarded(&self, envelope: &[u8]) -> Result<FrontRequest, ErrorObject> {
        crate::cluster::open_request(self.pauses.sealer(), envelope, crate::state::now_ms())
    }

    fn handle_forwarded(
        &self,
        request: FrontRequest,
        sink: ResponseSink,
    ) -> BoxFuture<'static, ()> {
        match self.me.upgrade() {
            Some(engine) => Box::pin(engine.serve_as(request, sink, true)),
            None => self.handle(request, sink),
        }
    }

    fn is_ready(&self) -> bool {
        self.pools.is_ready()
    }

    fn readiness(&self) -> Vec<(&'static str, bool)> {
        vec![
            ("backend", self.pools.is_ready()),
            ("store", self.store_writable().is_ok()),
            ("not_draining", !self.is_draining()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[tokio::test]
    async fn readiness_names_backend_store_and_draining() {
        let pool = PrincipalPools::new(
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
                lane_idle_timeout: Duration::from_secs(300),
                credentials: Default::default(),
                credentials_wanted: Default::default(),
                paused_per_lane: crate::limits::DEFAULT_MAX_PAUSED_PER_LANE,
                spare_lanes: 0,
            },
            crate::backend::DEFAULT_MAX_CREDENTIAL_POOLS,
            Default::default(),
        );
        let engine = Engine::new(
            pool,
            Sealer::new(&crate::state::StateKey::generate()),
            crate::store::temporary().unwrap(),
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
    fn methods_are_routed() {
        for (method, expected) in [
            ("server/discover", "discover"),
            ("subscriptions/listen", "listen"),
            ("tools/list", "pass-through"),
            ("completion/complete", "pass-through"),
            ("tools/call", "call"),
            ("resources/read", "call"),
            ("prompts/get", "call"),
            ("initialize", "unknown"),
        ] {
            let got = match route(method) {
                Route::Discover => "discover",
                Route::PassThrough => "pass-through",
                Route::Call => "call",
                Route::Listen => "listen",
                Route::Unknown => "unknown",
            };
            assert_eq!(got, expected, "{method}");
        }
    }
}
