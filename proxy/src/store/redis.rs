//! The Redis pause store (`--store redis://HOST:PORT/DB`): several proxy instances share it, so
//! a `requestState` claimed on one is refused on all, and each can tell whether the owner of a
//! pause is still there.
//!
//! Layout (prefix `mcp-mrtr-proxy:`):
//! - `pause:{id}`: a hash `status`, `owner` (instance id), `deadline` (ms), `record` (the
//!   [`PauseRecord`] as parked, JSON); it expires on its own an hour after its deadline (records
//!   of instances that are gone);
//! - `owned:{instance}`: a sorted set of that instance's pause ids by deadline (its sweep);
//! - `instance:{instance}`: the instance's `--advertise` URL (empty without one), kept alive by a
//!   heartbeat every [`HEARTBEAT`], gone [`HEARTBEAT_TTL`] after the instance stopped;
//! - `state-key`: the generated state key, when none was configured.
//!
//! Every transition that must be atomic (park without overwriting, claim once, compare-and-swap
//! of the status, "lost" when the owner's heartbeat is gone) is one Lua script, run by Redis as
//! one step. A Redis that restarted without persistence has lost its records: their retries get
//! "no record" (lost), fresh calls work once it answers again (the connection manager
//! reconnects; the heartbeat registers the instance again).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use rand::rngs::OsRng;
use rand::RngCore;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncCommands, Script};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::{ClaimError, Owner, PauseRecord, PauseStatus, PauseStore, StoreError};
use crate::state::{PauseId, StateKey};

const PREFIX: &str = "mcp-mrtr-proxy:";
/// How often an instance renews its registration.
pub const HEARTBEAT: Duration = Duration::from_secs(1);
/// How long a registration outlives the last heartbeat: an instance killed is known to be gone
/// this long after (then every retry of its pauses is answered "lost" at once).
pub const HEARTBEAT_TTL: Duration = Duration::from_secs(3);
/// How long a record is kept after its deadline (a retry after the deadline is refused by the
/// state's own expiry; this only bounds what instances that are gone leave behind).
const RECORD_KEEP_MS: u64 = 3_600_000;
/// How long one Redis command may take before it fails (then the store reports the error:
/// never a hang).
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(2);
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(2);

/// KEYS: pause, owned, instance. ARGV: status, owner, deadline, record, expire-at, pause id,
/// advertised URL, registration TTL. Registers the owner if it is not (a Redis that restarted
/// empty, before the next heartbeat): a record never names an owner the others take for gone.
const PARK: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if redis.call('EXISTS', KEYS[3]) == 0 then redis.call('SET', KEYS[3], ARGV[7], 'PX', ARGV[8]) end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'owner', ARGV[2], 'deadline', ARGV[3], 'record', ARGV[4])
redis.call('PEXPIREAT', KEYS[1], ARGV[5])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[6])
return 1
";

/// KEYS: pause. ARGV: now, instance key prefix. Returns {verdict, record}.
const CLAIM: &str = r"
local h = redis.call('HMGET', KEYS[1], 'status', 'owner', 'deadline', 'record')
local status, owner, deadline, record = h[1], h[2], h[3], h[4]
if not status then return {'unknown', ''} end
if status == 'lost' then return {'lost', ''} end
if (status == 'paused' or status == 'resuming') and redis.call('EXISTS', ARGV[2] .. owner) == 0 then
  redis.call('HSET', KEYS[1], 'status', 'lost')
  return {'lost', ''}
end
if status == 'resuming' or status == 'finished' then return {'already_used', ''} end
if status == 'expired' then return {'expired', ''} end
if status == 'cancelled' then return {'cancelled', ''} end
if status == 'evicted' then return {'evicted', ''} end
if status ~= 'paused' then return {'lost', ''} end
if tonumber(ARGV[1]) >= tonumber(deadline) then return {'expired', ''} end
redis.call('HSET', KEYS[1], 'status', 'resuming')
return {'ok', record}
";

