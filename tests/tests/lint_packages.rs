//! The linter as Python and npm users get it (docs/lint/install.md): the wheel built from the
//! checkout with maturin and installed with pip into a fresh venv, and the npm packages packed from
//! the binary that wheel installed and installed from the tarballs into an empty folder, each run
//! on the legacy fixture server (`tests/legacy-server`). Each must report exactly what
//! `cargo-mcp-lint` reports there.
//!
//! Needs python3 (with venv and pip), node and npm on PATH, and PyPI for maturin (installed once
//! into `<target>/maturin-venv`); our own packages never come from a registry.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use mcp_migrate_tests::support::packages::{
    build_wheel, git_repository_with_the_fixture, install_wheel, npm_install_tarballs,
    npx_mcp_lint, pack_npm, pack_npm_launcher, pre_commit,
};
use mcp_migrate_tests::workspace_root;

/// The linter's options for the comparison: every finding, machine-readable, on the fixture.
fn lint_args() -> [std::ffi::OsString; 3] {
    [
        "--format".into(),
        "json".into(),
        workspace_root().join("tests/legacy-server").into(),
    ]
}

fn output_of(command: &mut Command) -> Output {
    command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"))
}

/// `cargo-mcp-lint`, built by cargo for this test: what the packages must match.
fn cargo_mcp_lint() -> PathBuf {
    let dir = mcp_migrate_workspace_bins::build(
        &workspace_root(),
        &["cargo-mcp-lint"],
        &["--bin", "cargo-mcp-lint"],
    )
    .unwrap_or_else(|why| panic!("{why}"));
    mcp_migrate_workspace_bins::binary_in(&dir, "cargo-mcp-lint")
        .unwrap_or_else(|why| panic!("{why}"))
}

/// Runs an installed `mcp-lint` (`command` is the program with its leading arguments:
/// `.../bin/mcp-lint`, `npx mcp-lint`) in `cwd` on the fixture, and checks its version, report and
/// exit code against `cargo-mcp-lint`'s in the same folder (the report's paths are relative to it).
#[track_caller]
fn assert_lints_like_the_cargo_subcommand(how: &str, command: impl Fn() -> Command, cwd: &Path) {
    let version = output_of(command().arg("--version"));
    assert!(version.status.success(), "{how} --version: {version:?}");
    assert_eq!(
        String::from_utf8_lossy(&version.stdout),
        format!("mcp-lint {}\n", env!("CARGO_PKG_VERSION")),
        "{how} --version"
    );
    let expected = output_of(
        Command::new(cargo_mcp_lint())
            .args(lint_args())
            .current_dir(cwd),
    );
    let report = String::from_utf8(expected.stdout).unwrap();
    // The comparison means something only if there is something to compare.
    let json: serde_json::Value = serde_json::from_str(&report).unwrap();
    assert!(
        json["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["name"] == "server-initiated-request" && d["severity"] == "error"),
        "the fixture has errors to find: {report}"
    );
    let mut lint = command();
    let output = output_of(lint.args(lint_args()).current_dir(cwd));
    assert_eq!(
        output.status.code(),
        expected.status.code(),
        "{how} exits as cargo-mcp-lint does; stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        report,
        "{how} reports what cargo-mcp-lint reports"
    );
}

/// The wheel (`pip install`) and the npm packages (`npm install` of the two tarballs, `npx
/// mcp-lint`), from one build: the npm platform package carries the binary the wheel installed.
#[test]
fn the_wheel_and_the_npm_packages_install_from_the_checkout_and_lint_the_fixture() {
    let scratch = tempfile::Builder::new()
        .prefix("lint-packages-")
        .tempdir_in(mcp_migrate_tests::support::target_dir())
        .unwrap();
    let scratch = scratch.path();

    let wheels = scratch.join("wheels");
    std::fs::create_dir_all(&wheels).unwrap();
    let wheel = build_wheel(&wheels).unwrap_or_else(|why| panic!("{why}"));
    let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        name.starts_with(&format!("mcp_migrate_lint-{version}-py3-none-")),
        "one wheel for every Python 3, named after the project: {name}"
    );
    let binary = install_wheel(&wheel, &scratch.join("venv")).unwrap_or_else(|why| panic!("{why}"));
    assert_lints_like_the_cargo_subcommand(
        "the wheel's mcp-lint",
        || Command::new(&binary),
        &workspace_root(),
    );

    assert_pre_commit_hooks_run(&wheel, &binary, scratch);

    let tarballs = scratch.join("npm");
    std::fs::create_dir_all(&tarballs).unwrap();
    let (launcher, platform) = pack_npm(&binary, &tarballs).unwrap_or_else(|why| panic!("{why}"));
    let project = scratch.join("project");
    npm_install_tarballs(&project, &[&launcher, &platform]).unwrap_or_else(|why| panic!("{why}"));
    assert_lints_like_the_cargo_subcommand("npx mcp-lint", || npx_mcp_lint(&project), &project);
    assert_same_file(
        &binary,
        &project
            .join("node_modules/@mcp-migrate")
            .join(format!("lint-{}", npm_platform()))
            .join("bin/mcp-lint"),
    );
}

