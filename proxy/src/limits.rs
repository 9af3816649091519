//! Resource limits of the proxy, their defaults, and the checks that enforce them.
//!
//! Every limit is a command-line flag (see [`crate::config::Args`]) with the default below; the
//! "Limits" table of docs/proxy/operations.md lists what a client sees when one is hit. The checks live here so
//! that the front and the engine only ask "may I?":
//!
//! - [`RequestGate`]: concurrent requests on the HTTP front (a semaphore; when full, HTTP 503
//!   with `Retry-After` and a JSON-RPC `-32000` error, decided before any SSE byte);
//! - [`check_pause`]: paused calls overall and per principal, and rounds per call (checked when a
//!   call is about to pause);
//! - [`input_request_too_large`]: one legacy request too large to forward as an `inputRequests`
//!   entry;
//! - [`host_allowed`]: DNS-rebinding protection by `Host` when the front is bound to loopback;
//! - [`StoreHealth`]: whether the pause store can still record pauses (the verdict of its
//!   probe, [`crate::store::PauseStore::health`]).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::jsonrpc::ErrorObject;

/// JSON-RPC code of every limit refusal: the implementation-defined server error range
/// (`-32000..-32019`, outside the range 2026-07-28 reserves).
pub const LIMIT_EXCEEDED: i64 = -32000;

/// `--max-body-bytes`
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// `--max-header-bytes` (hyper's read buffer for the request head; at least 8192)
pub const DEFAULT_MAX_HEADER_BYTES: usize = 64 * 1024;
/// `--max-headers`
pub const DEFAULT_MAX_HEADERS: usize = 100;
/// `--header-read-timeout`
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// `--body-read-timeout`
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// `--max-concurrent-requests`
pub const DEFAULT_MAX_CONCURRENT_REQUESTS: usize = 1024;
/// `--max-paused-calls`
pub const DEFAULT_MAX_PAUSED_CALLS: usize = 1024;
/// `--max-paused-per-lane`: with the default `--pool-size` of a stdio backend (4), as many as
/// `--max-paused-calls`.
pub const DEFAULT_MAX_PAUSED_PER_LANE: usize = 256;
/// `--max-paused-per-principal`
pub const DEFAULT_MAX_PAUSED_PER_PRINCIPAL: usize = 64;
/// `--max-rounds`
pub const DEFAULT_MAX_ROUNDS: u32 = 32;
/// `--max-input-request-bytes`
pub const DEFAULT_MAX_INPUT_REQUEST_BYTES: usize = 1024 * 1024;
/// `--call-timeout`
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(300);
/// `--shutdown-grace`
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
/// The `Retry-After` an overloaded front sends (seconds).
pub const RETRY_AFTER_SECS: u64 = 1;
/// How often [`StoreHealth`] probes the store.
pub const STORE_PROBE_PERIOD: Duration = Duration::from_secs(1);

/// The engine's limits (the front's are in [`crate::front::http::HttpFrontConfig`]).
#[derive(Debug, Clone)]
pub struct CallLimits {
    pub max_paused_calls: usize,
    pub max_paused_per_principal: usize,
    pub max_rounds: u32,
    pub max_input_request_bytes: usize,
    /// How long the legacy server may stay silent while a front request waits on its call
    /// (any message from the lane restarts the clock).
    pub call_timeout: Duration,
}

impl Default for CallLimits {
    fn default() -> Self {
        CallLimits {
            max_paused_calls: DEFAULT_MAX_PAUSED_CALLS,
            max_paused_per_principal: DEFAULT_MAX_PAUSED_PER_PRINCIPAL,
            max_rounds: DEFAULT_MAX_ROUNDS,
            max_input_request_bytes: DEFAULT_MAX_INPUT_REQUEST_BYTES,
            call_timeout: DEFAULT_CALL_TIMEOUT,
        }
    }
}

/// A limit refusal as the client sees it.
pub fn limit_error(message: impl Into<String>, limit: &str, value: u64) -> ErrorObject {
    ErrorObject::new(LIMIT_EXCEEDED, message).with_data(json!({"limit": limit, "max": value}))
}

