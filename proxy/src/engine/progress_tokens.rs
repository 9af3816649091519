//! Which legacy calls the proxy sends with a progress token of its own (translation T13).
//!
//! A call whose client asked for progress (`_meta.progressToken`) always gets one: the proxy's,
//! unique per lane, mapped back to the client's token of each round. A call whose client did not
//! ask may still pause, and its client may ask for progress in a later round; the legacy call
//! must carry a token from the start for that, since it cannot be given one afterwards. But a
//! token is not free: a legacy server does more work for a call that carries one (FastMCP about
//! 5 % more CPU per call, bench/sdk-backends.md). So the proxy learns per call kind (the method
//! and the tool or prompt name; resources are one kind) whether its calls ask the client
//! anything:
//!
//! - a kind not seen yet: token (its first call may pause);
//! - a kind one of whose calls asked the client something (a server request mid-call, or a
//!   `-32042` URL elicitation): token, for good;
//! - a kind whose calls have so far finished without asking: no token, until one of them asks.
//!
//! What is given up: progress in a later round of the first call of a "quiet" kind that does pause
//! (a tool whose asking depends on its arguments), when the client asked for none in round one.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::backend::attribution::with_call_kind;
use crate::params::ParamsRead;

/// Kinds remembered; calls of kinds beyond this always get a token (a client chooses tool names).
const MAX_KINDS: usize = 4096;

/// What is known of a call kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    /// Its calls have finished without asking the client anything.
    Quiet,
    /// One of its calls asked the client something.
    Asks,
}

/// The per-kind knowledge, shared by every call of the engine.
#[derive(Debug, Default)]
pub(super) struct ProgressTokens {
    kinds: Mutex<HashMap<String, Seen>>,
}

/// Whether the front request asked for progress.
fn client_asked_for_progress(params: &impl ParamsRead) -> bool {
    params
        .meta_progress_token()
        .is_some_and(|token| !token.is_null())
}

impl ProgressTokens {
    fn kinds(&self) -> std::sync::MutexGuard<'_, HashMap<String, Seen>> {
        crate::backend::lock(&self.kinds)
    }

    /// Whether a new call (`method`, front `params`) is sent with a proxy-minted progress token.
    pub(super) fn wanted(&self, method: &str, params: &impl ParamsRead) -> bool {
        client_asked_for_progress(params)
            || with_call_kind(method, params, |kind| self.kinds().get(kind) != Some(&Seen::Quiet))
    }

    /// A call of this kind asked the client something: its kind's calls get a token from now on.
    pub(super) fn asked(&self, method: &str, params: &impl ParamsRead) {
        with_call_kind(method, params, |kind| {
            let mut kinds = self.kinds();
            let full = kinds.len() >= MAX_KINDS;
            match kinds.get_mut(kind) {
                Some(seen) => *seen = Seen::Asks,
                None if !full => {
                    kinds.insert(kind.to_owned(), Seen::Asks);
                }
                None => {}
            }
        })
    }

    /// A call of this kind finished without asking anything: unless another of its calls asked
    /// before, its kind's calls go without a token (when their clients ask for no progress).
    pub(super) fn finished_quietly(&self, method: &str, params: &impl ParamsRead) {
        with_call_kind(method, params, |kind| {
            let mut kinds = self.kinds();
            if !kinds.contains_key(kind) && kinds.len() < MAX_KINDS {
                kinds.insert(kind.to_owned(), Seen::Quiet);
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str) -> serde_json::Value {
        json!({"name": name, "arguments": {}})
    }

    #[test]
    fn a_kind_goes_without_a_token_once_its_calls_finished_without_asking() {
        let tokens = ProgressTokens::default();
        assert!(tokens.wanted("tools/call", &call("echo")), "not seen yet");
        tokens.finished_quietly("tools/call", &call("echo"));
        assert!(!tokens.wanted("tools/call", &call("echo")));
        // Other kinds are their own.
        assert!(tokens.wanted("tools/call", &call("ask")));
        assert!(tokens.wanted("prompts/get", &call("echo")));
        // The client's own token always gets one (mapped back to it).
        let with_token = json!({"name": "echo", "_meta": {"progressToken": 7}});
        assert!(tokens.wanted("tools/call", &with_token));
        let null_token = json!({"name": "echo", "_meta": {"progressToken": null}});
        assert!(!tokens.wanted("tools/call", &null_token));
    }

    #[test]
    fn asking_once_is_for_good() {
        let tokens = ProgressTokens::default();
        tokens.finished_quietly("tools/call", &call("maybe_ask"));
        tokens.asked("tools/call", &call("maybe_ask"));
        tokens.finished_quietly("tools/call", &call("maybe_ask"));
        assert!(tokens.wanted("tools/call", &call("maybe_ask")));
        // Resource URIs are unbounded: every read is one kind.
        tokens.finished_quietly("resources/read", &json!({"uri": "file:///a"}));
        assert!(!tokens.wanted("resources/read", &json!({"uri": "file:///b"})));
    }

    #[test]
    fn kinds_beyond_the_bound_always_get_a_token() {
        let tokens = ProgressTokens::default();
        for n in 0..MAX_KINDS {
            tokens.finished_quietly("tools/call", &call(&format!("t{n}")));
        }
        tokens.finished_quietly("tools/call", &call("one_too_many"));
        assert!(tokens.wanted("tools/call", &call("one_too_many")));
        assert!(!tokens.wanted("tools/call", &call("t0")));
        // A known kind still learns that it asks.
        tokens.asked("tools/call", &call("t0"));
        assert!(tokens.wanted("tools/call", &call("t0")));
    }
}
