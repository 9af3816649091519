//! `subscriptions/listen` (T16, [`crate::subscriptions`]): the filter intersected with the
//! legacy capabilities is acknowledged; the pool's change feed (every lane's `list_changed` and
//! `resources/updated`) goes to the streams whose filter wants it, tagged with the subscription
//! id; `resources/subscribe` is refcounted on one lane+session.

use std::time::Duration;

use serde_json::{json, Value};
use tracing::{debug, info, warn};

use super::wire::{backend_failure, internal, invalid_params};
use super::Engine;
use crate::jsonrpc::{ErrorObject, Message};
use crate::request::{FrontRequest, ResponseSink};
use crate::subscriptions::ListenFilter;

impl Engine {
    /// `subscriptions/listen` (T16, [`crate::subscriptions`]): acknowledge what the legacy
    /// server can deliver of the filter, then forward its change notifications, tagged with the
    /// subscription id, until the client leaves (or cancels), the proxy shuts down (a `complete`
    /// result), or the lane holding the stream's resource subscriptions dies (an error: the
    /// client listens again). `None`: the client left, nothing to answer.
    pub(super) async fn listen(
        &self,
        request: &FrontRequest,
        sink: &mut ResponseSink,
    ) -> Option<Result<Value, ErrorObject>> {
        let id = request.id.clone();
        let asked = match ListenFilter::parse(request.params.tree()) {
            Ok(filter) => filter,
            Err(message) => return Some(Err(invalid_params(message))),
        };
        if self.is_draining() {
            return Some(Err(internal("the proxy is shutting down")));
        }
        let pool = match self.pool_for(request) {
            Ok(pool) => pool,
            Err(error) => return Some(Err(error)),
        };
        let initialized = match pool.initialized().await {
            Ok(initialized) => initialized,
            Err(error) => return Some(Err(backend_failure(error))),
        };
        let mut honoured = asked.supported_by(initialized.result.get("capabilities"));
        // From here on nothing the legacy server announces is missed.
        let mut feed = pool.subscribe_changes();
        let timeout = self.settings.request_timeout;
        let acquired = if honoured.resource_subscriptions.is_empty() {
            None
        } else {
            match self
                .resource_subscriptions
                .acquire(
                    &pool,
                    request.client_capabilities.profile(),
                    &honoured.resource_subscriptions,
                    timeout,
                )
                .await
            {
                Ok(acquired) => Some(acquired),
                Err(why) => return Some(Err(internal(why))),
            }
        };
        honoured.resource_subscriptions = acquired
            .as_ref()
            .map(|acquired| acquired.uris.clone())
            .unwrap_or_default();
        debug!(filter = %honoured.to_value(), "listen stream opened");
        let acknowledged = Message::Notification {
            method: crate::subscriptions::ACKNOWLEDGED.into(),
            params: Some(json!({
                "_meta": { crate::subscriptions::SUBSCRIPTION_ID: id },
                "notifications": honoured.to_value(),
            })),
        };
        let mut open = sink.notify(acknowledged).await;
        let mut lane_check = tokio::time::interval(Duration::from_secs(1));
        lane_check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let graceful = loop {
            if !open {
                break false;
            }
            tokio::select! {
                () = sink.closed() => break false,
                () = self.drained.cancelled() => break true,
                notice = feed.recv() => match notice {
                    Ok(notice) => {
                        if honoured.wants(&notice.method, &notice.params) {
                            let message = crate::subscriptions::tagged(
                                &notice.method,
                                &notice.params,
                                &id,
                            );
                            open = sink.notify(message).await;
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                        warn!(missed, "a listen stream fell behind: it is told about everything it listens to");
                        for (method, params) in honoured.catch_up() {
                            let message = crate::subscriptions::tagged(method, &params, &id);
                            if !sink.notify(message).await {
                                open = false;
                                break;
                            }
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break true,
                },
                _ = lane_check.tick() => {
                    if acquired.as_ref().is_some_and(|acquired| !acquired.still_held()) {
                        info!("the legacy session holding a listen stream's resource subscriptions ended: so does the stream");
                        let error = internal(
                            "the legacy server's session that held this stream's resource \
                             subscriptions ended (it restarted or went away): listen again",
                        );
                        return Some(Err(error));
                    }
                }
            }
        };
        if let Some(acquired) = &acquired {
            self.resource_subscriptions.release(acquired, timeout).await;
        }
        // Graceful (shutdown): a `complete` result; the client left: nothing to answer.
        graceful.then(|| {
            Ok(json!({
                "resultType": "complete",
                "_meta": { crate::subscriptions::SUBSCRIPTION_ID: id },
            }))
        })
    }
}
