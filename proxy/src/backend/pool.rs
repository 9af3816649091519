//! The lane pool ([`LanePool`]): lanes keyed by capability profile, bounded, started on demand,
//! recycled for another profile, retired, and closed after `--lane-idle-timeout`.

use super::lease::{LeaseMode, LeaseReturn};
use super::*;

/// How long a retired lane keeps serving the requests already in flight on it (pass-through
/// requests that borrowed it) before it is shut down.
const RETIRE_DRAIN: Duration = Duration::from_secs(10);

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

/// What a pool operation decided under the lock.
enum Plan {
    Take(Arc<Lane>),
    Create { recycle: Option<Arc<Lane>> },
    Wait,
}

impl PoolState {
    fn slot_mut(&mut self, lane: &Arc<Lane>) -> Option<&mut Slot> {
        self.slots
            .iter_mut()
            .find(|slot| Arc::ptr_eq(&slot.lane, lane))
    }
}

/// Counts a paused call waiting to run again on its lane (`Slot::resuming`) while it waits; the
/// count is given back when the wait ends without the lane (also on cancellation).
struct Resuming<'a>(&'a PoolShared, &'a Arc<Lane>, bool);

impl Drop for Resuming<'_> {
    fn drop(&mut self) {
        if self.2 {
            if let Some(slot) = self.0.state().slot_mut(self.1) {
                slot.resuming = slot.resuming.saturating_sub(1);
            }
            self.0.changed.notify_waiters();
        }
    }
}

/// Holds a "starting" place in the pool; gives it back when dropped (also on cancellation).
struct Starting<'a>(&'a PoolShared, &'a CapabilityProfile);

impl Drop for Starting<'_> {
    fn drop(&mut self) {
        {
            let mut state = self.0.state();
            if let Some(at) = state.starting.iter().position(|p| p == self.1) {
                state.starting.swap_remove(at);
            }
        }
        self.0.changed.notify_waiters();
    }
}

