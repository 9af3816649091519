//! Legacy-era client sessions (`initialize`, protocol 2025-11-25 / 2025-06-18 / 2025-03-26 /
//! 2024-11-05), served beside the 2026-07-28 (MRTR) path on the same endpoint.
//!
//! A legacy client session is a route of its own: no pause store, no `requestState`, only a lane
//! held for the session's life ([`crate::backend::SessionLane`]: its own legacy session, or its
//! own child process) and a relay in both directions ([`relay`]). The fronts decide the era of
//! each message ([`era`]) and hand legacy traffic here.
//!
//! - [`era`]: era detection (HTTP per message, stdio by the first message), `--era-policy`, and
//!   the `initialize` version negotiation;
//! - [`table`]: `Mcp-Session-Id` → session, bounded (`--max-legacy-sessions`), idle expiry
//!   (`--legacy-session-idle-timeout`);
//! - [`relay`]: one session: requests, notifications, cancellation, responses to the server's
//!   requests; `route.rs`: where each server message goes.

pub mod era;
pub mod relay;
mod route;
pub mod table;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::backend::{BackendError, PrincipalPools};
use crate::credentials::Credentials;
use crate::jsonrpc::{codes, ErrorObject, Message};
use crate::request::Principal;
use mcp_migrate_rules::RuleId;

pub use era::{Era, EraPolicy, LEGACY_VERSIONS, SESSION_HEADER};
pub use relay::{ClientLabel, RelayError, Session};
pub use table::SessionTable;

/// The default of `--max-legacy-sessions`.
pub const DEFAULT_MAX_SESSIONS: usize = 256;
/// The default of `--legacy-session-idle-timeout`.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Settings of the legacy sessions.
#[derive(Debug, Clone)]
pub struct LegacySettings {
    pub policy: EraPolicy,
    pub max_sessions: usize,
    /// A session with no request in flight for this long ends (its client gets 404 next time).
    pub idle_timeout: Duration,
}

impl Default for LegacySettings {
    fn default() -> Self {
        LegacySettings {
            policy: EraPolicy::Both,
            max_sessions: DEFAULT_MAX_SESSIONS,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
        }
    }
}

/// Why `initialize` opened no session: the response to send (and its HTTP status).
#[derive(Debug)]
pub struct Refused {
    pub response: Message,
    pub http_status: u16,
}

/// The legacy client sessions of one proxy.
pub struct LegacySessions {
    pools: Arc<PrincipalPools>,
    settings: LegacySettings,
    table: SessionTable,
}

impl std::fmt::Debug for LegacySessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LegacySessions")
            .field("settings", &self.settings)
            .field("open", &self.table.len())
            .finish_non_exhaustive()
    }
}

impl LegacySessions {
    pub fn new(pools: Arc<PrincipalPools>, settings: LegacySettings) -> Arc<Self> {
        crate::metrics::global().set_legacy_sessions_max(settings.max_sessions);
        Arc::new(LegacySessions {
            table: SessionTable::new(settings.max_sessions),
            pools,
            settings,
        })
    }

    pub fn policy(&self) -> EraPolicy {
        self.settings.policy
    }

    /// Open sessions.
    pub fn open_sessions(&self) -> usize {
        self.table.len()
    }

    /// A request of `principal` on one of its sessions carried `credentials`: its lanes send
    /// them from now on ([`PrincipalPools::refresh`]; a refreshed token under `--principal jwt`).
    pub fn refresh_credentials(&self, principal: &Principal, credentials: &Credentials) {
        self.pools.refresh(principal, credentials);
    }

