//! Front request validation (2026-07-28 Streamable HTTP and `_meta` rules).

use crate::jsonrpc::codes;

/// The HTTP status of a JSON-RPC error sent as a plain JSON response.
pub fn http_status(code: i64) -> u16 {
    match code {
        codes::HEADER_MISMATCH
        | codes::MISSING_REQUIRED_CLIENT_CAPABILITY
        | codes::UNSUPPORTED_PROTOCOL_VERSION => 400,
        codes::METHOD_NOT_FOUND => 404,
        _ => 200,
    }
}
