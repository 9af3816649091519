//! The pause store contract, run through the `PauseStore` trait against both implementations:
//! sled (a temporary directory) and Redis (a real `redis-server` on a free loopback port). Single
//! use, every claim outcome, concurrent claims, compare-and-swap transitions, the expiry scan,
//! the sweep, counts, the shared state key, and an owner that is gone (a restart for sled,
//! another instance that stopped for Redis).

use std::sync::Arc;

use mcp_migrate_tests::support::{RedisServer, ReservedPort};
use mcp_mrtr_proxy::state::PauseId;
use mcp_mrtr_proxy::store::{
    self, ClaimError, Owner, PauseRecord, PauseStatus, PauseStore, StoreError, StoreLocation,
};

const NOW: u64 = 1_800_000_000_000;

fn record(store: &dyn PauseStore, deadline_ms: u64) -> PauseRecord {
    PauseRecord {
        pause_id: PauseId::random(),
        boot_id: store.instance_id(),
        status: PauseStatus::Paused,
        method: "tools/call".to_owned(),
        round: 1,
        principal_label: "0a1b2c3d".to_owned(),
        created_ms: NOW,
        deadline_ms,
        input_keys: vec!["elicitation_1".to_owned()],
    }
}

fn reason<T>(result: Result<T, ClaimError>) -> &'static str {
    match result {
        Ok(_) => "ok",
        Err(error) => error.reason(),
    }
}

async fn status(store: &dyn PauseStore, id: &PauseId) -> Option<PauseStatus> {
    store.get(id).await.unwrap().map(|record| record.status)
}

