//! End-to-end tests of mcp-migrate live in `tests/tests/`; this library holds shared helpers.
//!
//! [`support`] is the harness of the MRTR proxy end-to-end tests (`tests/tests/proxy_*.rs`):
//! it builds and spawns the real peers (the proxy binary and the legacy rmcp 2.2 fixture
//! server), and drives them with a 2026-07-28 client built on rmcp 3.11 ([`support::ModernClient`])
//! or with hand-built HTTP requests ([`support::RawClient`]).
#![forbid(unsafe_code)]

use std::path::PathBuf;

pub mod support;

/// The root of the mcp-migrate workspace, found at run time (see
/// [`mcp_migrate_workspace_bins::workspace_root`]: a test binary may outlive its checkout).
pub fn workspace_root() -> PathBuf {
    mcp_migrate_workspace_bins::workspace_root(env!("CARGO_MANIFEST_DIR"))
}

/// The vendored copy of the official MCP JSON schema of protocol revision `version`
/// (`2026-07-28`, `2025-11-25`, `2025-06-18`): `tests/schemas/mcp-<version>.schema.json`, with its
/// source and licence in `tests/schemas/README.md`. The tests read nothing outside the repository.
pub fn schema_path(version: &str) -> PathBuf {
    workspace_root().join(format!("tests/schemas/mcp-{version}.schema.json"))
}

/// Turns `async fn NAME(kind: BackendKind)` test bodies into two tokio tests each,
/// `NAME::http` and `NAME::stdio` (the proxy in front of the legacy server over each backend
/// transport), each failing after `SECS` seconds (not counting the one-time build):
///
/// ```ignore
/// per_backend!(120; ask_name_completes, ask_twice_takes_two_rounds);
/// ```
#[macro_export]
macro_rules! per_backend {
    ($secs:literal; $($name:ident),+ $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn http() {
                $crate::support::binaries_async().await;
                $crate::support::within(
                    ::std::time::Duration::from_secs($secs),
                    concat!(stringify!($name), " (HTTP backend)"),
                    super::$name($crate::support::BackendKind::Http),
                )
                .await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn stdio() {
                $crate::support::binaries_async().await;
                $crate::support::within(
                    ::std::time::Duration::from_secs($secs),
                    concat!(stringify!($name), " (stdio backend)"),
                    super::$name($crate::support::BackendKind::Stdio),
                )
                .await
            }
        }
    )+};
}
