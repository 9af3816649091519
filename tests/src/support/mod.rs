//! Harness of the MRTR proxy end-to-end tests.
//!
//! - [`binaries`]: builds `mcp-mrtr-proxy`, `mcp-legacy-fixture-server` and
//!   `mcp-legacy-conformance-server` once per test process;
//! - [`LegacyHttpServer`], [`Proxy`], [`Stack`]: the real peers as child processes, killed on drop;
//! - [`ModernClient`]: an rmcp 3.11 client (2026-07-28, `server/discover`) whose
//!   [`ScriptedHandler`] answers input requests from a [`Script`] and records what it was asked;
//! - [`RawClient`]: hand-built 2026-07-28 HTTP requests (JSON or SSE responses);
//! - [`SpecSchema`]: validation against the 2026-07-28 `schema.json` (`$defs` by name);
//! - [`legacy_clients`]: legacy clients on the official Python and TypeScript SDKs 1.x;
//! - [`legacy_post`]: a legacy client's POST with a bearer token, for the authentication tests;
//! - [`conformance`]: the official conformance suite (install, run, judge against a baseline);
//! - [`sdk_servers`]: legacy servers on the Python and TypeScript SDKs (installed once per run);
//! - [`RedisServer`]: a real `redis-server` on a free loopback port (the Redis pause store);
//! - [`packages`]: the linter's Python wheel and npm packages, built from the checkout and installed;
//! - [`tokens`]: JWTs signed by a generated key, and their JWKS;
//! - [`tls`]: a test certificate authority and an HTTPS client, for the proxy's TLS front.

mod build;
pub mod command;
pub mod conformance;
pub mod isolation;
pub mod legacy_clients;
pub mod legacy_post;
mod modern;
pub mod node;
pub mod packages;
mod process;
pub mod protected;
pub mod python;
mod raw;
mod redis;
mod schema;
mod script;
pub mod sdk_servers;
pub mod tls;
pub mod tokens;

use std::future::Future;
use std::time::Duration;

pub use build::{binaries, binaries_async, target_dir, Binaries};
pub use isolation::assert_concurrent_clients_are_isolated;
pub use legacy_clients::{LegacyReport, LegacyRun, LegacySdk, LegacyTarget};
pub use modern::{default_capabilities, tool_params, tool_text, ModernClient, ScriptedHandler};
pub use node::LegacyTsServer;
pub use process::{
    is_alive, metric, Backend, BackendKind, LegacyHttpServer, Proxy, ProxyOptions, Stack, LOG_WAIT,
};
pub use python::LegacySseServer;
pub use raw::{
    parse_sse, ListenStream, RawClient, RawRequest, RawResponse, StreamItem, PROTOCOL_VERSION,
};
pub use redis::{redis_server_binary, RedisServer, ReservedPort};
pub use schema::SpecSchema;
pub use script::{FormAction, Script, SeenRequest};

/// Runs `future`, failing the test with `what` if it takes longer than `limit`.
pub async fn within<T>(limit: Duration, what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(limit, future).await {
        Ok(value) => value,
        Err(_) => panic!("timed out after {limit:?}: {what}"),
    }
}

/// Waits for an event: polls `check` every 50 ms until it returns true, failing the test with
/// `what` after `limit`. `limit` is a budget for a loaded 2-core machine (tens of seconds), not a
/// synchronisation delay: on a fast machine the wait ends as soon as the event happened.
pub async fn wait_until<F, Fut>(limit: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    within(limit, what, async {
        while !check().await {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
}

/// Whether any string inside `value` (keys excluded) contains `needle`.
pub fn json_mentions(value: &serde_json::Value, needle: &str) -> bool {
    use serde_json::Value;
    match value {
        Value::String(s) => s.contains(needle),
        Value::Array(items) => items.iter().any(|v| json_mentions(v, needle)),
        Value::Object(map) => map.values().any(|v| json_mentions(v, needle)),
        _ => false,
    }
}

/// rmcp's `InputResponses` from an `inputResponses` JSON object.
pub fn input_responses(value: serde_json::Value) -> rmcp::model::InputResponses {
    match value {
        serde_json::Value::Object(map) => map.into_iter().collect(),
        other => panic!("inputResponses must be an object, not {other}"),
    }
}

/// Panics unless `response` is a JSON-RPC error answering `request` with one of `codes`;
/// returns the error message.
#[track_caller]
pub fn assert_error(response: &RawResponse, request: &RawRequest, codes: &[i64]) -> String {
    let error = response.error();
    let code = error["code"].as_i64();
    assert!(
        code.is_some_and(|code| codes.contains(&code)),
        "expected an error with a code in {codes:?}, got {response:#?}"
    );
    assert_eq!(
        &response.message["id"],
        request.id(),
        "the error must answer the request's id"
    );
    let message = error["message"].as_str().unwrap_or_default().to_string();
    assert!(!message.is_empty(), "the error must say why: {response:#?}");
    message
}
