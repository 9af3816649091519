//! The linter's Python wheel and npm packages (`packaging/`, docs/lint/install.md), built from the
//! checkout and installed the way their users install them.
//!
//! One build of `mcp-lint` serves both: maturin (pinned in `packaging/pypi/build-requirements.txt`,
//! installed once into `<target>/maturin-venv`) compiles it with the running test's cargo profile
//! and target directory, so the dependencies `cargo test` compiled are reused and only the binary is
//! relinked; the npm packages are packed from the binary the wheel installed. Each step runs under
//! a time limit and fails with the tool's output.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::build::target_dir;
use super::command::{run_captured, RunError};
use super::python::{run, venv_with_requirements};
use crate::workspace_root;

/// The venv holding maturin, under the cargo target directory.
const MATURIN_VENV: &str = "maturin-venv";
/// maturin's pinned version, relative to the workspace root.
const BUILD_REQUIREMENTS: &str = "packaging/pypi/build-requirements.txt";
/// The wheel's project (its `pyproject.toml`), relative to the workspace root.
const PYPI_PROJECT: &str = "packaging/pypi";
/// The npm build script and the launcher package, relative to the workspace root.
const NPM_BUILD: &str = "packaging/npm/build.mjs";
const NPM_LAUNCHER: &str = "packaging/npm/mcp-lint";
/// How long a build (maturin's cargo build, on a cold target directory) or an install may take.
const STEP_TIMEOUT: Duration = Duration::from_secs(900);

/// Builds the wheel into `out` with `maturin build` (the running test's profile and target
/// directory, `--locked`) and returns its path. Blocking.
pub fn build_wheel(out: &Path) -> Result<PathBuf, String> {
    let maturin_venv = target_dir().join(MATURIN_VENV);
    let python = venv_with_requirements(
        &maturin_venv,
        &workspace_root().join(BUILD_REQUIREMENTS),
        "the venv that builds the wheel",
    )?;
    let (target, profile_dir) = mcp_migrate_workspace_bins::target_and_profile_dirs()?;
    let release = profile_dir
        .file_name()
        .is_some_and(|name| name == "release");
    let mut maturin = Command::new(python.with_file_name("maturin"));
    maturin
        .current_dir(workspace_root().join(PYPI_PROJECT))
        .args(["build", "--locked", "--out"])
        .arg(out)
        .arg("--target-dir")
        .arg(&target)
        .args(if release {
            ["--profile", "release"]
        } else {
            ["--profile", "dev"]
        });
    run_step(&mut maturin, "maturin build")?;
    only_file(out, ".whl")
}

/// Installs `wheel` into a new venv at `venv` the way a user does (`pip install`, here from the
/// file alone: `--no-index`) and returns the `mcp-lint` it put on the venv's PATH. Blocking.
pub fn install_wheel(wheel: &Path, venv: &Path) -> Result<PathBuf, String> {
    let what = "a fresh venv for the wheel";
    let mut command = Command::new("python3");
    command.args(["-m", "venv"]).arg(venv);
    run(command, "python3 -m venv", what)?;
    let mut command = Command::new(venv.join("bin").join("pip"));
    command
        .args(["install", "--disable-pip-version-check", "-q", "--no-index"])
        .arg(wheel);
    run(command, "pip install <wheel>", what)?;
    let binary = venv.join("bin").join("mcp-lint");
    if binary.is_file() {
        Ok(binary)
    } else {
        Err(format!(
            "pip installed the wheel, but {} does not exist",
            binary.display()
        ))
    }
}

/// `node packaging/npm/build.mjs --binary BINARY --out OUT`: the launcher and this platform's
/// binary package as tarballs in `out`, returned as `(launcher, platform package)`. Blocking.
pub fn pack_npm(binary: &Path, out: &Path) -> Result<(PathBuf, PathBuf), String> {
    let mut command = Command::new(node());
    command
        .arg(workspace_root().join(NPM_BUILD))
        .arg("--binary")
        .arg(binary)
        .arg("--out")
        .arg(out);
    run_step(&mut command, "node packaging/npm/build.mjs")?;
    let tarballs = files(out, ".tgz")?;
    let launcher = tarballs
        .iter()
        .find(|path| file_name(path).starts_with("mcp-lint-"));
    let platform = tarballs
        .iter()
        .find(|path| file_name(path).starts_with("mcp-migrate-lint-"));
    match (launcher, platform) {
        (Some(launcher), Some(platform)) if tarballs.len() == 2 => {
            Ok((launcher.clone(), platform.clone()))
        }
        _ => Err(format!(
            "build.mjs should pack mcp-lint-*.tgz and mcp-migrate-lint-*.tgz into {}, found {tarballs:?}",
            out.display()
        )),
    }
}

