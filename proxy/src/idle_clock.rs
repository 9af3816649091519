//! The clock of idle bookkeeping: when a lane last did something, since when a connection has
//! been kept idle. It is read on every call (a lease's end, a connection taken and given back)
//! and only ever compared with timeouts of seconds, so it is the kernel's coarse monotonic clock
//! (`CLOCK_MONOTONIC_COARSE`, through `coarsetime`): its resolution is a kernel tick (1–4 ms),
//! and a read costs a load from the vDSO page, ~9 ns on the benchmark machine against ~40 ns
//! for the precise clock, which reads the TSC (bench/proxy-vs-nginx.md). Latencies, deadlines
//! and timers keep the precise clock.

use std::time::Duration;

/// A moment on the coarse clock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IdleStamp(coarsetime::Instant);

impl IdleStamp {
    pub(crate) fn now() -> Self {
        // Without `now()`'s store of the reading into coarsetime's process-wide cache, which
        // nothing here reads.
        IdleStamp(coarsetime::Instant::now_without_cache_update())
    }

    /// The time since this stamp, to a kernel tick (never negative).
    pub(crate) fn elapsed(self) -> Duration {
        coarsetime::Instant::now_without_cache_update()
            .duration_since(self.0)
            .into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elapsed_follows_the_precise_clock_to_a_few_ticks() {
        // The coarse interval lies within the outer precise one and contains the inner one, each
        // end up to a tick off (a tick is at most 10 ms, HZ=100): bracketed, so a preemption
        // between two readings cannot make it fail.
        let outer = std::time::Instant::now();
        let stamp = IdleStamp::now();
        let inner = std::time::Instant::now();
        std::thread::sleep(Duration::from_millis(60));
        let inner = inner.elapsed();
        let coarse = stamp.elapsed();
        let outer = outer.elapsed();
        let ticks = Duration::from_millis(20);
        assert!(
            coarse + ticks >= inner && coarse <= outer + ticks,
            "coarse {coarse:?}, precise between {inner:?} and {outer:?}"
        );
    }
}
