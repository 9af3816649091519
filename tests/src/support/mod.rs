//! Harness of the MRTR proxy end-to-end tests.
//!
//! - [`binaries`]: builds `mcp-mrtr-proxy` and `mcp-legacy-fixture-server` once per test process;
//! - [`LegacyHttpServer`], [`Proxy`], [`Stack`]: the real peers as child processes, killed on drop;
//! - [`ModernClient`]: an rmcp 3.11 client (2026-07-28, `server/discover`) whose
//!   [`ScriptedHandler`] answers input requests from a [`Script`] and records what it was asked;
//! - [`RawClient`]: hand-built 2026-07-28 HTTP requests (JSON or SSE responses);
//! - [`SpecSchema`]: validation against the 2026-07-28 `schema.json` (`$defs` by name).

mod build;
mod modern;
mod process;
mod raw;
mod schema;
mod script;

use std::future::Future;
use std::time::Duration;

pub use build::{binaries, Binaries};
pub use modern::{default_capabilities, tool_params, tool_text, ModernClient, ScriptedHandler};
pub use process::{Backend, BackendKind, LegacyHttpServer, Proxy, ProxyOptions, Stack};
pub use raw::{parse_sse, RawClient, RawRequest, RawResponse, PROTOCOL_VERSION};
pub use schema::SpecSchema;
pub use script::{FormAction, Script, SeenRequest};

/// Runs `future`, failing the test with `what` if it takes longer than `limit`.
pub async fn within<T>(limit: Duration, what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(limit, future).await {
        Ok(value) => value,
        Err(_) => panic!("timed out after {limit:?}: {what}"),
    }
}
