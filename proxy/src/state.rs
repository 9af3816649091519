//! `requestState` sealing: an AEAD-sealed handle to a paused legacy call, bound to the caller,
//! the method, a digest of the original params, the round and a short expiry.
//!
//! Built in its own slice: see ARCHITECTURE.md, "mcp-mrtr-proxy".
