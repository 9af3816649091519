//! `mcp-mrtr-proxy`: serves MCP 2026-07-28 clients from an unmodified legacy MCP server.
//!
//! Not built yet: see issue 3. The crate exists so the workspace layout is fixed.
#![forbid(unsafe_code)]
