//! A model-based property test of the pause/resume protocol as the engine runs it, over the real
//! [`Sealer`] and a real [`PauseStore`] through the trait — sled (a temporary directory) and Redis
//! (a real `redis-server`, emptied before each case) — (the engine itself needs live legacy
//! lanes; its behaviour end to end is in the other `proxy_*` tests).
//!
//! The engine's steps, mirrored (`engine/pauses.rs` `park`, `claim`, `sweep`, `lib.rs` startup):
//! - **pause** (`park`): a new pause id, a `Paused` record with deadline `now + ttl`, and a state
//!   sealing (pause id, principal, method, params digest, round, expiry = deadline);
//! - **retry** (`resume`): `open_for` the presented state against the retry's principal, method
//!   and params digest at `now`; then `claim` the pause (single use); then `Finished`; then the call
//!   either ends or pauses again (next round: a new pause id and state, round + 1);
//! - **sweep**: `expired(now)`, each `Paused` → `Expired` by compare-and-swap;
//! - **restart**: the store reopened (new instance id; for Redis, once the old instance's
//!   registration is gone), `recover`, the state key read back from the store, the in-memory
//!   calls gone.
//!
//! The model says what every retry must get: which binding error, expired, already used (a
//! replay, or an earlier round's state), lost (restart), or a resumption; and what every record's
//! status must be after each step. Tampered states are presented too and must never touch the
//! store.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use mcp_migrate_tests::support::RedisServer;
use mcp_mrtr_proxy::request::Principal;
use mcp_mrtr_proxy::state::{params_digest, Claims, PauseId, Sealer, StateError};
use mcp_mrtr_proxy::store::{
    self, ClaimError, Owner, PauseRecord, PauseStatus, PauseStore, StoreLocation,
};
use proptest::prelude::*;
use serde_json::{json, Value};

const START_MS: u64 = 1_800_000_000_000;

fn principal(index: u8) -> Principal {
    Principal::from_credential(format!("Bearer user-{index}").as_bytes())
}

const METHODS: [&str; 3] = ["tools/call", "resources/read", "prompts/get"];

fn params(method: &str, variant: u8) -> Value {
    match method {
        "resources/read" => json!({"uri": format!("file:///doc-{variant}")}),
        _ => json!({"name": "form", "arguments": {"variant": variant}}),
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// A first call that pauses (round 1).
    Start {
        principal: u8,
        method: usize,
        variant: u8,
        ttl: u64,
    },
    /// A retry presenting one of the states issued so far.
    Retry {
        which: prop::sample::Index,
        other_principal: bool,
        other_method: bool,
        other_params: bool,
        /// After a successful resumption: pause again (`Some(ttl)`) or finish.
        next_round: Option<u64>,
    },
    /// A retry presenting an issued state with one character changed.
    Tamper {
        which: prop::sample::Index,
        at: prop::sample::Index,
    },
    Advance {
        ms: u64,
    },
    Sweep,
    Restart,
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u8..3, 0usize..3, 0u8..3, 1u64..60).prop_map(|(principal, method, variant, ttl)| {
            Op::Start { principal, method, variant, ttl }
        }),
        6 => (
            any::<prop::sample::Index>(),
            prop::bool::weighted(0.15),
            prop::bool::weighted(0.15),
            prop::bool::weighted(0.15),
            prop::option::of(1u64..60),
        )
            .prop_map(|(which, other_principal, other_method, other_params, next_round)| Op::Retry {
                which,
                other_principal,
                other_method,
                other_params,
                next_round,
            }),
        1 => (any::<prop::sample::Index>(), any::<prop::sample::Index>())
            .prop_map(|(which, at)| Op::Tamper { which, at }),
        3 => (0u64..40).prop_map(|ms| Op::Advance { ms }),
        2 => Just(Op::Sweep),
        1 => Just(Op::Restart),
    ]
}

/// One state handed to a client.
#[derive(Debug, Clone)]
struct Issued {
    state: String,
    claims: Claims,
    principal: u8,
    variant: u8,
}

#[derive(Debug, Clone, Copy)]
struct ModelRecord {
    status: PauseStatus,
    boot: u32,
    deadline: u64,
}

