//! A waker for a channel that the task reading it may also fill: wake-ups made while the task
//! polls the part that fills it are dropped, because the task reads the channel right after.
//!
//! A task that registers its own waker on a channel (a one-shot response, say) and then polls the
//! future that sends on it is woken by its own send: the runtime polls it once more, for nothing.
//! A task that ends in that same poll pays nothing for it; a front connection's task, which goes
//! on serving its connection, polls the whole connection again (bench/proxy-vs-nginx.md, section
//! "2026-12-06 (7)"). Sends from anywhere else (another stream, another thread) still wake it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Wake, Waker};

use futures_util::task::AtomicWaker;

/// See the module's documentation. One per reading task and channel.
#[derive(Default)]
pub struct QuietWaker {
    task: AtomicWaker,
    quiet: AtomicBool,
}

impl QuietWaker {
    pub fn new() -> Arc<Self> {
        Arc::new(QuietWaker::default())
    }

    /// Runs `poll`, the part of the task that may fill the channel, with wake-ups dropped: the
    /// channel must be read after it, in the same poll of the task.
    pub fn quiet_while<R>(&self, poll: impl FnOnce() -> R) -> R {
        /// Wake-ups pass again however `poll` ends (a panic too).
        struct Loud<'a>(&'a AtomicBool);
        impl Drop for Loud<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::SeqCst);
            }
        }
        self.quiet.store(true, Ordering::SeqCst);
        let _loud = Loud(&self.quiet);
        poll()
    }

    /// The waker to read the channel with, now waking `cx`'s task.
    pub fn waker_for(self: &Arc<Self>, cx: &Context<'_>) -> Waker {
        self.task.register(cx.waker());
        Waker::from(self.clone())
    }
}

impl Wake for QuietWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.quiet.load(Ordering::SeqCst) {
            self.task.wake();
        }
    }
}