/// KEYS: pause. ARGV: from ('' = any), to. Returns -1 (no record), 0 (other status), 1.
const TRANSITION: &str = r"
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return -1 end
if ARGV[1] ~= '' and status ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[2])
return 1
";

/// KEYS: pause. ARGV: instance key prefix. A live record whose owner is gone becomes lost.
const RECOVER: &str = r"
local h = redis.call('HMGET', KEYS[1], 'status', 'owner')
if (h[1] == 'paused' or h[1] == 'resuming') and redis.call('EXISTS', ARGV[1] .. h[2]) == 0 then
  redis.call('HSET', KEYS[1], 'status', 'lost')
  return 1
end
return 0
";

/// KEYS: pause, owned. ARGV: pause id. Deletes a record that can no longer matter (not live).
const PRUNE: &str = r"
local status = redis.call('HGET', KEYS[1], 'status')
if status == 'paused' or status == 'resuming' then return 0 end
redis.call('ZREM', KEYS[2], ARGV[1])
if not status then return 0 end
redis.call('DEL', KEYS[1])
return 1
";

/// The Redis-backed pause store. One per process; its instance id is registered (with the
/// advertised URL) for as long as it lives.
pub struct RedisStore {
    connection: ConnectionManager,
    /// The URL without a password, for messages.
    display: String,
    instance_id: u64,
    /// The `--advertise` URL ("" without one).
    advertise: String,
    scripts: Scripts,
    /// Stops the heartbeat when the store is dropped.
    _heartbeat: DropGuard,
}

struct Scripts {
    park: Script,
    claim: Script,
    transition: Script,
    recover: Script,
    prune: Script,
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStore")
            .field("url", &self.display)
            .field("instance_id", &self.instance_id)
            .finish_non_exhaustive()
    }
}

fn redis_error(op: &'static str) -> impl FnOnce(redis::RedisError) -> StoreError {
    move |source| StoreError::Redis {
        op,
        detail: source.to_string(),
    }
}

fn pause_key(pause_id: &PauseId) -> String {
    format!("{PREFIX}pause:{pause_id}")
}

fn owned_key(instance: u64) -> String {
    format!("{PREFIX}owned:{instance:016x}")
}

fn instance_prefix() -> String {
    format!("{PREFIX}instance:")
}

fn instance_key(instance: u64) -> String {
    format!("{}{instance:016x}", instance_prefix())
}

/// `redis://user:secret@host/0` → `redis://user:***@host/0`.
pub(super) fn without_password(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        _ => url.to_owned(),
    }
}

impl RedisStore {
    /// Connects to `url` (`redis://HOST:PORT/DB`), registers this instance with its advertised
    /// URL, and starts the heartbeat. Fails when Redis cannot be reached.
    pub async fn open(url: &str, advertise: Option<&str>) -> Result<RedisStore, StoreError> {
        let display = without_password(url);
        let open_error = |detail: String| StoreError::RedisOpen {
            url: display.clone(),
            detail,
        };
        let client = redis::Client::open(url).map_err(|error| open_error(error.to_string()))?;
        let config = ConnectionManagerConfig::new()
            .set_response_timeout(Some(RESPONSE_TIMEOUT))
            .set_connection_timeout(Some(CONNECTION_TIMEOUT))
            .set_number_of_retries(2)
            .set_max_delay(Duration::from_millis(500));
        let connection = ConnectionManager::new_with_config(client, config)
            .await
            .map_err(|error| open_error(error.to_string()))?;
        let instance_id = loop {
            // Never 0, and the hex form is the key: any u64 will do.
            let id = OsRng.next_u64();
            if id != 0 {
                break id;
            }
        };
        let advertise = advertise.unwrap_or("").to_owned();
        let mut registration = connection.clone();
        register(&mut registration, instance_id, &advertise)
            .await
            .map_err(|error| open_error(error.to_string()))?;
        let stop = CancellationToken::new();
        tokio::spawn(heartbeat(
            registration,
            instance_id,
            advertise.clone(),
            stop.clone(),
        ));
        Ok(RedisStore {
            connection,
            display,
            instance_id,
            advertise,
            scripts: Scripts {
                park: Script::new(PARK),
                claim: Script::new(CLAIM),
                transition: Script::new(TRANSITION),
                recover: Script::new(RECOVER),
                prune: Script::new(PRUNE),
            },
            _heartbeat: stop.drop_guard(),
        })
    }