    /// Opens a session for a legacy `initialize` request: negotiates the version, starts the
    /// session's own lane with the client's params, and answers with the legacy server's own
    /// `InitializeResult`.
    ///
    /// The session's lane sends `credentials` with every request it makes, and the session
    /// belongs to `principal` (when they are sent on, or when `verified`: a verified token's
    /// identity under `--principal jwt`): requests of another caller on it are refused.
    pub async fn initialize(
        &self,
        id: Value,
        params: Option<Value>,
        principal: Principal,
        credentials: &Credentials,
        verified: bool,
    ) -> Result<(Arc<Session>, Message), Refused> {
        crate::metrics::global().era_request(Era::Legacy.label());
        let refuse = |error: ErrorObject, http_status: u16| Refused {
            response: Message::response(id.clone(), Err(error)),
            http_status,
        };
        let mut params = match params {
            Some(params @ Value::Object(_)) => params,
            _ => {
                return Err(refuse(
                    ErrorObject::new(
                        codes::INVALID_PARAMS,
                        "`initialize` needs a `params` object",
                    ),
                    200,
                ))
            }
        };
        let version = era::negotiate(params.get("protocolVersion")).map_err(|error| {
            crate::metrics::global().rejection("legacy_version");
            refuse(error, 200)
        })?;
        let Some(place) = self.table.reserve() else {
            crate::metrics::global().rejection("limit_legacy_sessions");
            tracing::warn!(
                max = self.table.max(),
                "refused a legacy session: too many open (--max-legacy-sessions)"
            );
            return Err(refuse(
                ErrorObject::new(
                    -32000,
                    format!(
                        "too many legacy sessions open ({}, --max-legacy-sessions); try again later",
                        self.table.max()
                    ),
                ),
                503,
            ));
        };
        params["protocolVersion"] = Value::from(version);
        let client = ClientLabel::from_initialize(&params);
        // A session whose lane carries the caller's credentials belongs to that caller, and so
        // does one opened by a verified identity.
        let owner = (verified || self.pools.forwards(credentials)).then(|| principal.clone());
        let opened = match self.pools.for_caller(&principal, credentials) {
            Ok(pool) => pool.open_session_lane(params.clone()).await,
            Err(error) => Err(error),
        };
        let lane = match opened {
            Ok(lane) => lane,
            Err(BackendError::Unauthorized { status, challenge }) => {
                tracing::info!(status, client = %client.name, "the legacy server refused a legacy client's credentials");
                return Err(refuse(
                    crate::credentials::refusal(status, challenge.as_deref()),
                    status,
                ));
            }
            Err(error) => {
                tracing::warn!(%error, client = %client.name, "a legacy session could not be opened");
                return Err(refuse(
                    ErrorObject::new(codes::INTERNAL_ERROR, error.to_string()),
                    200,
                ));
            }
        };
        let initialized = lane.lane.initialized().clone();
        let session = Session::start(
            SessionTable::mint_id(),
            client,
            initialized.protocol_version.clone(),
            lane,
            owner,
        );
        place.fill(Arc::clone(&session));
        crate::metrics::global().legacy_session_opened();
        tracing::info!(
            session = %session.id,
            client = %session.client.name,
            client_version = %session.client.version,
            asked = version,
            protocol_version = %session.protocol_version,
            lane = session.lane().id(),
            "legacy session opened"
        );
        note_initialize_deprecations(&session, &params);
        Ok((session, Message::response(id, Ok(initialized.result))))
    }

    /// The live session with this id (`None`: unknown, ended or expired → 404).
    pub fn get(&self, id: &str) -> Option<Arc<Session>> {
        self.table.get(id)
    }

    /// Ends a session at the client's request (HTTP DELETE, stdio EOF); `false` if unknown.
    pub async fn delete(&self, id: &str) -> bool {
        match self.table.remove(id) {
            Some(session) => {
                let was_live = !session.is_ended();
                session.end("the client ended the session").await;
                crate::metrics::global().legacy_session_ended(if was_live {
                    "deleted"
                } else {
                    "server"
                });
                was_live
            }
            None => false,
        }
    }

    /// Drops sessions that ended by themselves and ends the idle ones.
    pub async fn sweep(&self) {
        let (ended, expired) = self
            .table
            .take_stale(self.settings.idle_timeout, Instant::now());
        for _ in &ended {
            crate::metrics::global().legacy_session_ended("server");
        }
        for session in expired {
            crate::metrics::global().legacy_session_ended("expired");
            session
                .end("idle for longer than --legacy-session-idle-timeout")
                .await;
        }
    }

    /// How often [`LegacySessions::sweep`] should run.
    pub fn sweep_period(&self) -> Duration {
        (self.settings.idle_timeout / 4).clamp(Duration::from_millis(100), Duration::from_secs(30))
    }

    /// Closes every session's GET stream (shutdown begins: requests in flight may still finish).
    pub fn close_streams(&self) {
        for session in self.table.all() {
            session.close_standalone();
        }
    }

    /// Ends every session (proxy shutdown).
    pub async fn shutdown(&self) {
        let sessions = self.table.drain();
        futures_util::future::join_all(sessions.iter().map(|session| async move {
            if !session.is_ended() {
                crate::metrics::global().legacy_session_ended("shutdown");
            } else {
                crate::metrics::global().legacy_session_ended("server");
            }
            session.end("the proxy is shutting down").await;
        }))
        .await;
    }
}

/// The warnings a legacy client earns by opening a session: once per session, naming it.
fn note_initialize_deprecations(session: &Session, params: &Value) {
    session.warn_once(
        RuleId::LegacySdkVersion,
        &format!(
            "opened a legacy session (initialize, protocol {})",
            session.protocol_version
        ),
    );
    let capabilities = params.get("capabilities");
    let sampling = capabilities
        .and_then(|caps| caps.get("sampling"))
        .filter(|sampling| sampling.is_object());
    if sampling.is_some() {
        session.warn_once(
            RuleId::DeprecatedSampling,
            "declares the sampling capability",
        );
    }
    if sampling.is_some_and(|sampling| sampling.get("context").is_some()) {
        session.warn_once(
            RuleId::DeprecatedIncludeContext,
            "declares sampling.context",
        );
    }
    if capabilities
        .and_then(|caps| caps.get("roots"))
        .is_some_and(Value::is_object)
    {
        session.warn_once(RuleId::DeprecatedRoots, "declares the roots capability");
    }
}
