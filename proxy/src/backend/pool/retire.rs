//! Lanes leaving the pool: dead lanes pruned (a quick death counts as a failed start), a lane
//! retired once its call cannot hand it back, idle lanes closed after `--lane-idle-timeout`, and
//! every lane stopped at shutdown.

use super::start::backoff;
use super::*;

/// How long a retired lane keeps serving the requests already in flight on it (pass-through
/// requests that borrowed it) before it is shut down.
const RETIRE_DRAIN: Duration = Duration::from_secs(10);

impl PoolShared {
    /// Removes dead unleased lanes; a quick death counts as a failed start.
    pub(super) fn prune(&self, state: &mut PoolState) -> bool {
        // Twice per call (lease, release): nothing to look at unless a lane died since the
        // last look (callgrind, bench/proxy-vs-nginx.md).
        let deaths = LaneCore::deaths();
        if deaths == state.deaths_pruned {
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
        // A dead lane still leased is looked at again next time.
        if state.slots.iter().all(|slot| slot.lane.is_alive()) {
            state.deaths_pruned = deaths;
        }
        state.slots.len() != before
    }

    /// Takes a lane out of the pool and ends its legacy session (in the background).
    pub(in crate::backend) fn retire(&self, lane: &Arc<Lane>) {
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
}

impl LanePool {
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
