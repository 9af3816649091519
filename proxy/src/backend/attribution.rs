//! Where a legacy Streamable HTTP server sends the requests it makes in the middle of a call, and
//! so whether calls may share one legacy session.
//!
//! A legacy server sends `elicitation/create`, `sampling/createMessage` or `roots/list` either
//! **on the call's own POST response stream** (the TypeScript SDK 1.x with `extra.sendRequest` /
//! a `relatedRequestId`, the Python SDK 1.x with request-scoped sends such as FastMCP's
//! `ctx.elicit`) or **on the session's standalone GET stream** (rmcp 2.x; the Python SDK's
//! `ctx.session.create_message` / `list_roots`; the TypeScript SDK's `server.elicitInput()`
//! without a related request). A request on the call's own stream names its call; one on the GET
//! stream names nothing, so only a session that carries a single call can attribute it.
//!
//! The proxy learns this per *call kind* (the method and the tool or prompt name): the first call
//! of a kind runs on a session of its own (a probe); concurrent calls of that kind wait a moment
//! for the probe to learn. A server request on the probe's own POST stream marks the kind
//! [`Scope::CallStream`]: later calls of the kind share one session (a paused call then costs
//! its parked state and one open response stream, not a session). A server request on the GET
//! stream marks it [`Scope::Session`] (sticky): its calls keep a session each. A probe that
//! finishes without asking anything marks its kind [`Scope::Quiet`]: its calls take exclusive
//! lanes without waiting for a probe (a call that asks nothing costs its lane only while it
//! runs), and any of them still learns where requests arrive, since whether a tool asks may
//! depend on its arguments or the client's capabilities. A server request that arrives on the GET stream of a session that carries shared
//! calls cannot be attributed: it is answered by the proxy (translation T7 of docs/proxy/how-it-works.md) and every kind in
//! flight on that session becomes [`Scope::Session`].

use crate::FastHashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::Notify;

/// How calls use legacy sessions (`--call-sessions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum CallSessions {
    /// Learn per call kind (see the module documentation).
    #[default]
    Auto,
    /// A legacy session (or child process) per correlatable call, always.
    Exclusive,
    /// Every correlatable call on a shared session: only for servers that send every mid-call
    /// request on the call's own POST stream (requests on the GET stream are then declined).
    Shared,
}

/// What is known about a call kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// A probe call of the kind runs on an exclusive session now.
    Probing,
    /// Its server requests arrive on the call's own POST stream: share sessions.
    CallStream,
    /// A call of the kind finished without sending a server request: exclusive lanes, no wait.
    Quiet,
    /// Its server requests arrive on the GET stream (or could not be attributed): a session
    /// per call.
    Session,
}

/// How a new call gets its lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    Shared,
    /// An exclusive lane; `probe` when this call is the one that finds out.
    Exclusive {
        probe: bool,
    },
}

/// How long a call of a kind being probed waits for the probe to learn before it takes an
/// exclusive session anyway.
pub const PROBE_WAIT: Duration = Duration::from_secs(1);
/// Kinds remembered; beyond this, calls of new kinds are keyed by their method alone.
const MAX_KINDS: usize = 4096;

/// The kind key of a call: `tools/call ask_name`, `prompts/get greet`, `resources/read`
/// (resource URIs are unbounded, so resources are one kind).
pub fn call_kind(method: &str, params: &(impl crate::params::ParamsRead + ?Sized)) -> String {
    with_call_kind(method, params, str::to_owned)
}

/// Kind keys up to this long are spelled on the stack by [`with_call_kind`].
const KIND_ON_STACK: usize = 128;

/// Calls `f` with the kind key of a call ([`call_kind`]), spelled without an allocation when it
/// is short: a map of kinds is read several times per call (callgrind, bench/proxy-vs-nginx.md)
/// and written only when it learns something.
pub fn with_call_kind<R>(
    method: &str,
    params: &(impl crate::params::ParamsRead + ?Sized),
    f: impl FnOnce(&str) -> R,
) -> R {
    let name = match method {
        "tools/call" | "prompts/get" => params.member("name").and_then(|name| name.as_str()),
        _ => None,
    };
    let Some(name) = name else { return f(method) };
    let len = method.len() + 1 + name.len();
    if len > KIND_ON_STACK {
        return f(&[method, " ", name].concat());
    }
    let mut buffer = [0u8; KIND_ON_STACK];
    buffer[..method.len()].copy_from_slice(method.as_bytes());
    buffer[method.len()] = b' ';
    buffer[method.len() + 1..len].copy_from_slice(name.as_bytes());
    // Two `str`s and an ASCII space: UTF-8.
    f(std::str::from_utf8(&buffer[..len]).expect("joined UTF-8 text"))
}

/// The pool-wide knowledge (shared by every lane's router).
#[derive(Debug, Default)]
pub struct Attribution {
    mode: CallSessions,
    kinds: Mutex<FastHashMap<String, Scope>>,
    learned: Notify,
}

impl Attribution {
    pub fn new(mode: CallSessions) -> Self {
        Attribution {
            mode,
            ..Attribution::default()
        }
    }

    pub fn mode(&self) -> CallSessions {
        self.mode
    }