/// What a retry must get, as a label.
fn expected_retry(
    issued: &Issued,
    presented: (&Principal, &str, &[u8; 32]),
    record: Option<&ModelRecord>,
    boot: u32,
    now: u64,
) -> &'static str {
    let claims = &issued.claims;
    if presented.0 != &claims.principal {
        return "wrong_principal";
    }
    if presented.1 != claims.method {
        return "wrong_method";
    }
    if presented.2 != &claims.params_digest {
        return "wrong_params";
    }
    if now >= claims.expires_at_ms {
        return "state_expired";
    }
    let Some(record) = record else {
        return "unknown";
    };
    match record.status {
        PauseStatus::Lost => "lost",
        PauseStatus::Paused | PauseStatus::Resuming if record.boot != boot => "lost",
        PauseStatus::Resuming | PauseStatus::Finished => "already_used",
        PauseStatus::Expired => "expired",
        PauseStatus::Cancelled => "cancelled",
        PauseStatus::Evicted => "evicted",
        PauseStatus::Paused if now >= record.deadline => "expired",
        PauseStatus::Paused => "resumed",
    }
}

/// What the real sealer and store give a retry, the engine's way.
fn actual_retry(
    rt: &tokio::runtime::Runtime,
    sealer: &Sealer,
    store: &dyn PauseStore,
    state: &str,
    presented: (&Principal, &str, &[u8; 32]),
    now: u64,
) -> (&'static str, Option<Claims>) {
    let claims = match sealer.open_for(state, now, presented.0, presented.1, presented.2) {
        Ok(claims) => claims,
        Err(StateError::Expired) => return ("state_expired", None),
        Err(error) => return (error.reason(), None),
    };
    match rt.block_on(store.claim(&claims.pause_id, now)) {
        Ok(record) => {
            assert_eq!(record.status, PauseStatus::Resuming);
            assert_eq!(record.round, claims.round);
            assert_eq!(record.method, claims.method);
            assert_eq!(record.deadline_ms, claims.expires_at_ms);
            ("resumed", Some(claims))
        }
        Err(ClaimError::Store(error)) => panic!("store failure: {error}"),
        Err(error) => (error.reason(), None),
    }
}

/// Where the store lives: a sled directory, or a Redis server shared by the cases.
enum Backing {
    Sled(tempfile::TempDir),
    Redis(String),
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

struct World {
    backing: Backing,
    rt: Arc<tokio::runtime::Runtime>,
    store: Arc<dyn PauseStore>,
    sealer: Sealer,
    boot: u32,
    now: u64,
    issued: Vec<Issued>,
    model: HashMap<PauseId, ModelRecord>,
    /// The engine's in-memory paused calls (this boot only).
    live: HashSet<PauseId>,
    resumed: HashSet<PauseId>,
}

impl World {
    /// A fresh world on `redis` (emptied first), else on a new sled directory.
    fn new(redis: Option<(&tokio::runtime::Runtime, &RedisServer)>) -> World {
        let (backing, rt) = if let Some((server_rt, server)) = redis {
            server_rt.block_on(server.flush_all());
            (Backing::Redis(server.url(0)), Arc::new(runtime()))
        } else {
            (
                Backing::Sled(tempfile::tempdir().unwrap()),
                Arc::new(runtime()),
            )
        };
        let store = rt.block_on(open(&backing));
        let sealer = Sealer::new(&rt.block_on(store.state_key()).unwrap());
        World {
            backing,
            rt,
            store,
            sealer,
            boot: 0,
            now: START_MS,
            issued: Vec::new(),
            model: HashMap::new(),
            live: HashSet::new(),
            resumed: HashSet::new(),
        }
    }

    /// `Engine::park`.
    fn pause(&mut self, principal: u8, method: &str, variant: u8, round: u32, ttl: u64) {
        let pause_id = PauseId::random();
        let deadline = self.now + ttl;
        let record = PauseRecord {
            pause_id,
            boot_id: self.store.instance_id(),
            status: PauseStatus::Paused,
            method: method.to_owned(),
            round,
            principal_label: self::principal(principal).label(),
            created_ms: self.now,
            deadline_ms: deadline,
            input_keys: vec![format!("elicitation-{round}")],
        };
        self.block(self.store.park(&record)).unwrap();
        let claims = Claims {
            pause_id,
            principal: self::principal(principal),
            method: method.to_owned(),
            params_digest: params_digest(&params(method, variant)),
            round,
            expires_at_ms: deadline,
        };
        let state = self.sealer.seal(&claims);
        self.issued.push(Issued {
            state,
            claims,
            principal,
            variant,
        });
        self.model.insert(
            pause_id,
            ModelRecord {
                status: PauseStatus::Paused,
                boot: self.boot,
                deadline,
            },
        );
        self.live.insert(pause_id);
    }

