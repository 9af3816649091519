//! The lane pool ([`LanePool`]): lanes keyed by capability profile, bounded, started on demand,
//! recycled for another profile, retired, and closed after `--lane-idle-timeout`.
//!
//! Here: the pool's bookkeeping (a `Slot` per lane and the `PoolState` behind one lock, shared by
//! the pool's handles as `PoolShared`) and what the pool reports. By concern:
//! - `acquire`: which lane a call gets (the plans made under the lock, the wait, the lease);
//! - `release`: a lane coming back from a call (released, parked by a paused call and taken back
//!   to resume, drained);
//! - `start`: starting lanes (the backoff, the transport, the warm spares);
//! - `retire`: lanes leaving the pool (dead ones pruned, retired ones, idle ones closed, shutdown).

use super::*;

mod acquire;
mod release;
mod retire;
mod start;

/// The lanes, keyed by capability profile, bounded by [`PoolSettings::max_lanes`].
///
/// Policies:
/// - **lease(profile)**: an idle (unleased) live lane of the profile; else a new lane if the pool
///   is under `max_lanes`; else an idle lane of another profile with no request in flight is
///   shut down and replaced by one of this profile; else wait for a lease to return (or a busy
///   idle lane to become recyclable).
/// - **shared(profile)**: an unleased live lane of the profile (the one with the fewest calls in
///   flight); else, if the profile has no lane, wait for one being started for it, or start one
///   if the pool is under the limit (so concurrent first requests share one new lane); else
///   any live lane of the profile, leased or not (pass-through responses are matched by id; a
///   server request during pass-through on a leased lane would reach the lease); else, at the
///   limit with no lane of the profile, any live lane of another profile (unleased first) rather
///   than killing a lane or waiting behind a call that may be paused for a long time:
///   pass-through results rarely depend on client capabilities. It waits only while the needed
///   lanes are still starting.
/// - Dead lanes are removed whenever the pool is used (leased ones when their lease returns) and
///   replaced on demand. Starting a lane after a failed start (or after a lane died within a
///   second of starting) waits 100 ms, doubling up to 5 s, so a server that crashes at startup
///   is not respawned in a hot loop; a successful start resets the delay.
#[derive(Debug)]
pub struct LanePool {
    pub(super) shared: Arc<PoolShared>,
}

struct Slot {
    lane: Arc<Lane>,
    /// A call runs on the lane: an exclusive lease that is not parked (see `holds_paused`).
    leased: bool,
    /// Paused calls parked on the lane, waiting for their clients (lanes that hold many).
    parked: usize,
    /// Parked calls waiting to run again on this lane: no new call starts here before them.
    resuming: usize,
    /// No new call starts here (a cancelled call's late output may still come); the lane is
    /// shut down once its parked calls are done.
    draining: bool,
}

impl Slot {
    fn new(lane: Arc<Lane>, leased: bool) -> Self {
        Slot {
            lane,
            leased,
            parked: 0,
            resuming: 0,
            draining: false,
        }
    }
}

#[derive(Default)]
struct PoolState {
    slots: Vec<Slot>,
    /// Profiles of the lanes being created (they count toward the limit).
    starting: Vec<CapabilityProfile>,
    /// Failed starts in a row (for the backoff).
    failures: u32,
    /// No lane is started before this instant.
    retry_at: Option<Instant>,
    shut_down: bool,
    /// The profile of the newest correlatable call: spare lanes are started with it.
    last_profile: Option<CapabilityProfile>,
    /// [`LaneCore::deaths`] when no slot held a dead lane any more (`u64::MAX`: look again).
    deaths_pruned: u64,
}

pub(super) struct PoolShared {
    spec: BackendSpec,
    settings: PoolSettings,
    /// Where the legacy server sends mid-call requests, per call kind.
    pub(super) attribution: Arc<Attribution>,
    state: Mutex<PoolState>,
    changed: Notify,
    pub(super) next_lane: AtomicU64,
    /// The legacy server's change notifications, from every lane.
    changes: Arc<ChangeFeed>,
    /// The HTTP transport the legacy server turned out to speak (`--upstream-transport auto`).
    detected: Mutex<UpstreamTransport>,
    /// stdio: spawned, not yet initialized children for the next new lanes (`--spare-lanes`,
    /// see `top_up_spares`).
    spares: Mutex<Vec<stdio::Spawned>>,
}

