//! Which lane a call gets: the plans made under the pool's lock (an exclusive lease, a shared
//! session for calls, a lane for pass-through requests), the wait while none is free (bounded by
//! [`LANE_WAIT`] when no relief is coming), and the [`Lease`] handed out.

use super::*;
use crate::backend::lease::{LeaseMode, LeaseReturn};

/// What a pool operation decided under the lock.
enum Plan {
    Take(Arc<Lane>),
    Create { recycle: Option<Arc<Lane>> },
    Wait,
}

impl PoolShared {
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
                events: None,
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
        // Most acquisitions find a lane at once: the first plan is made without a waiter (its
        // registration and removal take the waiters' lock twice) and without a clock read
        // (~40 ns); both come with the first wait.
        let mut registered = false;
        let mut since: Option<Instant> = None;
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            if registered {
                changed.as_mut().enable();
            }
            match plan(self)? {
                Plan::Take(lane) => return Ok(lane),
                Plan::Create { recycle } => {
                    // Boxed: a lane's start is a large future, and rare (bench/proxy-vs-nginx.md).
                    return Box::pin(self.create_slot(profile, recycle, leased)).await;
                }
                Plan::Wait if !registered => {
                    // Planned again with the waiter registered, so that a change between the
                    // plan and the wait is not missed.
                    registered = true;
                }
                Plan::Wait => {
                    if self.relief_coming() {
                        since = Some(Instant::now());
                    } else if since.get_or_insert_with(Instant::now).elapsed() >= LANE_WAIT {
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
}

impl LanePool {
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
        params: &(impl crate::params::ParamsRead + ?Sized),
    ) -> Result<Lease, BackendError> {
        let attribution = &self.shared.attribution;
        if !self.shared.may_share() {
            return self.lease(profile).await;
        }
        let kind: Arc<str> = attribution.kind_of(method, params);
        // Placed at once, the usual case: no waiter registered, no clock read.
        let placement = match attribution.place(&kind, false) {
            Some(placement) => placement,
            None => {
                let waiting = Instant::now();
                loop {
                    let changed = attribution.changed();
                    tokio::pin!(changed);
                    changed.as_mut().enable();
                    let waited = waiting.elapsed() >= attribution::PROBE_WAIT;
                    if let Some(placement) = attribution.place(&kind, waited) {
                        break placement;
                    }
                    let left = attribution::PROBE_WAIT.saturating_sub(waiting.elapsed());
                    let _ = tokio::time::timeout(left, changed).await;
                }
            }
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
                    return Box::pin(self.shared.create_slot(profile, recycle, false)).await;
                }
                Plan::Wait => {
                    let _ = tokio::time::timeout(RESCAN, changed).await;
                }
            }
        }
    }
}