    /// `Engine::resume` for the `index`th issued state; `other`: present another principal,
    /// method, params.
    fn retry(
        &mut self,
        index: usize,
        other: [bool; 3],
        next_round: Option<u64>,
    ) -> Result<(), TestCaseError> {
        let issued = self.issued[index].clone();
        let method = issued.claims.method.clone();
        let principal = principal(if other[0] {
            issued.principal + 1
        } else {
            issued.principal
        });
        let presented_method = if other[1] {
            METHODS
                .iter()
                .find(|m| **m != method)
                .copied()
                .unwrap_or("tools/call")
        } else {
            method.as_str()
        };
        // The retry's params: `_meta`, `inputResponses` and `requestState` are added, as a
        // real retry does; they must not change the digest.
        let mut retry_params = params(
            &method,
            if other[2] {
                issued.variant + 1
            } else {
                issued.variant
            },
        );
        retry_params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
        retry_params["inputResponses"] = json!({"elicitation-1": {"action": "accept"}});
        retry_params["requestState"] = Value::from(issued.state.clone());
        let digest = params_digest(&retry_params);
        let presented = (&principal, presented_method, &digest);

        let pause_id = issued.claims.pause_id;
        let expected = expected_retry(
            &issued,
            presented,
            self.model.get(&pause_id),
            self.boot,
            self.now,
        );
        let (got, claims) = actual_retry(
            &self.rt,
            &self.sealer,
            self.store.as_ref(),
            &issued.state,
            presented,
            self.now,
        );
        prop_assert_eq!(got, expected, "retry of {:?}", issued.claims);
        if let Some(claims) = claims {
            prop_assert_eq!(&claims, &issued.claims);
            // Single use: no pause resumes twice, ever.
            prop_assert!(self.resumed.insert(pause_id), "{} resumed twice", pause_id);
            // A resumable record of this boot has its live call in memory.
            prop_assert!(self.live.remove(&pause_id));
            self.block(self.store.set_status(&pause_id, PauseStatus::Finished))
                .unwrap();
            self.model.get_mut(&pause_id).unwrap().status = PauseStatus::Finished;
            if let Some(ttl) = next_round {
                self.pause(
                    issued.principal,
                    &method,
                    issued.variant,
                    claims.round + 1,
                    ttl,
                );
            }
        }
        Ok(())
    }

    fn step(&mut self, op: Op) -> Result<(), TestCaseError> {
        match op {
            Op::Start {
                principal,
                method,
                variant,
                ttl,
            } => self.pause(principal, METHODS[method], variant, 1, ttl),
            Op::Retry {
                which,
                other_principal,
                other_method,
                other_params,
                next_round,
            } => {
                if !self.issued.is_empty() {
                    let index = which.index(self.issued.len());
                    self.retry(
                        index,
                        [other_principal, other_method, other_params],
                        next_round,
                    )?;
                }
            }
            Op::Tamper { which, at } => {
                if self.issued.is_empty() {
                    return Ok(());
                }
                let issued = &self.issued[which.index(self.issued.len())];
                let mut bytes = issued.state.clone().into_bytes();
                let at = at.index(bytes.len());
                bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
                let tampered = String::from_utf8(bytes).unwrap();
                let before = self.block(self.store.counts());
                let claims = &issued.claims;
                let result = self.sealer.open_for(
                    &tampered,
                    self.now,
                    &claims.principal,
                    &claims.method,
                    &claims.params_digest,
                );
                prop_assert!(
                    matches!(result, Err(StateError::Malformed | StateError::Forged)),
                    "{:?}",
                    result
                );
                prop_assert_eq!(self.block(self.store.counts()), before);
            }
            Op::Advance { ms } => self.now += ms,
            Op::Sweep => {
                // `Engine::sweep`.
                for record in self.block(self.store.expired(self.now)).unwrap() {
                    let transition = self.store.transition(
                        &record.pause_id,
                        PauseStatus::Paused,
                        PauseStatus::Expired,
                    );
                    if self.block(transition).unwrap() {
                        let model = self.model.get_mut(&record.pause_id).unwrap();
                        prop_assert_eq!(model.status, PauseStatus::Paused);
                        prop_assert!(self.now >= model.deadline);
                        model.status = PauseStatus::Expired;
                        self.live.remove(&record.pause_id);
                    }
                }
                let overdue = self.model.values().filter(|r| {
                    r.status == PauseStatus::Paused && r.boot == self.boot && self.now >= r.deadline
                });
                prop_assert_eq!(overdue.count(), 0);
            }
            Op::Restart => {
                // `lib.rs::run` at startup, after the process died: memory is gone, the key is
                // read back from the store.
                self.block(self.store.flush()).unwrap();
                let old_boot_id = self.store.instance_id();
                // Close the database (its lock) or end the instance before opening it again.
                self.store = store::temporary().unwrap();
                self.store = self.rt.block_on(reopen(&self.backing, old_boot_id));
                prop_assert_ne!(self.store.instance_id(), old_boot_id);
                self.boot += 1;
                self.sealer = Sealer::new(&self.block(self.store.state_key()).unwrap());
                let live_records = self
                    .model
                    .values()
                    .filter(|r| matches!(r.status, PauseStatus::Paused | PauseStatus::Resuming))
                    .count();
                prop_assert_eq!(self.block(self.store.recover()).unwrap(), live_records);
                for record in self.model.values_mut() {
                    if matches!(record.status, PauseStatus::Paused | PauseStatus::Resuming) {
                        record.status = PauseStatus::Lost;
                    }
                }
                self.live.clear();
            }
        }
        self.check()
    }

