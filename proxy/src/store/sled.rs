//! The sled pause store: the embedded default [`PauseStore`].
//!
//! Layout: tree `pauses`, key = the 16 pause id bytes, value = [`PauseRecord`] as JSON (no
//! secrets, no request bodies); tree `meta`, key `state-key` = the generated [`StateKey`] as
//! hex, when no key was configured. sled locks the directory: one process at a time, so the
//! owner of every live record is this process or an earlier boot of it (gone).
//!
//! Corrupt records never panic: a record that does not decode is treated as `Lost` by
//! [`claim`](SledStore::claim) and [`counts`](SledStore::counts), skipped (with a
//! `tracing::warn!`) by the sweeps, and an error for [`set_status`](SledStore::set_status).
//!
//! The contract every store keeps (single use, each claim outcome, duplicates, unknown pauses)
//! is tested through the trait for sled and Redis alike in `tests/tests/proxy_store.rs`; the
//! tests here are sled's own (restarts, corrupt records, the model of its state machine).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use rand::rngs::OsRng;
use rand::RngCore;

use super::{ClaimError, Owner, PauseRecord, PauseStatus, PauseStore, StoreError};
use crate::state::{PauseId, StateKey};

const PAUSES_TREE: &str = "pauses";
const META_TREE: &str = "meta";
const STATE_KEY: &[u8] = b"state-key";
/// Compare-and-swap retries before giving up with [`StoreError::Contention`]. Every failed CAS
/// means another writer made progress on that record, so this is only a safety net.
const CAS_ATTEMPTS: usize = 1_000;

/// The `meta` key of a pause's eviction reason.
fn eviction_key(pause_id: &PauseId) -> Vec<u8> {
    [b"evicted/".as_slice(), pause_id.as_bytes()].concat()
}

fn sled_error(op: &'static str) -> impl FnOnce(sled::Error) -> StoreError {
    move |source| StoreError::Sled { op, source }
}

/// The sled-backed pause store. Cheap to clone and share across threads (all methods take
/// `&self`; sled is internally synchronised).
#[derive(Clone)]
pub struct SledStore {
    db: sled::Db,
    pauses: sled::Tree,
    meta: sled::Tree,
    boot_id: u64,
    /// The directory opened and the identity (device, inode) of its database file, for the
    /// health probe (`None` for a temporary store).
    dir: Option<(PathBuf, Option<(u64, u64)>)>,
}

impl fmt::Debug for SledStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SledStore")
            .field("boot_id", &self.boot_id)
            .finish_non_exhaustive()
    }
}

impl SledStore {
    /// Opens (creating it, mode 0700 on Unix, if missing) the store in `dir`. Each open is a new
    /// boot with a fresh random boot id. sled locks the directory: one process at a time.
    pub fn open(dir: &Path) -> Result<SledStore, StoreError> {
        if !dir.exists() {
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder
                .create(dir)
                .map_err(|source| StoreError::CreateDir {
                    path: dir.to_owned(),
                    source,
                })?;
        }
        let db = sled::Config::new()
            .path(dir)
            .open()
            .map_err(|source| StoreError::Open {
                path: dir.to_owned(),
                source,
            })?;
        let mut store = Self::with_db(db)?;
        store.dir = Some((dir.to_owned(), file_identity(&dir.join("db"))));
        Ok(store)
    }

    /// A store that lives only as long as this value (sled temporary mode), for tests.
    pub fn temporary() -> Result<SledStore, StoreError> {
        let db = sled::Config::new()
            .temporary(true)
            .open()
            .map_err(sled_error("open (temporary)"))?;
        Self::with_db(db)
    }

    fn with_db(db: sled::Db) -> Result<SledStore, StoreError> {
        let pauses = db
            .open_tree(PAUSES_TREE)
            .map_err(sled_error("open tree pauses"))?;
        let meta = db
            .open_tree(META_TREE)
            .map_err(sled_error("open tree meta"))?;
        Ok(SledStore {
            db,
            pauses,
            meta,
            boot_id: OsRng.next_u64(),
            dir: None,
        })
    }

    /// This process's boot id: put it in every [`PauseRecord`] you insert.
    pub fn boot_id(&self) -> u64 {
        self.boot_id
    }

    /// Checks that the store takes writes: its database file is still the one opened, a file
    /// can be written in its directory, and a probe key (tree `meta`, key `readyz-probe`) is
    /// written and flushed to disk. The engine probes every second (`/readyz` and the pause path
    /// read its verdict). Blocks (file system calls, fsync).
    pub fn probe(&self) -> Result<(), String> {
        if let Some((dir, identity)) = &self.dir {
            let db = dir.join("db");
            if identity.is_some() && file_identity(&db) != *identity {
                return Err(format!(
                    "the pause store's database {} was removed or replaced since the proxy opened it",
                    db.display()
                ));
            }
            let probe = dir.join(".write-probe");
            std::fs::write(&probe, b"ok")
                .and_then(|()| std::fs::remove_file(&probe))
                .map_err(|error| {
                    format!(
                        "the pause store directory {} is not writable: {error}",
                        dir.display()
                    )
                })?;
        }
        self.probe_writable()
            .map_err(|error| format!("the pause store does not take writes: {error}"))
    }

    fn probe_writable(&self) -> Result<(), StoreError> {
        self.meta
            .insert(b"readyz-probe", &crate::state::now_ms().to_be_bytes())
            .map_err(sled_error("write the readiness probe"))?;
        self.db
            .flush()
            .map_err(sled_error("flush the readiness probe"))?;
        Ok(())
    }

