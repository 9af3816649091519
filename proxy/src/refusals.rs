//! The JSON-RPC errors a retry gets when its `requestState` cannot resume a paused call.
//!
//! Each layer's error already carries the complete client-facing sentence ([`StateError`],
//! [`ClaimError`], [`BackendError`]); this module only picks the code and adds the one context
//! the lower layer cannot know ("the paused call was lost" in front of a backend failure). No
//! message is prefixed twice: the unit test below checks every variant.

use crate::backend::BackendError;
use crate::jsonrpc::{codes, ErrorObject};
use crate::state::StateError;
use crate::store::ClaimError;

/// A `requestState` that did not open (malformed, forged, expired, another caller's, ...).
pub fn state_refusal(error: &StateError) -> ErrorObject {
    ErrorObject::new(codes::INVALID_PARAMS, error.to_string())
}

/// A state that opened but whose pause cannot be claimed. Lost or evicted pauses and store
/// failures are the server's fault (`-32603`); a replay, an expiry or a cancellation is the
/// caller's (`-32602`).
pub fn claim_refusal(error: &ClaimError) -> ErrorObject {
    let code = match error {
        ClaimError::Unknown | ClaimError::Lost | ClaimError::Evicted(_) | ClaimError::Store(_) => {
            codes::INTERNAL_ERROR
        }
        ClaimError::AlreadyUsed | ClaimError::Expired | ClaimError::Cancelled => {
            codes::INVALID_PARAMS
        }
    };
    ErrorObject::new(code, error.to_string())
}

/// A claimed pause whose live call is gone (its lane died, or the proxy restarted).
pub fn session_gone() -> ErrorObject {
    ErrorObject::new(
        codes::INTERNAL_ERROR,
        "the paused call was lost: its legacy session is gone (the backend exited or the proxy restarted)",
    )
}

/// A paused call whose legacy side failed after the pause.
pub fn lost_call(error: &BackendError) -> ErrorObject {
    ErrorObject::new(
        codes::INTERNAL_ERROR,
        format!("the paused call was lost: {error}"),
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::store::StoreError;

    /// The first run of two or more words that a message says twice, if any ("invalid
    /// requestState: invalid requestState: ..." says "invalid requestState" twice).
    fn said_twice(message: &str) -> Option<String> {
        let words: Vec<String> = message
            .split(|c: char| !c.is_alphanumeric())
            .filter(|word| !word.is_empty())
            .map(str::to_lowercase)
            .collect();
        let pairs: Vec<String> = words.windows(2).map(|pair| pair.join(" ")).collect();
        pairs
            .iter()
            .enumerate()
            .find(|(at, pair)| pairs[at + 1..].contains(pair))
            .map(|(_, pair)| pair.clone())
    }

    fn every_refusal() -> Vec<ErrorObject> {
        let states = [
            StateError::Malformed,
            StateError::Forged,
            StateError::Expired,
            StateError::RetiredKey,
            StateError::WrongPrincipal,
            StateError::WrongMethod,
            StateError::WrongParams,
        ];
        let claims = [
            ClaimError::Unknown,
            ClaimError::AlreadyUsed,
            ClaimError::Expired,
            ClaimError::Cancelled,
            ClaimError::Evicted("its legacy session ended".into()),
            ClaimError::Lost,
            ClaimError::Store(StoreError::Corrupt {
                pause_id: "00".repeat(16),
                detail: "not JSON".into(),
            }),
        ];
        let backends = [
            BackendError::Unavailable("cannot start `server`: not found".into()),
            BackendError::Crashed,
            BackendError::Timeout(Duration::from_secs(30)),
            BackendError::Protocol("not JSON".into()),
            BackendError::NotStreamableHttp("404".into()),
        ];
        let mut all: Vec<ErrorObject> = states.iter().map(state_refusal).collect();
        all.extend(claims.iter().map(claim_refusal));
        all.extend(backends.iter().map(lost_call));
        all.push(session_gone());
        all
    }

    #[test]
    fn messages_say_things_twice() {
        // The two messages of the issue, as they were: the check finds what they repeat.
        assert_eq!(
            said_twice("invalid requestState: invalid requestState: integrity check failed"),
            Some("invalid requeststate".into())
        );
        assert_eq!(
            said_twice(
                "the paused call was lost: the paused call behind this requestState was lost"
            ),
            Some("the paused".into())
        );
        for refusal in every_refusal() {
            assert_eq!(
                said_twice(&refusal.message),
                None,
                "{:?} says something twice",
                refusal.message
            );
        }
    }

    #[test]
    fn refusals_keep_their_codes_and_say_what_failed() {
        let forged = state_refusal(&StateError::Forged);
        assert_eq!(forged.code, codes::INVALID_PARAMS);
        assert_eq!(
            forged.message,
            "invalid requestState: integrity check failed (altered, or issued by another server or under another key)"
        );
        let lost = claim_refusal(&ClaimError::Lost);
        assert_eq!(lost.code, codes::INTERNAL_ERROR);
        assert!(lost
            .message
            .starts_with("the paused call was lost when the server restarted;"));
        assert_eq!(
            claim_refusal(&ClaimError::AlreadyUsed).code,
            codes::INVALID_PARAMS
        );
        assert_eq!(
            claim_refusal(&ClaimError::Unknown).code,
            codes::INTERNAL_ERROR
        );
        let crashed = lost_call(&BackendError::Crashed);
        assert_eq!(
            crashed.message,
            "the paused call was lost: the legacy server exited or dropped the connection while the request was in flight"
        );
    }
}
