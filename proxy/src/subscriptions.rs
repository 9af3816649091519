//! `subscriptions/listen` (2026-07-28, T16) in front of a legacy server.
//!
//! A 2026-07-28 client opens a long-lived stream with a filter (`toolsListChanged`,
//! `promptsListChanged`, `resourcesListChanged`, `resourceSubscriptions`); the server acknowledges
//! the subset it honours, then sends the matching change notifications, each tagged with
//! `_meta["io.modelcontextprotocol/subscriptionId"]` (the listen request's id), until the client
//! closes the stream or the server ends it with a `complete` result.
//!
//! A legacy server announces changes on its sessions instead: list changes to whoever is
//! connected, resource updates to the sessions that sent `resources/subscribe`. Every lane hands
//! those notifications to the pool's [`crate::backend::ChangeFeed`]; each listen stream reads the
//! feed and forwards what its filter asks for. Resource subscriptions are made on one lane, the
//! *subscription lane*, reference-counted across listen streams (one legacy `resources/subscribe`
//! per URI, `resources/unsubscribe` when the last stream that wanted it ends). If that lane dies
//! (backend crash, lane recycled), its legacy subscriptions are gone: the streams that had
//! resource subscriptions end without a result, which tells their clients to listen again (the
//! specification's "unexpected disconnect"), and the next listen subscribes on a live lane.
//!
//! This module holds the filter and the subscription lane bookkeeping; the engine runs the
//! streams (`Engine::listen`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::backend::{Lane, LanePool};
use crate::capabilities::CapabilityProfile;

/// The `_meta` key that tags every message of a listen stream.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The first message of a listen stream.
pub const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

/// What a listen stream asked for (or what the proxy honours of it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListenFilter {
    pub tools_list_changed: bool,
    pub prompts_list_changed: bool,
    pub resources_list_changed: bool,
    /// URIs for `notifications/resources/updated`, without repeats, in the order asked.
    pub resource_subscriptions: Vec<String>,
}