    /// The state key kept in the store (tree `meta`, key `state-key`), generated and flushed to
    /// disk on first use. Use it only when neither `--state-key-file` nor `MCP_MRTR_STATE_KEY`
    /// is given. Keeping it across restarts lets a late retry get the precise "lost at restart"
    /// error instead of "forged". Concurrent first calls agree on one key.
    pub fn state_key(&self) -> Result<StateKey, StoreError> {
        let parse = |bytes: &[u8]| {
            let text = std::str::from_utf8(bytes).map_err(|_| StoreError::CorruptStateKey {
                detail: "not UTF-8".to_owned(),
            })?;
            StateKey::from_text(text).map_err(|error| StoreError::CorruptStateKey {
                detail: error.to_string(),
            })
        };
        if let Some(stored) = self
            .meta
            .get(STATE_KEY)
            .map_err(sled_error("read the state key"))?
        {
            return parse(&stored);
        }
        let key = StateKey::generate();
        let text = key.to_text();
        match self
            .meta
            .compare_and_swap(STATE_KEY, None::<&[u8]>, Some(text.as_bytes()))
            .map_err(sled_error("store the state key"))?
        {
            Ok(()) => {
                self.meta
                    .flush()
                    .map_err(sled_error("flush the state key"))?;
                Ok(key)
            }
            Err(conflict) => match conflict.current {
                Some(stored) => parse(&stored),
                None => Err(StoreError::Contention {
                    op: "store the state key",
                }),
            },
        }
    }

    /// Adds a record. Refused when its pause id exists already ([`StoreError::Duplicate`]) or
    /// its `boot_id` is not [`boot_id`](Self::boot_id) ([`StoreError::ForeignBoot`]).
    pub fn insert(&self, record: &PauseRecord) -> Result<(), StoreError> {
        record.check_owner(self.boot_id)?;
        let bytes = encode(record)?;
        match self
            .pauses
            .compare_and_swap(record.pause_id.as_bytes(), None::<&[u8]>, Some(bytes))
            .map_err(sled_error("insert"))?
        {
            Ok(()) => Ok(()),
            Err(_) => Err(StoreError::Duplicate {
                pause_id: record.pause_id,
            }),
        }
    }

    /// The record of `pause_id`, if any.
    pub fn get(&self, pause_id: &PauseId) -> Result<Option<PauseRecord>, StoreError> {
        match self
            .pauses
            .get(pause_id.as_bytes())
            .map_err(sled_error("read"))?
        {
            None => Ok(None),
            Some(bytes) => decode(pause_id.as_bytes(), &bytes).map(Some),
        }
    }

    /// Claims the paused call for one retry: atomically `Paused` → `Resuming`, returning the
    /// updated record. Of concurrent claims of one pause exactly one succeeds.
    ///
    /// Refusals: no record → `Unknown`; `Resuming`/`Finished` → `AlreadyUsed` (a replay);
    /// `Expired`, or `Paused` with `now_ms >= deadline_ms` → `Expired`; `Cancelled`; `Lost`, a
    /// `Paused`/`Resuming` record of an earlier boot, or an undecodable record → `Lost`.
    /// A claim past the deadline does not change the record: the sweep ([`expired`](Self::expired))
    /// still finds it and must cancel the live call.
    pub fn claim(&self, pause_id: &PauseId, now_ms: u64) -> Result<PauseRecord, ClaimError> {
        let key = pause_id.as_bytes();
        for _ in 0..CAS_ATTEMPTS {
            let Some(current) = self.pauses.get(key).map_err(sled_error("claim: read"))? else {
                return Err(ClaimError::Unknown);
            };
            let record = match decode(key, &current) {
                Ok(record) => record,
                Err(error) => {
                    tracing::warn!(pause_id = %pause_id, %error, "undecodable pause record: claim refused as lost");
                    return Err(ClaimError::Lost);
                }
            };
            match record.status {
                PauseStatus::Lost => return Err(ClaimError::Lost),
                status if status.is_live() && record.boot_id != self.boot_id => {
                    return Err(ClaimError::Lost)
                }
                PauseStatus::Resuming | PauseStatus::Finished => {
                    return Err(ClaimError::AlreadyUsed)
                }
                PauseStatus::Expired => return Err(ClaimError::Expired),
                PauseStatus::Cancelled => return Err(ClaimError::Cancelled),
                PauseStatus::Evicted => {
                    return Err(ClaimError::Evicted(self.eviction_reason(pause_id)))
                }
                PauseStatus::Paused if now_ms >= record.deadline_ms => {
                    return Err(ClaimError::Expired)
                }
                PauseStatus::Paused => {
                    let claimed = PauseRecord {
                        status: PauseStatus::Resuming,
                        ..record
                    };
                    let bytes = encode(&claimed)?;
                    if self
                        .pauses
                        .compare_and_swap(key, Some(&current), Some(bytes))
                        .map_err(sled_error("claim: swap"))?
                        .is_ok()
                    {
                        return Ok(claimed);
                    }
                    // Someone else changed the record in between: decide again on its new value.
                }
            }
        }
        Err(ClaimError::Store(StoreError::Contention { op: "claim" }))
    }

    /// Sets the status, whatever it was. Prefer [`transition`](Self::transition) where another
    /// task may change the same record (the deadline sweep against a claim, for instance).
    pub fn set_status(&self, pause_id: &PauseId, status: PauseStatus) -> Result<(), StoreError> {
        self.update_status(pause_id, "set status", |_| true, status)
            .map(|_| ())
    }

    /// Sets the status to `to` only if it is `from` now (compare-and-swap); `Ok(false)` when it
    /// was something else. E.g. the sweep: `if store.transition(id, Paused, Expired)? { cancel }`.
    pub fn transition(
        &self,
        pause_id: &PauseId,
        from: PauseStatus,
        to: PauseStatus,
    ) -> Result<bool, StoreError> {
        self.update_status(pause_id, "transition", |record| record.status == from, to)
    }

