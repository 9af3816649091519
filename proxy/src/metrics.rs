//! Prometheus metrics (`GET /metrics`), kept in one process-wide [`Metrics`].
//!
//! Every part of the proxy reports into [`global()`]: the fronts (requests, latency, validation
//! rejections), the engine (rounds, pauses, expiries, `requestState` rejections, deprecation
//! warnings) and the lane pool (lanes, starts, restarts). Other code reports a refusal with
//! [`Metrics::rejection`] and a stable snake_case reason; label values are always from small
//! fixed sets (validated method names, reasons, rule names), never from client input.
//!
//! The exposition is the OpenMetrics text format (which Prometheus scrapes natively); names are
//! listed in docs/proxy/operations.md.

use std::borrow::Cow;
use std::sync::{LazyLock, Mutex, OnceLock};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::jsonrpc::codes;

/// The `Content-Type` of [`Metrics::render`]'s output.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodOutcome {
    method: Cow<'static, str>,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodLabel {
    method: Cow<'static, str>,
}

/// A method as a label: the 2026-07-28 request methods borrowed, so that counting a request
/// allocates nothing (callgrind, bench/proxy-vs-nginx.md); any other method copied.
pub fn method_label(method: &str) -> Cow<'static, str> {
    match KNOWN_METHODS.iter().find(|known| **known == method) {
        Some(known) => Cow::Borrowed(known),
        None => Cow::Owned(method.to_owned()),
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CauseLabel {
    cause: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EraLabel {
    era: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RuleLabel {
    rule: &'static str,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    // 1 ms .. ~33 s
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        0.001, 2.0, 16,
    ))
}

/// How a front request ended, for `mcp_proxy_requests_total{outcome}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A complete result.
    Ok,
    /// An `input_required` result (the call paused).
    InputRequired,
    /// A JSON-RPC error.
    Error,
    /// No response: the client left, or the handler ended without one.
    Cancelled,
}

impl Outcome {
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::InputRequired => "input_required",
            Outcome::Error => "error",
            Outcome::Cancelled => "cancelled",
        }
    }
}

/// The methods [`method_label`] borrows; [`Metrics`] keeps their request series at hand.
const KNOWN_METHODS: &[&str] = &crate::front::validate::CLIENT_REQUEST_METHODS;

/// The request series of one known method, taken from the families on first use.
#[derive(Default)]
struct KnownMethodSeries {
    /// By [`Outcome`].
    requests: [OnceLock<Counter>; 4],
    duration: OnceLock<Histogram>,
}

/// Every metric of the proxy. Cheap to update from any thread.
pub struct Metrics {
    /// By index in [`KNOWN_METHODS`].
    known_methods: Vec<KnownMethodSeries>,
    registry: Registry,
    requests: Family<MethodOutcome, Counter>,
    request_duration: HistogramFamily<MethodLabel>,
    in_flight: Gauge,
    paused: Gauge,
    rounds: Family<MethodLabel, Counter>,
    call_rounds: Histogram,
    pause_expiries: Family<CauseLabel, Counter>,
    rejections: Family<ReasonLabel, Counter>,
    deprecations: Family<RuleLabel, Counter>,
    lanes_open: Gauge,
    lanes_leased: Gauge,
    lane_starts: Counter,
    lane_failures: Counter,
    era_requests: Family<EraLabel, Counter>,
    /// The `2026-07-28` series of `era_requests`, looked up once (every front request counts
    /// in it).
    modern_era_requests: OnceLock<Counter>,
    legacy_sessions: Gauge,
    legacy_sessions_max: Gauge,
    legacy_sessions_opened: Counter,
    legacy_sessions_ended: Family<ReasonLabel, Counter>,
    /// Called before each render to refresh gauges read from elsewhere (pool, engine).
    refreshers: Mutex<Vec<Refresher>>,
}

