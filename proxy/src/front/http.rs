//! The Streamable HTTP front (2026-07-28): POST `/mcp`, JSON or per-request SSE responses.
