//! The sled pause store: one record per paused legacy call, single-use claims, expiry sweeps,
//! and recognition of pauses left over from a previous run.
//!
//! Built in its own slice: see ARCHITECTURE.md, "mcp-mrtr-proxy".
