//! Builds binaries of this workspace for the tests that spawn them, with the same cargo, target
//! directory and profile as the running test binary, so the build is shared with `cargo test`'s
//! own and costs nothing when it is up to date.
//!
//! Used by the proxy's backend tests (`proxy/tests/backend_support`) and the end-to-end harness
//! (`tests/src/support/build.rs`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// `(target directory, profile directory)` of the running test binary, which runs as
/// `<target>/<profile>/deps/<name>-<hash>`; `CARGO_TARGET_DIR` wins for the target directory.
pub fn target_and_profile_dirs() -> Result<(PathBuf, PathBuf), String> {
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

/// Runs `cargo build --quiet -p PACKAGE...` (plus `extra_args`) in `workspace` into the running
/// test's target directory and profile, and returns the directory holding the binaries.
/// Blocking: call it from `spawn_blocking` in async code.
pub fn build(workspace: &Path, packages: &[&str], extra_args: &[&str]) -> Result<PathBuf, String> {
    let (target_dir, profile_dir) = target_and_profile_dirs()?;
    let release = profile_dir
        .file_name()
        .is_some_and(|name| name == "release");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(&cargo);
    command.current_dir(workspace).args(["build", "--quiet"]);
    for package in packages {
        command.args(["-p", package]);
    }
    command
        .args(extra_args)
        .arg("--target-dir")
        .arg(&target_dir);
    if release {
        command.arg("--release");
    }
    let status = command
        .status()
        .map_err(|e| format!("cannot run {cargo:?}: {e}"))?;
    if !status.success() {
        return Err(format!(
            "`cargo build -p {}` failed ({status})",
            packages.join(" -p ")
        ));
    }
    Ok(if profile_dir.starts_with(&target_dir) {
        profile_dir
    } else {
        target_dir.join(if release { "release" } else { "debug" })
    })
}

/// `dir/name` with the platform's executable suffix, if that file exists.
pub fn binary_in(dir: &Path, name: &str) -> Result<PathBuf, String> {
    let path = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!("the binary {} does not exist", path.display()))
    }
}
