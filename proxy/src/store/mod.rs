//! The pause store: the durable half of a paused call. One record per paused round, single-use
//! claims, expiry, and recognition of pauses whose owner is gone.
//!
//! The paused call itself (lane lease, pending legacy request ids) lives only in the memory of
//! the instance that paused it ([`crate::engine`]'s pause book); the store keeps what must be
//! decided atomically or survive that instance:
//!
//! - **single use**: [`PauseStore::claim`] is a compare-and-swap `Paused` → `Resuming`, so of
//!   two retries presenting the same `requestState` exactly one resumes the call, the other gets
//!   [`ClaimError::AlreadyUsed`];
//! - **deadlines**: [`PauseStore::expired`] lists this instance's paused calls whose deadline
//!   passed, for the sweep to cancel (then [`PauseStore::transition`] `Paused` → `Expired`);
//!   [`PauseStore::sweep`] deletes records that can no longer matter;
//! - **owners gone**: every opened store has a fresh random instance id. A live legacy call
//!   cannot outlive the process that held it, so records of another instance that is gone are
//!   reported as [`ClaimError::Lost`], and [`PauseStore::recover`] rewrites them at startup;
//! - **health**: [`PauseStore::health`] says whether the store takes writes now.
//!
//! Nothing outside this module knows which implementation runs: the engine holds an
//! `Arc<dyn PauseStore>` from [`open`]. Implementations: [`sled`] (embedded, the default: one
//! process) and [`redis`] (`redis://...`: several instances share it; [`PauseStore::owner`] says
//! where the owner of a pause can be reached).
//!
//! Times are Unix epoch milliseconds ([`crate::state::now_ms`]); a record is past its deadline
//! when `now_ms >= deadline_ms`, the same rule as a state's expiry.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::state::{PauseId, StateKey};

pub mod redis;
pub mod sled;

/// The durable half of paused calls. All methods take `&self`; implementations are internally
/// synchronised and shared as `Arc<dyn PauseStore>`.
#[async_trait::async_trait]
pub trait PauseStore: Send + Sync + fmt::Debug {
    /// This instance's id: the owner named in the records it parks ([`PauseRecord::boot_id`]).
    fn instance_id(&self) -> u64;

    /// At startup: every `Paused`/`Resuming` record whose owner is gone becomes `Lost` (records
    /// are kept so that a late retry gets the precise "lost" error). Returns how many.
    async fn recover(&self) -> Result<usize, StoreError>;

    /// The state key kept in the store, generated on first use. Used only when no key was
    /// configured. Concurrent first calls agree on one key.
    async fn state_key(&self) -> Result<StateKey, StoreError>;

    /// Records a new pause. Refused when its pause id exists already ([`StoreError::Duplicate`])
    /// or its owner is not this instance ([`StoreError::ForeignBoot`]).
    async fn park(&self, record: &PauseRecord) -> Result<(), StoreError>;

    /// The record of `pause_id`, if any.
    async fn get(&self, pause_id: &PauseId) -> Result<Option<PauseRecord>, StoreError>;

    /// Claims the paused call for one retry: atomically `Paused` → `Resuming`, returning the
    /// updated record. Of concurrent claims of one pause exactly one succeeds.
    async fn claim(&self, pause_id: &PauseId, now_ms: u64) -> Result<PauseRecord, ClaimError>;

    /// Sets the status, whatever it was. Prefer [`transition`](Self::transition) where another
    /// task may change the same record.
    async fn set_status(&self, pause_id: &PauseId, status: PauseStatus) -> Result<(), StoreError>;

    /// Sets the status to `to` only if it is `from` now (compare-and-swap); `Ok(false)` when it
    /// was something else.
    async fn transition(
        &self,
        pause_id: &PauseId,
        from: PauseStatus,
        to: PauseStatus,
    ) -> Result<bool, StoreError>;

    /// Ends a paused call for a reason of the proxy's own (its legacy session ended): `Paused` ->
    /// `Evicted` (compare-and-swap, `Ok(false)` when it was no longer paused), with `reason` kept
    /// for the retry's [`ClaimError::Evicted`] where the implementation can keep it.
    async fn evict(&self, pause_id: &PauseId, reason: &str) -> Result<bool, StoreError> {
        let _ = reason;
        self.transition(pause_id, PauseStatus::Paused, PauseStatus::Evicted)
            .await
    }

    /// This instance's `Paused` records whose deadline has passed: the calls the sweep must
    /// cancel. Does not change them.
    async fn expired(&self, now_ms: u64) -> Result<Vec<PauseRecord>, StoreError>;

