//! `mcp-mrtr-proxy`: serves MCP 2026-07-28 clients from an unmodified legacy MCP server, turning
//! the legacy server's mid-call requests into Multi Round-Trip Request (MRTR) rounds.
//!
//! Module map (one concern each; data flow in ARCHITECTURE.md):
//! - [`front`]: the 2026-07-28 side (Streamable HTTP or stdio), validation, response sinks;
//! - [`engine`]: the translator: pass-through, MRTR rounds, pauses, deprecation warnings;
//! - [`backend`]: lanes (legacy sessions / child processes), the lane pool, legacy transports;
//! - [`state`]: sealing and opening `requestState`;
//! - [`store`]: the sled pause store;
//! - [`capabilities`]: client capability profiles;
//! - [`jsonrpc`]: JSON-RPC messages and error codes.

#![forbid(unsafe_code)]

pub mod backend;
pub mod capabilities;
pub mod engine;
pub mod front;
pub mod jsonrpc;
pub mod state;
pub mod store;