/// Concurrent requests on a front (HTTP: per request and its response stream; stdio: per request).
#[derive(Debug, Clone)]
pub struct RequestGate {
    semaphore: Arc<Semaphore>,
    max: usize,
}

impl RequestGate {
    pub fn new(max: usize) -> Self {
        let max = max.max(1);
        RequestGate {
            semaphore: Arc::new(Semaphore::new(max)),
            max,
        }
    }

    /// A permit held for as long as the request (its whole response) runs; `None` when full.
    pub fn try_enter(&self) -> Option<OwnedSemaphorePermit> {
        self.semaphore.clone().try_acquire_owned().ok()
    }

    /// Requests running now.
    pub fn in_flight(&self) -> usize {
        self.max - self.semaphore.available_permits()
    }

    pub fn max(&self) -> usize {
        self.max
    }

    /// The JSON-RPC error of a refused request.
    pub fn overload_error(&self) -> ErrorObject {
        limit_error(
            format!(
                "the proxy is overloaded: {} requests are running (--max-concurrent-requests); retry after {RETRY_AFTER_SECS} s",
                self.max
            ),
            "max-concurrent-requests",
            self.max as u64,
        )
    }
}

/// The refusal of a *new* call when every legacy lane it could use is held by paused calls (the
/// pool is at `--pool-size`; on stdio, every child holds `--max-paused-per-lane` of them):
/// retryable, HTTP 503 with `Retry-After` on the HTTP front, this `-32000` error on stdio.
/// Counted as `mcp_proxy_rejections_total{reason="lane_capacity"}`.
pub fn capacity_refusal(lanes: usize, paused_per_lane: usize) -> ErrorObject {
    let held = if paused_per_lane > 0 {
        format!(
            "all {lanes} legacy processes (--pool-size) hold paused calls waiting for their clients (up to {paused_per_lane} each, --max-paused-per-lane) and none can run this call"
        )
    } else {
        format!(
            "all {lanes} legacy sessions (--pool-size) are held by paused calls waiting for their clients"
        )
    };
    ErrorObject::new(
        LIMIT_EXCEEDED,
        format!("the proxy is at capacity: {held}; retry after {RETRY_AFTER_SECS} s"),
    )
    .with_data(json!({
        "limit": "pool-size",
        "max": lanes,
        "maxPausedPerLane": paused_per_lane,
        "retryAfterSeconds": RETRY_AFTER_SECS
    }))
}

/// The refusal of a new caller's request when `--max-credential-pools` callers with
/// credentials all have calls on lanes of their own: retryable, like [`capacity_refusal`].
pub fn caller_capacity_refusal(max: usize) -> ErrorObject {
    ErrorObject::new(
        LIMIT_EXCEEDED,
        format!(
            "the proxy is at capacity: {max} callers with credentials (--max-credential-pools) each hold legacy sessions of their own; retry after {RETRY_AFTER_SECS} s"
        ),
    )
    .with_data(json!({"limit": "max-credential-pools", "max": max, "retryAfterSeconds": RETRY_AFTER_SECS}))
}

/// The `Retry-After` (seconds) of a retryable refusal such as [`capacity_refusal`].
pub fn retry_after(error: &ErrorObject) -> Option<u64> {
    if error.code != LIMIT_EXCEEDED {
        return None;
    }
    error.data.as_ref()?.get("retryAfterSeconds")?.as_u64()
}

/// Why a call may not pause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PauseRefusal {
    TooManyPaused { max: usize },
    TooManyForPrincipal { max: usize },
    TooManyRounds { max: u32 },
}

