//! One [`LanePool`] per caller of an HTTP legacy server that receives credentials
//! ([`PrincipalPools`]): a legacy session opened with one caller's `Authorization` is never
//! used for another caller's call.
//!
//! Requests without credentials, and every request to a stdio legacy server (which takes no
//! credentials), use the one anonymous pool, as before. Whether a caller's credentials are sent
//! on is `--forward-credentials` ([`ForwardCredentials`]): by default (`auto`) once the legacy
//! server answered a credential-less `initialize` with 401/403 (the proxy's own first lane does
//! so at startup); a server that accepts it keeps serving every caller from the anonymous pool,
//! as before. A caller whose credentials are sent on gets a pool of
//! its own, made on demand with its [`Credentials`] in the pool's settings (every request its
//! lanes make carries them), bounded by `--max-credential-pools`, and dropped once it has had
//! nothing to do for `--lane-idle-timeout`. At the bound, the least recently used pool that
//! nothing uses is dropped for the new caller; when every pool is in use the new caller's
//! request is refused retryably ([`BackendError::CallerCapacity`]).

use crate::FastHashMap;
use std::sync::atomic::AtomicBool;

use super::*;
use crate::credentials::{Credentials, CurrentCredentials};
use crate::request::Principal;

/// The default `--max-credential-pools`.
pub const DEFAULT_MAX_CREDENTIAL_POOLS: usize = 256;

/// Whether callers' credentials are sent on to an HTTP legacy server (`--forward-credentials`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ForwardCredentials {
    /// Once the legacy server refused a credential-less `initialize` (401/403).
    #[default]
    Auto,
    /// Always (a pool per caller with credentials, whatever the server does with them).
    Always,
    /// Never (every caller on the anonymous pool; the server never sees a credential).
    Never,
}

struct Entry {
    pool: Arc<LanePool>,
    last_used: Instant,
}

/// The lane pools of an upstream, per caller (see the module documentation).
pub struct PrincipalPools {
    spec: BackendSpec,
    settings: PoolSettings,
    anonymous: Arc<LanePool>,
    max_pools: usize,
    mode: ForwardCredentials,
    pools: Mutex<FastHashMap<Principal, Entry>>,
    /// Set once the legacy server refused a lane's credentials (401/403): it is up, and wants
    /// its callers' credentials (`/readyz` counts it as reachable).
    credentials_wanted: Arc<AtomicBool>,
}

impl std::fmt::Debug for PrincipalPools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrincipalPools")
            .field("anonymous", &self.anonymous)
            .field("caller_pools", &lock(&self.pools).len())
            .field("max_pools", &self.max_pools)
            .finish_non_exhaustive()
    }
}

impl PrincipalPools {
    /// `max_pools`: the most callers with a pool of their own at once (at least 1).
    pub fn new(
        spec: BackendSpec,
        mut settings: PoolSettings,
        max_pools: usize,
        mode: ForwardCredentials,
    ) -> Arc<Self> {
        let credentials_wanted = Arc::clone(&settings.credentials_wanted);
        settings.credentials = CurrentCredentials::default();
        Arc::new(PrincipalPools {
            anonymous: LanePool::new(spec.clone(), settings.clone()),
            spec,
            settings,
            max_pools: max_pools.max(1),
            mode,
            pools: Mutex::new(FastHashMap::default()),
            credentials_wanted,
        })
    }

    /// The pool of requests without credentials (and of every request to a stdio server).
    pub fn anonymous(&self) -> &Arc<LanePool> {
        &self.anonymous
    }

    /// Whether `credentials` are sent on to the legacy server: an HTTP upstream, credentials
    /// given, and `--forward-credentials` says so.
    pub fn forwards(&self, credentials: &Credentials) -> bool {
        let wanted = match self.mode {
            ForwardCredentials::Never => false,
            ForwardCredentials::Always => true,
            ForwardCredentials::Auto => self.credentials_wanted.load(Ordering::Relaxed),
        };
        wanted && !credentials.is_empty() && matches!(self.spec, BackendSpec::Http { .. })
    }

    /// The pool whose lanes carry `credentials` (the caller `principal`): the anonymous one
    /// when there are none or the legacy server takes none, else the caller's own, made now if
    /// needed. `Err(CallerCapacity)` when `--max-credential-pools` callers all have calls.
    pub fn for_caller(
        &self,
        principal: &Principal,
        credentials: &Credentials,
    ) -> Result<Arc<LanePool>, BackendError> {
        if !self.forwards(credentials) {
            return Ok(Arc::clone(&self.anonymous));
        }
        let now = Instant::now();
        let mut pools = lock(&self.pools);
        if let Some(entry) = pools.get_mut(principal) {
            entry.last_used = now;
            entry
                .pool
                .shared
                .settings()
                .credentials
                .replace(credentials);
            return Ok(Arc::clone(&entry.pool));
        }
        if pools.len() >= self.max_pools {
            let victim = pools
                .iter()
                .filter(|(_, entry)| entry.pool.is_unused())
                .min_by_key(|(_, entry)| entry.last_used)
                .map(|(principal, _)| principal.clone());
            let Some(victim) = victim else {
                crate::metrics::global().rejection("credential_pools");
                return Err(BackendError::CallerCapacity {
                    max: self.max_pools,
                });
            };
            if let Some(entry) = pools.remove(&victim) {
                tracing::debug!(
                    principal = %victim.display_label(),
                    "closing the least recently used caller's lanes for a new caller"
                );
                close(entry.pool);
            }
        }
        let mut settings = self.settings.clone();
        settings.credentials = CurrentCredentials::new(credentials.clone());
        // No spare sessions per caller: they would multiply by the callers.
        settings.spare_lanes = 0;
        let pool = LanePool::new(self.spec.clone(), settings);
        pools.insert(
            principal.clone(),
            Entry {
                pool: Arc::clone(&pool),
                last_used: now,
            },
        );
        Ok(pool)
    }

