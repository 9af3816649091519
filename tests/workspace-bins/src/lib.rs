//! Builds binaries of this workspace for the tests that spawn them, with the same cargo, target
//! directory and profile as the running test binary, so the build is shared with `cargo test`'s
//! own and costs nothing when it is up to date; and finds the workspace the tests run in.
//!
//! Used by the proxy's backend tests (`proxy/tests/backend_support`), the end-to-end harness
//! (`tests/src/support/build.rs`) and the linter's tests.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The root of the workspace the tests run in: the nearest folder, from the package's manifest
/// directory up, whose `Cargo.toml` has a `[workspace]` table.
///
/// The manifest directory is read at run time (`cargo test` sets `CARGO_MANIFEST_DIR` for the
/// test processes it runs); `built_in` (the caller's `env!("CARGO_MANIFEST_DIR")`) is only the
/// fallback for a test binary run by hand. Cargo reuses a test binary across checkouts that share
/// a target directory, and after a checkout is moved: the path compiled into it may no longer
/// exist, or be another checkout.
pub fn workspace_root(built_in: &str) -> PathBuf {
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .filter(|dir| !dir.is_empty())
        .map_or_else(|| PathBuf::from(built_in), PathBuf::from);
    manifest_dir
        .ancestors()
        .find(|dir| {
            std::fs::read_to_string(dir.join("Cargo.toml"))
                .is_ok_and(|manifest| manifest.lines().any(|line| line.trim() == "[workspace]"))
        })
        .unwrap_or(&manifest_dir)
        .to_path_buf()
}

/// Why `command` could not start. When its working directory is missing the OS reports the
/// *program* as not found ("cannot run cargo: No such file or directory"), so the message names
/// the directory instead.
pub fn spawn_error(command: &Command, error: &std::io::Error) -> String {
    let program = command.get_program();
    match command.get_current_dir() {
        Some(dir) if !dir.is_dir() => format!(
            "cannot run {program:?}: its working directory {} does not exist ({error})",
            dir.display()
        ),
        _ => format!("cannot run {program:?}: {error}"),
    }
}

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
    let status = command.status().map_err(|e| spawn_error(&command, &e))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_root_comes_from_the_run_time_manifest_dir() {
        // What a test binary built in another checkout (since moved or deleted) passes.
        let root = workspace_root("/nonexistent/old-checkout/tests/workspace-bins");
        assert!(
            root.join("tests/workspace-bins/Cargo.toml").is_file(),
            "{}",
            root.display()
        );
    }

    #[test]
    fn a_missing_working_directory_is_named_in_the_error() {
        let mut command = Command::new("cargo");
        command.current_dir("/nonexistent/old-checkout");
        let error = command.status().unwrap_err();
        let message = spawn_error(&command, &error);
        assert!(
            message.contains("working directory /nonexistent/old-checkout does not exist"),
            "{message}"
        );
    }
}