/// pre-commit in a git repository holding the fixture: this repository's hook
/// (`.pre-commit-hooks.yaml`, `try-repo`) with the wheel's `mcp-lint` on the PATH, and the local
/// hook of docs/lint/install.md, which installs the linter itself (here from the wheel's file
/// instead of PyPI). Both must fail the commit with the linter's findings.
fn assert_pre_commit_hooks_run(wheel: &Path, binary: &Path, scratch: &Path) {
    let project = scratch.join("hooked");
    git_repository_with_the_fixture(&project).unwrap_or_else(|why| panic!("{why}"));
    let summary = {
        let output = output_of(
            Command::new(cargo_mcp_lint())
                .args(["--format", "concise", "."])
                .current_dir(&project),
        );
        let stdout = String::from_utf8(output.stdout).unwrap();
        let last = stdout.lines().last().unwrap_or_default().to_string();
        assert!(last.starts_with("found "), "{stdout}");
        last
    };
    let home = scratch.join("pre-commit-home");
    let path = std::env::join_paths(
        std::iter::once(binary.parent().unwrap().to_path_buf()).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )),
    )
    .unwrap();
    let mut try_repo = pre_commit(&home).unwrap_or_else(|why| panic!("{why}"));
    try_repo
        .args(["try-repo"])
        .arg(workspace_root())
        .args(["mcp-lint", "--all-files"])
        .env("PATH", &path)
        .current_dir(&project);
    assert_hook_reports("the repository's hook", &output_of(&mut try_repo), &summary);

    let install = std::fs::read_to_string(workspace_root().join("docs/lint/install.md")).unwrap();
    let local_hook = install
        .split("```yaml\n")
        .find(|block| block.contains("repo: local"))
        .and_then(|block| block.split("```").next())
        .expect("docs/lint/install.md shows a local pre-commit hook");
    let from_pypi = format!("\"mcp-migrate-lint=={}\"", env!("CARGO_PKG_VERSION"));
    assert!(local_hook.contains(&from_pypi), "{local_hook}");
    let config = local_hook.replace(&from_pypi, &format!("{:?}", wheel.display().to_string()));
    std::fs::write(project.join(".pre-commit-config.yaml"), config).unwrap();
    let mut local = pre_commit(&home).unwrap_or_else(|why| panic!("{why}"));
    local.args(["run", "--all-files"]).current_dir(&project);
    assert_hook_reports(
        "the documented local hook",
        &output_of(&mut local),
        &summary,
    );
}

#[track_caller]
fn assert_hook_reports(how: &str, output: &Output, summary: &str) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(1),
        "{how} fails the commit: {output:?}"
    );
    assert!(
        stdout
            .lines()
            .any(|line| line.starts_with("mcp-lint.") && line.ends_with("Failed"))
            && stdout.contains(summary),
        "{how} reports the linter's findings ({summary}): {stdout}"
    );
}

/// Installed without its platform package (`--omit=optional`), or on a platform without one, the
/// npm launcher says what is missing and how else to run the linter, and exits 2 like a usage
/// error; `MCP_LINT_BINARY` runs another binary in its place.
#[test]
fn the_npm_launcher_says_what_is_missing_and_runs_an_override() {
    let scratch = tempfile::Builder::new()
        .prefix("lint-launcher-")
        .tempdir_in(mcp_migrate_tests::support::target_dir())
        .unwrap();
    let tarballs = scratch.path().join("npm");
    std::fs::create_dir_all(&tarballs).unwrap();
    let launcher = pack_npm_launcher(&tarballs).unwrap_or_else(|why| panic!("{why}"));
    let project = scratch.path().join("project");
    npm_install_tarballs(&project, &[&launcher]).unwrap_or_else(|why| panic!("{why}"));
    let output = output_of(npx_mcp_lint(&project).arg("--version"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr}");
    let package = format!("@mcp-migrate/lint-{}", npm_platform());
    assert!(
        stderr.contains(&format!("the package {package}")) && stderr.contains("is not installed"),
        "names the missing package: {stderr}"
    );
    assert!(
        stderr.contains("MCP_LINT_BINARY"),
        "says how else to run it: {stderr}"
    );

    // On a platform without a package (node made to report another CPU), it says which exist.
    let launcher_script = project.join("node_modules/mcp-lint/bin/mcp-lint.js");
    let pretend = scratch.path().join("pretend-mips.cjs");
    std::fs::write(
        &pretend,
        "Object.defineProperty(process, 'arch', { value: 'mips' });\n",
    )
    .unwrap();
    let node = std::env::var_os("NODE").unwrap_or_else(|| "node".into());
    let output = output_of(
        Command::new(&node)
            .arg("--require")
            .arg(&pretend)
            .arg(&launcher_script)
            .arg("--version"),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr}");
    assert!(
        stderr.contains(&format!(
            "no prebuilt binary for {}-mips",
            std::env::consts::OS.replace("macos", "darwin")
        )) && stderr.contains("linux-x64, ")
            && stderr.contains("darwin-arm64"),
        "names the platform and lists those there are: {stderr}"
    );

    // MCP_LINT_BINARY runs another binary, with its output and exit code.
    let output = output_of(
        npx_mcp_lint(&project)
            .arg("--version")
            .env("MCP_LINT_BINARY", cargo_mcp_lint()),
    );
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!("cargo-mcp-lint {}\n", env!("CARGO_PKG_VERSION"))
    );
    let output = output_of(
        npx_mcp_lint(&project)
            .args(["--format", "nonsense"])
            .env("MCP_LINT_BINARY", cargo_mcp_lint()),
    );
    assert_eq!(
        output.status.code(),
        Some(2),
        "the binary's exit code: {output:?}"
    );
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("'nonsense'"),
        "the binary's own message: {output:?}"
    );
}

/// Node's name of this platform (`linux-x64`), as the npm platform packages are named.
fn npm_platform() -> String {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    };
    let cpu = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    };
    format!("{os}-{cpu}")
}

#[track_caller]
fn assert_same_file(expected: &Path, actual: &Path) {
    let read =
        |path: &Path| std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        read(expected) == read(actual),
        "{} should be the binary the wheel installed ({})",
        actual.display(),
        expected.display()
    );
}
