//! A legacy, push-style MCP server that exposes what the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`) calls on a server under test.
//!
//! It is the backend of the proxy's conformance run: `mcp-mrtr-proxy` in front of this server
//! must pass the suite's 2026-07-28 server scenarios, and this server alone must pass the
//! 2025-11-25 ones. So it is written the way servers were written before 2026-07-28, on the
//! legacy Rust SDK rmcp 2.2: every tool that needs something from the client *pushes* an
//! `elicitation/create`, `sampling/createMessage` or `roots/list` request in the middle of its
//! own call and awaits the answer. The MRTR scenarios' tools (`test_input_required_result_*`)
//! are no exception: turning those pushes into `input_required` rounds is the proxy's job.
//!
//! Module map:
//! - [`catalog`]: the fixed tools, prompts and resources with the outputs the suite expects;
//! - [`push`]: the tools and the prompt that push requests to the client mid-call;
//! - [`server`]: the `ServerHandler` that dispatches to both.
//!
//! Deliberately legacy code (the linter's dogfood run excludes it). Do not copy it.

// rmcp 2.x marks sampling, roots and logging `#[deprecated]` (SEP-2577); legacy servers
// silence that and carry on.
#![allow(deprecated)]

mod catalog;
mod push;
mod server;

use server::ConformanceServer;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    mcp_legacy_fixture_support::run(
        "Legacy MCP server (rmcp 2.2, push style) with the conformance suite's tools, prompts \
         and resources.",
        ConformanceServer::new,
    )
    .await
}
