//! The 2026-07-28 side: Streamable HTTP (`http.rs`, optionally over TLS: `tls.rs`) or stdio
//! (`stdio.rs`), request validation (`validate.rs`), and the hand-off to the engine.
//!
//! Transports only. A validated request becomes a [`FrontRequest`] (the request types are in
//! [`crate::request`]); both fronts validate a message ([`validate::validate`]), then spawn one
//! task per request running [`Handler::handle`], and forward what it writes to the
//! [`ResponseSink`](crate::request::ResponseSink) until the final response.

pub mod callers;
pub mod http;
mod http_legacy;
pub mod protected_resource;
pub mod read;
pub mod stdio;
mod stdio_legacy;
pub mod tls;
pub mod validate;
pub mod well_known;

#[cfg(doc)]
use crate::request::{FrontRequest, Handler};

/// How many outgoing items one request may have queued before the engine waits.
pub const SINK_CAPACITY: usize = 64;