impl PauseRefusal {
    /// The `mcp_proxy_rejections_total` reason.
    pub fn metric_reason(&self) -> &'static str {
        match self {
            PauseRefusal::TooManyPaused { .. } => "limit_paused_calls",
            PauseRefusal::TooManyForPrincipal { .. } => "limit_paused_per_principal",
            PauseRefusal::TooManyRounds { .. } => "limit_rounds",
        }
    }

    pub fn to_error(&self) -> ErrorObject {
        match self {
            PauseRefusal::TooManyPaused { max } => limit_error(
                format!("too many paused calls ({max}, --max-paused-calls): the call was cancelled; retry it later"),
                "max-paused-calls",
                *max as u64,
            ),
            PauseRefusal::TooManyForPrincipal { max } => limit_error(
                format!("too many paused calls for this client ({max}, --max-paused-per-principal): the call was cancelled; answer or abandon the others first"),
                "max-paused-per-principal",
                *max as u64,
            ),
            PauseRefusal::TooManyRounds { max } => limit_error(
                format!("the legacy server asked for input more than {max} times in one call (--max-rounds): the call was cancelled"),
                "max-rounds",
                u64::from(*max),
            ),
        }
    }
}

/// Whether one more call may pause for its `round`-th round (1-based), with `paused` calls
/// paused now, `paused_for_principal` of them by the same principal. The engine counts its live
/// calls under the lock that also inserts the new one, so the caps are never overshot.
pub fn check_pause(
    limits: &CallLimits,
    paused: usize,
    paused_for_principal: usize,
    round: u32,
) -> Result<(), PauseRefusal> {
    if round > limits.max_rounds {
        return Err(PauseRefusal::TooManyRounds {
            max: limits.max_rounds,
        });
    }
    if paused >= limits.max_paused_calls {
        return Err(PauseRefusal::TooManyPaused {
            max: limits.max_paused_calls,
        });
    }
    if paused_for_principal >= limits.max_paused_per_principal {
        return Err(PauseRefusal::TooManyForPrincipal {
            max: limits.max_paused_per_principal,
        });
    }
    Ok(())
}

/// `Some(error)` when an `inputRequests` entry of `bytes` serialised bytes exceeds the limit.
pub fn input_request_too_large(bytes: usize, max: usize) -> Option<ErrorObject> {
    (bytes > max).then(|| {
        limit_error(
            format!("the legacy server sent an input request of {bytes} bytes, more than --max-input-request-bytes ({max}): it was refused and the call cancelled"),
            "max-input-request-bytes",
            max as u64,
        )
    })
}

/// Whether a host name ([`host_name`]) is a loopback one.
fn is_loopback_name(name: &str) -> bool {
    // The usual spellings first: parsing an address costs more than the rest of the check.
    if name == "127.0.0.1"
        || name.eq_ignore_ascii_case("localhost")
        || name.eq_ignore_ascii_case("[::1]")
    {
        return true;
    }
    name.parse::<std::net::Ipv4Addr>()
        .is_ok_and(|address| address.is_loopback())
}

/// The host name of a `Host` value, brackets kept for IPv6, port dropped (compare it ignoring
/// ASCII case).
fn host_name(host: &str) -> &str {
    let host = host.trim();
    // Byte searches: `:` and `]` are ASCII, so the cuts fall on character boundaries.
    let name = if host.starts_with('[') {
        memchr::memchr(b']', host.as_bytes()).map_or(host, |end| &host[..=end])
    } else {
        memchr::memrchr(b':', host.as_bytes()).map_or(host, |colon| &host[..colon])
    };
    name.trim_end_matches('.')
}

/// DNS-rebinding protection by `Host`: when the front listens on a loopback address, only
/// loopback host names (and `allowed` entries) are accepted; a page on `evil.example` that
/// re-resolved its name to 127.0.0.1 sends `Host: evil.example`. On other binds every host is
/// accepted unless `allowed` is not empty. `None` (no `Host`) is accepted: HTTP/1.0.
pub fn host_allowed(host: Option<&str>, listen: SocketAddr, allowed: &[String]) -> bool {
    let Some(host) = host else { return true };
    let name = host_name(host);
    if allowed
        .iter()
        .any(|entry| entry == "*" || entry.eq_ignore_ascii_case(name))
    {
        return true;
    }
    if listen.ip().is_loopback() {
        is_loopback_name(name)
    } else {
        allowed.is_empty()
    }
}

