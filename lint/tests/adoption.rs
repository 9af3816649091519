//! `--baseline`, `--update-baseline` and `--new-from-rev` end to end, on a copy of a rule fixture
//! (and, for `--new-from-rev`, a real git repository made for the test).

mod support;

use std::path::Path;
use std::process::Command;

use support::{lint_in, text, workspace_root};

/// A copy of the `server-initiated-request` fixture (errors: a run without baseline fails).
fn project() -> tempfile::TempDir {
    let source = workspace_root().join("tests/fixtures/lint/server-initiated-request");
    let dir = tempfile::tempdir().unwrap();
    for relative in [
        "Cargo.toml",
        "src/positive.rs",
        "src/positive_background.rs",
    ] {
        let target = dir.path().join(relative);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(source.join(relative), target).unwrap();
    }
    dir
}

const BASELINE: &[&str] = &[
    "--format",
    "concise",
    "--baseline",
    "mcp-lint-baseline.toml",
    ".",
];

const NEW_CALL: &str = "
pub async fn ask_again(peer: Peer<RoleServer>) {
    let _ = peer.elicit::<TargetRegion>(\"Which region, again?\").await;
}
";

#[test]
fn a_baseline_silences_known_findings_across_edits_moves_and_renames() {
    let dir = project();
    let path = dir.path();
    let plain = lint_in(path, &["--format", "concise", "."]);
    assert_eq!(plain.status.code(), Some(1), "the fixture has errors");

    let mut update = BASELINE.to_vec();
    update.insert(0, "--update-baseline");
    let written = lint_in(path, &update);
    assert_eq!(written.status.code(), Some(0), "{}", text(&written.stderr));
    let file = std::fs::read_to_string(path.join("mcp-lint-baseline.toml")).unwrap();
    assert!(
        file.contains("rule = \"server-initiated-request\""),
        "{file}"
    );
    assert!(
        !file.contains("line ="),
        "no line numbers in the baseline: {file}"
    );
    // Writing it again gives the same bytes.
    lint_in(path, &update);
    assert_eq!(
        std::fs::read_to_string(path.join("mcp-lint-baseline.toml")).unwrap(),
        file
    );

    let known = lint_in(path, BASELINE);
    assert_eq!(known.status.code(), Some(0), "{}", text(&known.stdout));
    let summary = text(&known.stdout);
    assert!(summary.starts_with("no findings in "), "{summary}");
    assert!(summary.contains(" baselined"), "{summary}");

    // Lines inserted at the top, and the background file renamed: still known.
    let positive = path.join("src/positive.rs");
    let original = std::fs::read_to_string(&positive).unwrap();
    std::fs::write(&positive, format!("// A new header.\n\n{original}")).unwrap();
    std::fs::rename(
        path.join("src/positive_background.rs"),
        path.join("src/background.rs"),
    )
    .unwrap();
    let edited = lint_in(path, BASELINE);
    assert_eq!(edited.status.code(), Some(0), "{}", text(&edited.stdout));
    assert!(text(&edited.stderr).is_empty(), "{}", text(&edited.stderr));

    // A new legacy call is reported, alone, and fails the run.
    std::fs::write(&positive, format!("{original}{NEW_CALL}")).unwrap();
    let new = lint_in(path, BASELINE);
    assert_eq!(new.status.code(), Some(1));
    let report = text(&new.stdout);
    let findings: Vec<&str> = report.lines().filter(|l| l.contains("[MCP")).collect();
    assert_eq!(findings.len(), 1, "{report}");
    assert!(findings[0].contains("MCP201"), "{report}");

    // A finding that went away leaves a stale entry, reported, not failing.
    let without_deploy = original.replace(
        "let answer = peer.elicit::<ConfirmDeploy>(format!(\"Deploy {service} now?\")).await; //~ server-initiated-request",
        "let answer = ();",
    );
    assert_ne!(without_deploy, original);
    std::fs::write(&positive, without_deploy).unwrap();
    let stale = lint_in(path, BASELINE);
    assert_eq!(stale.status.code(), Some(0), "{}", text(&stale.stdout));
    assert!(
        text(&stale.stderr).contains("stale baseline entry"),
        "{}",
        text(&stale.stderr)
    );
    assert!(
        text(&stale.stdout).contains("1 stale baseline entries"),
        "{}",
        text(&stale.stdout)
    );

    // A broken baseline is a clear error.
    std::fs::write(path.join("mcp-lint-baseline.toml"), "version = [\n").unwrap();
    let broken = lint_in(path, BASELINE);
    assert_eq!(broken.status.code(), Some(2));
    assert!(text(&broken.stderr).contains("not a valid baseline file"));
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "git {args:?}: {}",
        text(&status.stderr)
    );
}

#[test]
fn new_from_rev_reports_only_findings_on_changed_lines() {
    let dir = project();
    let path = dir.path();
    git(path, &["init", "-q"]);
    git(path, &["add", "."]);
    git(path, &["commit", "-qm", "legacy"]);

    let unchanged = lint_in(
        path,
        &["--format", "concise", "--new-from-rev", "HEAD", "."],
    );
    assert_eq!(
        unchanged.status.code(),
        Some(0),
        "{}",
        text(&unchanged.stdout)
    );
    assert!(text(&unchanged.stdout).contains("on unchanged lines"));

    let positive = path.join("src/positive.rs");
    let original = std::fs::read_to_string(&positive).unwrap();
    std::fs::write(&positive, format!("// Moved down.\n{original}{NEW_CALL}")).unwrap();
    // An untracked file counts as changed throughout.
    std::fs::write(
        path.join("src/extra.rs"),
        format!("use legacy_rmcp::{{Peer, RoleServer}};\nstruct TargetRegion;\n{NEW_CALL}"),
    )
    .unwrap();
    let changed = lint_in(
        path,
        &["--format", "concise", "--new-from-rev", "HEAD", "."],
    );
    assert_eq!(changed.status.code(), Some(1));
    let report = text(&changed.stdout);
    let findings: Vec<&str> = report.lines().filter(|l| l.contains("[MCP")).collect();
    assert_eq!(findings.len(), 2, "{report}");
    assert!(
        findings.iter().any(|l| l.starts_with("src/extra.rs:")),
        "{report}"
    );
    assert!(
        findings.iter().any(|l| l.starts_with("src/positive.rs:")),
        "{report}"
    );

    let bad = lint_in(path, &["--new-from-rev", "no-such-rev", "."]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("--new-from-rev no-such-rev"));
}