    /// Ends a paused call for a reason of the proxy's own: `Paused` -> `Evicted` (compare-and-swap,
    /// `Ok(false)` when it was no longer paused), with `reason` kept (tree `meta`) for the retry.
    pub fn evict(&self, pause_id: &PauseId, reason: &str) -> Result<bool, StoreError> {
        let evicted = self.transition(pause_id, PauseStatus::Paused, PauseStatus::Evicted)?;
        if evicted {
            // A claim in between reads the generic reason: it is told "evicted" all the same.
            self.meta
                .insert(eviction_key(pause_id), reason.as_bytes())
                .map_err(sled_error("record an eviction reason"))?;
        }
        Ok(evicted)
    }

    /// Why a pause was evicted (a generic text when the reason is gone).
    pub fn eviction_reason(&self, pause_id: &PauseId) -> String {
        self.meta
            .get(eviction_key(pause_id))
            .ok()
            .flatten()
            .and_then(|bytes| String::from_utf8(bytes.to_vec()).ok())
            .unwrap_or_else(|| "the proxy ended it before its deadline".to_owned())
    }

    fn update_status(
        &self,
        pause_id: &PauseId,
        op: &'static str,
        applies: impl Fn(&PauseRecord) -> bool,
        status: PauseStatus,
    ) -> Result<bool, StoreError> {
        let key = pause_id.as_bytes();
        for _ in 0..CAS_ATTEMPTS {
            let current =
                self.pauses
                    .get(key)
                    .map_err(sled_error(op))?
                    .ok_or(StoreError::NotFound {
                        pause_id: *pause_id,
                    })?;
            let record = decode(key, &current)?;
            if !applies(&record) {
                return Ok(false);
            }
            let bytes = encode(&PauseRecord { status, ..record })?;
            if self
                .pauses
                .compare_and_swap(key, Some(&current), Some(bytes))
                .map_err(sled_error(op))?
                .is_ok()
            {
                return Ok(true);
            }
        }
        Err(StoreError::Contention { op })
    }

    /// Every record with its raw bytes; undecodable ones are logged and passed as `None` so
    /// callers can count them.
    fn scan(&self, op: &'static str) -> Result<Vec<Scanned>, StoreError> {
        let mut out = Vec::new();
        for entry in self.pauses.iter() {
            let (key, bytes) = entry.map_err(sled_error(op))?;
            let record = decode(&key, &bytes)
                .map_err(|error| {
                    tracing::warn!(key = %hex_key(&key), %error, op, "undecodable pause record");
                })
                .ok();
            out.push(Scanned { bytes, record });
        }
        Ok(out)
    }

    /// The `Paused` records of this boot whose deadline has passed (`now_ms >= deadline_ms`):
    /// the calls the sweep must cancel. Does not change them (see [`transition`](Self::transition)).
    pub fn expired(&self, now_ms: u64) -> Result<Vec<PauseRecord>, StoreError> {
        Ok(self
            .scan("expiry scan")?
            .into_iter()
            .filter_map(|scanned| scanned.record)
            .filter(|record| {
                record.status == PauseStatus::Paused
                    && record.boot_id == self.boot_id
                    && now_ms >= record.deadline_ms
            })
            .collect())
    }

    /// At startup: every `Paused`/`Resuming` record of another boot becomes `Lost` (records are
    /// kept so that a late retry gets the precise "lost at restart" error). Returns how many.
    pub fn mark_previous_boots_lost(&self) -> Result<usize, StoreError> {
        let mut marked = 0;
        for scanned in self.scan("restart scan")? {
            let Some(record) = scanned.record else {
                continue;
            };
            if record.status.is_live() && record.boot_id != self.boot_id {
                let boot = self.boot_id;
                if self.update_status(
                    &record.pause_id,
                    "mark lost",
                    |now| now.status.is_live() && now.boot_id != boot,
                    PauseStatus::Lost,
                )? {
                    marked += 1;
                }
            }
        }
        Ok(marked)
    }

    /// Deletes records that can no longer matter and whose deadline is before `older_than_ms`:
    /// `Finished`, `Expired`, `Cancelled`, `Lost`, and any record of an earlier boot. Never a
    /// `Paused` or `Resuming` record of this boot (its call is alive). Undecodable records are
    /// kept (a claim reports them as lost). A retry whose record was pruned gets `Unknown`, so
    /// prune after the deadlines, when the state's own expiry refuses every retry first (the
    /// engine prunes 10 s after them). Returns how many were deleted.
    pub fn prune(&self, older_than_ms: u64) -> Result<usize, StoreError> {
        let mut deleted = 0;
        for Scanned { bytes, record } in self.scan("prune scan")? {
            let Some(record) = record else { continue };
            let removable = !record.status.is_live() || record.boot_id != self.boot_id;
            if removable && record.deadline_ms < older_than_ms {
                // Delete only the version we looked at.
                if self
                    .pauses
                    .compare_and_swap(record.pause_id.as_bytes(), Some(&bytes), None::<&[u8]>)
                    .map_err(sled_error("prune"))?
                    .is_ok()
                {
                    if record.status == PauseStatus::Evicted {
                        self.meta
                            .remove(eviction_key(&record.pause_id))
                            .map_err(sled_error("prune an eviction reason"))?;
                    }
                    deleted += 1;
                }
            }
        }
        Ok(deleted)
    }

    /// How many records have each status (every status present, zeros included), for metrics.
    /// Undecodable records count as `Lost`; a read error is logged and gives the counts so far.
    pub fn counts(&self) -> BTreeMap<PauseStatus, usize> {
        let mut counts: BTreeMap<PauseStatus, usize> =
            PauseStatus::ALL.iter().map(|status| (*status, 0)).collect();
        let records = match self.scan("count") {
            Ok(records) => records,
            Err(error) => {
                tracing::warn!(%error, "pause store count failed");
                return counts;
            }
        };
        for scanned in records {
            let status = scanned
                .record
                .map_or(PauseStatus::Lost, |record| record.status);
            *counts.entry(status).or_insert(0) += 1;
        }
        counts
    }

