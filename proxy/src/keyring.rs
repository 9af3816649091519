//! The `requestState` keyring (`--state-key-file`): the sealing keys, each with an id, so that
//! keys rotate without losing paused calls. The newest key seals; every listed key opens; the
//! key id travels in the state ([`crate::state`], format `mrs2`). Re-read on SIGHUP.
//!
//! File format, one entry per line, blank lines and `#` comments ignored:
//!
//! ```text
//! # id        key (64 hex digits, or base64 of 32 bytes)
//! 2026-06     4f1c...e2
//! 2026-07     9a07...1b     <- the last line seals
//! ```
//!
//! An id is 1 to 32 characters of `A-Z a-z 0-9 - _`. A file holding a single key and nothing
//! else (the format before keyrings) is a keyring of one key without an id: its states keep the
//! `mrs1` format, and once that key is listed again with an id, the states it sealed still open.

use crate::state::{KeyError, StateKey};

/// The longest key id.
pub const MAX_KEY_ID_LEN: usize = 32;

/// The sealing keys, oldest first; the last one seals.
#[derive(Debug, Clone)]
pub struct Keyring {
    keys: Vec<(Option<String>, StateKey)>,
}

/// Why a keyring file was refused. Never contains a key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyringError {
    #[error("the keyring lists no key")]
    Empty,
    #[error("line {line}: {error}")]
    Key { line: usize, error: KeyError },
    #[error("line {line}: expected `ID KEY` (a keyring of several keys names each)")]
    Shape { line: usize },
    #[error("line {line}: a key id is 1 to {MAX_KEY_ID_LEN} characters of A-Z a-z 0-9 - _")]
    BadId { line: usize },
    #[error("line {line}: the key id `{id}` is listed twice")]
    DuplicateId { line: usize, id: String },
}

/// Whether `id` may name a key (it is written into every state it seals).
pub fn valid_key_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_KEY_ID_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl Keyring {
    /// One key without an id (`MCP_MRTR_STATE_KEY`, the key kept in the store, an old key file).
    pub fn single(key: StateKey) -> Keyring {
        Keyring {
            keys: vec![(None, key)],
        }
    }

    /// Parses a key file: a keyring (`ID KEY` lines), or a single key alone.
    pub fn from_text(text: &str) -> Result<Keyring, KeyringError> {
        let entries: Vec<(usize, Vec<&str>)> = text
            .lines()
            .enumerate()
            .map(|(at, line)| (at + 1, line.trim()))
            .filter(|(_, line)| !line.is_empty() && !line.starts_with('#'))
            .map(|(line, text)| (line, text.split_whitespace().collect()))
            .collect();
        if let [(line, words)] = entries.as_slice() {
            if let [key] = words.as_slice() {
                let key = StateKey::from_text(key)
                    .map_err(|error| KeyringError::Key { line: *line, error })?;
                return Ok(Keyring::single(key));
            }
        }
        let mut keys: Vec<(Option<String>, StateKey)> = Vec::with_capacity(entries.len());
        for (line, words) in entries {
            let [id, key] = words.as_slice() else {
                return Err(KeyringError::Shape { line });
            };
            if !valid_key_id(id) {
                return Err(KeyringError::BadId { line });
            }
            if keys.iter().any(|(seen, _)| seen.as_deref() == Some(*id)) {
                return Err(KeyringError::DuplicateId {
                    line,
                    id: (*id).to_owned(),
                });
            }
            let key =
                StateKey::from_text(key).map_err(|error| KeyringError::Key { line, error })?;
            keys.push((Some((*id).to_owned()), key));
        }
        if keys.is_empty() {
            return Err(KeyringError::Empty);
        }
        Ok(Keyring { keys })
    }

    /// The keys, oldest first (the last seals).
    pub fn keys(&self) -> &[(Option<String>, StateKey)] {
        &self.keys
    }

    /// The ids for logs (`-` for the key without one), oldest first.
    pub fn ids(&self) -> Vec<String> {
        self.keys
            .iter()
            .map(|(id, _)| id.clone().unwrap_or_else(|| "-".to_owned()))
            .collect()
    }
}

impl PartialEq for Keyring {
    fn eq(&self, other: &Self) -> bool {
        self.keys.len() == other.keys.len()
            && self
                .keys
                .iter()
                .zip(&other.keys)
                .all(|((a, x), (b, y))| a == b && x.to_text() == y.to_text())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "0101010101010101010101010101010101010101010101010101010101010101";
    const B: &str = "0202020202020202020202020202020202020202020202020202020202020202";

    #[test]
    fn a_single_key_file_still_reads() {
        let ring = Keyring::from_text(&format!("\n{A}\n")).unwrap();
        assert_eq!(ring.ids(), vec!["-"]);
    }

    #[test]
    fn a_keyring_lists_ids_and_the_last_seals() {
        let ring = Keyring::from_text(&format!("# keys\nold {A}\n\n  new  {B}  \n")).unwrap();
        assert_eq!(ring.ids(), vec!["old", "new"]);
        let ring = Keyring::from_text(&format!("only {A}")).unwrap();
        assert_eq!(ring.ids(), vec!["only"]);
    }

    #[test]
    fn bad_keyrings_say_which_line_and_never_the_key() {
        assert_eq!(Keyring::from_text("# nothing\n"), Err(KeyringError::Empty));
        assert_eq!(
            Keyring::from_text(&format!("a {A}\n{B}\n")),
            Err(KeyringError::Shape { line: 2 })
        );
        assert_eq!(
            Keyring::from_text(&format!("a.b {A}")),
            Err(KeyringError::BadId { line: 1 })
        );
        assert_eq!(
            Keyring::from_text(&format!("a {A}\na {B}")),
            Err(KeyringError::DuplicateId {
                line: 2,
                id: "a".into()
            })
        );
        let error = Keyring::from_text("a 0102\n").unwrap_err();
        assert!(matches!(error, KeyringError::Key { line: 1, .. }));
        assert!(!error.to_string().contains("0102"), "{error}");
    }
}
