//! What the README promises a new user, checked: the first quick-start command's summary line,
//! the `--version` of the linter, and that CI runs the README's test command.

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