    /// Writes everything to disk (sled also flushes on its own every 500 ms).
    pub fn flush(&self) -> Result<(), StoreError> {
        self.db.flush().map_err(sled_error("flush"))?;
        Ok(())
    }
}

#[async_trait::async_trait]
impl PauseStore for SledStore {
    fn instance_id(&self) -> u64 {
        self.boot_id
    }

    async fn recover(&self) -> Result<usize, StoreError> {
        self.mark_previous_boots_lost()
    }

    async fn state_key(&self) -> Result<StateKey, StoreError> {
        SledStore::state_key(self)
    }

    async fn park(&self, record: &PauseRecord) -> Result<(), StoreError> {
        self.insert(record)
    }

    async fn get(&self, pause_id: &PauseId) -> Result<Option<PauseRecord>, StoreError> {
        SledStore::get(self, pause_id)
    }

    async fn claim(&self, pause_id: &PauseId, now_ms: u64) -> Result<PauseRecord, ClaimError> {
        SledStore::claim(self, pause_id, now_ms)
    }

    async fn set_status(&self, pause_id: &PauseId, status: PauseStatus) -> Result<(), StoreError> {
        SledStore::set_status(self, pause_id, status)
    }

    async fn transition(
        &self,
        pause_id: &PauseId,
        from: PauseStatus,
        to: PauseStatus,
    ) -> Result<bool, StoreError> {
        SledStore::transition(self, pause_id, from, to)
    }

    async fn evict(&self, pause_id: &PauseId, reason: &str) -> Result<bool, StoreError> {
        SledStore::evict(self, pause_id, reason)
    }

    async fn expired(&self, now_ms: u64) -> Result<Vec<PauseRecord>, StoreError> {
        SledStore::expired(self, now_ms)
    }

    async fn sweep(&self, older_than_ms: u64) -> Result<usize, StoreError> {
        self.prune(older_than_ms)
    }

    async fn counts(&self) -> BTreeMap<PauseStatus, usize> {
        SledStore::counts(self)
    }

    async fn flush(&self) -> Result<(), StoreError> {
        let store = self.clone();
        // fsync blocks: keep it off the runtime's workers.
        tokio::task::spawn_blocking(move || SledStore::flush(&store))
            .await
            .unwrap_or_else(|_| Err(StoreError::Contention { op: "flush" }))
    }

    async fn health(&self) -> Result<(), String> {
        let store = self.clone();
        tokio::task::spawn_blocking(move || store.probe())
            .await
            .unwrap_or_else(|_| Err("the pause store probe did not finish".to_owned()))
    }

    async fn owner(&self, instance: u64) -> Result<Owner, StoreError> {
        // sled locks its directory: any other owner was an earlier run of this process.
        Ok(if instance == self.boot_id {
            Owner::Me
        } else {
            Owner::Gone
        })
    }
}

#[cfg(unix)]
fn file_identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let metadata = std::fs::metadata(path).ok()?;
    Some((metadata.dev(), metadata.ino()))
}

#[cfg(not(unix))]
fn file_identity(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|_| (0, 0))
}

/// One entry of a full scan: the raw value (for compare-and-swap) and the record, `None` when
/// it does not decode.
struct Scanned {
    bytes: sled::IVec,
    record: Option<PauseRecord>,
}

fn hex_key(key: &[u8]) -> String {
    key.iter().map(|b| format!("{b:02x}")).collect()
}

fn encode(record: &PauseRecord) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(record).map_err(|source| StoreError::Encode {
        pause_id: record.pause_id,
        source,
    })
}