/// Whether the pause store can still record pauses: the verdict of the last probe
/// ([`crate::store::PauseStore::health`], every [`STORE_PROBE_PERIOD`]) or of the last failed
/// write. The engine refuses new pauses while it fails.
#[derive(Debug)]
pub struct StoreHealth {
    writable: AtomicBool,
    reason: Mutex<Option<String>>,
}

impl Default for StoreHealth {
    fn default() -> Self {
        StoreHealth {
            writable: AtomicBool::new(true),
            reason: Mutex::new(None),
        }
    }
}

impl StoreHealth {
    /// `Err(reason)` when the last probe failed.
    pub fn check(&self) -> Result<(), String> {
        if self.writable.load(Ordering::Acquire) {
            return Ok(());
        }
        Err(self
            .reason
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .clone()
            .unwrap_or_else(|| "the pause store is not writable".into()))
    }

    /// Marks the store unwritable (an insert or flush failed).
    pub fn fail(&self, reason: String) {
        let was = self.writable.swap(false, Ordering::AcqRel);
        if was {
            tracing::error!(%reason, "the pause store is not writable: new pauses are refused");
        }
        *self
            .reason
            .lock()
            .unwrap_or_else(|poison| poison.into_inner()) = Some(reason);
    }

    /// Records the verdict of a probe. Updates [`check`](Self::check).
    pub fn record(&self, verdict: Result<(), String>) {
        match verdict {
            Ok(()) => {
                if !self.writable.swap(true, Ordering::AcqRel) {
                    tracing::info!("the pause store is writable again: pauses are accepted");
                }
            }
            Err(reason) => self.fail(reason),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_on_a_loopback_bind() {
        let listen: SocketAddr = "127.0.0.1:8787".parse().unwrap();
        for host in [
            "localhost",
            "localhost:8787",
            "LOCALHOST.",
            "127.0.0.1",
            "127.0.0.1:1",
            "127.1.2.3:80",
            "[::1]",
            "[::1]:8787",
        ] {
            assert!(host_allowed(Some(host), listen, &[]), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:8787",
            "localhost.evil.example",
            "127.0.0.1.evil.example",
            "127.0.0.1.nip.io:8787",
            "[::2]",
            "10.0.0.1",
            "",
        ] {
            assert!(!host_allowed(Some(host), listen, &[]), "{host}");
        }
        let allowed = vec!["proxy.internal".to_owned()];
        assert!(host_allowed(Some("proxy.internal:8787"), listen, &allowed));
        assert!(host_allowed(None, listen, &[]));
        let public: SocketAddr = "0.0.0.0:8787".parse().unwrap();
        assert!(host_allowed(Some("anything.example"), public, &[]));
        assert!(!host_allowed(Some("anything.example"), public, &allowed));
    }

    #[test]
    fn pause_caps() {
        let limits = CallLimits {
            max_paused_calls: 3,
            max_paused_per_principal: 2,
            max_rounds: 4,
            ..CallLimits::default()
        };
        assert_eq!(check_pause(&limits, 0, 0, 1), Ok(()));
        assert_eq!(check_pause(&limits, 2, 1, 4), Ok(()));
        assert_eq!(
            check_pause(&limits, 2, 2, 1),
            Err(PauseRefusal::TooManyForPrincipal { max: 2 })
        );
        assert_eq!(
            check_pause(&limits, 3, 0, 1),
            Err(PauseRefusal::TooManyPaused { max: 3 })
        );
        assert_eq!(
            check_pause(&limits, 0, 0, 5),
            Err(PauseRefusal::TooManyRounds { max: 4 })
        );
    }

    #[test]
    fn oversized_input_requests() {
        assert!(input_request_too_large(10, 10).is_none());
        let error = input_request_too_large(11, 10).unwrap();
        assert_eq!(error.code, LIMIT_EXCEEDED);
        assert!(error.message.contains("max-input-request-bytes"));
    }

    #[test]
    fn the_request_gate_counts_permits() {
        let gate = RequestGate::new(2);
        let first = gate.try_enter().unwrap();
        let _second = gate.try_enter().unwrap();
        assert!(gate.try_enter().is_none());
        assert_eq!(gate.in_flight(), 2);
        drop(first);
        assert!(gate.try_enter().is_some());
    }
}
