//! The session table: `Mcp-Session-Id` → [`Session`], bounded, with idle expiry.
//!
//! A place is reserved before the session's lane starts (a slow legacy server cannot let more
//! sessions than the bound start at once) and given back if the start fails. Ids are 128 random
//! bits from the OS, hex: unguessable, visible ASCII as the spec requires.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::OsRng;
use rand::RngCore;

use super::relay::Session;

#[derive(Default)]
struct TableState {
    sessions: HashMap<String, Arc<Session>>,
    /// Places reserved for sessions being started.
    starting: usize,
}

/// The live legacy sessions.
pub struct SessionTable {
    state: Mutex<TableState>,
    max: usize,
}

/// A reserved place; given back on drop unless [`Reservation::fill`]ed.
pub struct Reservation<'a> {
    table: &'a SessionTable,
    filled: bool,
}

impl Reservation<'_> {
    /// Puts the started session in the reserved place.
    pub fn fill(mut self, session: Arc<Session>) {
        let mut state = self.table.state();
        state.starting -= 1;
        state.sessions.insert(session.id.clone(), session);
        self.filled = true;
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if !self.filled {
            self.table.state().starting -= 1;
        }
    }
}

impl SessionTable {
    pub fn new(max: usize) -> Self {
        SessionTable {
            state: Mutex::default(),
            max: max.max(1),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, TableState> {
        self.state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// The bound (`--max-legacy-sessions`).
    pub fn max(&self) -> usize {
        self.max
    }

    /// A place for one more session, `None` at the bound.
    pub fn reserve(&self) -> Option<Reservation<'_>> {
        let mut state = self.state();
        if state.sessions.len() + state.starting >= self.max {
            return None;
        }
        state.starting += 1;
        Some(Reservation {
            table: self,
            filled: false,
        })
    }

    /// A new session id.
    pub fn mint_id() -> String {
        let mut bytes = [0u8; 16];
        OsRng.fill_bytes(&mut bytes);
        bytes.iter().map(|byte| format!("{byte:02x}")).collect()
    }

    /// The live session with this id.
    pub fn get(&self, id: &str) -> Option<Arc<Session>> {
        let state = self.state();
        state
            .sessions
            .get(id)
            .filter(|session| !session.is_ended())
            .cloned()
    }

    pub fn remove(&self, id: &str) -> Option<Arc<Session>> {
        self.state().sessions.remove(id)
    }

    /// Open sessions.
    pub fn len(&self) -> usize {
        self.state().sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes and returns the sessions that ended by themselves, and those idle (no request in
    /// flight) for longer than `idle`.
    pub fn take_stale(
        &self,
        idle: Duration,
        now: Instant,
    ) -> (Vec<Arc<Session>>, Vec<Arc<Session>>) {
        let mut state = self.state();
        let mut ended = Vec::new();
        let mut expired = Vec::new();
        state.sessions.retain(|_, session| {
            if session.is_ended() {
                ended.push(Arc::clone(session));
                return false;
            }
            let stale = session
                .idle_since()
                .is_some_and(|since| now.saturating_duration_since(since) > idle);
            if stale {
                expired.push(Arc::clone(session));
            }
            !stale
        });
        (ended, expired)
    }

    /// Every session (a snapshot).
    pub fn all(&self) -> Vec<Arc<Session>> {
        self.state().sessions.values().cloned().collect()
    }

    /// Removes and returns every session (shutdown).
    pub fn drain(&self) -> Vec<Arc<Session>> {
        self.state()
            .sessions
            .drain()
            .map(|(_, session)| session)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_bounded_and_given_back() {
        let table = SessionTable::new(2);
        let first = table.reserve().expect("a place");
        let second = table.reserve().expect("a second place");
        assert!(
            table.reserve().is_none(),
            "the bound counts sessions being started"
        );
        drop(first);
        let third = table
            .reserve()
            .expect("a failed start gives its place back");
        drop((second, third));
        assert!(table.is_empty());
        assert_eq!(SessionTable::new(0).max(), 1);
    }

    #[test]
    fn ids_are_random_visible_ascii() {
        let a = SessionTable::mint_id();
        let b = SessionTable::mint_id();
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|byte| byte.is_ascii_hexdigit()));
    }
}
