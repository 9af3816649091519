//! What the README promises a new user, checked: the first quick-start command's summary line,
//! the `--version` of the linter under both its names, the install section's binaries, and that CI
//! runs the README's test command.

use std::path::PathBuf;
use std::process::Command;

fn workspace_root() -> PathBuf {
    mcp_migrate_workspace_bins::workspace_root(env!("CARGO_MANIFEST_DIR"))
}

/// The README's quick start says what `cargo run -p cargo-mcp-lint -- tests/legacy-server` prints
/// last (`found N errors, M warnings in F files`) and that it exits 1.
#[test]
fn the_quick_start_summary_in_the_readme_is_what_the_linter_prints() {
    let root = workspace_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let promised = readme
        .lines()
        .find_map(|line| {
            let start = line.find("found ")?;
            let rest = &line[start..];
            let end = rest.find(" files")? + " files".len();
            Some(rest[..end].to_string())
        })
        .expect("the README's quick start quotes the linter's `found ... files` summary line");
    let output = Command::new(env!("CARGO_BIN_EXE_cargo-mcp-lint"))
        .args(["--format", "concise", "tests/legacy-server"])
        .current_dir(&root)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    let printed = stdout.lines().last().unwrap_or_default();
    assert_eq!(
        printed, promised,
        "README quick start is stale: the linter prints `{printed}`"
    );
    assert_eq!(
        output.status.code(),
        Some(1),
        "the quick start says it exits 1"
    );
}

#[test]
fn version_is_printed_directly_and_as_a_cargo_subcommand() {
    let expected = format!("cargo-mcp-lint {}\n", env!("CARGO_PKG_VERSION"));
    for args in [&["--version"][..], &["mcp-lint", "--version"][..]] {
        let output = Command::new(env!("CARGO_BIN_EXE_cargo-mcp-lint"))
            .args(args)
            .output()
            .unwrap();
        assert!(output.status.success(), "{args:?}");
        assert_eq!(
            String::from_utf8(output.stdout).unwrap(),
            expected,
            "{args:?}"
        );
    }
}

/// The standalone `mcp-lint` (what the Python and npm packages install) prints its own name.
#[test]
fn version_is_printed_by_the_standalone_binary() {
    let output = Command::new(env!("CARGO_BIN_EXE_mcp-lint"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        format!("mcp-lint {}\n", env!("CARGO_PKG_VERSION"))
    );
}

/// The standalone binary takes the same options and finds the same things as `cargo-mcp-lint`,
/// and does not drop a leading `mcp-lint` (only cargo passes one): here it is a path that does not
/// exist, an error.
#[test]
fn the_standalone_binary_reports_what_the_cargo_subcommand_reports() {
    let root = workspace_root();
    let run = |binary: &str, args: &[&str]| {
        Command::new(binary)
            .args(args)
            .current_dir(&root)
            .output()
            .unwrap()
    };
    let args = ["--format", "json", "tests/legacy-server"];
    let subcommand = run(env!("CARGO_BIN_EXE_cargo-mcp-lint"), &args);
    let standalone = run(env!("CARGO_BIN_EXE_mcp-lint"), &args);
    assert_eq!(standalone.status.code(), Some(1));
    assert_eq!(standalone.status.code(), subcommand.status.code());
    assert!(standalone.stdout.len() > 100, "findings expected");
    assert_eq!(
        String::from_utf8(standalone.stdout).unwrap(),
        String::from_utf8(subcommand.stdout).unwrap()
    );
    let leading = run(
        env!("CARGO_BIN_EXE_mcp-lint"),
        &["mcp-lint", "--format", "concise"],
    );
    assert_eq!(leading.status.code(), Some(2), "{leading:?}");
}

/// The README's install section names every way to get the linter: cargo, pip/pipx, npm/npx.
#[test]
fn the_install_section_names_each_package() {
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).unwrap();
    let install: String = readme
        .split("\n## ")
        .find(|section| section.starts_with("Install"))
        .expect("the README has an Install section")
        .to_string();
    for needle in [
        "cargo install --locked",
        "pipx run --spec mcp-migrate-lint mcp-lint",
        "pip install mcp-migrate-lint",
        "npx mcp-lint .",
        "npm install --save-dev mcp-lint",
        "docs/lint/install.md",
    ] {
        assert!(
            install.contains(needle),
            "the install section lacks `{needle}`"
        );
    }
}

/// The `repo:` pre-commit hook (`.pre-commit-hooks.yaml`) runs a command line `mcp-lint` accepts:
/// on this repository it lints (exit 0 or 1), never a usage error.
#[test]
fn the_pre_commit_hook_runs_a_command_line_the_linter_accepts() {
    let root = workspace_root();
    let hooks = std::fs::read_to_string(root.join(".pre-commit-hooks.yaml")).unwrap();
    let entry = hooks
        .lines()
        .find_map(|line| line.trim().strip_prefix("entry:"))
        .expect("the hook has an entry")
        .trim();
    let mut words = entry.split_whitespace();
    assert_eq!(words.next(), Some("mcp-lint"), "{entry}");
    let output = Command::new(env!("CARGO_BIN_EXE_mcp-lint"))
        .args(words)
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "`{entry}`: {output:?}"
    );
}

/// The README's second quick-start command (the whole test suite) is a line of `.ci/run`, as is.
#[test]
fn ci_runs_the_test_command_the_readme_gives() {
    let root = workspace_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let command = readme
        .lines()
        .skip_while(|line| !line.starts_with("# 2. run the whole test suite"))
        .nth(1)
        .expect("the README's quick start has a step 2 with the test command")
        .trim();
    assert!(command.starts_with("cargo test"), "{command}");
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    assert!(
        ci.lines().any(|line| line.trim() == command),
        "`.ci/run` does not run the README's test command `{command}`"
    );
}
