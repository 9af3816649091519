//! End-to-end tests of mcp-migrate live in `tests/tests/`; this library holds shared helpers.
//!
//! [`support`] is the harness of the MRTR proxy end-to-end tests (`tests/tests/proxy_*.rs`):
//! it builds and spawns the real peers (the proxy binary and the legacy rmcp 2.2 fixture
//! server), and drives them with a 2026-07-28 client built on rmcp 3.11 ([`support::ModernClient`])
//! or with hand-built HTTP requests ([`support::RawClient`]).
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

pub mod support;

/// The root of the mcp-migrate workspace.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits inside the workspace")
        .to_path_buf()
}

/// The shared specification folder: `../shared` next to the repository root (developer machines
/// and CI), or the nearest `shared/` further up (a git worktree nested one level deeper), or
/// `$MCP_SHARED_DIR`. Panics with an explanation when none holds `spec/2026-07-28/schema.json`.
pub fn shared_dir() -> PathBuf {
    const MARKER: &str = "spec/2026-07-28/schema.json";
    if let Some(dir) = std::env::var_os("MCP_SHARED_DIR") {
        let dir = PathBuf::from(dir);
        assert!(
            dir.join(MARKER).is_file(),
            "MCP_SHARED_DIR={} has no {MARKER}",
            dir.display()
        );
        return dir;
    }
    let root = workspace_root();
    root.ancestors()
        .skip(1)
        .map(|dir| dir.join("shared"))
        .find(|dir| dir.join(MARKER).is_file())
        .unwrap_or_else(|| {
            panic!(
                "the shared spec folder is missing: expected {} (holding {MARKER}) next to the \
                 repository root, or set MCP_SHARED_DIR",
                root.join("../shared").display()
            )
        })
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
