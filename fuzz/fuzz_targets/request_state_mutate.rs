//! A genuinely sealed `requestState`, then edited: it must never open unless it is unchanged.
//!
//! The input (via `arbitrary`) is the claims (any principal, method, params digest, round,
//! expiry), the nonce, and a list of edits of the state's text (bit flips, byte replacements,
//! insertions, deletions, truncation, appended bytes, swaps).
//!
//! Checks:
//! - the unedited state opens to exactly its claims, verifies its bindings (`open_for`) and is
//!   `Expired` from its expiry on; each binding changed gives its own error;
//! - an edited state that differs from the original is `Malformed` or `Forged`, whatever the
//!   edits and whatever "now" (never a binding or expiry error: authenticity comes first).

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use mcp_mrtr_proxy::fuzzing::seal_with_nonce;
use mcp_mrtr_proxy::request::Principal;
use mcp_mrtr_proxy::state::{Claims, PauseId, Sealer, StateError, StateKey};

#[derive(Debug, Arbitrary)]
enum Method {
    ToolsCall,
    ResourcesRead,
    PromptsGet,
    Other(String),
}

#[derive(Debug, Arbitrary)]
enum Edit {
    Flip { at: u16, mask: u8 },
    Replace { at: u16, byte: u8 },
    Insert { at: u16, byte: u8 },
    Delete { at: u16 },
    Truncate { len: u16 },
    Append(Vec<u8>),
    Swap { a: u16, b: u16 },
}

#[derive(Debug, Arbitrary)]
struct Input {
    pause_id: [u8; 16],
    principal: [u8; 32],
    method: Method,
    params_digest: [u8; 32],
    round: u32,
    expires_at_ms: u64,
    nonce: [u8; 24],
    /// "Now" for the edited state, as an offset before the expiry.
    before_expiry: u64,
    edits: Vec<Edit>,
}

fuzz_target!(|input: Input| {
    let method = match input.method {
        Method::ToolsCall => "tools/call".to_owned(),
        Method::ResourcesRead => "resources/read".to_owned(),
        Method::PromptsGet => "prompts/get".to_owned(),
        // Method names are short; a very long one gives a state `open` refuses as too long.
        Method::Other(name) => name.chars().take(200).collect(),
    };
    let claims = Claims {
        pause_id: PauseId::from_bytes(input.pause_id),
        principal: Principal(input.principal),
        method,
        params_digest: input.params_digest,
        round: input.round,
        expires_at_ms: input.expires_at_ms.max(1),
    };
    let sealer = Sealer::new(&StateKey::from_bytes([0x42; 32]));
    let state = seal_with_nonce(&sealer, &claims, input.nonce);
    let expiry = claims.expires_at_ms;
    let now = expiry - 1;

    // The original verifies its claims.
    assert_eq!(sealer.open(&state, now), Ok(claims.clone()));
    assert_eq!(sealer.open(&state, expiry), Err(StateError::Expired));
    let digest = claims.params_digest;
    assert_eq!(
        sealer.open_for(&state, now, &claims.principal, &claims.method, &digest),
        Ok(claims.clone())
    );
    let mut principal = claims.principal.0;
    principal[usize::from(input.nonce[0] % 32)] ^= 1 << (input.nonce[1] % 8);
    assert_eq!(
        sealer.open_for(&state, now, &Principal(principal), &claims.method, &digest),
        Err(StateError::WrongPrincipal)
    );
    assert_eq!(
        sealer.open_for(&state, now, &claims.principal, "tools/list", &digest),
        if claims.method == "tools/list" {
            Ok(claims.clone())
        } else {
            Err(StateError::WrongMethod)
        }
    );
    let mut other_digest = digest;
    other_digest[usize::from(input.nonce[2] % 32)] ^= 1 << (input.nonce[3] % 8);
    assert_eq!(
        sealer.open_for(
            &state,
            now,
            &claims.principal,
            &claims.method,
            &other_digest
        ),
        Err(StateError::WrongParams)
    );
    assert_eq!(
        sealer.open_for(&state, expiry, &claims.principal, &claims.method, &digest),
        Err(StateError::Expired)
    );

    // Edited copies never open.
    let mut bytes = state.clone().into_bytes();
    for edit in input.edits.iter().take(8) {
        let len = bytes.len();
        let at = |index: u16| usize::from(index) % len.max(1);
        match *edit {
            Edit::Flip { at: index, mask } if len > 0 => bytes[at(index)] ^= mask,
            Edit::Replace { at: index, byte } if len > 0 => bytes[at(index)] = byte,
            Edit::Insert { at: index, byte } => {
                let index = usize::from(index) % (len + 1);
                bytes.insert(index, byte);
            }
            Edit::Delete { at: index } if len > 0 => {
                bytes.remove(at(index));
            }
            Edit::Truncate { len: keep } => bytes.truncate(usize::from(keep)),
            Edit::Append(ref tail) => bytes.extend(tail.iter().take(64)),
            Edit::Swap { a, b } if len > 0 => bytes.swap(at(a), at(b)),
            _ => {}
        }
    }
    let edited = String::from_utf8_lossy(&bytes);
    let when = now.saturating_sub(input.before_expiry);
    let opened = sealer.open(&edited, when);
    let bound = sealer.open_for(&edited, when, &claims.principal, &claims.method, &digest);
    if edited == state {
        assert_eq!(opened, Ok(claims.clone()));
        assert_eq!(bound, Ok(claims));
    } else {
        for result in [opened, bound] {
            assert!(
                matches!(result, Err(StateError::Malformed | StateError::Forged)),
                "an edited state gave {result:?}: {edited:?} (original {state:?})"
            );
        }
    }
});