fn backoff(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    (FIRST_BACKOFF * 2u32.pow(doublings)).min(MAX_BACKOFF)
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

    /// Removes dead unleased lanes; a quick death counts as a failed start.
    fn prune(&self, state: &mut PoolState) -> bool {
        // Twice per call (lease, release): a read-only pass first, as nothing has died almost
        // always (callgrind, bench/proxy-vs-nginx.md).
        if state
            .slots
            .iter()
            .all(|slot| slot.leased || slot.lane.is_alive())
        {
            return false;
        }
        let before = state.slots.len();
        let mut quick_deaths = 0;
        state.slots.retain(|slot| {
            let keep = slot.leased || slot.lane.is_alive();
            if !keep {
                crate::metrics::global().lane_failed();
                tracing::info!(lane = slot.lane.id(), "removing a dead lane from the pool");
                if slot.lane.core().created.elapsed() < QUICK_DEATH {
                    quick_deaths += 1;
                }
            }
            keep
        });
        if quick_deaths > 0 {
            state.failures += quick_deaths;
            state.retry_at = Some(Instant::now() + backoff(state.failures));
        }
        state.slots.len() != before
    }

    /// Whether `slot` can take a new correlatable call now (if its profile is the call's).
    fn ready(&self, slot: &Slot) -> bool {
        !slot.leased
            && !slot.draining
            && slot.resuming == 0
            && slot.parked < self.settings.paused_per_lane.max(1)
            && slot.lane.is_alive()
    }

    /// Keeps `--spare-lanes` lanes ready so that a call that finds every started lane busy does
    /// not wait for a process or a legacy session to start. stdio: started children, initialized
    /// by the call that takes one (see [`PoolShared::top_up_spares`]). HTTP: starts legacy
    /// sessions in the background until that many are ready for a new call of the newest
    /// call's profile (or starting), while the pool is below its maximum and not backing off
    /// after failed starts.
    pub(super) fn keep_spares(self: &Arc<Self>) {
        let want = self.settings.spare_lanes;
        // A legacy server that wants credentials refuses a lane without them: no spare.
        let refused = self.settings.credentials.is_empty()
            && self.settings.credentials_wanted.load(Ordering::Relaxed);
        if want == 0 || refused {
            return;
        }
        if let BackendSpec::Stdio { program, args } = &self.spec {
            let mut spares = self.spares();
            spares.retain_mut(|child| child.is_running());
            self.top_up_spares(&mut spares, program, args);
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let profile = {
            let mut state = self.state();
            let profile = state.last_profile.clone().unwrap_or_default();
            // Counted up to `want`: only whether there are that many matters.
            let ready = state
                .slots
                .iter()
                .filter(|slot| self.ready(slot) && slot.lane.profile() == &profile)
                .take(want)
                .count();
            let total = state.slots.len() + state.starting.len();
            let backing_off = state.retry_at.is_some_and(|at| at > Instant::now());
            if state.shut_down
                || backing_off
                || ready + state.starting.len() >= want
                || total >= self.max_lanes()
            {
                return;
            }
            state.starting.push(profile.clone());
            profile
        };
        let pool = Arc::clone(self);
        runtime.spawn(async move {
            match pool.create_slot(&profile, None, false).await {
                Ok(lane) => lane
                    .core()
                    .span
                    .in_scope(|| tracing::debug!("a spare lane is ready for the next call")),
                Err(error) => tracing::debug!(%error, "starting a spare lane failed"),
            }
            pool.changed.notify_waiters();
        });
    }

    /// Whether this pool's lanes hold many paused calls each (stdio, `--max-paused-per-lane`
    /// above 0): a paused call gives its lane up to the next call and takes it back to resume,
    /// since a legacy handler blocked on its request sends nothing until it is answered. HTTP
    /// lanes stay exclusive: a session is cheap and the pool is sized to the paused calls.
    pub(super) fn holds_paused(&self) -> bool {
        self.settings.paused_per_lane > 0 && matches!(self.spec, BackendSpec::Stdio { .. })
    }

    /// A running call on `lane` paused: the lane takes another call.
    pub(super) fn parked(&self, lane: &Arc<Lane>) {
        {
            let mut state = self.state();
            if let Some(slot) = state.slot_mut(lane) {
                slot.leased = false;
                slot.parked += 1;
            }
        }
        self.changed.notify_waiters();
    }

    /// A paused call on `lane` runs again: waits until no call runs there (paused calls waiting
    /// to resume go before new calls), then holds the lane. Fails when the lane is gone.
    pub(super) async fn take_back(&self, lane: &Arc<Lane>) -> Result<(), BackendError> {
        let mut waiting = Resuming(self, lane, false);
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            {
                let mut state = self.state();
                let Some(slot) = state.slot_mut(lane) else {
                    return Err(BackendError::Crashed);
                };
                if !slot.lane.is_alive() {
                    return Err(BackendError::Crashed);
                }
                if !slot.leased {
                    slot.leased = true;
                    slot.parked = slot.parked.saturating_sub(1);
                    if std::mem::take(&mut waiting.2) {
                        slot.resuming = slot.resuming.saturating_sub(1);
                    }
                    return Ok(());
                }
                if !waiting.2 {
                    slot.resuming += 1;
                    waiting.2 = true;
                }
            }
            let _ = tokio::time::timeout(RESCAN, changed).await;
        }
    }

    /// A paused call on `lane` ended without running again (its lane died, or the proxy shut
    /// down): a draining lane with nothing left on it is retired.
    pub(super) fn parked_gone(self: &Arc<Self>, lane: &Arc<Lane>) {
        let done = {
            let mut state = self.state();
            match state.slot_mut(lane) {
                Some(slot) => {
                    slot.parked = slot.parked.saturating_sub(1);
                    slot.draining && slot.parked == 0 && !slot.leased && slot.resuming == 0
                }
                None => false,
            }
        };
        if done {
            self.retire(lane);
        } else {
            self.changed.notify_waiters();
        }
    }

    /// Takes a lane out of service: retired at once, or, on a lane that still holds paused
    /// calls, draining (no new call starts there; retired when the last one is done).
    pub(super) fn retire_or_drain(self: &Arc<Self>, lane: &Arc<Lane>) {
        let draining = {
            let mut state = self.state();
            match state.slot_mut(lane) {
                Some(slot) if slot.parked > 0 || slot.resuming > 0 => {
                    slot.leased = false;
                    slot.draining = true;
                    true
                }
                _ => false,
            }
        };
        if draining {
            lane.core().span.in_scope(|| {
                tracing::info!(
                    "a cancelled call may still send output: no new call starts on this lane; \
                     it is retired once its paused calls are done"
                )
            });
            self.changed.notify_waiters();
        } else {
            self.retire(lane);
        }
    }

    /// Takes a lane out of the pool and ends its legacy session (in the background).
    pub(super) fn retire(&self, lane: &Arc<Lane>) {
        {
            let mut state = self.state();
            state.slots.retain(|slot| !Arc::ptr_eq(&slot.lane, lane));
        }
        self.changed.notify_waiters();
        lane.core().span.in_scope(|| {
            tracing::info!("retiring a lane whose call was cancelled or did not finish")
        });
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let lane = Arc::clone(lane);
            runtime.spawn(async move {
                // Pass-through requests may still borrow the lane: let them finish first.
                let deadline = Instant::now() + RETIRE_DRAIN;
                while lane.core().pending_count() > 0 && Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                lane.shutdown().await
            });
        }
    }

    /// Whether a waiter must keep waiting without its patience running out: a lane is starting,
    /// or a lane is held by a call that runs (rather than waits for its client).
    fn relief_coming(&self) -> bool {
        let state = self.state();
        !state.starting.is_empty()
            || state
                .slots
                .iter()
                .any(|slot| slot.leased && !slot.lane.core().awaits_client())
    }

    pub(super) fn release(self: &Arc<Self>, lane: &Arc<Lane>) {
        let retire = {
            let mut state = self.state();
            let retire = match state.slot_mut(lane) {
                Some(slot) => {
                    slot.leased = false;
                    slot.draining && slot.parked == 0 && slot.resuming == 0
                }
                None => false,
            };
            self.prune(&mut state);
            retire
        };
        if retire {
            self.retire(lane);
        } else {
            self.changed.notify_waiters();
        }
    }

    /// Starts a lane with `profile` (after the backoff, if a start failed recently).
    async fn create(&self, profile: &CapabilityProfile) -> Result<Arc<Lane>, BackendError> {
        let wait = self
            .state()
            .retry_at
            .map(|at| at.saturating_duration_since(Instant::now()));
        if let Some(wait) = wait.filter(|wait| !wait.is_zero()) {
            tracing::debug!(?wait, "waiting before starting a lane (backoff)");
            tokio::time::sleep(wait).await;
        }
        let (started, core) = self
            .start_lane(&|transport| self.new_core(profile, transport))
            .await;
        let mut state = self.state();
        match started {
            Ok(inner) => {
                crate::metrics::global().lane_started();
                state.failures = 0;
                state.retry_at = None;
                Ok(Arc::new(Lane { inner }))
            }
            Err(error @ BackendError::Unauthorized { .. }) => {
                // The server is up and wants this caller's credentials: no backoff (other
                // callers' lanes must not wait), and nothing to retry on our own.
                self.settings
                    .credentials_wanted
                    .store(true, Ordering::Relaxed);
                core.span
                    .in_scope(|| tracing::info!(%error, "a lane was refused its credentials"));
                Err(error)
            }
            Err(error) => {
                state.failures += 1;
                let delay = backoff(state.failures);
                state.retry_at = Some(Instant::now() + delay);
                core.span.in_scope(
                    || tracing::warn!(%error, next_attempt_in = ?delay, "starting a lane failed"),
                );
                Err(error)
            }
        }
    }

    /// Starts one lane over the configured transport, its core made by `new_core(transport)`
    /// (`--upstream-transport auto`: Streamable HTTP, else HTTP+SSE). No pool bookkeeping.
    pub(super) async fn start_lane(
        &self,
        new_core: &(dyn Fn(&'static str) -> Arc<LaneCore> + Sync),
    ) -> (Result<LaneInner, BackendError>, Arc<LaneCore>) {
        let init_timeout = self.settings.request_timeout.min(MAX_INIT_TIMEOUT);
        let client_info = &self.settings.client_info;
        let (started, core) = match &self.spec {
            BackendSpec::Stdio { program, args } => {
                let core = new_core("stdio");
                let started = match self.spawn_child(program, args) {
                    Ok(spawned) => {
                        stdio::StdioLane::start(
                            Arc::clone(&core),
                            spawned,
                            client_info,
                            init_timeout,
                        )
                        .await
                    }
                    Err(error) => Err(error),
                };
                (started.map(LaneInner::Stdio), core)
            }
            BackendSpec::Http { url, transport } => {
                let transport = match transport {
                    UpstreamTransport::Auto => self.detected_transport(),
                    chosen => *chosen,
                };
                let start_sse = || async {
                    let core = new_core("sse");
                    let started = sse_lane::SseLane::start(
                        Arc::clone(&core),
                        url,
                        client_info,
                        &self.settings.credentials,
                        init_timeout,
                    )
                    .await
                    .map(LaneInner::Sse);
                    (started, core)
                };
                match transport {
                    UpstreamTransport::Sse => start_sse().await,
                    UpstreamTransport::StreamableHttp | UpstreamTransport::Auto => {
                        let core = new_core("http");
                        let started = http::HttpLane::start(
                            Arc::clone(&core),
                            url,
                            client_info,
                            &self.settings.credentials,
                            init_timeout,
                        )
                        .await
                        .map(LaneInner::Http);
                        match started {
                            Err(BackendError::NotStreamableHttp(why))
                                if transport == UpstreamTransport::Auto =>
                            {
                                // The specification's fallback: an HTTP+SSE server (2024-11-05).
                                let (started, core) = start_sse().await;
                                let started = started.map_err(|error| {
                                    BackendError::Unavailable(format!(
                                        "{url} is neither a Streamable HTTP endpoint ({why}) nor an \
                                         HTTP+SSE one ({error})"
                                    ))
                                });
                                (started, core)
                            }
                            started => (started, core),
                        }
                    }
                }
            }
        };
        if let Ok(inner) = &started {
            self.remember_transport(inner);
        }
        (started, core)
    }

    /// A legacy stdio child for a new lane: a warm spare if one is still running, else a fresh
    /// one. Then the warm spares are topped up (see [`PoolShared::top_up_spares`]), so the next
    /// new lane finds its server already started.
    fn spawn_child(&self, program: &str, args: &[String]) -> Result<stdio::Spawned, BackendError> {
        let mut spares = self.spares();
        spares.retain_mut(|child| child.is_running());
        // The oldest spare first: the likeliest to have finished loading.
        let spawned = if spares.is_empty() {
            stdio::Spawned::spawn(program, args)?
        } else {
            spares.remove(0)
        };
        self.top_up_spares(&mut spares, program, args);
        Ok(spawned)
    }

    fn spares(&self) -> std::sync::MutexGuard<'_, Vec<stdio::Spawned>> {
        self.spares
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// stdio: spawns children, not yet initialized, until `--spare-lanes` of them are running,
    /// while they fit in `--pool-size` beside the lanes (no more children run than the pool
    /// allows). A spare is initialized with the profile of the call that needs a new lane:
    /// legacy servers adapt to the capabilities they see at `initialize`, and the handshake
    /// with a started process takes milliseconds, where starting the process (an interpreter
    /// importing its SDK) takes up to seconds.
    fn top_up_spares(&self, spares: &mut Vec<stdio::Spawned>, program: &str, args: &[String]) {
        let (lanes, shut_down) = {
            let state = self.state();
            (state.slots.len() + state.starting.len(), state.shut_down)
        };
        while !shut_down
            && spares.len() < self.settings.spare_lanes
            && lanes + spares.len() < self.max_lanes()
        {
            match stdio::Spawned::spawn(program, args) {
                Ok(next) => spares.push(next),
                Err(error) => {
                    tracing::debug!(%error, "no warm spare: spawning it failed");
                    break;
                }
            }
        }
    }

    fn new_core(&self, profile: &CapabilityProfile, transport: &'static str) -> Arc<LaneCore> {
        let core = LaneCore::new(
            self.next_lane.fetch_add(1, Ordering::Relaxed),
            profile.clone(),
            transport,
            self.settings.roots.clone(),
            Arc::clone(&self.changes),
        );
        core.set_attribution(Arc::clone(&self.attribution));
        core
    }

    /// Whether calls may share sessions: Streamable HTTP lanes only.
    fn may_share(&self) -> bool {
        match &self.spec {
            BackendSpec::Stdio { .. } => false,
            BackendSpec::Http { transport, .. } => match transport {
                UpstreamTransport::StreamableHttp => true,
                UpstreamTransport::Sse => false,
                UpstreamTransport::Auto => {
                    self.detected_transport() == UpstreamTransport::StreamableHttp
                }
            },
        }
    }

    /// What `--upstream-transport auto` found (`Auto` until a lane started).
    fn detected_transport(&self) -> UpstreamTransport {
        *self
            .detected
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Remembers the transport the first lane spoke; the first HTTP+SSE lane warns under the
    /// linter's rule name (the transport is deprecated).
    fn remember_transport(&self, inner: &LaneInner) {
        let found = match inner {
            LaneInner::Http(_) => UpstreamTransport::StreamableHttp,
            LaneInner::Sse(_) => UpstreamTransport::Sse,
            LaneInner::Stdio(_) => return,
        };
        let previous = std::mem::replace(
            &mut *self
                .detected
                .lock()
                .unwrap_or_else(|poison| poison.into_inner()),
            found,
        );
        if previous != found && found == UpstreamTransport::Sse {
            let rule = RuleId::LegacySseTransport.rule();
            crate::metrics::global().deprecation_warning(rule.name);
            tracing::warn!(
                rule = rule.name,
                code = rule.code,
                client = "legacy-server",
                "the legacy server speaks the HTTP+SSE transport of 2024-11-05: {} (see `cargo mcp-lint --explain {}`)",
                rule.summary,
                rule.name
            );
        }
    }

    /// Runs a plan that needs a new lane: recycles the victim, creates, registers.
    async fn create_slot(
        &self,
        profile: &CapabilityProfile,
        recycle: Option<Arc<Lane>>,
        leased: bool,
    ) -> Result<Arc<Lane>, BackendError> {
        let _starting = Starting(self, profile);
        if let Some(victim) = recycle {
            tracing::info!(
                lane = victim.id(),
                from = %victim.profile().label(),
                to = %profile.label(),
                "recycling an idle lane for another capability profile"
            );
            victim.shutdown().await;
        }
        let lane = self.create(profile).await?;
        let registered = {
            let mut state = self.state();
            if !state.shut_down {
                state.slots.push(Slot::new(Arc::clone(&lane), leased));
            }
            !state.shut_down
        };
        if !registered {
            lane.shutdown().await;
            return Err(BackendError::Unavailable(
                "the proxy is shutting down".into(),
            ));
        }
        Ok(lane)
    }

    fn plan_lease(&self, profile: &CapabilityProfile) -> Result<Plan, BackendError> {
        let mut state = self.state();
        if state.shut_down {
            return Err(BackendError::Unavailable(
                "the proxy is shutting down".into(),
            ));
        }
        self.prune(&mut state);
        if state.last_profile.as_ref() != Some(profile) {
            state.last_profile = Some(profile.clone());
        }
        // A lane carrying shared calls is not leased: what arrives on its GET stream would
        // then be taken for the lease holder's.
        let unshared = |slot: &Slot| slot.lane.core().routed_calls() == 0;
        // On a lane that holds paused calls, a new call runs when no call runs there, no
        // paused call waits to run again (they go first), and it holds fewer than the cap.
        let cap = self.settings.paused_per_lane;
        let free = |slot: &Slot| {
            !slot.leased
                && !slot.draining
                && slot.resuming == 0
                && slot.parked < cap.max(1)
                && slot.lane.is_alive()
                && slot.lane.profile() == profile
                && unshared(slot)
        };
        // The lane with the fewest paused calls: a resumption there is least likely to wait
        // behind a running call. A lane that is there now goes before a new one: a child's start
        // (even a spare's, whose interpreter may still be loading) must not be on a call's path.
        let room = state.slots.len() + state.starting.len() < self.max_lanes();
        // The first free lane without paused calls is the one `min_by_key` would pick (the first
        // of the minimums): no need to look at the others.
        let at = match state
            .slots
            .iter()
            .position(|slot| slot.parked == 0 && free(slot))
        {
            Some(at) => Some(at),
            None => state
                .slots
                .iter()
                .enumerate()
                .filter(|(_, slot)| free(slot))
                .min_by_key(|(_, slot)| slot.parked)
                .map(|(at, _)| at),
        };
        if let Some(slot) = at.map(|at| &mut state.slots[at]) {
            slot.leased = true;
            return Ok(Plan::Take(Arc::clone(&slot.lane)));
        }
        if room {
            state.starting.push(profile.clone());
            return Ok(Plan::Create { recycle: None });
        }
        if let Some(at) = state.slots.iter().position(|slot| {
            !slot.leased
                && slot.parked == 0
                && slot.resuming == 0
                && slot.lane.pending_calls() == 0
                && unshared(slot)
        }) {
            let victim = state.slots.remove(at);
            state.starting.push(profile.clone());
            return Ok(Plan::Create {
                recycle: Some(victim.lane),
            });
        }
        // The pool is full and every lane of another profile holds paused calls (stdio): a lane
        // whose session declares all this call's capabilities and more can run it; what the
        // legacy server asks beyond them is refused as the call's own capabilities say.
        if self.holds_paused() {
            if let Some(slot) = state.slots.iter_mut().find(|slot| {
                !slot.leased
                    && !slot.draining
                    && slot.resuming == 0
                    && slot.parked < cap.max(1)
                    && slot.lane.is_alive()
                    && slot.lane.profile().covers(profile)
            }) {
                tracing::debug!(
                    lane = slot.lane.id(),
                    wanted = %profile.label(),
                    got = %slot.lane.profile().label(),
                    "pool full of paused calls: the call runs on a lane that declares more"
                );
                slot.leased = true;
                return Ok(Plan::Take(Arc::clone(&slot.lane)));
            }
        }
        Ok(Plan::Wait)
    }

    fn plan_shared(&self, profile: &CapabilityProfile) -> Result<Plan, BackendError> {
        let mut state = self.state();
        if state.shut_down {
            return Err(BackendError::Unavailable(
                "the proxy is shutting down".into(),
            ));
        }
        self.prune(&mut state);
        let live = |slot: &&Slot| slot.lane.is_alive();
        let mine = |slot: &&Slot| slot.lane.profile() == profile;
        if let Some(slot) = state
            .slots
            .iter()
            .filter(live)
            .filter(mine)
            .filter(|slot| !slot.leased)
            .min_by_key(|slot| slot.lane.pending_calls())
        {
            return Ok(Plan::Take(Arc::clone(&slot.lane)));
        }
        let has_profile = state.slots.iter().filter(live).any(|slot| mine(&slot));
        if !has_profile && state.starting.contains(profile) {
            // A lane of the profile is on its way: use it rather than starting another.
            return Ok(Plan::Wait);
        }
        if !has_profile && state.slots.len() + state.starting.len() < self.max_lanes() {
            state.starting.push(profile.clone());
            return Ok(Plan::Create { recycle: None });
        }
        if let Some(slot) = state
            .slots
            .iter()
            .filter(live)
            .filter(mine)
            .min_by_key(|slot| slot.lane.pending_calls())
        {
            return Ok(Plan::Take(Arc::clone(&slot.lane)));
        }
        if let Some(slot) = state
            .slots
            .iter()
            .filter(live)
            .min_by_key(|slot| (slot.leased, slot.lane.pending_calls()))
        {
            tracing::debug!(
                lane = slot.lane.id(),
                wanted = %profile.label(),
                got = %slot.lane.profile().label(),
                "pool full: pass-through on a lane of another profile"
            );
            return Ok(Plan::Take(Arc::clone(&slot.lane)));
        }
        Ok(Plan::Wait)
    }

    /// A lane for calls on a shared session: an unleased live lane of the profile (the one with
    /// the fewest calls in flight); else one being started for the profile; else a new one; else
    /// an idle lane of another profile recycled; else wait.
    fn plan_call_shared(&self, profile: &CapabilityProfile) -> Result<Plan, BackendError> {
        let mut state = self.state();
        if state.shut_down {
            return Err(BackendError::Unavailable(
                "the proxy is shutting down".into(),
            ));
        }
        self.prune(&mut state);
        if let Some(slot) = state
            .slots
            .iter()
            .filter(|slot| !slot.leased && slot.lane.is_alive() && slot.lane.profile() == profile)
            .min_by_key(|slot| slot.lane.pending_calls())
        {
            return Ok(Plan::Take(Arc::clone(&slot.lane)));
        }
        if state.starting.contains(profile) {
            return Ok(Plan::Wait);
        }
        if state.slots.len() + state.starting.len() < self.max_lanes() {
            state.starting.push(profile.clone());
            return Ok(Plan::Create { recycle: None });
        }
        if let Some(at) = state.slots.iter().position(|slot| {
            !slot.leased && slot.lane.pending_calls() == 0 && slot.lane.core().routed_calls() == 0
        }) {
            let victim = state.slots.remove(at);
            state.starting.push(profile.clone());
            return Ok(Plan::Create {
                recycle: Some(victim.lane),
            });
        }
        Ok(Plan::Wait)
    }

    fn lease_of(self: &Arc<Self>, lane: Arc<Lane>, kind: Option<Arc<str>>, probe: bool) -> Lease {
        let cancelled_before = lane.core().cancelled_count();
        let (generation, events) = lane.core().attach_lease(kind.clone());
        Lease {
            lane: Arc::clone(&lane),
            events,
            mode: LeaseMode::Exclusive,
            _return: Some(LeaseReturn {
                pool: Arc::clone(self),
                lane,
                generation,
                cancelled_before,
                probe: kind.filter(|_| probe),
                parked: false,
            }),
        }
    }

    fn shared_call_of(lane: Arc<Lane>, kind: Arc<str>) -> Lease {
        let (events, receiver) = event_channel(lane_core::LEASE_EVENTS);
        Lease {
            lane,
            events: receiver,
            mode: LeaseMode::Shared {
                events,
                kind,
                calls: Vec::new(),
            },
            _return: None,
        }
    }

    /// Runs `plan` until it yields a lane. While it says wait, the wait counts toward
    /// [`LANE_WAIT`] only when no relief is coming (see [`PoolShared::relief_coming`]); past it,
    /// [`BackendError::Exhausted`].
    async fn acquire(
        &self,
        profile: &CapabilityProfile,
        leased: bool,
        plan: impl Fn(&Self) -> Result<Plan, BackendError>,
    ) -> Result<Arc<Lane>, BackendError> {
        let mut since = Instant::now();
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            match plan(self)? {
                Plan::Take(lane) => return Ok(lane),
                Plan::Create { recycle } => {
                    return self.create_slot(profile, recycle, leased).await;
                }
                Plan::Wait => {
                    if self.relief_coming() {
                        since = Instant::now();
                    } else if since.elapsed() >= LANE_WAIT {
                        crate::metrics::global().rejection("lane_capacity");
                        return Err(BackendError::Exhausted {
                            lanes: self.max_lanes(),
                            paused_per_lane: if self.holds_paused() {
                                self.settings.paused_per_lane
                            } else {
                                0
                            },
                        });
                    }
                    let _ = tokio::time::timeout(RESCAN, changed).await;
                }
            }
        }
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

    /// Leases a lane initialized with `profile` for one correlatable call, creating one (or
    /// recycling an idle lane of another profile) when needed; waits while the pool is exhausted
    /// (see [`LANE_WAIT`], then [`BackendError::Exhausted`]).
    pub async fn lease(&self, profile: &CapabilityProfile) -> Result<Lease, BackendError> {
        self.exclusive(profile, None, false).await
    }

    async fn exclusive(
        &self,
        profile: &CapabilityProfile,
        kind: Option<Arc<str>>,
        probe: bool,
    ) -> Result<Lease, BackendError> {
        let acquired = self
            .shared
            .acquire(profile, true, |pool| pool.plan_lease(profile))
            .await;
        match acquired {
            Ok(lane) => {
                self.shared.keep_spares();
                Ok(self.shared.lease_of(lane, kind, probe))
            }
            Err(error) => {
                if let Some(kind) = kind.filter(|_| probe) {
                    self.shared.attribution.probe_ended(&kind, false);
                }
                Err(error)
            }
        }
    }

    /// A lane for the correlatable call `method` with `params`: a shared Streamable HTTP session
    /// when calls of its kind send their mid-call requests on their own response stream, an
    /// exclusive lane otherwise (see [`attribution`]).
    pub async fn call_lease(
        &self,
        profile: &CapabilityProfile,
        method: &str,
        params: &Value,
    ) -> Result<Lease, BackendError> {
        let attribution = &self.shared.attribution;
        if !self.shared.may_share() {
            return self.lease(profile).await;
        }
        let kind: Arc<str> = attribution.kind_of(method, params).into();
        let waiting = Instant::now();
        let placement = loop {
            let changed = attribution.changed();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let waited = waiting.elapsed() >= attribution::PROBE_WAIT;
            if let Some(placement) = attribution.place(&kind, waited) {
                break placement;
            }
            let left = attribution::PROBE_WAIT.saturating_sub(waiting.elapsed());
            let _ = tokio::time::timeout(left, changed).await;
        };
        match placement {
            Placement::Exclusive { probe } => self.exclusive(profile, Some(kind), probe).await,
            Placement::Shared => {
                let lane = self
                    .shared
                    .acquire(profile, false, |pool| pool.plan_call_shared(profile))
                    .await?;
                Ok(PoolShared::shared_call_of(lane, kind))
            }
        }
    }

    /// How many call kinds are known to send mid-call requests on their own response stream
    /// (shared sessions) and on the GET stream (exclusive): for logs and the benchmark.
    pub fn attribution(&self) -> &Attribution {
        &self.shared.attribution
    }

    /// A lane initialized with `profile` for pass-through requests (shared, concurrent). See the
    /// type's documentation for the fallbacks when the pool is full.
    pub async fn shared(&self, profile: &CapabilityProfile) -> Result<Arc<Lane>, BackendError> {
        loop {
            let changed = self.shared.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            match self.shared.plan_shared(profile)? {
                Plan::Take(lane) => return Ok(lane),
                Plan::Create { recycle } => {
                    return self.shared.create_slot(profile, recycle, false).await;
                }
                Plan::Wait => {
                    let _ = tokio::time::timeout(RESCAN, changed).await;
                }
            }
        }
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

    /// Closes the lanes that had nothing to do for `--lane-idle-timeout` (unleased, no request
    /// in flight, held by nothing but the pool: not the subscription lane), the longest idle
    /// first, keeping the spare lanes (`--spare-lanes`) and at least one live lane. Returns how
    /// many it closed.
    pub fn close_idle_lanes(&self) -> usize {
        let timeout = self.shared.settings.lane_idle_timeout;
        let closing: Vec<Arc<Lane>> = {
            let mut state = self.shared.state();
            if state.shut_down {
                return 0;
            }
            self.shared.prune(&mut state);
            let live = state
                .slots
                .iter()
                .filter(|slot| slot.lane.is_alive())
                .count();
            let mut idle: Vec<(Duration, u64)> = state
                .slots
                .iter()
                .filter(|slot| {
                    !slot.leased && slot.lane.is_alive() && Arc::strong_count(&slot.lane) == 1
                })
                .filter_map(|slot| {
                    let idle = slot.lane.core().idle_for()?;
                    (idle >= timeout).then(|| (idle, slot.lane.id()))
                })
                .collect();
            idle.sort_unstable_by(|a, b| b.cmp(a));
            // The spare lanes stay (the shortest idle of them), and at least one live lane.
            let closable = idle
                .len()
                .saturating_sub(self.shared.settings.spare_lanes)
                .min(live.saturating_sub(1));
            idle.truncate(closable);
            let ids: HashSet<u64> = idle.iter().map(|(_, id)| *id).collect();
            let mut closing = Vec::with_capacity(ids.len());
            state.slots.retain(|slot| {
                let close = ids.contains(&slot.lane.id());
                if close {
                    closing.push(Arc::clone(&slot.lane));
                }
                !close
            });
            closing
        };
        // The spares are topped up here too: a spare taken while the pool was full is replaced
        // once idle lanes make room, so the pool at rest is its lanes plus its spares.
        self.shared.keep_spares();
        if closing.is_empty() {
            return 0;
        }
        self.shared.changed.notify_waiters();
        for lane in &closing {
            lane.core()
                .span
                .in_scope(|| tracing::info!(idle_timeout = ?timeout, "closing an idle lane"));
            let lane = Arc::clone(lane);
            tokio::spawn(async move { lane.shutdown().await });
        }
        closing.len()
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

    /// Stops every lane: children get stdin closed, then are killed if they linger; HTTP sessions
    /// get DELETE. Later `lease`/`shared` calls fail with `Unavailable`.
    pub async fn shutdown(&self) {
        let lanes: Vec<Arc<Lane>> = {
            let mut state = self.shared.state();
            state.shut_down = true;
            state.slots.drain(..).map(|slot| slot.lane).collect()
        };
        self.shared.changed.notify_waiters();
        let spares: Vec<stdio::Spawned> = std::mem::take(&mut *self.shared.spares());
        for spare in spares {
            spare.stop().await;
        }
        futures_util::future::join_all(lanes.iter().map(|lane| lane.shutdown())).await;
    }
}