/// `npm pack` of the launcher package alone (no binary: its platform package is left out), into
/// `out`. Blocking.
pub fn pack_npm_launcher(out: &Path) -> Result<PathBuf, String> {
    let mut command = Command::new(npm());
    command
        .args(["pack", "--pack-destination"])
        .arg(out)
        .current_dir(workspace_root().join(NPM_LAUNCHER));
    run_step(&mut command, "npm pack")?;
    only_file(out, ".tgz")
}

/// `npm install --offline TARBALL...` into the empty folder `project` (created): the packages come
/// from the files alone, nothing from the registry. Blocking.
pub fn npm_install_tarballs(project: &Path, tarballs: &[&Path]) -> Result<(), String> {
    std::fs::create_dir_all(project)
        .map_err(|e| format!("cannot create {}: {e}", project.display()))?;
    let mut command = Command::new(npm());
    command
        .args(["install", "--offline", "--no-audit", "--no-fund"])
        .args(tarballs)
        .current_dir(project);
    run_step(&mut command, "npm install <tarballs>")
}

/// `npx --offline mcp-lint ARGS...` in `project` (where [`npm_install_tarballs`] installed it).
pub fn npx_mcp_lint(project: &Path) -> Command {
    let npx = std::env::var_os("NPX").unwrap_or_else(|| "npx".into());
    let mut command = Command::new(npx);
    command
        .args(["--no", "--offline", "mcp-lint"])
        .current_dir(project);
    command
}

fn npm() -> std::ffi::OsString {
    std::env::var_os("NPM").unwrap_or_else(|| "npm".into())
}

fn node() -> std::ffi::OsString {
    std::env::var_os("NODE").unwrap_or_else(|| "node".into())
}

fn run_step(command: &mut Command, what: &str) -> Result<(), String> {
    run_captured(command, STEP_TIMEOUT).map_err(|error| match error {
        RunError::Spawn(e) => format!("`{what}` cannot run ({command:?}): {e}"),
        RunError::Failed {
            why,
            stdout,
            stderr,
        } => format!(
            "`{what}` failed ({why}): {command:?}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}"
        ),
    })
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

/// The files of `dir` whose names end with `suffix`, sorted.
fn files(dir: &Path, suffix: &str) -> Result<Vec<PathBuf>, String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut found: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.is_file() && file_name(path).ends_with(suffix))
        .collect();
    found.sort();
    Ok(found)
}

fn only_file(dir: &Path, suffix: &str) -> Result<PathBuf, String> {
    match files(dir, suffix)?.as_slice() {
        [one] => Ok(one.clone()),
        other => Err(format!(
            "expected one *{suffix} in {}, found {other:?}",
            dir.display()
        )),
    }
}

/// The venv holding pre-commit, under the cargo target directory, and its pinned version.
const PRE_COMMIT_VENV: &str = "pre-commit-venv";
const PRE_COMMIT_REQUIREMENTS: &str = "tests/pre-commit-requirements.txt";

/// `pre-commit` (installed once into `<target>/pre-commit-venv`), with its cache in `home`.
/// Blocking.
pub fn pre_commit(home: &Path) -> Result<Command, String> {
    let python = venv_with_requirements(
        &target_dir().join(PRE_COMMIT_VENV),
        &workspace_root().join(PRE_COMMIT_REQUIREMENTS),
        "the venv of pre-commit",
    )?;
    let mut command = Command::new(python.with_file_name("pre-commit"));
    command.env("PRE_COMMIT_HOME", home);
    Ok(command)
}

/// A new git repository at `dir` holding a copy of the legacy fixture server's manifest and
/// sources, committed (pre-commit lints what git tracks). Blocking.
pub fn git_repository_with_the_fixture(dir: &Path) -> Result<(), String> {
    let fixture = workspace_root().join("tests/legacy-server");
    std::fs::create_dir_all(dir.join("src"))
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for file in ["Cargo.toml", "src/main.rs"] {
        std::fs::copy(fixture.join(file), dir.join(file))
            .map_err(|e| format!("cannot copy {file} into {}: {e}", dir.display()))?;
    }
    let git = |args: &[&str]| {
        let mut command = Command::new("git");
        command
            .args([
                "-c",
                "user.name=mcp-migrate tests",
                "-c",
                "user.email=tests@invalid",
            ])
            .args(args)
            .current_dir(dir);
        run_step(&mut command, &format!("git {}", args.join(" ")))
    };
    git(&["init", "--quiet"])?;
    git(&["add", "--all"])?;
    git(&[
        "commit",
        "--quiet",
        "--message",
        "the legacy fixture server",
    ])
}
