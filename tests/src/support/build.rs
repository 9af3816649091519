//! Builds the binaries under test once per test process.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::workspace_root;

/// Paths of the binaries the end-to-end tests spawn.
#[derive(Debug, Clone)]
pub struct Binaries {
    pub proxy: PathBuf,
    pub legacy_server: PathBuf,
    /// The legacy backend of the conformance run (`tests/conformance-server`).
    pub conformance_server: PathBuf,
}

const PROXY_BIN: &str = "mcp-mrtr-proxy";
const LEGACY_BIN: &str = "mcp-legacy-fixture-server";
const CONFORMANCE_BIN: &str = "mcp-legacy-conformance-server";

/// Builds `mcp-mrtr-proxy`, `mcp-legacy-fixture-server` and `mcp-legacy-conformance-server`
/// (once per test process) with the same cargo, target directory and profile as the running test
/// binary, and returns their paths.
///
/// `MCP_E2E_BIN_DIR` skips the build and takes the binaries from that directory instead.
///
/// Blocking: call it from `spawn_blocking` (the async helpers of this module do).
pub fn binaries() -> Binaries {
    static BUILT: OnceLock<Result<Binaries, String>> = OnceLock::new();
    match BUILT.get_or_init(build) {
        Ok(binaries) => binaries.clone(),
        Err(why) => panic!("{why}"),
    }
}

fn build() -> Result<Binaries, String> {
    if let Some(dir) = std::env::var_os("MCP_E2E_BIN_DIR") {
        return located(Path::new(&dir));
    }
    // The OpenTelemetry exporter tests need the proxy's optional `otel` feature.
    let features: &[&str] = if cfg!(feature = "otel") {
        &["--features", "mcp-mrtr-proxy/otel"]
    } else {
        &[]
    };
    let bin_dir = mcp_migrate_workspace_bins::build(
        &workspace_root(),
        &[PROXY_BIN, LEGACY_BIN, CONFORMANCE_BIN],
        features,
    )?;
    located(&bin_dir)
}

/// The cargo target directory the tests build into (for caches such as the conformance suite's
/// Node installation).
pub fn target_dir() -> PathBuf {
    match mcp_migrate_workspace_bins::target_and_profile_dirs() {
        Ok((target, _)) => target,
        Err(why) => panic!("{why}"),
    }
}

fn located(dir: &Path) -> Result<Binaries, String> {
    use mcp_migrate_workspace_bins::binary_in;
    Ok(Binaries {
        proxy: binary_in(dir, PROXY_BIN)?,
        legacy_server: binary_in(dir, LEGACY_BIN)?,
        conformance_server: binary_in(dir, CONFORMANCE_BIN)?,
    })
}

/// [`binaries`] from async code. Tests call it before starting their timeout, so that the first
/// build (minutes on a cold target directory) does not count against it.
pub async fn binaries_async() -> Binaries {
    tokio::task::spawn_blocking(binaries)
        .await
        .expect("building the e2e binaries panicked")
}