/// Refreshes gauges before a render; returns `false` once its source is gone (then dropped).
pub type Refresher = Box<dyn Fn(&Metrics) -> bool + Send + Sync>;

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// A fresh set of metrics with its own registry (tests; the proxy uses [`global()`]).
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("mcp_proxy");
        let requests = Family::<MethodOutcome, Counter>::default();
        registry.register(
            "requests",
            "Front requests answered, by method and outcome (ok, input_required, error, cancelled)",
            requests.clone(),
        );
        let request_duration: HistogramFamily<MethodLabel> =
            Family::new_with_constructor(latency_histogram as fn() -> Histogram);
        registry.register(
            "request_duration_seconds",
            "Time from a validated front request to its final response, by method",
            request_duration.clone(),
        );
        let in_flight = Gauge::default();
        registry.register(
            "requests_in_flight",
            "Front requests being served now",
            in_flight.clone(),
        );
        let paused = Gauge::default();
        registry.register(
            "paused_calls",
            "Legacy calls paused now, waiting for the client's retry",
            paused.clone(),
        );
        let rounds = Family::<MethodLabel, Counter>::default();
        registry.register(
            "rounds",
            "input_required rounds answered (pauses), by method",
            rounds.clone(),
        );
        let call_rounds = Histogram::new([0.0, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0]);
        registry.register(
            "call_rounds",
            "Rounds per correlatable call that reached its final result",
            call_rounds.clone(),
        );
        let pause_expiries = Family::<CauseLabel, Counter>::default();
        registry.register(
            "pause_expiries",
            "Paused calls ended without a retry: ttl (deadline sweep) or evicted (lane needed)",
            pause_expiries.clone(),
        );
        let rejections = Family::<ReasonLabel, Counter>::default();
        registry.register(
            "rejections",
            "Requests refused, by reason",
            rejections.clone(),
        );
        let deprecations = Family::<RuleLabel, Counter>::default();
        registry.register(
            "deprecation_warnings",
            "Deprecation warnings logged (once per client and rule), by rule",
            deprecations.clone(),
        );
        let lanes_open = Gauge::default();
        registry.register(
            "lanes_open",
            "Legacy lanes (child processes or sessions) open",
            lanes_open.clone(),
        );
        let lanes_leased = Gauge::default();
        registry.register(
            "lanes_leased",
            "Legacy lanes leased to a running or paused call",
            lanes_leased.clone(),
        );
        let lane_starts = Counter::default();
        registry.register(
            "lane_starts",
            "Legacy lanes started (initialized)",
            lane_starts.clone(),
        );
        let lane_failures = Counter::default();
        registry.register(
            "lane_failures",
            "Legacy lanes found dead (child exited, session lost) and dropped; the next call starts a new one",
            lane_failures.clone(),
        );
        let era_requests = Family::<EraLabel, Counter>::default();
        registry.register(
            "requests_by_era",
            "Client requests by protocol era: `2026-07-28` (stateless, MRTR) or `legacy` (relayed in an initialize session)",
            era_requests.clone(),
        );
        let legacy_sessions = Gauge::default();
        registry.register(
            "legacy_sessions",
            "Legacy client sessions open (each holds its own legacy session or child process)",
            legacy_sessions.clone(),
        );
        let legacy_sessions_max = Gauge::default();
        registry.register(
            "legacy_sessions_max",
            "The bound on legacy client sessions (--max-legacy-sessions)",
            legacy_sessions_max.clone(),
        );
        let legacy_sessions_opened = Counter::default();
        registry.register(
            "legacy_sessions_opened",
            "Legacy client sessions opened (initialize relayed)",
            legacy_sessions_opened.clone(),
        );
        let legacy_sessions_ended = Family::<ReasonLabel, Counter>::default();
        registry.register(
            "legacy_sessions_ended",
            "Legacy client sessions ended, by reason (deleted, expired, server, shutdown)",
            legacy_sessions_ended.clone(),
        );
        Metrics {
            known_methods: KNOWN_METHODS
                .iter()
                .map(|_| KnownMethodSeries::default())
                .collect(),
            registry,
            era_requests,
            modern_era_requests: OnceLock::new(),
            legacy_sessions,
            legacy_sessions_max,
            legacy_sessions_opened,
            legacy_sessions_ended,
            requests,
            request_duration,
            in_flight,
            paused,
            rounds,
            call_rounds,
            pause_expiries,
            rejections,
            deprecations,
            lanes_open,
            lanes_leased,
            lane_starts,
            lane_failures,
            refreshers: Mutex::new(Vec::new()),
        }
    }

    /// The exposition text ([`CONTENT_TYPE`]).
    pub fn render(&self) -> String {
        {
            let mut refreshers = self.refreshers.lock().unwrap_or_else(|p| p.into_inner());
            refreshers.retain(|refresh| refresh(self));
        }
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }

    /// A front request started (`requests_in_flight`); a 2026-07-28 one (`requests_by_era`).
    pub fn request_started(&self) {
        self.in_flight.inc();
        self.modern_era_requests
            .get_or_init(|| {
                self.era_requests
                    .get_or_create(&EraLabel { era: "2026-07-28" })
                    .clone()
            })
            .inc();
    }

    /// A client request of an era (`2026-07-28` or `legacy`).
    pub fn era_request(&self, era: &'static str) {
        self.era_requests.get_or_create(&EraLabel { era }).inc();
    }

    /// The bound on legacy sessions.
    pub fn set_legacy_sessions_max(&self, max: usize) {
        self.legacy_sessions_max
            .set(i64::try_from(max).unwrap_or(i64::MAX));
    }

    /// A legacy client session opened.
    pub fn legacy_session_opened(&self) {
        self.legacy_sessions_opened.inc();
        self.legacy_sessions.inc();
    }

    /// A legacy client session ended (`deleted`, `expired`, `server`, `shutdown`).
    pub fn legacy_session_ended(&self, reason: &'static str) {
        self.legacy_sessions.dec();
        self.legacy_sessions_ended
            .get_or_create(&ReasonLabel { reason })
            .inc();
    }

    /// A front request ended.
    pub fn request_finished(&self, method: Cow<'static, str>, outcome: Outcome, elapsed: Duration) {
        self.in_flight.dec();
        // A 2026-07-28 method: its series, looked up in the families once (a lookup hashes the
        // labels and takes the family's lock: callgrind, bench/proxy-vs-nginx.md).
        if let Some(known) = KNOWN_METHODS
            .iter()
            .position(|known| std::ptr::eq(*known, &*method))
            .and_then(|at| self.known_methods.get(at))
        {
            let requests = &known.requests[outcome as usize];
            requests
                .get_or_init(|| {
                    self.requests
                        .get_or_create(&MethodOutcome {
                            method: method.clone(),
                            outcome: outcome.label(),
                        })
                        .clone()
                })
                .inc();
            known
                .duration
                .get_or_init(|| {
                    self.request_duration
                        .get_or_create(&MethodLabel {
                            method: method.clone(),
                        })
                        .clone()
                })
                .observe(elapsed.as_secs_f64());
            return;
        }
        self.requests
            .get_or_create(&MethodOutcome {
                method: method.clone(),
                outcome: outcome.label(),
            })
            .inc();
        self.request_duration
            .get_or_create(&MethodLabel { method })
            .observe(elapsed.as_secs_f64());
    }

    /// A request refused, by a stable snake_case reason (`state_tampered`, `header_mismatch`,
    /// `body_too_large`, ...): the list is in docs/proxy/operations.md.
    pub fn rejection(&self, reason: &'static str) {
        self.rejections.get_or_create(&ReasonLabel { reason }).inc();
    }

    /// The number of paused calls now.
    pub fn set_paused(&self, paused: usize) {
        self.paused.set(i64::try_from(paused).unwrap_or(i64::MAX));
    }

    /// A call paused (one `input_required` round).
    pub fn round(&self, method: &str) {
        self.rounds
            .get_or_create(&MethodLabel {
                method: method_label(method),
            })
            .inc();
    }

    /// A correlatable call reached its final result after `rounds` rounds.
    pub fn call_finished(&self, rounds: u32) {
        self.call_rounds.observe(f64::from(rounds));
    }

    /// A paused call ended without a retry: `ttl` or `evicted`.
    pub fn pause_expired(&self, cause: &'static str) {
        self.pause_expiries
            .get_or_create(&CauseLabel { cause })
            .inc();
    }

    /// A deprecation warning was logged (the engine logs each once per client and rule).
    pub fn deprecation_warning(&self, rule: &'static str) {
        self.deprecations.get_or_create(&RuleLabel { rule }).inc();
    }

    /// Lanes open and leased now.
    pub fn set_lanes(&self, open: usize, leased: usize) {
        self.lanes_open.set(i64::try_from(open).unwrap_or(i64::MAX));
        self.lanes_leased
            .set(i64::try_from(leased).unwrap_or(i64::MAX));
    }

    /// A lane was started (first initialize).
    pub fn lane_started(&self) {
        self.lane_starts.inc();
    }

    /// A dead lane was dropped from the pool.
    pub fn lane_failed(&self) {
        self.lane_failures.inc();
    }

    /// Registers a gauge refresher, called before each render until it returns `false`.
    pub fn on_render(&self, refresher: Refresher) {
        self.refreshers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(refresher);
    }
}

