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
    leased: bool,
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
    /// stdio: a spawned, not yet initialized child for the next new lane (see `spawn_child`).
    spare: Mutex<Option<stdio::Spawned>>,
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

    #[cfg(test)]
    pub(super) fn settings(&self) -> &PoolSettings {
        &self.settings
    }

    fn max_lanes(&self) -> usize {
        self.settings.max_lanes.max(1)
    }

    /// Removes dead unleased lanes; a quick death counts as a failed start.
    fn prune(&self, state: &mut PoolState) -> bool {
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

    pub(super) fn release(&self, lane: &Arc<Lane>) {
        {
            let mut state = self.state();
            if let Some(slot) = state
                .slots
                .iter_mut()
                .find(|slot| Arc::ptr_eq(&slot.lane, lane))
            {
                slot.leased = false;
            }
            self.prune(&mut state);
        }
        self.changed.notify_waiters();
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

    /// A legacy stdio child for a new lane: the warm spare if it is still running, else a fresh
    /// one. Then, while the pool has room for one more lane, a new spare is spawned to replace
    /// it, so the next new lane finds its server already started (it counts toward
    /// `--pool-size`: no more children run than the pool allows).
    fn spawn_child(&self, program: &str, args: &[String]) -> Result<stdio::Spawned, BackendError> {
        let mut spare = self
            .spare
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        let taken = spare
            .take()
            .and_then(|mut child| child.is_running().then_some(child));
        let spawned = match taken {
            Some(spawned) => spawned,
            None => stdio::Spawned::spawn(program, args)?,
        };
        let room = {
            let state = self.state();
            // `starting` holds this lane's place already.
            !state.shut_down && state.slots.len() + state.starting.len() < self.max_lanes()
        };
        if room {
            match stdio::Spawned::spawn(program, args) {
                Ok(next) => *spare = Some(next),
                Err(error) => tracing::debug!(%error, "no warm spare: spawning it failed"),
            }
        }
        Ok(spawned)
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
                state.slots.push(Slot {
                    lane: Arc::clone(&lane),
                    leased,
                });
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
        // A lane carrying shared calls is not leased: what arrives on its GET stream would
        // then be taken for the lease holder's.
        let unshared = |slot: &Slot| slot.lane.core().routed_calls() == 0;
        if let Some(slot) = state.slots.iter_mut().find(|slot| {
            !slot.leased && slot.lane.is_alive() && slot.lane.profile() == profile && unshared(slot)
        }) {
            slot.leased = true;
            return Ok(Plan::Take(Arc::clone(&slot.lane)));
        }
        if state.slots.len() + state.starting.len() < self.max_lanes() {
            state.starting.push(profile.clone());
            return Ok(Plan::Create { recycle: None });
        }
        if let Some(at) = state
            .slots
            .iter()
            .position(|slot| !slot.leased && slot.lane.pending_calls() == 0 && unshared(slot))
        {
            let victim = state.slots.remove(at);
            state.starting.push(profile.clone());
            return Ok(Plan::Create {
                recycle: Some(victim.lane),
            });
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
                spare: Mutex::new(None),
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
            Ok(lane) => Ok(self.shared.lease_of(lane, kind, probe)),
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

    /// `(open, leased)`: live lanes in the pool, and those of them leased to a call (metrics).
    pub fn lane_stats(&self) -> (usize, usize) {
        let state = self.shared.state();
        let live = state.slots.iter().filter(|slot| slot.lane.is_alive());
        let (open, leased) = live.fold((0, 0), |(open, leased), slot| {
            (open + 1, leased + usize::from(slot.leased))
        });
        (open, leased)
    }

    /// Closes the lanes that had nothing to do for `--lane-idle-timeout` (unleased, no request
    /// in flight, held by nothing but the pool: not the subscription lane), the longest idle
    /// first, keeping at least one live lane. Returns how many it closed.
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
            idle.truncate(live.saturating_sub(1));
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
        let spare = self
            .shared
            .spare
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .take();
        if let Some(spare) = spare {
            spare.stop().await;
        }
        futures_util::future::join_all(lanes.iter().map(|lane| lane.shutdown())).await;
    }
}
