//! A lane held by one legacy client session for its whole life (`legacy_session`).
//!
//! Unlike the pool's lanes it is initialized with the client's own `initialize` params (its
//! protocol version, capabilities and `clientInfo` reach the legacy server as the client sent
//! them), it is not in the pool (no lease, no sharing, no recycling), and everything the legacy
//! server sends on it belongs to that client: server requests and notifications go to
//! [`SessionLane::events`] from the first message on (the lane is leased to the session before
//! its handshake), change notifications to a feed of its own ([`SessionLane::changes`]). An
//! expired HTTP session (404) ends the lane rather than re-initializing it: the client is told
//! (404 on its next request) and re-initializes itself.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::broadcast;

use super::lane_core::LaneCore;
use super::{BackendError, ChangeFeed, ChangeNotice, EventReceiver, Lane, LanePool};
use crate::capabilities::CapabilityProfile;

/// A legacy client session's own lane and what the legacy server sends on it.
#[derive(Debug)]
pub struct SessionLane {
    pub lane: Arc<Lane>,
    /// Server requests and notifications (but change notifications); closes when the lane dies.
    pub events: EventReceiver,
    /// `list_changed` and `resources/updated` notifications of this lane only.
    pub changes: broadcast::Receiver<ChangeNotice>,
}

impl LanePool {
    /// Starts a lane for one legacy client session, initialized with `initialize` (the client's
    /// `initialize` params, its `protocolVersion` already negotiated). Not counted in the pool's
    /// bound: the sessions have their own.
    pub async fn open_session_lane(&self, initialize: Value) -> Result<SessionLane, BackendError> {
        let shared = &self.shared;
        let profile = CapabilityProfile::from_client_capabilities(
            initialize.get("capabilities").unwrap_or(&Value::Null),
        );
        let feed = Arc::new(ChangeFeed::default());
        let changes = feed.subscribe();
        let events = Mutex::new(None);
        let new_core = |transport: &'static str| {
            let core = LaneCore::new(
                shared.next_lane.fetch_add(1, Ordering::Relaxed),
                profile.clone(),
                transport,
                Vec::new(),
                Arc::clone(&feed),
            );
            core.set_session_init(initialize.clone());
            // Leased before the handshake: nothing the server sends is answered by the proxy.
            let (_generation, receiver) = core.attach_lease(None);
            *events.lock().unwrap_or_else(|poison| poison.into_inner()) = Some(receiver);
            core
        };
        let (started, _core) = shared.start_lane(&new_core).await;
        let inner = started?;
        crate::metrics::global().lane_started();
        let events = events
            .into_inner()
            .unwrap_or_else(|poison| poison.into_inner())
            .ok_or_else(|| BackendError::Unavailable("the lane was never created".into()))?;
        Ok(SessionLane {
            lane: Arc::new(Lane { inner }),
            events,
            changes,
        })
    }
}