    fn connection(&self) -> ConnectionManager {
        self.connection.clone()
    }

    /// Every pause key (SCAN, so Redis is never blocked by a long listing).
    async fn pause_keys(&self) -> Result<Vec<String>, StoreError> {
        let mut connection = self.connection();
        let mut keys = Vec::new();
        let mut iter: redis::AsyncIter<'_, String> = connection
            .scan_match(format!("{PREFIX}pause:*"))
            .await
            .map_err(redis_error("scan"))?;
        while let Some(key) = futures_util::StreamExt::next(&mut iter).await {
            keys.push(key.map_err(redis_error("scan"))?);
        }
        Ok(keys)
    }

    async fn update(
        &self,
        pause_id: &PauseId,
        from: Option<PauseStatus>,
        to: PauseStatus,
        op: &'static str,
    ) -> Result<bool, StoreError> {
        let changed: i64 = self
            .scripts
            .transition
            .key(pause_key(pause_id))
            .arg(from.map_or("", PauseStatus::as_str))
            .arg(to.as_str())
            .invoke_async(&mut self.connection())
            .await
            .map_err(redis_error(op))?;
        match changed {
            -1 => Err(StoreError::NotFound {
                pause_id: *pause_id,
            }),
            changed => Ok(changed == 1),
        }
    }
}

async fn register(
    connection: &mut ConnectionManager,
    instance_id: u64,
    advertise: &str,
) -> redis::RedisResult<()> {
    redis::cmd("SET")
        .arg(instance_key(instance_id))
        .arg(advertise)
        .arg("PX")
        .arg(HEARTBEAT_TTL.as_millis() as u64)
        .query_async(connection)
        .await
}

/// Renews the registration every [`HEARTBEAT`] until the store is dropped; then removes it, so
/// that the others know at once that this instance's pauses are gone.
async fn heartbeat(
    mut connection: ConnectionManager,
    instance_id: u64,
    advertise: String,
    stop: CancellationToken,
) {
    let mut interval = tokio::time::interval(HEARTBEAT);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing = false;
    loop {
        tokio::select! {
            _ = interval.tick() => {}
            () = stop.cancelled() => {
                let _: redis::RedisResult<()> = connection.del(instance_key(instance_id)).await;
                return;
            }
        }
        match register(&mut connection, instance_id, &advertise).await {
            Ok(()) if failing => {
                failing = false;
                tracing::info!("the Redis pause store answers again: instance registered");
            }
            Ok(()) => {}
            Err(error) if !failing => {
                failing = true;
                tracing::warn!(%error, "could not renew this instance's registration in Redis");
            }
            Err(_) => {}
        }
    }
}

fn decode(pause_id: &PauseId, status: &str, record: &str) -> Result<PauseRecord, StoreError> {
    let corrupt = |detail: String| StoreError::Corrupt {
        pause_id: pause_id.to_string(),
        detail,
    };
    let mut record: PauseRecord =
        serde_json::from_str(record).map_err(|error| corrupt(error.to_string()))?;
    record.status = serde_json::from_value(serde_json::Value::from(status))
        .map_err(|_| corrupt(format!("unknown status {status:?}")))?;
    if record.pause_id != *pause_id {
        return Err(corrupt(format!("it names pause {}", record.pause_id)));
    }
    Ok(record)
}

#[async_trait::async_trait]
impl PauseStore for RedisStore {
    fn instance_id(&self) -> u64 {
        self.instance_id
    }

    async fn recover(&self) -> Result<usize, StoreError> {
        let mut marked = 0;
        for key in self.pause_keys().await? {
            let changed: i64 = self
                .scripts
                .recover
                .key(key)
                .arg(instance_prefix())
                .invoke_async(&mut self.connection())
                .await
                .map_err(redis_error("mark lost"))?;
            marked += changed as usize;
        }
        Ok(marked)
    }