async fn contract(shared: Arc<dyn PauseStore>) {
    let store = shared.as_ref();

    // Park, then claim once.
    let rec = record(store, NOW + 1_000);
    store.park(&rec).await.unwrap();
    assert_eq!(store.get(&rec.pause_id).await.unwrap(), Some(rec.clone()));
    let claimed = store.claim(&rec.pause_id, NOW).await.unwrap();
    assert_eq!(
        claimed,
        PauseRecord {
            status: PauseStatus::Resuming,
            ..rec.clone()
        }
    );
    assert_eq!(
        reason(store.claim(&rec.pause_id, NOW).await),
        "already_used"
    );
    store
        .set_status(&rec.pause_id, PauseStatus::Finished)
        .await
        .unwrap();
    assert_eq!(
        reason(store.claim(&rec.pause_id, NOW).await),
        "already_used"
    );
    // A record is parked once: re-parking would make a used state claimable again.
    assert!(matches!(
        store.park(&rec).await,
        Err(StoreError::Duplicate { .. })
    ));
    assert!(matches!(
        store
            .park(&PauseRecord {
                boot_id: store.instance_id().wrapping_add(1),
                ..record(store, NOW)
            })
            .await,
        Err(StoreError::ForeignBoot { .. })
    ));

    // Unknown pauses.
    let unknown = PauseId::random();
    assert_eq!(reason(store.claim(&unknown, NOW).await), "unknown");
    assert_eq!(store.get(&unknown).await.unwrap(), None);
    assert!(matches!(
        store.set_status(&unknown, PauseStatus::Finished).await,
        Err(StoreError::NotFound { .. })
    ));

    // An eviction ends only a paused call, and its retry is told it was evicted (never expired).
    let rec = record(store, NOW + 1_000);
    store.park(&rec).await.unwrap();
    assert!(store
        .evict(&rec.pause_id, "its legacy session ended")
        .await
        .unwrap());
    assert!(!store.evict(&rec.pause_id, "again").await.unwrap());
    match store.claim(&rec.pause_id, NOW).await {
        Err(error @ ClaimError::Evicted(_)) => {
            let text = error.to_string();
            assert!(text.contains("evicted: its legacy session ended"), "{text}");
        }
        other => panic!("an evicted pause claimed: {other:?}"),
    }

    // Every status's claim outcome, and the deadline.
    for (status, expected) in [
        (PauseStatus::Paused, "ok"),
        (PauseStatus::Resuming, "already_used"),
        (PauseStatus::Finished, "already_used"),
        (PauseStatus::Expired, "expired"),
        (PauseStatus::Cancelled, "cancelled"),
        (PauseStatus::Lost, "lost"),
        (PauseStatus::Evicted, "evicted"),
    ] {
        let rec = PauseRecord {
            status,
            ..record(store, NOW + 1_000)
        };
        store.park(&rec).await.unwrap();
        assert_eq!(
            reason(store.claim(&rec.pause_id, NOW).await),
            expected,
            "{status}"
        );
    }
    let late = record(store, NOW + 1_000);
    store.park(&late).await.unwrap();
    assert_eq!(
        reason(store.claim(&late.pause_id, NOW + 1_000).await),
        "expired"
    );
    assert_eq!(
        status(store, &late.pause_id).await,
        Some(PauseStatus::Paused)
    );

    // Concurrent claims of one pause: exactly one wins.
    let contested = record(store, NOW + 1_000);
    store.park(&contested).await.unwrap();
    let mut claims = tokio::task::JoinSet::new();
    for _ in 0..16 {
        let store = shared.clone();
        let id = contested.pause_id;
        claims.spawn(async move { reason(store.claim(&id, NOW).await) });
    }
    let outcomes: Vec<&str> = claims.join_all().await;
    assert_eq!(
        outcomes.iter().filter(|o| **o == "ok").count(),
        1,
        "{outcomes:?}"
    );
    assert!(outcomes.iter().all(|o| *o == "ok" || *o == "already_used"));

    // Transitions are compare-and-swap.
    let swept = record(store, NOW + 10);
    store.park(&swept).await.unwrap();
    assert!(!store
        .transition(&swept.pause_id, PauseStatus::Resuming, PauseStatus::Expired)
        .await
        .unwrap());
    assert!(matches!(
        store
            .transition(&unknown, PauseStatus::Paused, PauseStatus::Expired)
            .await,
        Err(StoreError::NotFound { .. })
    ));

    // The expiry scan lists this instance's Paused records past their deadline.
    let expired: Vec<PauseId> = store
        .expired(NOW + 10)
        .await
        .unwrap()
        .into_iter()
        .map(|record| record.pause_id)
        .collect();
    assert!(expired.contains(&swept.pause_id));
    assert!(
        !expired.contains(&contested.pause_id),
        "claimed: not paused"
    );
    assert!(!store
        .expired(NOW + 9)
        .await
        .unwrap()
        .iter()
        .any(|record| record.pause_id == swept.pause_id));
    assert!(store
        .transition(&swept.pause_id, PauseStatus::Paused, PauseStatus::Expired)
        .await
        .unwrap());
    assert_eq!(reason(store.claim(&swept.pause_id, NOW).await), "expired");

    // Counts cover every status.
    let counts = store.counts().await;
    assert_eq!(counts.len(), PauseStatus::ALL.len());
    assert!(counts[&PauseStatus::Paused] >= 1);
    assert!(counts[&PauseStatus::Expired] >= 2);

    // The sweep deletes what can no longer matter, never a live record of this instance.
    let live = record(store, NOW);
    store.park(&live).await.unwrap();
    assert!(store.sweep(NOW + 2_000).await.unwrap() >= 1);
    assert_eq!(store.get(&swept.pause_id).await.unwrap(), None);
    assert_eq!(reason(store.claim(&swept.pause_id, NOW).await), "unknown");
    assert_eq!(
        status(store, &live.pause_id).await,
        Some(PauseStatus::Paused)
    );

    // The state key: one for every caller.
    let key = store.state_key().await.unwrap();
    assert_eq!(store.state_key().await.unwrap().to_text(), key.to_text());

    // Health and owners.
    assert_eq!(store.health().await, Ok(()));
    assert_eq!(store.owner(store.instance_id()).await.unwrap(), Owner::Me);
}

#[tokio::test]
async fn the_sled_store_keeps_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let location = StoreLocation::Sled(path.clone());
    let store = store::open(&location, None).await.unwrap();
    let first_instance = store.instance_id();
    // sled locks its directory: the "other instance" is the next boot, after this one stopped.
    let pending = record(store.as_ref(), u64::MAX / 2);
    store.park(&pending).await.unwrap();
    store.flush().await.unwrap();
    drop(store);
    let store = mcp_mrtr_proxy::fuzzing::reopen_store(&path);
    let store: Arc<dyn PauseStore> = Arc::new(store);
    assert_eq!(store.owner(first_instance).await.unwrap(), Owner::Gone);
    assert_eq!(reason(store.claim(&pending.pause_id, NOW).await), "lost");
    assert_eq!(store.recover().await.unwrap(), 1);
    assert_eq!(
        status(store.as_ref(), &pending.pause_id).await,
        Some(PauseStatus::Lost)
    );
    drop(store);

    let dir = tempfile::tempdir().unwrap();
    let store = store::open(&StoreLocation::Sled(dir.path().join("s")), None)
        .await
        .unwrap();
    contract(store).await;
}