impl ListenFilter {
    /// Reads `params.notifications` (`SubscriptionFilter`). `Err` is an invalid-params message.
    pub fn parse(params: &Value) -> Result<ListenFilter, String> {
        let notifications = match params.get("notifications") {
            Some(Value::Object(notifications)) => notifications,
            Some(_) => return Err("`params.notifications` must be an object".into()),
            None => return Err("`subscriptions/listen` needs `params.notifications`".into()),
        };
        let flag = |key: &str| match notifications.get(key) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(flag)) => Ok(*flag),
            Some(_) => Err(format!("`notifications.{key}` must be a boolean")),
        };
        let mut resource_subscriptions = Vec::new();
        match notifications.get("resourceSubscriptions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(uris)) => {
                for uri in uris {
                    let Some(uri) = uri.as_str() else {
                        return Err(
                            "`notifications.resourceSubscriptions` must be an array of strings"
                                .into(),
                        );
                    };
                    if !resource_subscriptions.iter().any(|known| known == uri) {
                        resource_subscriptions.push(uri.to_owned());
                    }
                }
            }
            Some(_) => {
                return Err(
                    "`notifications.resourceSubscriptions` must be an array of strings".into(),
                )
            }
        }
        Ok(ListenFilter {
            tools_list_changed: flag("toolsListChanged")?,
            prompts_list_changed: flag("promptsListChanged")?,
            resources_list_changed: flag("resourcesListChanged")?,
            resource_subscriptions,
        })
    }

    /// What the legacy server can deliver of this filter, judged by its `initialize`
    /// capabilities: `listChanged` per list, `resources.subscribe` for resource updates.
    pub fn supported_by(&self, legacy_capabilities: Option<&Value>) -> ListenFilter {
        let declared = |feature: &str, flag: &str| {
            legacy_capabilities
                .and_then(|capabilities| capabilities.get(feature))
                .and_then(|feature| feature.get(flag))
                .and_then(Value::as_bool)
                .unwrap_or(false)
        };
        ListenFilter {
            tools_list_changed: self.tools_list_changed && declared("tools", "listChanged"),
            prompts_list_changed: self.prompts_list_changed && declared("prompts", "listChanged"),
            resources_list_changed: self.resources_list_changed
                && declared("resources", "listChanged"),
            resource_subscriptions: if declared("resources", "subscribe") {
                self.resource_subscriptions.clone()
            } else {
                Vec::new()
            },
        }
    }

    /// The `SubscriptionFilter` object: only what is on.
    pub fn to_value(&self) -> Value {
        let mut filter = Map::new();
        for (key, on) in [
            ("toolsListChanged", self.tools_list_changed),
            ("promptsListChanged", self.prompts_list_changed),
            ("resourcesListChanged", self.resources_list_changed),
        ] {
            if on {
                filter.insert(key.into(), Value::Bool(true));
            }
        }
        if !self.resource_subscriptions.is_empty() {
            filter.insert(
                "resourceSubscriptions".into(),
                json!(self.resource_subscriptions),
            );
        }
        Value::Object(filter)
    }

    /// Whether a legacy change notification belongs on this stream.
    pub fn wants(&self, method: &str, params: &Value) -> bool {
        match method {
            "notifications/tools/list_changed" => self.tools_list_changed,
            "notifications/prompts/list_changed" => self.prompts_list_changed,
            "notifications/resources/list_changed" => self.resources_list_changed,
            "notifications/resources/updated" => params
                .get("uri")
                .and_then(Value::as_str)
                .is_some_and(|uri| self.resource_subscriptions.iter().any(|known| known == uri)),
            _ => false,
        }
    }

    /// What to send a stream that fell behind the feed and may have missed notifications: one
    /// of each kind it listens to (a list change makes the client list again, a resource update
    /// makes it read again; an extra one costs a request, a missed one leaves it stale).
    pub fn catch_up(&self) -> Vec<(&'static str, Value)> {
        let mut notices = Vec::new();
        for (method, on) in [
            ("notifications/tools/list_changed", self.tools_list_changed),
            (
                "notifications/prompts/list_changed",
                self.prompts_list_changed,
            ),
            (
                "notifications/resources/list_changed",
                self.resources_list_changed,
            ),
        ] {
            if on {
                notices.push((method, json!({})));
            }
        }
        for uri in &self.resource_subscriptions {
            notices.push(("notifications/resources/updated", json!({ "uri": uri })));
        }
        notices
    }
}

/// A notification for a listen stream: the legacy params, with the stream's subscription id
/// added to `_meta`.
pub fn tagged(method: &str, params: &Value, subscription_id: &Value) -> crate::jsonrpc::Message {
    let mut params = match params {
        Value::Object(params) => params.clone(),
        _ => Map::new(),
    };
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    if let Value::Object(meta) = meta {
        meta.insert(SUBSCRIPTION_ID.into(), subscription_id.clone());
    }
    crate::jsonrpc::Message::Notification {
        method: method.to_owned(),
        params: Some(Value::Object(params)),
    }
}

/// The legacy resource subscriptions of all listen streams: one lane holds them, each URI is
/// subscribed once and counted.
#[derive(Debug, Default)]
pub struct ResourceSubscriptions {
    state: tokio::sync::Mutex<SubscriptionLane>,
}

#[derive(Debug, Default)]
struct SubscriptionLane {
    /// The lane and the legacy session of it that holds the subscriptions.
    lane: Option<(Arc<Lane>, u64)>,
    counts: HashMap<String, usize>,
}

/// What [`ResourceSubscriptions::acquire`] got for one listen stream.
#[derive(Debug)]
pub struct Acquired {
    /// The lane that holds the subscriptions.
    pub lane: Arc<Lane>,
    /// Its legacy session ([`Lane::session_epoch`]) when they were made.
    pub epoch: u64,
    /// The URIs subscribed (the legacy server may refuse some).
    pub uris: Vec<String>,
}

