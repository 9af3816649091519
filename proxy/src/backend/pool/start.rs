//! Starting lanes: the backoff after failed starts, the transport (`--upstream-transport auto`
//! detected by the first lane), the lane registered in the pool, and the spare lanes kept ready
//! (`--spare-lanes`: stdio children spawned ahead, HTTP sessions started ahead).

use super::*;

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

pub(super) fn backoff(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    (FIRST_BACKOFF * 2u32.pow(doublings)).min(MAX_BACKOFF)
}

impl PoolShared {
    /// Runs a plan that needs a new lane: recycles the victim, creates, registers.
    pub(super) async fn create_slot(
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
                // It may have died before it was listed: the next prune looks.
                state.deaths_pruned = u64::MAX;
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
    pub(in crate::backend) async fn start_lane(
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
    pub(super) fn may_share(&self) -> bool {
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

    /// Keeps `--spare-lanes` lanes ready so that a call that finds every started lane busy does
    /// not wait for a process or a legacy session to start. stdio: started children, initialized
    /// by the call that takes one (see [`PoolShared::top_up_spares`]). HTTP: starts legacy
    /// sessions in the background until that many are ready for a new call of the newest
    /// call's profile (or starting), while the pool is below its maximum and not backing off
    /// after failed starts.
    pub(in crate::backend) fn keep_spares(self: &Arc<Self>) {
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
        let (profile, runtime) = {
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
            // Looked up only now: a runtime handle is a thread-local read and a reference
            // count, on every call, for a spare that is rarely wanted.
            let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                return;
            };
            state.starting.push(profile.clone());
            (profile, runtime)
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

    /// Whether `slot` can take a new correlatable call now (if its profile is the call's).
    fn ready(&self, slot: &Slot) -> bool {
        !slot.leased
            && !slot.draining
            && slot.resuming == 0
            && slot.parked < self.settings.paused_per_lane.max(1)
            && slot.lane.is_alive()
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

    pub(super) fn spares(&self) -> std::sync::MutexGuard<'_, Vec<stdio::Spawned>> {
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
}