#[tokio::test]
async fn the_redis_store_keeps_the_contract() {
    let redis = RedisServer::start().await;
    let location = StoreLocation::parse(&redis.url(0));
    assert_eq!(location, StoreLocation::Redis(redis.url(0)));
    let store = store::open(&location, Some("http://127.0.0.1:1"))
        .await
        .unwrap();
    contract(store).await;
}

#[tokio::test]
async fn redis_instances_share_claims_and_see_an_owner_go() {
    let redis = RedisServer::start().await;
    let location = StoreLocation::parse(&redis.url(1));
    let a = store::open(&location, Some("http://127.0.0.1:7001"))
        .await
        .unwrap();
    let b = store::open(&location, None).await.unwrap();
    assert_ne!(a.instance_id(), b.instance_id());
    // One state key for every instance.
    assert_eq!(
        a.state_key().await.unwrap().to_text(),
        b.state_key().await.unwrap().to_text()
    );
    // Each sees where the other is.
    assert_eq!(
        b.owner(a.instance_id()).await.unwrap(),
        Owner::At("http://127.0.0.1:7001".into())
    );
    assert_eq!(a.owner(b.instance_id()).await.unwrap(), Owner::Unreachable);
    // Single use across instances: claimed on one, refused on the other.
    let rec = record(a.as_ref(), u64::MAX / 2);
    a.park(&rec).await.unwrap();
    assert_eq!(b.get(&rec.pause_id).await.unwrap(), Some(rec.clone()));
    assert_eq!(reason(b.claim(&rec.pause_id, NOW).await), "ok");
    assert_eq!(reason(a.claim(&rec.pause_id, NOW).await), "already_used");
    // The expiry scan is per owner.
    let due = record(a.as_ref(), NOW);
    a.park(&due).await.unwrap();
    assert!(b.expired(NOW).await.unwrap().is_empty());
    assert_eq!(a.expired(NOW).await.unwrap().len(), 1);
    // A stops: its registration goes with it, and its live pauses are lost to the others.
    let pending = record(a.as_ref(), u64::MAX / 2);
    a.park(&pending).await.unwrap();
    let gone = a.instance_id();
    drop(a);
    // The store removes its registration from a task when dropped: a budget for a loaded machine.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while b.owner(gone).await.unwrap() != Owner::Gone {
        assert!(
            std::time::Instant::now() < deadline,
            "the registration outlived the instance"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // The claimed one (resuming on A), the due one and the pending one.
    assert_eq!(b.recover().await.unwrap(), 3);
    assert_eq!(
        status(b.as_ref(), &rec.pause_id).await,
        Some(PauseStatus::Lost)
    );
    assert_eq!(reason(b.claim(&pending.pause_id, NOW).await), "lost");
    assert_eq!(
        status(b.as_ref(), &due.pause_id).await,
        Some(PauseStatus::Lost)
    );
}

#[tokio::test]
async fn an_unreachable_redis_is_a_clear_error() {
    // Reserved, so no Redis of a concurrent test starts on it meanwhile.
    let reserved = ReservedPort::new();
    let port = reserved.port();
    let location = StoreLocation::parse(&format!("redis://127.0.0.1:{port}/0"));
    let error = store::open(&location, None).await.unwrap_err().to_string();
    assert!(
        error.contains("cannot reach the Redis pause store"),
        "{error}"
    );
}

#[tokio::test]
async fn a_restarted_redis_gives_errors_then_recovers() {
    let mut redis = RedisServer::start().await;
    let store = store::open(&StoreLocation::parse(&redis.url(0)), None)
        .await
        .unwrap();
    let rec = record(store.as_ref(), u64::MAX / 2);
    store.park(&rec).await.unwrap();
    redis.kill();
    let started = std::time::Instant::now();
    assert!(store.health().await.is_err());
    assert!(matches!(
        store.claim(&rec.pause_id, NOW).await,
        Err(ClaimError::Store(_))
    ));
    // A hang would be unbounded; 30 s holds on a loaded 2-core machine.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "errors, not a hang"
    );
    redis.restart().await;
    // Back: the records went with the old server (no persistence); new pauses work.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while store.health().await.is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the store did not recover"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(reason(store.claim(&rec.pause_id, NOW).await), "unknown");
    let fresh = record(store.as_ref(), u64::MAX / 2);
    store.park(&fresh).await.unwrap();
    // The heartbeat registers the instance again (seen from another instance): its pauses are
    // not taken for lost.
    let observer = store::open(&StoreLocation::parse(&redis.url(0)), None)
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while observer.owner(store.instance_id()).await.unwrap() == Owner::Gone {
        assert!(
            std::time::Instant::now() < deadline,
            "the heartbeat did not register the instance again"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(reason(store.claim(&fresh.pause_id, NOW).await), "ok");
}