impl Acquired {
    /// Whether the legacy session that holds the subscriptions is still there: not if the lane
    /// died (backend crash, lane recycled) or started a new session (HTTP 404).
    pub fn still_held(&self) -> bool {
        holds(&self.lane, self.epoch)
    }
}

fn holds(lane: &Lane, epoch: u64) -> bool {
    lane.is_alive() && lane.session_epoch() == epoch
}

impl ResourceSubscriptions {
    /// Subscribes `uris` on the subscription lane (when none is alive: a shared lane of
    /// `profile`, the listening client's), sending `resources/subscribe` for those no other
    /// stream holds yet. URIs the legacy server refuses are left out (and logged).
    pub async fn acquire(
        &self,
        pool: &LanePool,
        profile: &CapabilityProfile,
        uris: &[String],
        timeout: Duration,
    ) -> Result<Acquired, String> {
        let mut state = self.state.lock().await;
        let (lane, epoch) = match state
            .lane
            .as_ref()
            .filter(|(lane, epoch)| holds(lane, *epoch))
        {
            Some((lane, epoch)) => (Arc::clone(lane), *epoch),
            None => {
                // The subscriptions of a dead lane or session died with it.
                state.counts.clear();
                let lane = pool
                    .shared(profile)
                    .await
                    .map_err(|error| error.to_string())?;
                let epoch = lane.session_epoch();
                state.lane = Some((Arc::clone(&lane), epoch));
                (lane, epoch)
            }
        };
        let mut subscribed = Vec::new();
        for uri in uris {
            if let Some(count) = state.counts.get_mut(uri) {
                *count += 1;
                subscribed.push(uri.clone());
                continue;
            }
            match legacy_request(&lane, "resources/subscribe", uri, timeout).await {
                Ok(()) => {
                    state.counts.insert(uri.clone(), 1);
                    subscribed.push(uri.clone());
                }
                Err(why) => {
                    tracing::info!(uri = %uri, %why, "the legacy server refused a resource subscription");
                }
            }
        }
        Ok(Acquired {
            lane,
            epoch,
            uris: subscribed,
        })
    }

    /// Gives back what [`ResourceSubscriptions::acquire`] got: URIs no stream holds any more are
    /// unsubscribed on the legacy side. Nothing to do if that session does not hold them any
    /// more (it ended; its subscriptions with it).
    pub async fn release(&self, acquired: &Acquired, timeout: Duration) {
        let mut state = self.state.lock().await;
        let current = state.lane.as_ref().is_some_and(|(lane, epoch)| {
            Arc::ptr_eq(lane, &acquired.lane) && *epoch == acquired.epoch && acquired.still_held()
        });
        if !current {
            return;
        }
        let mut last = Vec::new();
        for uri in &acquired.uris {
            if let Some(count) = state.counts.get_mut(uri) {
                *count -= 1;
                if *count == 0 {
                    state.counts.remove(uri);
                    last.push(uri.clone());
                }
            }
        }
        for uri in last {
            if let Err(why) =
                legacy_request(&acquired.lane, "resources/unsubscribe", &uri, timeout).await
            {
                tracing::debug!(uri = %uri, %why, "legacy resources/unsubscribe failed");
            }
        }
    }
}