    async fn state_key(&self) -> Result<StateKey, StoreError> {
        let key = format!("{PREFIX}state-key");
        let mut connection = self.connection();
        let generated = StateKey::generate().to_text();
        // The first instance to ask sets it; every instance then reads the same key.
        let _: Option<String> = redis::cmd("SET")
            .arg(&key)
            .arg(&generated)
            .arg("NX")
            .query_async(&mut connection)
            .await
            .map_err(redis_error("store the state key"))?;
        let stored: Option<String> = connection
            .get(&key)
            .await
            .map_err(redis_error("read the state key"))?;
        let stored = stored.ok_or(StoreError::Contention {
            op: "store the state key",
        })?;
        StateKey::from_text(&stored).map_err(|error| StoreError::CorruptStateKey {
            detail: error.to_string(),
        })
    }

    async fn park(&self, record: &PauseRecord) -> Result<(), StoreError> {
        record.check_owner(self.instance_id)?;
        let json = serde_json::to_string(record).map_err(|source| StoreError::Encode {
            pause_id: record.pause_id,
            source,
        })?;
        let parked: i64 = self
            .scripts
            .park
            .key(pause_key(&record.pause_id))
            .key(owned_key(self.instance_id))
            .key(instance_key(self.instance_id))
            .arg(record.status.as_str())
            .arg(format!("{:016x}", record.boot_id))
            .arg(record.deadline_ms)
            .arg(json)
            // Redis takes expiry times up to about 2^62 ms.
            .arg(
                record
                    .deadline_ms
                    .saturating_add(RECORD_KEEP_MS)
                    .min(1 << 62),
            )
            .arg(record.pause_id.to_string())
            .arg(&self.advertise)
            .arg(HEARTBEAT_TTL.as_millis() as u64)
            .invoke_async(&mut self.connection())
            .await
            .map_err(redis_error("park"))?;
        if parked == 1 {
            Ok(())
        } else {
            Err(StoreError::Duplicate {
                pause_id: record.pause_id,
            })
        }
    }

    async fn get(&self, pause_id: &PauseId) -> Result<Option<PauseRecord>, StoreError> {
        let (status, record): (Option<String>, Option<String>) = self
            .connection()
            .hmget(pause_key(pause_id), &["status", "record"])
            .await
            .map_err(redis_error("read"))?;
        match (status, record) {
            (Some(status), Some(record)) => decode(pause_id, &status, &record).map(Some),
            (None, None) => Ok(None),
            _ => Err(StoreError::Corrupt {
                pause_id: pause_id.to_string(),
                detail: "incomplete record".to_owned(),
            }),
        }
    }

    async fn claim(&self, pause_id: &PauseId, now_ms: u64) -> Result<PauseRecord, ClaimError> {
        let (verdict, record): (String, String) = self
            .scripts
            .claim
            .key(pause_key(pause_id))
            .arg(now_ms)
            .arg(instance_prefix())
            .invoke_async(&mut self.connection())
            .await
            .map_err(redis_error("claim"))?;
        match verdict.as_str() {
            "ok" => match decode(pause_id, "resuming", &record) {
                Ok(record) => Ok(record),
                Err(error) => {
                    tracing::warn!(pause_id = %pause_id, %error, "undecodable pause record: claim refused as lost");
                    Err(ClaimError::Lost)
                }
            },
            "unknown" => Err(ClaimError::Unknown),
            "already_used" => Err(ClaimError::AlreadyUsed),
            "expired" => Err(ClaimError::Expired),
            "cancelled" => Err(ClaimError::Cancelled),
            // The reason is not kept in Redis; the instance that evicted it logged it.
            "evicted" => Err(ClaimError::Evicted(
                "its legacy session ended (the legacy server exited or dropped the session)".into(),
            )),
            _ => Err(ClaimError::Lost),
        }
    }