fn decode(key: &[u8], bytes: &[u8]) -> Result<PauseRecord, StoreError> {
    let record: PauseRecord =
        serde_json::from_slice(bytes).map_err(|error| StoreError::Corrupt {
            pause_id: hex_key(key),
            detail: error.to_string(),
        })?;
    if record.pause_id.as_bytes()[..] != *key {
        return Err(StoreError::Corrupt {
            pause_id: hex_key(key),
            detail: format!("it names pause {}", record.pause_id),
        });
    }
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;
    use std::sync::Barrier;

    const NOW: u64 = 1_800_000_000_000;

    fn record(store: &SledStore, deadline_ms: u64) -> PauseRecord {
        PauseRecord {
            pause_id: PauseId::random(),
            boot_id: store.boot_id(),
            status: PauseStatus::Paused,
            method: "tools/call".to_owned(),
            round: 1,
            principal_label: "0a1b2c3d".to_owned(),
            created_ms: NOW,
            deadline_ms,
            input_keys: vec!["r:1".to_owned(), "r:\"x\"".to_owned()],
        }
    }

    fn status(store: &SledStore, id: &PauseId) -> Option<PauseStatus> {
        store.get(id).unwrap().map(|record| record.status)
    }

    fn reason<T: fmt::Debug>(result: Result<T, ClaimError>) -> &'static str {
        match result {
            Ok(_) => "ok",
            Err(error) => error.reason(),
        }
    }

    #[test]
    fn an_evicted_pause_tells_its_retry_why() {
        let store = SledStore::temporary().unwrap();
        let rec = record(&store, NOW + 1_000);
        store.insert(&rec).unwrap();
        assert!(store
            .evict(&rec.pause_id, "its legacy session ended")
            .unwrap());
        assert!(
            !store.evict(&rec.pause_id, "again").unwrap(),
            "only a paused call"
        );
        match store.claim(&rec.pause_id, NOW) {
            Err(error @ ClaimError::Evicted(_)) => {
                let text = error.to_string();
                assert!(text.contains("evicted: its legacy session ended"), "{text}");
                assert!(!text.contains("expired"), "{text}");
            }
            other => panic!("{other:?}"),
        }
        // The reason goes with the record.
        assert_eq!(store.prune(NOW + 2_000).unwrap(), 1);
        assert_eq!(
            store.eviction_reason(&rec.pause_id),
            "the proxy ended it before its deadline"
        );
    }

    fn status_of(store: &SledStore, rec: &PauseRecord) -> PauseStatus {
        status(store, &rec.pause_id).unwrap()
    }

    #[test]
    fn claim_deadline_boundary() {
        let store = SledStore::temporary().unwrap();
        let rec = record(&store, NOW);
        store.insert(&rec).unwrap();
        assert!(matches!(
            store.claim(&rec.pause_id, NOW),
            Err(ClaimError::Expired)
        ));
        assert!(matches!(
            store.claim(&rec.pause_id, u64::MAX),
            Err(ClaimError::Expired)
        ));
        // Still Paused: the sweep must find it and cancel the live call.
        assert_eq!(status_of(&store, &rec), PauseStatus::Paused);
        assert_eq!(store.expired(NOW).unwrap(), vec![rec.clone()]);
        // One millisecond earlier it could be claimed.
        assert_eq!(reason(store.claim(&rec.pause_id, NOW - 1)), "ok");
        assert_eq!(store.expired(NOW).unwrap(), vec![]);
    }

    #[test]
    fn concurrent_claims_exactly_one_wins() {
        let store = SledStore::temporary().unwrap();
        for threads in [2usize, 8] {
            for _ in 0..50 {
                let rec = record(&store, NOW + 1_000);
                store.insert(&rec).unwrap();
                let barrier = Barrier::new(threads);
                let outcomes: Vec<&'static str> = std::thread::scope(|scope| {
                    let handles: Vec<_> = (0..threads)
                        .map(|_| {
                            scope.spawn(|| {
                                barrier.wait();
                                reason(store.claim(&rec.pause_id, NOW))
                            })
                        })
                        .collect();
                    handles.into_iter().map(|h| h.join().unwrap()).collect()
                });
                assert_eq!(
                    outcomes.iter().filter(|o| **o == "ok").count(),
                    1,
                    "{outcomes:?}"
                );
                assert_eq!(
                    outcomes.iter().filter(|o| **o == "already_used").count(),
                    threads - 1,
                    "{outcomes:?}"
                );
                assert_eq!(status_of(&store, &rec), PauseStatus::Resuming);
            }
        }
    }

    #[test]
    fn claim_racing_the_sweep() {
        // A claim and the sweep's transition Paused -> Expired: exactly one of them wins.
        let store = SledStore::temporary().unwrap();
        for _ in 0..50 {
            let rec = record(&store, NOW + 1_000);
            store.insert(&rec).unwrap();
            let barrier = Barrier::new(2);
            let (claimed, expired) = std::thread::scope(|scope| {
                let claim = scope.spawn(|| {
                    barrier.wait();
                    store.claim(&rec.pause_id, NOW).is_ok()
                });
                let sweep = scope.spawn(|| {
                    barrier.wait();
                    store
                        .transition(&rec.pause_id, PauseStatus::Paused, PauseStatus::Expired)
                        .unwrap()
                });
                (claim.join().unwrap(), sweep.join().unwrap())
            });
            assert!(claimed ^ expired, "claimed {claimed}, expired {expired}");
            let expected = if claimed {
                PauseStatus::Resuming
            } else {
                PauseStatus::Expired
            };
            assert_eq!(status_of(&store, &rec), expected);
        }
    }

    #[test]
    fn expired_sweep() {
        let store = SledStore::temporary().unwrap();
        let past = record(&store, NOW - 1);
        let due = record(&store, NOW);
        let future = record(&store, NOW + 1);
        let claimed_past = record(&store, NOW - 5);
        let cancelled_past = PauseRecord {
            status: PauseStatus::Cancelled,
            ..record(&store, NOW - 5)
        };
        for rec in [&past, &due, &future, &claimed_past, &cancelled_past] {
            store.insert(rec).unwrap();
        }
        store
            .set_status(&claimed_past.pause_id, PauseStatus::Resuming)
            .unwrap();
        let mut found: Vec<PauseId> = store
            .expired(NOW)
            .unwrap()
            .into_iter()
            .map(|r| r.pause_id)
            .collect();
        found.sort();
        let mut expected = vec![past.pause_id, due.pause_id];
        expected.sort();
        assert_eq!(found, expected);
        for id in &found {
            assert!(store
                .transition(id, PauseStatus::Paused, PauseStatus::Expired)
                .unwrap());
            assert!(!store
                .transition(id, PauseStatus::Paused, PauseStatus::Expired)
                .unwrap());
            assert!(matches!(
                store.claim(id, NOW - 10),
                Err(ClaimError::Expired)
            ));
        }
        assert!(store.expired(NOW).unwrap().is_empty());
        assert_eq!(store.expired(NOW + 1).unwrap(), vec![future.clone()]);
        assert!(!store
            .transition(
                &claimed_past.pause_id,
                PauseStatus::Paused,
                PauseStatus::Expired
            )
            .unwrap());
        assert_eq!(status_of(&store, &claimed_past), PauseStatus::Resuming);
    }

    #[test]
    fn restart_reports_pre_restart_pauses_as_lost() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store");
        let (paused, resuming, finished, cancelled, first_boot);
        {
            let store = SledStore::open(&path).unwrap();
            first_boot = store.boot_id();
            paused = record(&store, NOW + 60_000);
            resuming = record(&store, NOW + 60_000);
            finished = PauseRecord {
                status: PauseStatus::Finished,
                ..record(&store, NOW + 60_000)
            };
            cancelled = PauseRecord {
                status: PauseStatus::Cancelled,
                ..record(&store, NOW + 60_000)
            };
            for rec in [&paused, &resuming, &finished, &cancelled] {
                store.insert(rec).unwrap();
            }
            store.claim(&resuming.pause_id, NOW).unwrap();
            store.flush().unwrap();
        }
        let store = crate::fuzzing::reopen_store(&path);
        assert_ne!(store.boot_id(), first_boot);
        // Even before the startup pass, a claim of a pre-restart pause is Lost.
        assert!(matches!(
            store.claim(&paused.pause_id, NOW),
            Err(ClaimError::Lost)
        ));
        // And the pre-restart pause is not this boot's to sweep.
        assert!(store.expired(u64::MAX).unwrap().is_empty());
        assert_eq!(store.mark_previous_boots_lost().unwrap(), 2);
        assert_eq!(store.mark_previous_boots_lost().unwrap(), 0);
        assert_eq!(status_of(&store, &paused), PauseStatus::Lost);
        assert_eq!(status_of(&store, &resuming), PauseStatus::Lost);
        assert_eq!(status_of(&store, &finished), PauseStatus::Finished);
        assert_eq!(status_of(&store, &cancelled), PauseStatus::Cancelled);
        // Everything but the status is kept.
        assert_eq!(
            store.get(&paused.pause_id).unwrap().unwrap(),
            PauseRecord {
                status: PauseStatus::Lost,
                ..paused.clone()
            }
        );
        assert!(matches!(
            store.claim(&paused.pause_id, NOW),
            Err(ClaimError::Lost)
        ));
        assert!(matches!(
            store.claim(&resuming.pause_id, NOW),
            Err(ClaimError::Lost)
        ));
        assert!(matches!(
            store.claim(&finished.pause_id, NOW),
            Err(ClaimError::AlreadyUsed)
        ));
        assert!(matches!(
            store.claim(&cancelled.pause_id, NOW),
            Err(ClaimError::Cancelled)
        ));
        // Records of this boot work as usual next to them.
        let fresh = record(&store, NOW + 1);
        store.insert(&fresh).unwrap();
        assert_eq!(reason(store.claim(&fresh.pause_id, NOW)), "ok");
        // A record carrying an earlier boot id cannot be inserted.
        assert!(matches!(
            store.insert(&PauseRecord {
                pause_id: PauseId::random(),
                ..paused.clone()
            }),
            Err(StoreError::ForeignBoot { .. })
        ));
    }

    #[test]
    fn state_key_persists_across_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested").join("store");
        let first = {
            let store = SledStore::open(&path).unwrap();
            let key = store.state_key().unwrap();
            assert_eq!(store.state_key().unwrap().to_text(), key.to_text());
            key.to_text()
        };
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "{mode:o}");
        }
        let store = crate::fuzzing::reopen_store(&path);
        assert_eq!(store.state_key().unwrap().to_text(), first);
        // Another store has another key.
        let other = SledStore::temporary().unwrap();
        assert_ne!(other.state_key().unwrap().to_text(), first);
    }

    #[test]
    fn concurrent_first_state_key_calls_agree() {
        for _ in 0..20 {
            let store = SledStore::temporary().unwrap();
            let barrier = Barrier::new(4);
            let keys: Vec<String> = std::thread::scope(|scope| {
                let handles: Vec<_> = (0..4)
                    .map(|_| {
                        scope.spawn(|| {
                            barrier.wait();
                            store.state_key().unwrap().to_text()
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            assert!(keys.windows(2).all(|w| w[0] == w[1]), "{keys:?}");
        }
    }

    #[test]
    fn corrupt_state_key_is_an_error() {
        for garbage in [&b"short"[..], &[0xff, 0xfe], b""] {
            let store = SledStore::temporary().unwrap();
            store.meta.insert(STATE_KEY, garbage).unwrap();
            let error = store.state_key().unwrap_err();
            assert!(
                matches!(error, StoreError::CorruptStateKey { .. }),
                "{error}"
            );
        }
    }

    #[test]
    fn prune_deletes_old_terminal_records_only() {
        let store = SledStore::temporary().unwrap();
        let old = NOW - 100_000;
        let with = |status, deadline| {
            let rec = PauseRecord {
                status,
                ..record(&store, deadline)
            };
            store.insert(&rec).unwrap();
            rec
        };
        let old_finished = with(PauseStatus::Finished, old);
        let old_expired = with(PauseStatus::Expired, old);
        let old_cancelled = with(PauseStatus::Cancelled, old);
        let old_lost = with(PauseStatus::Lost, old);
        let old_paused = with(PauseStatus::Paused, old);
        let old_resuming = with(PauseStatus::Resuming, old);
        let new_finished = with(PauseStatus::Finished, NOW);
        let at_cutoff = with(PauseStatus::Finished, NOW - 50_000);
        assert_eq!(store.prune(NOW - 50_000).unwrap(), 4);
        for gone in [&old_finished, &old_expired, &old_cancelled, &old_lost] {
            assert_eq!(store.get(&gone.pause_id).unwrap(), None);
            assert!(matches!(
                store.claim(&gone.pause_id, NOW),
                Err(ClaimError::Unknown)
            ));
        }
        for kept in [&old_paused, &old_resuming, &new_finished, &at_cutoff] {
            assert!(store.get(&kept.pause_id).unwrap().is_some());
        }
        assert_eq!(store.prune(NOW - 50_000).unwrap(), 0);
        assert_eq!(store.prune(u64::MAX).unwrap(), 2);
    }

    #[test]
    fn prune_deletes_records_of_earlier_boots() {
        let dir = tempfile::tempdir().unwrap();
        let rec = {
            let store = SledStore::open(dir.path()).unwrap();
            let rec = record(&store, NOW);
            store.insert(&rec).unwrap();
            store.flush().unwrap();
            rec
        };
        let store = crate::fuzzing::reopen_store(dir.path());
        // Not yet marked lost, but of an earlier boot: prunable.
        assert_eq!(store.prune(NOW).unwrap(), 0);
        assert_eq!(store.prune(NOW + 1).unwrap(), 1);
        assert_eq!(store.get(&rec.pause_id).unwrap(), None);
    }

    #[test]
    fn corrupt_records_are_lost_not_panics() {
        let store = SledStore::temporary().unwrap();
        let good = record(&store, NOW + 1_000);
        store.insert(&good).unwrap();
        let garbage_id = PauseId::random();
        let mismatched_id = PauseId::random();
        let unknown_status_id = PauseId::random();
        store
            .pauses
            .insert(garbage_id.as_bytes(), &[0xff, 0x00, b'{', 0x80][..])
            .unwrap();
        // Valid JSON, but it names another pause.
        store
            .pauses
            .insert(mismatched_id.as_bytes(), serde_json::to_vec(&good).unwrap())
            .unwrap();
        let mut unknown_status = serde_json::to_value(PauseRecord {
            pause_id: unknown_status_id,
            ..good.clone()
        })
        .unwrap();
        unknown_status["status"] = "hibernating".into();
        store
            .pauses
            .insert(
                unknown_status_id.as_bytes(),
                serde_json::to_vec(&unknown_status).unwrap(),
            )
            .unwrap();
        // A key that is not even 16 bytes long.
        store.pauses.insert(b"odd", &b"{}"[..]).unwrap();

        for id in [&garbage_id, &mismatched_id, &unknown_status_id] {
            assert!(
                matches!(store.claim(id, NOW), Err(ClaimError::Lost)),
                "{id}"
            );
            assert!(matches!(
                store.set_status(id, PauseStatus::Finished),
                Err(StoreError::Corrupt { .. })
            ));
            assert!(matches!(store.get(id), Err(StoreError::Corrupt { .. })));
        }
        assert_eq!(store.expired(u64::MAX).unwrap(), vec![good.clone()]);
        assert_eq!(store.mark_previous_boots_lost().unwrap(), 0);
        assert_eq!(store.prune(u64::MAX).unwrap(), 0);
        let counts = store.counts();
        assert_eq!(counts[&PauseStatus::Lost], 4);
        assert_eq!(counts[&PauseStatus::Paused], 1);
        // The good record is unaffected.
        assert_eq!(reason(store.claim(&good.pause_id, NOW)), "ok");
    }

    #[test]
    fn counts_cover_every_status() {
        let store = SledStore::temporary().unwrap();
        assert_eq!(store.counts().len(), PauseStatus::ALL.len());
        assert!(store.counts().values().all(|n| *n == 0));
        for (status, n) in [
            (PauseStatus::Paused, 3),
            (PauseStatus::Finished, 2),
            (PauseStatus::Lost, 1),
        ] {
            for _ in 0..n {
                store
                    .insert(&PauseRecord {
                        status,
                        ..record(&store, NOW)
                    })
                    .unwrap();
            }
        }
        let counts = store.counts();
        assert_eq!(counts[&PauseStatus::Paused], 3);
        assert_eq!(counts[&PauseStatus::Finished], 2);
        assert_eq!(counts[&PauseStatus::Lost], 1);
        assert_eq!(counts[&PauseStatus::Resuming], 0);
        assert_eq!(counts.values().sum::<usize>(), 6);
    }

    #[test]
    fn record_json_shape() {
        let rec = PauseRecord {
            pause_id: PauseId::from_bytes([0x11; 16]),
            boot_id: 7,
            status: PauseStatus::Resuming,
            method: "prompts/get".to_owned(),
            round: 2,
            principal_label: "deadbeef".to_owned(),
            created_ms: 5,
            deadline_ms: 6,
            input_keys: vec!["r:1".to_owned()],
        };
        let json = serde_json::to_value(&rec).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "pause_id": "11111111111111111111111111111111",
                "boot_id": 7,
                "status": "resuming",
                "method": "prompts/get",
                "round": 2,
                "principal_label": "deadbeef",
                "created_ms": 5,
                "deadline_ms": 6,
                "input_keys": ["r:1"]
            })
        );
        assert_eq!(serde_json::from_value::<PauseRecord>(json).unwrap(), rec);
        for status in PauseStatus::ALL {
            assert_eq!(
                serde_json::to_value(status).unwrap(),
                serde_json::Value::from(status.as_str())
            );
        }
    }

    #[test]
    fn claim_error_reasons_and_messages() {
        let errors = [
            (ClaimError::Unknown, "unknown"),
            (ClaimError::AlreadyUsed, "already_used"),
            (ClaimError::Expired, "expired"),
            (ClaimError::Cancelled, "cancelled"),
            (ClaimError::Lost, "lost"),
            (
                ClaimError::Store(StoreError::Contention { op: "claim" }),
                "store",
            ),
        ];
        let mut messages = std::collections::BTreeSet::new();
        for (error, label) in errors {
            assert_eq!(error.reason(), label);
            assert!(messages.insert(error.to_string()));
        }
        assert!(ClaimError::Lost.to_string().contains("restarted"));
        assert!(ClaimError::AlreadyUsed.to_string().contains("one retry"));
    }

    #[test]
    fn a_replaced_store_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store");
        let store = SledStore::open(&path).unwrap();
        assert_eq!(store.probe(), Ok(()));
        std::fs::rename(&path, dir.path().join("moved")).unwrap();
        std::fs::write(&path, b"not a directory").unwrap();
        let reason = store.probe().unwrap_err();
        assert!(reason.contains("removed or replaced"), "{reason}");
        std::fs::remove_file(&path).unwrap();
        std::fs::rename(dir.path().join("moved"), &path).unwrap();
        assert_eq!(store.probe(), Ok(()));
    }

    // ---- model-based test of the pause state machine ----

    #[derive(Debug, Clone)]
    enum Op {
        Insert {
            ttl: u64,
        },
        Claim {
            which: prop::sample::Index,
        },
        SetStatus {
            which: prop::sample::Index,
            status: PauseStatus,
        },
        Transition {
            which: prop::sample::Index,
            from: PauseStatus,
            to: PauseStatus,
        },
        Advance {
            ms: u64,
        },
        Sweep,
        Restart,
        Prune {
            age: u64,
        },
    }

    fn arb_status() -> impl Strategy<Value = PauseStatus> {
        prop::sample::select(PauseStatus::ALL.to_vec())
    }

    fn arb_op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u64..50).prop_map(|ttl| Op::Insert { ttl }),
            5 => any::<prop::sample::Index>().prop_map(|which| Op::Claim { which }),
            2 => (any::<prop::sample::Index>(), arb_status())
                .prop_map(|(which, status)| Op::SetStatus { which, status }),
            2 => (any::<prop::sample::Index>(), arb_status(), arb_status())
                .prop_map(|(which, from, to)| Op::Transition { which, from, to }),
            3 => (0u64..30).prop_map(|ms| Op::Advance { ms }),
            2 => Just(Op::Sweep),
            1 => Just(Op::Restart),
            1 => (0u64..60).prop_map(|age| Op::Prune { age }),
        ]
    }

    #[derive(Debug, Clone, Copy)]
    struct ModelRecord {
        status: PauseStatus,
        boot: u32,
        deadline: u64,
    }

    fn model_claim(record: Option<&ModelRecord>, boot: u32, now: u64) -> &'static str {
        let Some(record) = record else {
            return "unknown";
        };
        match record.status {
            PauseStatus::Lost => "lost",
            status if status.is_live() && record.boot != boot => "lost",
            PauseStatus::Resuming | PauseStatus::Finished => "already_used",
            PauseStatus::Expired => "expired",
            PauseStatus::Cancelled => "cancelled",
            PauseStatus::Evicted => "evicted",
            PauseStatus::Paused if now >= record.deadline => "expired",
            PauseStatus::Paused => "ok",
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        #[test]
        fn prop_store_agrees_with_model(ops in proptest::collection::vec(arb_op(), 1..40)) {
            let dir = tempfile::tempdir().unwrap();
            let mut store = SledStore::open(dir.path()).unwrap();
            let mut boot = 0u32;
            let mut now = NOW;
            let mut ids: Vec<PauseId> = Vec::new();
            let mut model: HashMap<PauseId, ModelRecord> = HashMap::new();

            for op in ops {
                match op {
                    Op::Insert { ttl } => {
                        let rec = record(&store, now + ttl);
                        store.insert(&rec).unwrap();
                        ids.push(rec.pause_id);
                        model.insert(rec.pause_id, ModelRecord { status: PauseStatus::Paused, boot, deadline: now + ttl });
                    }
                    Op::Claim { which } => {
                        if ids.is_empty() { continue; }
                        let id = ids[which.index(ids.len())];
                        let expected = model_claim(model.get(&id), boot, now);
                        let got = reason(store.claim(&id, now));
                        prop_assert_eq!(got, expected, "claim {}", id);
                        if expected == "ok" {
                            model.get_mut(&id).unwrap().status = PauseStatus::Resuming;
                        }
                    }
                    Op::SetStatus { which, status } => {
                        if ids.is_empty() { continue; }
                        let id = ids[which.index(ids.len())];
                        let result = store.set_status(&id, status);
                        match model.get_mut(&id) {
                            Some(record) => { result.unwrap(); record.status = status; }
                            None => prop_assert!(matches!(result, Err(StoreError::NotFound { .. })), "{:?}", result),
                        }
                    }
                    Op::Transition { which, from, to } => {
                        if ids.is_empty() { continue; }
                        let id = ids[which.index(ids.len())];
                        let result = store.transition(&id, from, to);
                        match model.get_mut(&id) {
                            Some(record) => {
                                let applies = record.status == from;
                                prop_assert_eq!(result.unwrap(), applies);
                                if applies { record.status = to; }
                            }
                            None => prop_assert!(matches!(result, Err(StoreError::NotFound { .. })), "{:?}", result),
                        }
                    }
                    Op::Advance { ms } => now += ms,
                    Op::Sweep => {
                        let mut got: Vec<PauseId> = store.expired(now).unwrap().into_iter().map(|r| r.pause_id).collect();
                        got.sort();
                        let mut expected: Vec<PauseId> = model.iter()
                            .filter(|(_, r)| r.status == PauseStatus::Paused && r.boot == boot && now >= r.deadline)
                            .map(|(id, _)| *id)
                            .collect();
                        expected.sort();
                        prop_assert_eq!(&got, &expected);
                        for id in got {
                            prop_assert!(store.transition(&id, PauseStatus::Paused, PauseStatus::Expired).unwrap());
                            model.get_mut(&id).unwrap().status = PauseStatus::Expired;
                        }
                    }
                    Op::Restart => {
                        store.flush().unwrap();
                        drop(store);
                        store = crate::fuzzing::reopen_store(dir.path());
                        boot += 1;
                        let expected = model.values().filter(|r| r.status.is_live()).count();
                        prop_assert_eq!(store.mark_previous_boots_lost().unwrap(), expected);
                        for record in model.values_mut() {
                            if record.status.is_live() { record.status = PauseStatus::Lost; }
                        }
                    }
                    Op::Prune { age } => {
                        let cutoff = now.saturating_sub(age);
                        let doomed: Vec<PauseId> = model.iter()
                            .filter(|(_, r)| (!r.status.is_live() || r.boot != boot) && r.deadline < cutoff)
                            .map(|(id, _)| *id)
                            .collect();
                        prop_assert_eq!(store.prune(cutoff).unwrap(), doomed.len());
                        for id in doomed { model.remove(&id); }
                    }
                }
                // After every step, the store and the model agree on every record.
                for id in &ids {
                    prop_assert_eq!(status(&store, id), model.get(id).map(|r| r.status), "record {}", id);
                }
                let mut expected_counts: BTreeMap<PauseStatus, usize> =
                    PauseStatus::ALL.iter().map(|s| (*s, 0)).collect();
                for record in model.values() { *expected_counts.get_mut(&record.status).unwrap() += 1; }
                prop_assert_eq!(store.counts(), expected_counts);
            }
        }
    }
}
