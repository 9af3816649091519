//! Builds the binaries under test once per test process.

use std::path::{Path, PathBuf};
use std::process::Command;
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
    let (target_dir, profile_dir) = target_and_profile_dirs()?;
    let release = profile_dir
        .file_name()
        .is_some_and(|name| name == "release");

    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(&cargo);
    command
        .current_dir(workspace_root())
        .args(["build", "--quiet", "-p", PROXY_BIN, "-p", LEGACY_BIN])
        .args(["-p", CONFORMANCE_BIN])
        .arg("--target-dir")
        .arg(&target_dir);
    if cfg!(feature = "otel") {
        // The OpenTelemetry exporter tests need the proxy's optional `otel` feature.
        command.args(["--features", "mcp-mrtr-proxy/otel"]);
    }
    if release {
        command.arg("--release");
    }
    let status = command
        .status()
        .map_err(|e| format!("cannot run {cargo:?} to build the e2e binaries: {e}"))?;
    if !status.success() {
        return Err(format!(
            "`cargo build -p {PROXY_BIN} -p {LEGACY_BIN} -p {CONFORMANCE_BIN}` failed ({status})"
        ));
    }
    let bin_dir = if profile_dir.starts_with(&target_dir) {
        profile_dir
    } else {
        target_dir.join(if release { "release" } else { "debug" })
    };
    located(&bin_dir)
}

/// `(target directory, profile directory)` of the running test binary, which runs as
/// `<target>/<profile>/deps/<name>-<hash>`; `CARGO_TARGET_DIR` wins for the target directory.
fn target_and_profile_dirs() -> Result<(PathBuf, PathBuf), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot locate the test binary: {e}"))?;
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| format!("unexpected test binary location {}", exe.display()))?
        .to_path_buf();
    let target_dir = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => profile_dir
            .parent()
            .ok_or_else(|| format!("unexpected target layout at {}", profile_dir.display()))?
            .to_path_buf(),
    };
    Ok((target_dir, profile_dir))
}

/// The cargo target directory the tests build into (for caches such as the conformance suite's
/// Node installation).
pub fn target_dir() -> PathBuf {
    match target_and_profile_dirs() {
        Ok((target, _)) => target,
        Err(why) => panic!("{why}"),
    }
}

fn located(dir: &Path) -> Result<Binaries, String> {
    let binary = |name: &str| dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    let binaries = Binaries {
        proxy: binary(PROXY_BIN),
        legacy_server: binary(LEGACY_BIN),
        conformance_server: binary(CONFORMANCE_BIN),
    };
    for path in [
        &binaries.proxy,
        &binaries.legacy_server,
        &binaries.conformance_server,
    ] {
        if !path.is_file() {
            return Err(format!("the binary {} does not exist", path.display()));
        }
    }
    Ok(binaries)
}

/// [`binaries`] from async code. Tests call it before starting their timeout, so that the first
/// build (minutes on a cold target directory) does not count against it.
pub async fn binaries_async() -> Binaries {
    tokio::task::spawn_blocking(binaries)
        .await
        .expect("building the e2e binaries panicked")
}
