//! Entry points for the fuzz targets in `fuzz/` (and for property tests): thin wrappers that reach
//! crate-private code without making it part of the proxy's API. Nothing here has behaviour of
//! its own: every function calls the code the proxy runs. Not a stable API.

use std::sync::{Arc, Mutex, OnceLock};

use futures_util::FutureExt as _;
use serde_json::Value;

use crate::backend::lane_core::{LaneCore, Outbound};
use crate::backend::{BackendEvent, EventReceiver, PendingCall};
use crate::capabilities::CapabilityProfile;
use crate::jsonrpc::{ErrorObject, Message, ParseError, Reply};
use crate::state::{Claims, Sealer};

pub use crate::backend::sse::{SseEvent, SseParser};
pub use crate::front::http::{accepts_event_stream, decide_post, origin_allowed, PostDecision};

// ---------------------------------------------------------------------------------------------
// The stdio front's line reader

/// One line as the stdio front's reader returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StdioLine {
    /// A line without its `\n`.
    Complete(Vec<u8>),
    /// A line longer than the limit (skipped up to its `\n`).
    TooLong,
}

/// Every line the stdio front reads from `input`, through a `BufReader` of `capacity` bytes (so
/// lines straddle buffer refills) with a line limit of `max` bytes.
pub fn stdio_lines(input: &[u8], capacity: usize, max: usize) -> Vec<StdioLine> {
    use crate::front::stdio::{read_line, Line};
    let mut reader = tokio::io::BufReader::with_capacity(capacity.max(1), input);
    let mut buffer = Vec::new();
    let mut lines = Vec::new();
    loop {
        // An in-memory reader is always ready: the future completes on its first poll.
        let line = read_line(&mut reader, &mut buffer, max)
            .now_or_never()
            .expect("reading from memory never waits");
        match line {
            Ok(Line::Eof) | Err(_) => return lines,
            Ok(Line::TooLong) => lines.push(StdioLine::TooLong),
            Ok(Line::Complete) => lines.push(StdioLine::Complete(buffer.clone())),
        }
    }
}

/// What the stdio front makes of one complete line: `None` for a blank line (skipped).
pub fn stdio_parse_line(line: &[u8]) -> Option<Result<Message, ParseError>> {
    crate::front::stdio::parse_line(line)
}

// ---------------------------------------------------------------------------------------------
// The legacy side's message router

#[derive(Default)]
struct Capture(Mutex<Vec<Message>>);

struct CaptureOutbound(Arc<Capture>);

impl Outbound for CaptureOutbound {
    fn send_detached(&self, message: Message) {
        self.0 .0.lock().expect("capture lock").push(message);
    }
}

/// A lane's router ([`LaneCore`]) without a transport: what it would send back to the legacy
/// server is captured, what it would give a lease is collected.
pub struct LegacyRouter {
    core: Arc<LaneCore>,
    sent: Arc<Capture>,
    events: Option<EventReceiver>,
    calls: Vec<PendingCall>,
}

impl std::fmt::Debug for LegacyRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LegacyRouter")
            .field("core", &self.core)
            .finish_non_exhaustive()
    }
}

/// The router may spawn a task (a full lease channel); give it a runtime to spawn on.
fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a current-thread runtime")
    })
}

impl LegacyRouter {
    /// A lane with `roots`, leased or not, with `pending` requests of its own in flight (legacy
    /// ids `0..pending`).
    pub fn new(leased: bool, pending: usize, roots: Vec<String>) -> LegacyRouter {
        let core = LaneCore::new(
            1,
            CapabilityProfile::default(),
            "fuzz",
            roots,
            Arc::default(),
        );
        let sent = Arc::new(Capture::default());
        core.set_outbound(Box::new(CaptureOutbound(Arc::clone(&sent))));
        let mut calls = Vec::new();
        for _ in 0..pending {
            if let Ok((_, call, _)) = core.start_request("tools/call", Value::Null, 0, None) {
                calls.push(call);
            }
        }
        let events = leased.then(|| core.attach_lease(None).1);
        LegacyRouter {
            core,
            sent,
            events,
            calls,
        }
    }

    /// Routes one unit of legacy output (an HTTP body, an SSE event's data, a stdout line), as
    /// the HTTP and stdio lanes do; returns how many messages were routed.
    pub fn handle_bytes(&mut self, bytes: &[u8]) -> usize {
        let _runtime = runtime().enter();
        self.core.handle_bytes(bytes, "fuzz")
    }

    /// What the router sent back to the legacy server since the last call (local answers, `ping`
    /// replies).
    pub fn take_sent(&mut self) -> Vec<Message> {
        std::mem::take(&mut *self.sent.0.lock().expect("capture lock"))
    }

    /// What the router gave the lease since the last call (nothing when not leased).
    pub fn take_events(&mut self) -> Vec<BackendEvent> {
        let mut out = Vec::new();
        if let Some(events) = self.events.as_mut() {
            while let Ok(event) = events.try_recv() {
                out.push(event);
            }
        }
        out
    }

    /// The own requests that got their response since the last call: (legacy id, outcome).
    pub fn take_completed(&mut self) -> Vec<(Value, Result<Value, ErrorObject>)> {
        let mut out = Vec::new();
        self.calls
            .retain_mut(|call| match call.response.try_recv() {
                Ok(Ok(outcome)) => {
                    out.push((call.legacy_id.clone(), outcome.and_then(Reply::into_value)));
                    false
                }
                // The lane died first.
                Ok(Err(_)) => false,
                Err(_) => true,
            });
        out
    }

    /// How many own requests are still waiting for their response.
    pub fn pending(&self) -> usize {
        self.core.pending_count()
    }
}

// ---------------------------------------------------------------------------------------------
// requestState

/// [`Sealer::seal`] with a given nonce, so that a fuzz input reproduces the same state. Only for
/// fuzzing: a real state must never reuse a nonce.
pub fn seal_with_nonce(sealer: &Sealer, claims: &Claims, nonce: [u8; 24]) -> String {
    sealer.seal_with_nonce(claims, nonce)
}

/// The invariant both message-reading targets check: an accepted message written as one line
/// has no newline, and that line (and its `Value` form) parses back to the same message.
pub fn check_round_trip(message: &Message) {
    let line = message.to_line();
    assert!(!line.contains('\n'), "{line}");
    assert_eq!(
        Message::parse(line.as_bytes()).as_ref(),
        Ok(message),
        "{line}"
    );
    assert_eq!(
        Message::from_value(message.to_value()).as_ref(),
        Ok(message)
    );
}

/// Reopens a pause store this process has just dropped (property tests of restarts). sled's
/// background flusher thread lets go of the database's file lock a moment after the last handle
/// is dropped, so an immediate reopen can fail with `WouldBlock`; a new process (a real restart)
/// never sees that. Retries for up to 10 s.
pub fn reopen_store(dir: &std::path::Path) -> crate::store::sled::SledStore {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match crate::store::sled::SledStore::open(dir) {
            Ok(store) => return store,
            Err(_) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(error) => panic!("could not reopen the store: {error}"),
        }
    }
}