    fn kinds(&self) -> std::sync::MutexGuard<'_, FastHashMap<String, Scope>> {
        crate::backend::lock(&self.kinds)
    }

    /// The kind key of a call ([`call_kind`]); beyond [`MAX_KINDS`] known kinds, new ones are
    /// keyed by their method alone.
    pub fn kind_of(
        &self,
        method: &str,
        params: &(impl crate::params::ParamsRead + ?Sized),
    ) -> std::sync::Arc<str> {
        with_call_kind(method, params, |key| {
            let kinds = self.kinds();
            if kinds.len() >= MAX_KINDS && !kinds.contains_key(key) {
                return method.into();
            }
            key.into()
        })
    }

    pub fn scope(&self, kind: &str) -> Option<Scope> {
        self.kinds().get(kind).copied()
    }

    /// Decides where a call of `kind` runs; `None`: wait for the probe (see [`Self::changed`]).
    pub fn place(&self, kind: &str, waited_enough: bool) -> Option<Placement> {
        match self.mode {
            CallSessions::Exclusive => return Some(Placement::Exclusive { probe: false }),
            CallSessions::Shared => return Some(Placement::Shared),
            CallSessions::Auto => {}
        }
        let mut kinds = self.kinds();
        match kinds.get(kind) {
            Some(Scope::CallStream) => Some(Placement::Shared),
            Some(Scope::Session | Scope::Quiet) => Some(Placement::Exclusive { probe: false }),
            Some(Scope::Probing) if waited_enough => Some(Placement::Exclusive { probe: false }),
            Some(Scope::Probing) => None,
            None => {
                kinds.insert(kind.to_owned(), Scope::Probing);
                Some(Placement::Exclusive { probe: true })
            }
        }
    }

    /// Resolves when something was learnt (or a probe gave up).
    pub fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.learned.notified()
    }

    /// A server request of a `kind` call arrived on that call's own POST stream.
    pub fn on_call_stream(&self, kind: &str) {
        let mut kinds = self.kinds();
        match kinds.get(kind) {
            // Once unattributable, always a session per call: one call on its own stream does
            // not prove that every request of the kind will come that way.
            Some(Scope::Session | Scope::CallStream) => {}
            _ => {
                kinds.insert(kind.to_owned(), Scope::CallStream);
                drop(kinds);
                tracing::info!(
                    kind,
                    "the legacy server sends this call's requests on the call's own stream: \
                     its calls share legacy sessions"
                );
                self.learned.notify_waiters();
            }
        }
    }

    /// A server request arrived on the GET stream of a session carrying `kind` calls.
    pub fn on_session_stream(&self, kind: &str) {
        let previous = self.kinds().insert(kind.to_owned(), Scope::Session);
        if previous != Some(Scope::Session) {
            tracing::info!(
                kind,
                "the legacy server sends this call's requests on the session's GET stream: \
                 its calls get a legacy session each"
            );
            self.learned.notify_waiters();
        }
    }

    /// A probe call of `kind` ended before it learnt anything: `quiet` when its legacy call
    /// answered without sending a server request ([`Scope::Quiet`]); otherwise (its client
    /// left, the lane died) the next call of the kind probes again.
    pub fn probe_ended(&self, kind: &str, quiet: bool) {
        let mut kinds = self.kinds();
        if kinds.get(kind) == Some(&Scope::Probing) {
            if quiet {
                kinds.insert(kind.to_owned(), Scope::Quiet);
            } else {
                kinds.remove(kind);
            }
        }
        drop(kinds);
        self.learned.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kinds_learn_from_where_requests_arrive() {
        let attribution = Attribution::new(CallSessions::Auto);
        let ask = attribution.kind_of("tools/call", &json!({"name": "ask_name"}));
        assert_eq!(&*ask, "tools/call ask_name");
        assert_eq!(
            &*attribution.kind_of("resources/read", &json!({"uri": "x"})),
            "resources/read"
        );
        // Longer than the stack spelling: the same key.
        let long = "t".repeat(KIND_ON_STACK);
        assert_eq!(
            &*attribution.kind_of("tools/call", &json!({ "name": long })),
            format!("tools/call {long}")
        );
        assert_eq!(
            call_kind("prompts/get", &json!({"name": "greet"})),
            "prompts/get greet"
        );
        assert_eq!(
            attribution.place(&ask, false),
            Some(Placement::Exclusive { probe: true })
        );
        assert_eq!(attribution.place(&ask, false), None, "waits for the probe");
        assert_eq!(
            attribution.place(&ask, true),
            Some(Placement::Exclusive { probe: false })
        );
        attribution.on_call_stream(&ask);
        assert_eq!(attribution.place(&ask, false), Some(Placement::Shared));
        attribution.on_session_stream(&ask);
        assert_eq!(
            attribution.place(&ask, false),
            Some(Placement::Exclusive { probe: false })
        );
        attribution.on_call_stream(&ask);
        assert_eq!(attribution.scope(&ask), Some(Scope::Session), "sticky");

        let echo = "tools/call echo";
        assert!(matches!(
            attribution.place(echo, false),
            Some(Placement::Exclusive { probe: true })
        ));
        attribution.probe_ended(echo, true);
        assert_eq!(
            attribution.place(echo, false),
            Some(Placement::Exclusive { probe: false }),
            "a quiet kind takes exclusive lanes without waiting"
        );
        attribution.on_call_stream(echo);
        assert_eq!(attribution.place(echo, false), Some(Placement::Shared));

        let forced = Attribution::new(CallSessions::Exclusive);
        assert_eq!(
            forced.place(echo, false),
            Some(Placement::Exclusive { probe: false })
        );
        assert_eq!(
            Attribution::new(CallSessions::Shared).place(echo, false),
            Some(Placement::Shared)
        );
    }
}