    /// The caller `principal`'s lanes send `credentials` from now on, when it has a pool and
    /// they are sent on at all (a request on a legacy session or a paused call's retry, which
    /// reach their lanes without [`for_caller`](Self::for_caller)). Under `--principal jwt`
    /// that is the caller's refreshed token; under `--principal digest` they never differ.
    pub fn refresh(&self, principal: &Principal, credentials: &Credentials) {
        if !self.forwards(credentials) {
            return;
        }
        let pools = lock(&self.pools);
        if let Some(entry) = pools.get(principal) {
            if entry
                .pool
                .shared
                .settings()
                .credentials
                .replace(credentials)
            {
                tracing::debug!(
                    principal = %principal.display_label(),
                    "the caller's lanes send its refreshed credentials from now on"
                );
            }
        }
    }

    /// Every pool: the anonymous one first.
    fn all(&self) -> Vec<Arc<LanePool>> {
        let pools = lock(&self.pools);
        std::iter::once(Arc::clone(&self.anonymous))
            .chain(pools.values().map(|entry| Arc::clone(&entry.pool)))
            .collect()
    }

    /// Closes idle lanes in every pool, and drops the callers' pools that nothing used for
    /// `--lane-idle-timeout`. Returns how many lanes and pools it closed.
    pub fn close_idle(&self) -> usize {
        let timeout = self.settings.lane_idle_timeout;
        let idle: Vec<Arc<LanePool>> = {
            let mut pools = lock(&self.pools);
            let stale: Vec<Principal> = pools
                .iter()
                .filter(|(_, entry)| entry.last_used.elapsed() >= timeout && entry.pool.is_unused())
                .map(|(principal, _)| principal.clone())
                .collect();
            stale
                .iter()
                .filter_map(|principal| pools.remove(principal))
                .map(|entry| entry.pool)
                .collect()
        };
        let dropped = idle.len();
        for pool in idle {
            close(pool);
        }
        dropped
            + self
                .all()
                .iter()
                .map(|pool| pool.close_idle_lanes())
                .sum::<usize>()
    }

    /// Callers with a pool of their own right now.
    pub fn caller_pools(&self) -> usize {
        lock(&self.pools).len()
    }

    /// Whether the legacy server can be served: a live lane in any pool, or it answered a
    /// lane's `initialize` with 401/403 (reachable; it wants each caller's credentials).
    pub fn is_ready(&self) -> bool {
        self.credentials_wanted.load(Ordering::Relaxed)
            || self.all().iter().any(|pool| pool.is_ready())
    }

    /// `(open, leased)` lanes over every pool (metrics).
    pub fn lane_stats(&self) -> (usize, usize) {
        self.all()
            .iter()
            .map(|pool| pool.lane_stats())
            .fold((0, 0), |(open, leased), (o, l)| (open + o, leased + l))
    }

    /// Stops every lane of every pool (see [`LanePool::shutdown`]).
    pub async fn shutdown(&self) {
        let pools = {
            let mut pools = lock(&self.pools);
            let mut all: Vec<Arc<LanePool>> = pools.drain().map(|(_, entry)| entry.pool).collect();
            all.push(Arc::clone(&self.anonymous));
            all
        };
        futures_util::future::join_all(pools.iter().map(|pool| pool.shutdown())).await;
    }
}

/// Shuts a pool down in the background (its lanes DELETE their sessions).
fn close(pool: Arc<LanePool>) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(async move { pool.shutdown().await });
    }
}

#[cfg(test)]
mod tests {
    use ::http::{HeaderMap, HeaderValue};
    use serde_json::json;

    use super::*;

    fn settings() -> PoolSettings {
        PoolSettings {
            max_lanes: 2,
            roots: Vec::new(),
            client_info: json!({"name": "test", "version": "0"}),
            request_timeout: Duration::from_secs(1),
            call_sessions: Default::default(),
            lane_idle_timeout: Duration::ZERO,
            credentials: CurrentCredentials::default(),
            credentials_wanted: Arc::default(),
            paused_per_lane: 0,
            spare_lanes: 0,
        }
    }

    fn caller(token: &'static str) -> (Credentials, Principal) {
        let mut headers = HeaderMap::new();
        headers.insert(
            ::http::header::AUTHORIZATION,
            HeaderValue::from_static(token),
        );
        Credentials::from_request(&headers, &[])
    }