    /// Deletes records that can no longer matter (finished, expired, cancelled, lost, or of an
    /// owner that is gone) whose deadline is before `older_than_ms`. Returns how many.
    async fn sweep(&self, older_than_ms: u64) -> Result<usize, StoreError>;

    /// How many records have each status (every status present, zeros included), for metrics
    /// and tests.
    async fn counts(&self) -> BTreeMap<PauseStatus, usize>;

    /// Makes everything written so far durable.
    async fn flush(&self) -> Result<(), StoreError>;

    /// Whether the store takes writes now; `Err(reason)` for the operator when it does not.
    async fn health(&self) -> Result<(), String>;

    /// Where the instance `instance` (the owner named in a record) can be reached.
    async fn owner(&self, instance: u64) -> Result<Owner, StoreError>;
}

/// Where the owner of a pause is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// This instance.
    Me,
    /// Another live instance, reachable at its `--advertise` URL.
    At(String),
    /// Another live instance that advertises no URL.
    Unreachable,
    /// No live instance has that id any more (it stopped or was killed).
    Gone,
}

/// Where the pause store lives: `--store DIR` (sled) or `--store redis://HOST:PORT/DB`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLocation {
    Sled(PathBuf),
    Redis(String),
}

impl StoreLocation {
    /// `redis://` and `rediss://` URLs are Redis, anything else a directory.
    pub fn parse(text: &str) -> StoreLocation {
        if text.starts_with("redis://")
            || text.starts_with("rediss://")
            || text.starts_with("redis+unix://")
        {
            StoreLocation::Redis(text.to_owned())
        } else {
            StoreLocation::Sled(PathBuf::from(text))
        }
    }
}

impl fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreLocation::Sled(dir) => write!(f, "{}", dir.display()),
            StoreLocation::Redis(url) => f.write_str(&redis::without_password(url)),
        }
    }
}

/// Opens the store at `location`. `advertise`: the URL other instances reach this one at
/// (registered with a shared store; a store of one process ignores it).
pub async fn open(
    location: &StoreLocation,
    advertise: Option<&str>,
) -> Result<Arc<dyn PauseStore>, StoreError> {
    Ok(match location {
        StoreLocation::Sled(dir) => Arc::new(sled::SledStore::open(dir)?),
        StoreLocation::Redis(url) => Arc::new(redis::RedisStore::open(url, advertise).await?),
    })
}

/// A store that lives as long as the value, for tests.
pub fn temporary() -> Result<Arc<dyn PauseStore>, StoreError> {
    Ok(Arc::new(sled::SledStore::temporary()?))
}

/// The life of one paused round.
///
/// ```text
/// Paused ──claim──▶ Resuming ──▶ Finished (final result sent, or the call paused again:
///   │                               the next round gets a new pause id and record)
///   ├─deadline sweep─▶ Expired
///   ├─client gone / legacy call ended─▶ Cancelled
///   ├─its legacy session ended─▶ Evicted (with the reason)
///   └─proxy restarted─▶ Lost   (also Resuming records of an earlier boot)
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PauseStatus {
    /// Waiting for the client's retry; the live legacy call is held by this boot.
    Paused,
    /// A retry claimed it and the call is being resumed.
    Resuming,
    /// Resumed and done with (the round is over).
    Finished,
    /// The deadline passed before a retry came; the legacy call was cancelled.
    Expired,
    /// Cancelled for another reason (the legacy call failed, shutdown, ...).
    Cancelled,
    /// The live legacy call died with an earlier proxy process.
    Lost,
    /// The proxy ended the paused call before its deadline for a reason of its own (its legacy
    /// session ended), never because other calls paused ([`PauseStore::evict`]).
    Evicted,
}

impl PauseStatus {
    pub const ALL: [PauseStatus; 7] = [
        PauseStatus::Paused,
        PauseStatus::Resuming,
        PauseStatus::Finished,
        PauseStatus::Expired,
        PauseStatus::Cancelled,
        PauseStatus::Lost,
        PauseStatus::Evicted,
    ];

    /// The snake_case name (as serialised; handy as a metrics label).
    pub fn as_str(self) -> &'static str {
        match self {
            PauseStatus::Paused => "paused",
            PauseStatus::Resuming => "resuming",
            PauseStatus::Finished => "finished",
            PauseStatus::Expired => "expired",
            PauseStatus::Cancelled => "cancelled",
            PauseStatus::Lost => "lost",
            PauseStatus::Evicted => "evicted",
        }
    }

    /// Whether the call behind a record with this status may still be alive (in its own boot).
    pub fn is_live(self) -> bool {
        matches!(self, PauseStatus::Paused | PauseStatus::Resuming)
    }
}