    fn block<T>(&self, future: impl std::future::Future<Output = T>) -> T {
        self.rt.block_on(future)
    }

    /// The store agrees with the model on every record, and the live calls are exactly the
    /// `Paused` records of this boot.
    fn check(&self) -> Result<(), TestCaseError> {
        for (id, record) in &self.model {
            let stored = self.block(self.store.get(id)).unwrap().map(|r| r.status);
            prop_assert_eq!(stored, Some(record.status), "record {}", id);
        }
        let mut counts: BTreeMap<PauseStatus, usize> =
            PauseStatus::ALL.iter().map(|s| (*s, 0)).collect();
        for record in self.model.values() {
            *counts.get_mut(&record.status).unwrap() += 1;
        }
        prop_assert_eq!(self.block(self.store.counts()), counts);
        // Exactly the `Paused` records of this boot have a live call.
        let paused: HashSet<PauseId> = self
            .model
            .iter()
            .filter(|(_, r)| r.status == PauseStatus::Paused && r.boot == self.boot)
            .map(|(id, _)| *id)
            .collect();
        prop_assert_eq!(&paused, &self.live);
        Ok(())
    }
}

async fn open(backing: &Backing) -> Arc<dyn PauseStore> {
    match backing {
        Backing::Sled(dir) => store::open(&StoreLocation::Sled(dir.path().to_owned()), None)
            .await
            .unwrap(),
        Backing::Redis(url) => store::open(&StoreLocation::parse(url), None).await.unwrap(),
    }
}

/// The store again after the process holding it died: sled reopened (its lock released), or a
/// new Redis instance once the old one's registration is gone.
async fn reopen(backing: &Backing, old_instance: u64) -> Arc<dyn PauseStore> {
    match backing {
        Backing::Sled(dir) => Arc::new(mcp_mrtr_proxy::fuzzing::reopen_store(dir.path())),
        Backing::Redis(_) => {
            let store = open(backing).await;
            // Removed by the dropped store's task: a budget for a loaded 2-core machine.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while store.owner(old_instance).await.unwrap() != Owner::Gone {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the old instance stayed registered"
                );
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            store
        }
    }
}

fn run_case(
    redis: Option<(&tokio::runtime::Runtime, &RedisServer)>,
    ops: Vec<Op>,
) -> Result<(), TestCaseError> {
    let mut world = World::new(redis);
    for op in ops {
        world.step(op)?;
    }
    // Every state ever issued is still refused or resumable exactly as the model says, and
    // none resumes once it was used: present each again.
    for index in 0..world.issued.len() {
        world.retry(index, [false; 3], None)?;
        world.check()?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn pause_resume_protocol_agrees_with_the_model_on_sled(ops in proptest::collection::vec(arb_op(), 1..60)) {
        run_case(None, ops)?;
    }
}

/// The same model on Redis: one `redis-server` for all the cases (emptied before each), stopped
/// when the test ends.
#[test]
fn pause_resume_protocol_agrees_with_the_model_on_redis() {
    let rt = runtime();
    let server = rt.block_on(RedisServer::start());
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 32,
        ..ProptestConfig::default()
    });
    let outcome = runner.run(&proptest::collection::vec(arb_op(), 1..60), |ops| {
        run_case(Some((&rt, &server)), ops)
    });
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
}