    async fn set_status(&self, pause_id: &PauseId, status: PauseStatus) -> Result<(), StoreError> {
        self.update(pause_id, None, status, "set status")
            .await
            .map(|_| ())
    }

    async fn transition(
        &self,
        pause_id: &PauseId,
        from: PauseStatus,
        to: PauseStatus,
    ) -> Result<bool, StoreError> {
        self.update(pause_id, Some(from), to, "transition").await
    }

    async fn expired(&self, now_ms: u64) -> Result<Vec<PauseRecord>, StoreError> {
        let ids: Vec<String> = self
            .connection()
            .zrangebyscore(owned_key(self.instance_id), "-inf", now_ms)
            .await
            .map_err(redis_error("expiry scan"))?;
        let mut expired = Vec::new();
        for id in ids {
            let Ok(pause_id) = id.parse::<PauseId>() else {
                continue;
            };
            match self.get(&pause_id).await {
                Ok(Some(record))
                    if record.status == PauseStatus::Paused && now_ms >= record.deadline_ms =>
                {
                    expired.push(record);
                }
                Ok(_) => {}
                Err(error) => tracing::warn!(%error, "undecodable pause record skipped"),
            }
        }
        Ok(expired)
    }

    async fn sweep(&self, older_than_ms: u64) -> Result<usize, StoreError> {
        let owned = owned_key(self.instance_id);
        let ids: Vec<String> = self
            .connection()
            .zrangebyscore(&owned, "-inf", format!("({older_than_ms}"))
            .await
            .map_err(redis_error("prune scan"))?;
        let mut deleted = 0;
        for id in ids {
            let Ok(pause_id) = id.parse::<PauseId>() else {
                let _: redis::RedisResult<i64> = self.connection().zrem(&owned, &id).await;
                continue;
            };
            let removed: i64 = self
                .scripts
                .prune
                .key(pause_key(&pause_id))
                .key(&owned)
                .arg(&id)
                .invoke_async(&mut self.connection())
                .await
                .map_err(redis_error("prune"))?;
            deleted += removed as usize;
        }
        Ok(deleted)
    }

    async fn counts(&self) -> BTreeMap<PauseStatus, usize> {
        let mut counts: BTreeMap<PauseStatus, usize> =
            PauseStatus::ALL.iter().map(|status| (*status, 0)).collect();
        let keys = match self.pause_keys().await {
            Ok(keys) => keys,
            Err(error) => {
                tracing::warn!(%error, "pause store count failed");
                return counts;
            }
        };
        for key in keys {
            let status: Option<String> = match self.connection().hget(&key, "status").await {
                Ok(status) => status,
                Err(_) => continue,
            };
            let status = status
                .and_then(|status| serde_json::from_value(serde_json::Value::from(status)).ok())
                .unwrap_or(PauseStatus::Lost);
            *counts.entry(status).or_insert(0) += 1;
        }
        counts
    }

    async fn flush(&self) -> Result<(), StoreError> {
        // Durability is Redis's own (its persistence settings): nothing is buffered here.
        Ok(())
    }

    async fn health(&self) -> Result<(), String> {
        let probe: redis::RedisResult<()> = redis::cmd("SET")
            .arg(format!("{PREFIX}probe:{:016x}", self.instance_id))
            .arg(crate::state::now_ms())
            .arg("PX")
            .arg(10_000u64)
            .query_async(&mut self.connection())
            .await;
        probe.map_err(|error| {
            format!(
                "the Redis pause store at {} does not take writes: {error}",
                self.display
            )
        })
    }

    async fn owner(&self, instance: u64) -> Result<Owner, StoreError> {
        if instance == self.instance_id {
            return Ok(Owner::Me);
        }
        let url: Option<String> = self
            .connection()
            .get(instance_key(instance))
            .await
            .map_err(redis_error("read an instance registration"))?;
        Ok(match url {
            None => Owner::Gone,
            Some(url) if url.is_empty() => Owner::Unreachable,
            Some(url) => Owner::At(url),
        })
    }
}