    fn http() -> BackendSpec {
        BackendSpec::Http {
            url: "http://127.0.0.1:9/mcp".into(),
            transport: UpstreamTransport::StreamableHttp,
        }
    }

    #[tokio::test]
    async fn each_caller_gets_its_own_pool_and_anonymous_callers_share_one() {
        let pools = PrincipalPools::new(http(), settings(), 8, ForwardCredentials::Always);
        let (alice, alice_principal) = caller("Bearer alice");
        let (bob, bob_principal) = caller("Bearer bob");
        let a1 = pools.for_caller(&alice_principal, &alice).unwrap();
        let a2 = pools.for_caller(&alice_principal, &alice).unwrap();
        let b = pools.for_caller(&bob_principal, &bob).unwrap();
        assert!(Arc::ptr_eq(&a1, &a2));
        assert!(!Arc::ptr_eq(&a1, &b));
        assert_eq!(a1.shared.settings().credentials, alice);
        assert_eq!(b.shared.settings().credentials, bob);
        let anonymous = pools
            .for_caller(&Principal::anonymous(), &Credentials::none())
            .unwrap();
        assert!(Arc::ptr_eq(&anonymous, pools.anonymous()));
        assert!(anonymous.shared.settings().credentials.is_empty());
        assert_eq!(pools.caller_pools(), 2);
        // Nothing used them for the (zero) idle timeout: dropped.
        pools.close_idle();
        assert_eq!(pools.caller_pools(), 0);
    }

    #[tokio::test]
    async fn a_stdio_server_takes_no_credentials() {
        let pools = PrincipalPools::new(
            BackendSpec::Stdio {
                program: "/nonexistent".into(),
                args: Vec::new(),
            },
            settings(),
            8,
            ForwardCredentials::Always,
        );
        let (alice, principal) = caller("Bearer alice");
        let pool = pools.for_caller(&principal, &alice).unwrap();
        assert!(Arc::ptr_eq(&pool, pools.anonymous()));
    }

    #[tokio::test]
    async fn auto_forwards_once_the_server_asked_for_credentials() {
        let settings = settings();
        let wanted = Arc::clone(&settings.credentials_wanted);
        let pools = PrincipalPools::new(http(), settings, 8, ForwardCredentials::Auto);
        let (alice, principal) = caller("Bearer alice");
        assert!(!pools.forwards(&alice));
        let pool = pools.for_caller(&principal, &alice).unwrap();
        assert!(Arc::ptr_eq(&pool, pools.anonymous()));
        wanted.store(true, Ordering::Relaxed);
        assert!(pools.forwards(&alice));
        assert!(!pools.forwards(&Credentials::none()));
        let pool = pools.for_caller(&principal, &alice).unwrap();
        assert_eq!(pool.shared.settings().credentials, alice);
        let never = PrincipalPools::new(http(), self::settings(), 8, ForwardCredentials::Never);
        never.credentials_wanted.store(true, Ordering::Relaxed);
        assert!(!never.forwards(&alice));
    }

    #[tokio::test]
    async fn a_callers_refreshed_credentials_replace_those_its_lanes_send() {
        let pools = PrincipalPools::new(http(), settings(), 8, ForwardCredentials::Always);
        // Under --principal jwt one caller (issuer, subject) sends one token, then another.
        let principal = Principal::from_identity("https://auth.example.com", "alice");
        let (first, _) = caller("Bearer token-1");
        let (refreshed, _) = caller("Bearer token-2");
        let pool = pools.for_caller(&principal, &first).unwrap();
        assert_eq!(pool.shared.settings().credentials, first);
        // A retry or a legacy session's request: the pool's lanes send the newest token.
        pools.refresh(&principal, &refreshed);
        assert_eq!(pool.shared.settings().credentials, refreshed);
        // A request without credentials (a retry passed on by another instance) changes nothing.
        pools.refresh(&principal, &Credentials::none());
        assert_eq!(pool.shared.settings().credentials, refreshed);
        // A new request with the first token again: that one.
        let same = pools.for_caller(&principal, &first).unwrap();
        assert!(Arc::ptr_eq(&pool, &same));
        assert_eq!(pool.shared.settings().credentials, first);
        // Another caller's pool is never touched.
        let (bob, bob_principal) = caller("Bearer bob");
        pools.refresh(&bob_principal, &bob);
        assert_eq!(pools.caller_pools(), 1);
    }

    #[tokio::test]
    async fn at_the_bound_an_unused_pool_makes_room() {
        let pools = PrincipalPools::new(http(), settings(), 1, ForwardCredentials::Always);
        let (alice, alice_principal) = caller("Bearer alice");
        let (bob, bob_principal) = caller("Bearer bob");
        let first = pools.for_caller(&alice_principal, &alice).unwrap();
        let second = pools.for_caller(&bob_principal, &bob).unwrap();
        assert!(!Arc::ptr_eq(&first, &second));
        assert_eq!(pools.caller_pools(), 1);
        assert_eq!(second.shared.settings().credentials, bob);
    }
}