/// `resources/subscribe` / `resources/unsubscribe` for one URI; `Err` says why it failed.
async fn legacy_request(
    lane: &Lane,
    method: &str,
    uri: &str,
    timeout: Duration,
) -> Result<(), String> {
    let call = lane
        .request(method, json!({ "uri": uri }))
        .await
        .map_err(|error| error.to_string())?;
    match tokio::time::timeout(timeout, call.response).await {
        Err(_) => Err(format!("no answer within {timeout:?}")),
        Ok(Err(_)) => Err("the lane closed".into()),
        Ok(Ok(Err(error))) => Err(error.to_string()),
        Ok(Ok(Ok(Err(error)))) => Err(format!("{} ({})", error.message, error.code)),
        Ok(Ok(Ok(Ok(_)))) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_are_read_strictly() {
        let filter = ListenFilter::parse(&json!({ "notifications": {
            "toolsListChanged": true,
            "promptsListChanged": false,
            "resourceSubscriptions": ["file:///a", "file:///b", "file:///a"],
        } }))
        .unwrap();
        assert_eq!(
            filter,
            ListenFilter {
                tools_list_changed: true,
                prompts_list_changed: false,
                resources_list_changed: false,
                resource_subscriptions: vec!["file:///a".into(), "file:///b".into()],
            }
        );
        assert_eq!(
            ListenFilter::parse(&json!({ "notifications": {} })).unwrap(),
            ListenFilter::default()
        );
        for (params, expected) in [
            (json!({}), "needs `params.notifications`"),
            (json!({ "notifications": [] }), "must be an object"),
            (
                json!({ "notifications": { "toolsListChanged": "yes" } }),
                "toolsListChanged",
            ),
            (
                json!({ "notifications": { "resourceSubscriptions": "file:///a" } }),
                "array of strings",
            ),
            (
                json!({ "notifications": { "resourceSubscriptions": [1] } }),
                "array of strings",
            ),
        ] {
            let error = ListenFilter::parse(&params).unwrap_err();
            assert!(error.contains(expected), "{params}: {error}");
        }
    }

    #[test]
    fn only_what_the_legacy_server_declares_is_honoured() {
        let asked = ListenFilter {
            tools_list_changed: true,
            prompts_list_changed: true,
            resources_list_changed: true,
            resource_subscriptions: vec!["file:///a".into()],
        };
        let legacy = json!({
            "tools": { "listChanged": true },
            "prompts": {},
            "resources": { "subscribe": true, "listChanged": false },
        });
        let honoured = asked.supported_by(Some(&legacy));
        assert_eq!(
            honoured.to_value(),
            json!({ "toolsListChanged": true, "resourceSubscriptions": ["file:///a"] })
        );
        assert_eq!(asked.supported_by(None).to_value(), json!({}));
    }

    #[test]
    fn streams_get_only_what_they_asked_for() {
        let filter = ListenFilter {
            prompts_list_changed: true,
            resource_subscriptions: vec!["file:///a".into()],
            ..ListenFilter::default()
        };
        assert!(filter.wants("notifications/prompts/list_changed", &json!({})));
        assert!(!filter.wants("notifications/tools/list_changed", &json!({})));
        assert!(!filter.wants("notifications/resources/list_changed", &json!({})));
        assert!(filter.wants(
            "notifications/resources/updated",
            &json!({ "uri": "file:///a" })
        ));
        assert!(!filter.wants(
            "notifications/resources/updated",
            &json!({ "uri": "file:///b" })
        ));
        assert!(!filter.wants("notifications/resources/updated", &json!({})));
        assert!(!filter.wants("notifications/message", &json!({})));
        let methods: Vec<_> = filter.catch_up().into_iter().map(|(m, _)| m).collect();
        assert_eq!(
            methods,
            [
                "notifications/prompts/list_changed",
                "notifications/resources/updated"
            ]
        );
    }

    #[test]
    fn notifications_are_tagged_with_the_subscription_id() {
        let message = tagged(
            "notifications/resources/updated",
            &json!({ "uri": "file:///a", "_meta": { "keep": 1 } }),
            &json!(7),
        );
        assert_eq!(
            serde_json::to_value(&message).unwrap(),
            json!({
                "jsonrpc": "2.0",
                "method": "notifications/resources/updated",
                "params": { "uri": "file:///a", "_meta": { "keep": 1, SUBSCRIPTION_ID: 7 } },
            })
        );
        let message = tagged(
            "notifications/tools/list_changed",
            &Value::Null,
            &json!("s"),
        );
        assert_eq!(
            serde_json::to_value(&message).unwrap()["params"],
            json!({ "_meta": { SUBSCRIPTION_ID: "s" } })
        );
    }
}