impl fmt::Display for PauseStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One paused round, as stored (JSON). Holds no secret and no request body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PauseRecord {
    /// Serialised as 32 hex digits; must equal the record's key.
    pub pause_id: PauseId,
    /// The instance (process) that holds the live call: [`PauseStore::instance_id`] at parking.
    pub boot_id: u64,
    pub status: PauseStatus,
    pub method: String,
    pub round: u32,
    /// [`crate::request::Principal::label`]: for logs only, never for authorization.
    pub principal_label: String,
    pub created_ms: u64,
    /// Unix epoch ms; normally the sealed state's `expires_at_ms`.
    pub deadline_ms: u64,
    /// The `inputRequests` keys sent to the client in this round.
    pub input_keys: Vec<String>,
}

impl PauseRecord {
    /// `Ok` when `instance` may park this record (it names `instance` as its owner).
    pub fn check_owner(&self, instance: u64) -> Result<(), StoreError> {
        if self.boot_id == instance {
            Ok(())
        } else {
            Err(StoreError::ForeignBoot {
                pause_id: self.pause_id,
                record_boot: self.boot_id,
                store_boot: instance,
            })
        }
    }
}

/// A store failure, with what was being done.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create the pause store directory {path}: {source}")]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot open the pause store at {path}: {source}")]
    Open {
        path: PathBuf,
        source: ::sled::Error,
    },
    #[error("pause store: {op} failed: {source}")]
    Sled {
        op: &'static str,
        source: ::sled::Error,
    },
    #[error("pause store: cannot encode the record of pause {pause_id}: {source}")]
    Encode {
        pause_id: PauseId,
        source: serde_json::Error,
    },
    #[error("pause store: the record of pause {pause_id} is corrupt: {detail}")]
    Corrupt { pause_id: String, detail: String },
    #[error("pause store: no record for pause {pause_id}")]
    NotFound { pause_id: PauseId },
    #[error("pause store: a record for pause {pause_id} exists already")]
    Duplicate { pause_id: PauseId },
    #[error("pause store: the record of pause {pause_id} names boot {record_boot}, but this store is boot {store_boot}; build records with PauseStore::instance_id()")]
    ForeignBoot {
        pause_id: PauseId,
        record_boot: u64,
        store_boot: u64,
    },
    #[error("pause store: the stored state key is unreadable ({detail}); delete the store directory or configure a key")]
    CorruptStateKey { detail: String },
    #[error("cannot reach the Redis pause store at {url}: {detail}")]
    RedisOpen { url: String, detail: String },
    #[error("Redis pause store: {op} failed: {detail}")]
    Redis { op: &'static str, detail: String },
    #[error("pause store: {op} kept conflicting with concurrent updates")]
    Contention { op: &'static str },
}

/// Why a retry cannot resume its paused call. Each message is the complete text the client gets
/// (nothing is prefixed to it; [`crate::refusals`] picks the JSON-RPC code).
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    /// The state opened with our key, so the pause existed: its record went with a crash before
    /// the store's flush, or was pruned.
    #[error("the paused call was lost: this proxy has no record of it any more (it restarted, or the record was pruned); send the original request again without requestState")]
    Unknown,
    #[error("requestState was already used: each requestState is valid for one retry only")]
    AlreadyUsed,
    #[error("the paused call behind this requestState expired; send the original request again without inputResponses and requestState")]
    Expired,
    #[error("the paused call behind this requestState was cancelled; send the original request again without inputResponses and requestState")]
    Cancelled,
    #[error("the paused call was lost when the server restarted; send the original request again without inputResponses and requestState")]
    Lost,
    #[error("the paused call behind this requestState was evicted: {0}; send the original request again without inputResponses and requestState")]
    Evicted(String),
    /// The store's own message already says "pause store: ...".
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ClaimError {
    /// A stable snake_case label for metrics and logs.
    pub fn reason(&self) -> &'static str {
        match self {
            ClaimError::Unknown => "unknown",
            ClaimError::AlreadyUsed => "already_used",
            ClaimError::Expired => "expired",
            ClaimError::Cancelled => "cancelled",
            ClaimError::Lost => "lost",
            ClaimError::Evicted(_) => "evicted",
            ClaimError::Store(_) => "store",
        }
    }
}
