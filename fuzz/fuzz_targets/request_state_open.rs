//! Opening an arbitrary `requestState` string under a fixed key.
//!
//! The input is the state as the client would send it (bytes that are not UTF-8 are replaced, as
//! they could not travel in a JSON string anyway). The seeds include states genuinely sealed
//! under [`KEY`], so the fuzzer also explores the accepting path.
//!
//! Beyond "no panic":
//! - anything over `MAX_STATE_LEN` bytes, or without the `mrs1.` prefix, is `Malformed`;
//! - a state that opens is canonical (strict base64url, within the length limit), opens under no
//!   other key (`Forged`), and verifies its own claims: `open_for` with the sealed principal,
//!   method and params digest accepts it, a different one of each is refused with its own error,
//!   and it is `Expired` from `expires_at_ms` on;
//! - opening never returns a binding error (`open` checks no bindings).

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_mrtr_proxy::request::Principal;
use mcp_mrtr_proxy::state::{Sealer, StateError, StateKey, MAX_STATE_LEN};

/// The fuzz key; `fuzz/corpus/request_state_open` holds states sealed under it.
const KEY: [u8; 32] = [0x42; 32];
/// "Now" for the openings: a fixed instant, so that a seed stays valid.
const NOW_MS: u64 = 1_800_000_000_000;

fuzz_target!(|data: &[u8]| {
    let sealer = Sealer::new(&StateKey::from_bytes(KEY));
    let text = String::from_utf8_lossy(data);
    let opened = sealer.open(&text, NOW_MS);
    if text.len() > MAX_STATE_LEN || !(text.starts_with("mrs1.") || text.starts_with("mrs2.")) {
        assert_eq!(opened, Err(StateError::Malformed));
        return;
    }
    let claims = match opened {
        Err(error) => {
            assert!(
                matches!(
                    error,
                    StateError::Malformed
                        | StateError::Forged
                        | StateError::Expired
                        | StateError::RetiredKey
                ),
                "{error:?}"
            );
            return;
        }
        Ok(claims) => claims,
    };
    assert!(NOW_MS < claims.expires_at_ms);
    assert!(text
        .bytes()
        .skip(5)
        .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_'));
    let other = Sealer::new(&StateKey::from_bytes([0x43; 32]));
    assert_eq!(other.open(&text, NOW_MS), Err(StateError::Forged));

    let digest = claims.params_digest;
    assert_eq!(
        sealer.open_for(&text, NOW_MS, &claims.principal, &claims.method, &digest),
        Ok(claims.clone())
    );
    let mut principal = claims.principal.0;
    principal[0] ^= 1;
    assert_eq!(
        sealer.open_for(
            &text,
            NOW_MS,
            &Principal(principal),
            &claims.method,
            &digest
        ),
        Err(StateError::WrongPrincipal)
    );
    let method = format!("{}/x", claims.method);
    assert_eq!(
        sealer.open_for(&text, NOW_MS, &claims.principal, &method, &digest),
        Err(StateError::WrongMethod)
    );
    let mut other_digest = digest;
    other_digest[31] ^= 0x80;
    assert_eq!(
        sealer.open_for(
            &text,
            NOW_MS,
            &claims.principal,
            &claims.method,
            &other_digest
        ),
        Err(StateError::WrongParams)
    );
    assert_eq!(
        sealer.open(&text, claims.expires_at_ms),
        Err(StateError::Expired)
    );
    assert_eq!(
        sealer.open(&text, claims.expires_at_ms - 1),
        Ok(claims.clone())
    );
    // Sealing the claims again gives a state that opens to them.
    assert_eq!(sealer.open(&sealer.seal(&claims), NOW_MS), Ok(claims));
});