impl std::fmt::Debug for PoolShared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state();
        f.debug_struct("PoolShared")
            .field("spec", &self.spec)
            .field("max_lanes", &self.settings.max_lanes)
            .field("lanes", &state.slots.len())
            .field("starting", &state.starting.len())
            .finish_non_exhaustive()
    }
}

impl PoolState {
    fn slot_mut(&mut self, lane: &Arc<Lane>) -> Option<&mut Slot> {
        self.slots
            .iter_mut()
            .find(|slot| Arc::ptr_eq(&slot.lane, lane))
    }
}

impl PoolShared {
    fn state(&self) -> std::sync::MutexGuard<'_, PoolState> {
        self.state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    pub(super) fn settings(&self) -> &PoolSettings {
        &self.settings
    }

    fn max_lanes(&self) -> usize {
        self.settings.max_lanes.max(1)
    }
}

impl LanePool {
    pub fn new(spec: BackendSpec, settings: PoolSettings) -> Arc<Self> {
        let settings_mode = settings.call_sessions;
        Arc::new(LanePool {
            shared: Arc::new(PoolShared {
                spec,
                settings,
                state: Mutex::new(PoolState::default()),
                changed: Notify::new(),
                next_lane: AtomicU64::new(1),
                changes: Arc::default(),
                detected: Mutex::new(UpstreamTransport::Auto),
                spares: Mutex::new(Vec::new()),
                attribution: Arc::new(Attribution::new(settings_mode)),
            }),
        })
    }

    /// How many call kinds are known to send mid-call requests on their own response stream
    /// (shared sessions) and on the GET stream (exclusive): for logs and the benchmark.
    pub fn attribution(&self) -> &Attribution {
        &self.shared.attribution
    }

    /// The `initialize` outcome of the legacy server (from any lane; connects one if none is up).
    pub async fn initialized(&self) -> Result<Initialized, BackendError> {
        let existing = {
            let mut state = self.shared.state();
            self.shared.prune(&mut state);
            state
                .slots
                .iter()
                .find(|slot| slot.lane.is_alive())
                .map(|slot| slot.lane.initialized().clone())
        };
        match existing {
            Some(initialized) => Ok(initialized),
            None => Ok(self
                .shared(&CapabilityProfile::default())
                .await?
                .initialized()
                .clone()),
        }
    }

    /// How many `notifications/tools/list_changed` the legacy server sent so far (on any lane):
    /// what was learnt from its `tools/list` before is stale once this moves.
    pub fn tools_generation(&self) -> u64 {
        self.shared.changes.tools_generation()
    }

    /// The legacy server's change notifications (list changes, resource updates) from every
    /// lane, from now on.
    pub fn subscribe_changes(&self) -> broadcast::Receiver<ChangeNotice> {
        self.shared.changes.subscribe()
    }

    /// Whether a live, initialized lane exists right now (for `/healthz`).
    pub fn is_ready(&self) -> bool {
        self.shared
            .state()
            .slots
            .iter()
            .any(|slot| slot.lane.is_alive())
    }

    /// `(open, leased)`: live lanes in the pool, and those of them that run a call or hold a
    /// paused one (metrics).
    pub fn lane_stats(&self) -> (usize, usize) {
        let state = self.shared.state();
        let live = state.slots.iter().filter(|slot| slot.lane.is_alive());
        let (open, leased) = live.fold((0, 0), |(open, leased), slot| {
            let in_use = slot.leased || slot.parked > 0;
            (open + 1, leased + usize::from(in_use))
        });
        (open, leased)
    }

    /// Whether nothing uses the pool: no lane starting or leased, and no lane with a request in
    /// flight, a call routed on it, or a holder besides the pool (the pool may be dropped).
    pub fn is_unused(&self) -> bool {
        let state = self.shared.state();
        state.starting.is_empty()
            && state.slots.iter().all(|slot| {
                !slot.leased
                    && slot.lane.pending_calls() == 0
                    && slot.lane.core().routed_calls() == 0
                    && Arc::strong_count(&slot.lane) == 1
            })
    }

    /// Lanes in the pool (live, dead-but-leased) plus lanes being started.
    pub fn lane_count(&self) -> usize {
        let state = self.shared.state();
        state.slots.len() + state.starting.len()
    }
}