/// The proxy's metrics.
pub fn global() -> &'static Metrics {
    static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);
    &METRICS
}

/// The rejection reason for a front validation error code.
pub fn validation_reason(code: i64) -> &'static str {
    match code {
        codes::PARSE_ERROR => "parse_error",
        codes::INVALID_REQUEST => "invalid_request",
        codes::METHOD_NOT_FOUND => "unknown_method",
        codes::INVALID_PARAMS => "invalid_params",
        codes::HEADER_MISMATCH => "header_mismatch",
        codes::MISSING_REQUIRED_CLIENT_CAPABILITY => "missing_capability",
        codes::UNSUPPORTED_PROTOCOL_VERSION => "unsupported_version",
        _ => "other",
    }
}

/// Parses OpenMetrics/Prometheus text into `(series, value)` pairs, e.g.
/// `("mcp_proxy_rejections_total{reason=\"state_tampered\"}", 1.0)` (for tests and tools).
pub fn parse_exposition(text: &str) -> Vec<(String, f64)> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            Some((series.to_owned(), value.parse().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: &str, series: &str) -> Option<f64> {
        parse_exposition(text)
            .into_iter()
            .find(|(name, _)| name == series)
            .map(|(_, value)| value)
    }

    #[test]
    fn renders_every_family_with_labels() {
        let metrics = Metrics::new();
        metrics.request_started();
        metrics.request_finished(
            method_label("tools/call"),
            Outcome::InputRequired,
            Duration::from_millis(3),
        );
        // The same series whether the method comes borrowed (kept at hand) or as a copy
        // (looked up in the family), and any other method in its own.
        metrics.request_started();
        metrics.request_finished(
            Cow::Owned("tools/call".to_owned()),
            Outcome::InputRequired,
            Duration::from_millis(3),
        );
        metrics.request_started();
        metrics.request_finished(
            method_label("tools/call"),
            Outcome::Ok,
            Duration::from_millis(3),
        );
        metrics.request_started();
        metrics.request_finished(
            method_label("initialize"),
            Outcome::Error,
            Duration::from_millis(3),
        );
        metrics.rejection("state_tampered");
        metrics.rejection("state_tampered");
        metrics.round("tools/call");
        metrics.call_finished(1);
        metrics.set_paused(2);
        metrics.pause_expired("ttl");
        metrics.deprecation_warning("deprecated-sampling");
        metrics.set_lanes(3, 1);
        metrics.lane_started();
        metrics.era_request("legacy");
        let text = metrics.render();
        assert!(text.ends_with("# EOF\n"), "{text}");
        let expect = [
            (
                "mcp_proxy_requests_total{method=\"tools/call\",outcome=\"input_required\"}",
                2.0,
            ),
            (
                "mcp_proxy_requests_total{method=\"tools/call\",outcome=\"ok\"}",
                1.0,
            ),
            (
                "mcp_proxy_requests_total{method=\"initialize\",outcome=\"error\"}",
                1.0,
            ),
            (
                "mcp_proxy_request_duration_seconds_count{method=\"tools/call\"}",
                3.0,
            ),
            ("mcp_proxy_requests_in_flight", 0.0),
            ("mcp_proxy_rejections_total{reason=\"state_tampered\"}", 2.0),
            ("mcp_proxy_rounds_total{method=\"tools/call\"}", 1.0),
            ("mcp_proxy_call_rounds_sum", 1.0),
            ("mcp_proxy_paused_calls", 2.0),
            ("mcp_proxy_pause_expiries_total{cause=\"ttl\"}", 1.0),
            (
                "mcp_proxy_deprecation_warnings_total{rule=\"deprecated-sampling\"}",
                1.0,
            ),
            ("mcp_proxy_lanes_open", 3.0),
            ("mcp_proxy_lanes_leased", 1.0),
            ("mcp_proxy_lane_starts_total", 1.0),
            ("mcp_proxy_lane_failures_total", 0.0),
            ("mcp_proxy_requests_by_era_total{era=\"2026-07-28\"}", 4.0),
            ("mcp_proxy_requests_by_era_total{era=\"legacy\"}", 1.0),
        ];
        for (series, expected) in expect {
            assert_eq!(value(&text, series), Some(expected), "{series} in\n{text}");
        }
    }

    #[test]
    fn validation_codes_have_reasons() {
        assert_eq!(validation_reason(codes::HEADER_MISMATCH), "header_mismatch");
        assert_eq!(validation_reason(codes::PARSE_ERROR), "parse_error");
        assert_eq!(validation_reason(12345), "other");
    }
}
