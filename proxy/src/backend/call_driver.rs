//! The part of a call's transport that can run on its caller's task: an HTTP lane's POST (the
//! request written, its response read through the lane's router).
//!
//! A call's POST must outlive the front request that started it when the call pauses (the
//! legacy server's answer comes on that POST's stream while the client is away) or when the
//! client goes away, so lanes used to give every POST a task of its own. That task, its spawn
//! and its wake-ups were a third of the tasks of a pass-through call (bench/proxy-vs-nginx.md).
//! A [`CallDriver`] lets the engine poll the POST in its own task while the call is a plain
//! request and answer, and hands it to a task of its own otherwise: [`CallDriver::detach`] when
//! the call pauses, hears from its legacy server mid-call or waits for late notifications, and
//! on drop when it is still unfinished, so the legacy side never sees its request cut off.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Context;

use tokio::sync::oneshot;

use crate::quiet_waker::QuietWaker;

type Transport = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A call's transport, polled by its caller until it finishes or is detached.
#[derive(Default)]
pub struct CallDriver {
    transport: Option<Transport>,
    /// What the call's answer is read with ([`CallDriver::answer`]); `None` for a call whose
    /// transport the lane runs.
    answer_waker: Option<Arc<QuietWaker>>,
}

impl CallDriver {
    pub(crate) fn new(transport: impl Future<Output = ()> + Send + 'static) -> Self {
        CallDriver {
            transport: Some(Box::pin(transport)),
            answer_waker: Some(QuietWaker::new()),
        }
    }

    /// Whether the transport is still to be polled here (not finished, not detached).
    pub fn is_running(&self) -> bool {
        self.transport.is_some()
    }

    /// The call's answer from `response`, the transport polled first while it runs here.
    ///
    /// The transport delivers the answer through the lane's router into `response`, so
    /// `response` is read with a [`QuietWaker`]: a delivery made while this task polls the
    /// transport does not wake it again (it reads `response` right after); one routed from
    /// elsewhere (another stream, another thread) does.
    pub async fn answer<T>(
        &mut self,
        response: &mut oneshot::Receiver<T>,
    ) -> Result<T, oneshot::error::RecvError> {
        std::future::poll_fn(|cx| {
            let Some(waker) = &self.answer_waker else {
                return Pin::new(&mut *response).poll(cx);
            };
            if let Some(transport) = self.transport.as_mut() {
                if waker.quiet_while(|| transport.as_mut().poll(cx)).is_ready() {
                    self.transport = None;
                }
            }
            let quiet = waker.waker_for(cx);
            Pin::new(&mut *response).poll(&mut Context::from_waker(&quiet))
        })
        .await
    }

    /// Hands the unfinished transport to a task of its own (nothing when it finished, or outside
    /// a runtime, at exit).
    pub fn detach(&mut self) {
        if let Some(transport) = self.transport.take() {
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(transport);
            }
        }
    }
}

impl Drop for CallDriver {
    fn drop(&mut self) {
        self.detach();
    }
}

impl std::fmt::Debug for CallDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("CallDriver")
            .field(&if self.is_running() { "running" } else { "idle" })
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::CallDriver;
    use std::future::Future as _;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};
    use std::time::Duration;

    /// A task's waker that counts its wake-ups.
    #[derive(Default)]
    struct Counted(AtomicUsize);

    impl Wake for Counted {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A counted task's waker, and its count.
    fn counted_task() -> (Waker, Arc<Counted>) {
        let counted = Arc::new(Counted::default());
        (Waker::from(counted.clone()), counted)
    }

    #[test]
    fn an_answer_delivered_by_the_polled_transport_does_not_wake_the_task() {
        let (answer_tx, mut answer_rx) = tokio::sync::oneshot::channel();
        let (go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
        let mut driver = CallDriver::new(async move {
            let _ = go_rx.await;
            let _ = answer_tx.send("answer");
        });
        let (task, counted) = counted_task();
        let mut cx = Context::from_waker(&task);
        let mut answer = Box::pin(driver.answer(&mut answer_rx));
        assert!(answer.as_mut().poll(&mut cx).is_pending());
        // The transport's own wake-up (its input came)...
        go_tx.send(()).unwrap();
        assert_eq!(counted.0.load(Ordering::SeqCst), 1);
        // ...and the answer it delivers while polled, without another.
        assert_eq!(answer.as_mut().poll(&mut cx), Poll::Ready(Ok("answer")));
        assert_eq!(counted.0.load(Ordering::SeqCst), 1);
        drop(answer);
        assert!(!driver.is_running(), "the transport ran to its end");
    }

    #[test]
    fn an_answer_routed_from_elsewhere_wakes_the_task() {
        let (answer_tx, mut answer_rx) = tokio::sync::oneshot::channel();
        let (_go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
        let mut driver = CallDriver::new(async move {
            let _ = go_rx.await;
        });
        let (task, counted) = counted_task();
        let mut cx = Context::from_waker(&task);
        let mut answer = Box::pin(driver.answer(&mut answer_rx));
        assert!(answer.as_mut().poll(&mut cx).is_pending());
        std::thread::spawn(move || answer_tx.send("from another stream").unwrap())
            .join()
            .unwrap();
        assert_eq!(counted.0.load(Ordering::SeqCst), 1);
        assert_eq!(
            answer.as_mut().poll(&mut cx),
            Poll::Ready(Ok("from another stream"))
        );
        drop(answer);
        assert!(driver.is_running(), "the transport still waits");
        driver.detach();
    }

    #[tokio::test]
    async fn answer_polls_the_transport_to_its_end() {
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let (answer_tx, mut answer_rx) = tokio::sync::oneshot::channel();
        let mut driver = CallDriver::new(async move {
            tokio::task::yield_now().await;
            flag.store(true, Ordering::SeqCst);
            let _ = answer_tx.send("answer");
        });
        assert!(driver.is_running());
        assert_eq!(driver.answer(&mut answer_rx).await, Ok("answer"));
        assert!(done.load(Ordering::SeqCst));
        assert!(!driver.is_running());
    }

    #[tokio::test]
    async fn an_unfinished_transport_runs_on_after_its_driver_is_dropped() {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let (go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
        let (_answer_tx, mut answer_rx) = tokio::sync::oneshot::channel::<()>();
        let mut driver = CallDriver::new(async move {
            let _ = go_rx.await;
            let _ = tx.send("finished");
        });
        // Polled once here, then dropped while it waits.
        tokio::select! {
            _ = driver.answer(&mut answer_rx) => unreachable!("the transport waits for `go`"),
            () = tokio::time::sleep(Duration::from_millis(10)) => {}
        }
        drop(driver);
        go_tx.send(()).unwrap();
        let outcome = tokio::time::timeout(Duration::from_secs(5), rx).await;
        assert_eq!(outcome.unwrap().unwrap(), "finished");
    }

    #[tokio::test]
    async fn a_detached_transport_is_no_longer_polled_here() {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let mut driver = CallDriver::new(async move {
            let _ = tx.send(());
        });
        driver.detach();
        assert!(!driver.is_running());
        tokio::time::timeout(Duration::from_secs(5), rx)
            .await
            .unwrap()
            .unwrap();
        // `answer` on a detached driver only waits for the answer.
        let (_answer_tx, mut answer_rx) = tokio::sync::oneshot::channel::<()>();
        let polled =
            tokio::time::timeout(Duration::from_millis(10), driver.answer(&mut answer_rx)).await;
        assert!(polled.is_err());
        assert!(!driver.is_running());
    }
}
