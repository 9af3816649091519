//! Telling a front's open connections to finish, at the cost of one atomic load per poll.
//!
//! Every poll of a connection's task also polls "has the proxy been told to stop?". Asked of a
//! `CancellationToken`, that question takes two mutexes each time (the token's state, then its
//! waiter list to renew the waker): about 0.3 µs per pass-through call, measured with `perf`
//! (bench/proxy-vs-nginx.md). Here each connection owns a flag and a waker slot instead; the
//! accept loop keeps them in [`OpenConnections`] and, when it stops, sets every flag and wakes
//! every connection ([`OpenConnections::stop_all`]). Registering and leaving take a lock once
//! per connection, not per call.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

use futures_util::task::AtomicWaker;
use slab::Slab;

/// The open connections of one front, each with its stop flag.
#[derive(Default)]
pub(super) struct OpenConnections {
    live: Mutex<Slab<Arc<StopFlag>>>,
}

#[derive(Default)]
struct StopFlag {
    stopped: AtomicBool,
    waker: AtomicWaker,
}

/// One connection's place in [`OpenConnections`]; leaves it when dropped.
pub(super) struct ConnectionStop {
    flag: Arc<StopFlag>,
    key: usize,
    connections: Arc<OpenConnections>,
}

impl OpenConnections {
    /// A flag for a new connection. Called by the accept loop, which also calls
    /// [`Self::stop_all`]: no connection registers after the stop.
    pub(super) fn register(self: &Arc<Self>) -> ConnectionStop {
        let flag = Arc::new(StopFlag::default());
        let key = self.lock().insert(Arc::clone(&flag));
        ConnectionStop {
            flag,
            key,
            connections: Arc::clone(self),
        }
    }

    /// Tells every open connection to finish.
    pub(super) fn stop_all(&self) {
        let live = std::mem::take(&mut *self.lock());
        for (_, flag) in live {
            flag.stopped.store(true, Ordering::Release);
            flag.waker.wake();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Slab<Arc<StopFlag>>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ConnectionStop {
    /// Completes once [`OpenConnections::stop_all`] has run (at once if it already has).
    pub(super) fn requested(&self) -> StopRequested<'_> {
        StopRequested {
            flag: &self.flag,
            registered: None,
        }
    }
}

impl Drop for ConnectionStop {
    fn drop(&mut self) {
        let mut live = self.connections.lock();
        // After `stop_all` the slab is empty: nothing of this connection's is left in it.
        if live
            .get(self.key)
            .is_some_and(|flag| Arc::ptr_eq(flag, &self.flag))
        {
            live.remove(self.key);
        }
    }
}

/// The future of [`ConnectionStop::requested`].
pub(super) struct StopRequested<'a> {
    flag: &'a StopFlag,
    /// The waker given to the flag last: polled again by the same task (the usual case), the
    /// future compares wakers instead of registering again (two atomic operations).
    registered: Option<Waker>,
}

impl Future for StopRequested<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.flag.stopped.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        if self
            .registered
            .as_ref()
            .is_some_and(|waker| waker.will_wake(cx.waker()))
        {
            // Registered: `stop_all` sets the flag, then wakes this waker.
            return Poll::Pending;
        }
        self.flag.waker.register(cx.waker());
        self.registered = Some(cx.waker().clone());
        // Set between the load and the registration: `stop_all` may have woken no one.
        if self.flag.stopped.load(Ordering::Acquire) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_registered_connection_hears_the_stop_and_a_later_poll_sees_it_at_once() {
        let connections = Arc::new(OpenConnections::default());
        let stop = connections.register();
        let waiting = tokio::spawn(async move {
            stop.requested().await;
            stop
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "no stop was asked for yet");
        connections.stop_all();
        let stop = tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("the stop wakes the waiting connection")
            .expect("the task ends");
        // Polled again after the stop (a grace period's select): ready at once.
        tokio::time::timeout(std::time::Duration::from_millis(100), stop.requested())
            .await
            .expect("ready without a wake-up");
    }

    #[tokio::test]
    async fn connections_leave_on_drop_and_only_their_own_entry_goes() {
        let connections = Arc::new(OpenConnections::default());
        let first = connections.register();
        let second = connections.register();
        assert_eq!(connections.lock().len(), 2);
        drop(first);
        assert_eq!(connections.lock().len(), 1);
        // The freed key is reused by the next connection; the dropped one's stale key is gone.
        let third = connections.register();
        assert_eq!(connections.lock().len(), 2);
        connections.stop_all();
        assert!(connections.lock().is_empty());
        // Dropped after the stop: nothing to remove, nothing else removed.
        drop(second);
        let late = connections.register();
        drop(third);
        assert_eq!(connections.lock().len(), 1, "the late registration stays");
        drop(late);
        assert!(connections.lock().is_empty());
    }

    #[test]
    fn a_poll_with_another_waker_registers_that_one() {
        use std::sync::atomic::AtomicUsize;
        use std::task::Wake;
        struct Counting(AtomicUsize);
        impl Wake for Counting {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let connections = Arc::new(OpenConnections::default());
        let stop = connections.register();
        let mut requested = std::pin::pin!(stop.requested());
        let first = Arc::new(Counting(AtomicUsize::new(0)));
        let second = Arc::new(Counting(AtomicUsize::new(0)));
        let waker = Waker::from(first.clone());
        assert!(requested
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending());
        assert!(requested
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending());
        let waker = Waker::from(second.clone());
        assert!(requested
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending());
        connections.stop_all();
        assert_eq!(
            first.0.load(Ordering::SeqCst),
            0,
            "the replaced waker is not woken"
        );
        assert_eq!(
            second.0.load(Ordering::SeqCst),
            1,
            "the last task to poll is woken"
        );
        assert!(requested
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_ready());
    }

    #[tokio::test]
    async fn a_stop_asked_before_the_first_poll_is_not_missed() {
        let connections = Arc::new(OpenConnections::default());
        let stop = connections.register();
        connections.stop_all();
        tokio::time::timeout(std::time::Duration::from_millis(100), stop.requested())
            .await
            .expect("the flag is read before waiting");
    }
}
