//! The stdio front (2026-07-28): newline-delimited JSON-RPC on the proxy's stdin/stdout.
