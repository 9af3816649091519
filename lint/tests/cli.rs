//! End-to-end tests of the `cargo-mcp-lint` binary: every output format, exit codes,
//! configuration, suppressions, and the diagnostics of each rule fixture as snapshots.

mod support;

use std::process::{Command, Output, Stdio};

use support::{lint_in, workspace_root};

fn lint(args: &[&str]) -> Output {
    lint_in(&workspace_root(), args)
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

const SERVER_FIXTURE: &str = "tests/fixtures/lint/server-initiated-request";
const LOGGING_FIXTURE: &str = "tests/fixtures/lint/deprecated-logging";

#[test]
fn diagnostics_of_every_fixture_match_their_snapshots() {
    let fixtures = workspace_root().join("tests/fixtures/lint");
    let mut dirs: Vec<_> = std::fs::read_dir(&fixtures)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let relative = format!("tests/fixtures/lint/{name}");
        let output = lint(&["--format", "concise", "--exit-zero", &relative]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        insta::assert_snapshot!(format!("fixture_{name}"), stdout(&output));
    }
}

#[test]
fn json_is_one_document_with_the_documented_shape() {
    let output = lint(&["--format", "json", SERVER_FIXTURE]);
    assert_eq!(output.status.code(), Some(1), "errors fail the run");
    let document: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(document["version"], 1);
    let diagnostics = document["diagnostics"].as_array().unwrap();
    assert!(diagnostics.len() >= 10);
    for diagnostic in diagnostics {
        let keys: Vec<&str> = diagnostic
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        for key in [
            "code",
            "name",
            "severity",
            "path",
            "line",
            "column",
            "end_line",
            "end_column",
            "message",
            "help",
            "fix",
        ] {
            assert!(keys.contains(&key), "missing {key} in {diagnostic}");
        }
        assert!(["error", "warning", "info"].contains(&diagnostic["severity"].as_str().unwrap()));
        assert!(diagnostic["line"].as_u64().unwrap() >= 1);
        assert!(diagnostic["column"].as_u64().unwrap() >= 1);
        // This fixture's fixes: the manifest's version bump and the display-only -32042 rewrite
        // (`fixes.rs` tests them all).
        let fix = &diagnostic["fix"];
        assert!(
            fix.is_null()
                || (diagnostic["name"] == "legacy-sdk-version" && fix["applicability"] == "unsafe")
                || (diagnostic["name"] == "server-initiated-request"
                    && fix["applicability"] == "display-only"),
            "{diagnostic}"
        );
        assert!(diagnostic["path"]
            .as_str()
            .unwrap()
            .starts_with("tests/fixtures/lint/server-initiated-request/"));
    }
    let first_error = diagnostics
        .iter()
        .find(|d| d["name"] == "server-initiated-request")
        .unwrap();
    assert_eq!(first_error["code"], "MCP201");
    assert_eq!(
        document["summary"]["errors"].as_u64().unwrap() as usize,
        diagnostics
            .iter()
            .filter(|d| d["severity"] == "error")
            .count()
    );
}

#[test]
fn sarif_validates_against_the_sarif_2_1_0_schema() {
    let output = lint(&["--format", "sarif", SERVER_FIXTURE]);
    let sarif: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(workspace_root().join("tests/schemas/sarif-2.1.0.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&sarif)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert!(!results.is_empty());
    assert!(results
        .iter()
        .all(|result| result["partialFingerprints"].is_object()));
    assert_eq!(
        sarif["runs"][0]["tool"]["driver"]["rules"]
            .as_array()
            .unwrap()
            .len(),
        mcp_migrate_rules::RULES.len()
    );
}

#[test]
fn github_format_prints_workflow_commands() {
    let output = lint(&["--format", "github", SERVER_FIXTURE]);
    let text = stdout(&output);
    assert!(text.lines().any(|line| line
        .starts_with("::error file=tests/fixtures/lint/server-initiated-request/src/")
        && line.contains("title=MCP201")));
    assert!(text.lines().any(|line| line.starts_with("::warning file=")));
}

#[test]
fn full_format_shows_snippet_code_help_and_url() {
    let output = lint(&["--color", "never", LOGGING_FIXTURE]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "warnings alone do not fail the run"
    );
    let text = stdout(&output);
    assert!(text.contains("MCP103"), "{text}");
    assert!(text.contains("deprecated-logging"));
    assert!(text.contains("help:"));
    assert!(text.contains("rules/docs/deprecated-logging.md"));
    assert!(text.contains("notify_logging_message"));
    assert!(text.contains("warnings in"));
}

#[test]
fn exit_codes_follow_severity_and_flags() {
    assert_eq!(lint(&[SERVER_FIXTURE]).status.code(), Some(1));
    assert_eq!(
        lint(&["--exit-zero", SERVER_FIXTURE]).status.code(),
        Some(0)
    );
    assert_eq!(lint(&["-W", "all", SERVER_FIXTURE]).status.code(), Some(0));
    assert_eq!(
        lint(&["-D", "deprecated-logging", LOGGING_FIXTURE])
            .status
            .code(),
        Some(1)
    );
    // Later flags win.
    assert_eq!(
        lint(&[
            "-D",
            "MCP103",
            "-A",
            "deprecated-logging",
            "-A",
            "legacy-sdk-version",
            LOGGING_FIXTURE
        ])
        .status
        .code(),
        Some(0)
    );
    let allowed = lint(&["--format", "concise", "-A", "all", SERVER_FIXTURE]);
    assert_eq!(allowed.status.code(), Some(0));
    assert!(
        stdout(&allowed).contains("no findings"),
        "{}",
        stdout(&allowed)
    );
}

#[test]
fn usage_errors_exit_2_with_a_clear_message() {
    let unknown = lint(&["-D", "deprecated-sampeling", SERVER_FIXTURE]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("did you mean `deprecated-sampling`?"));
    let missing = lint(&["no/such/dir"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("no such file or directory: no/such/dir"));
    assert_eq!(lint(&["--format", "xml"]).status.code(), Some(2));
    assert_eq!(lint(&["--explain", "nope"]).status.code(), Some(2));
}

#[test]
fn explain_and_list_rules_print_the_catalogue() {
    let explain = lint(&["--explain", "MCP101"]);
    assert_eq!(explain.status.code(), Some(0));
    assert!(stdout(&explain).starts_with("# deprecated-sampling (MCP101)"));
    assert!(stdout(&explain).contains("## Use instead"));
    let list = lint(&["--list-rules"]);
    for rule in mcp_migrate_rules::RULES {
        assert!(stdout(&list).contains(rule.code) && stdout(&list).contains(rule.name));
    }
}

#[test]
fn runs_as_a_cargo_subcommand() {
    let output = lint(&["mcp-lint", "--format", "concise", LOGGING_FIXTURE]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("MCP103"));
}

/// A throwaway cargo workspace with one member that uses legacy rmcp.
fn scratch_workspace(config: &str, source: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("Cargo.toml"),
        format!("[workspace]\nmembers = [\"server\"]\nresolver = \"2\"\n{config}"),
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("server/src")).unwrap();
    std::fs::write(
        dir.path().join("server/Cargo.toml"),
        "[package]\nname = \"server\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nrmcp = { version = \"3\", features = [\"server\"] }\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("server/src/lib.rs"), source).unwrap();
    dir
}

const LEGACY_SOURCE: &str = r#"use rmcp::{Peer, RoleServer};

pub async fn summarize(peer: Peer<RoleServer>, params: rmcp::model::CreateMessageRequestParams) {
    let _ = peer.create_message(params).await;
}

pub async fn log(peer: &Peer<RoleServer>, p: rmcp::model::LoggingMessageNotificationParam) {
    // mcp-lint: allow(deprecated-logging) the operator console still reads these
    let _ = peer.notify_logging_message(p).await;
    let _ = 1; // mcp-lint: allow(deprecated-roots) nothing here
}
"#;

#[test]
fn with_no_path_the_cargo_workspace_is_linted_with_its_configuration() {
    let workspace = scratch_workspace(
        "\n[workspace.metadata.mcp-lint.rules]\ndeprecated-sampling = \"allow\"\n",
        LEGACY_SOURCE,
    );
    let output = lint_in(workspace.path(), &["--format", "json"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let document: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let found: Vec<(String, u64)> = document["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["name"].as_str().unwrap().to_owned(),
                d["line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            ("server-initiated-request".to_owned(), 4),
            ("unused-suppression".to_owned(), 10),
        ],
        "sampling is allowed by configuration and logging by the inline suppression"
    );
    assert_eq!(document["summary"]["suppressed"], 1);
}

#[test]
fn config_errors_point_at_the_offending_line() {
    let workspace = scratch_workspace(
        "\n[workspace.metadata.mcp-lint.rules]\ndeprecated-sampeling = \"deny\"\n",
        LEGACY_SOURCE,
    );
    let output = lint_in(workspace.path(), &[]);
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert!(
        text.contains("unknown rule `deprecated-sampeling`"),
        "{text}"
    );
    assert!(
        text.contains("did you mean `deprecated-sampling`?"),
        "{text}"
    );
    assert!(text.contains("Cargo.toml:6:"), "{text}");
}

#[test]
fn excludes_from_mcp_lint_toml_are_honoured() {
    let workspace = scratch_workspace("", LEGACY_SOURCE);
    std::fs::write(
        workspace.path().join("mcp-lint.toml"),
        "exclude = [\"server/src/**\"]\n",
    )
    .unwrap();
    let output = lint_in(workspace.path(), &["--format", "concise"]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert!(stdout(&output).contains("no findings"));
}

#[test]
fn unparsable_files_are_reported_and_the_run_continues() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("broken.rs"),
        "use rmcp::Peer;\nfn handler( { peer.create_message(\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("ok.rs"),
        "use rmcp::Peer;\nfn f(peer: Peer<rmcp::RoleServer>) { let _ = peer.list_roots(); }\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("latin1.rs"),
        b"// caf\xe9 rmcp create_message\n",
    )
    .unwrap();
    let output = lint_in(dir.path(), &["--format", "concise", "."]);
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(text.contains("broken.rs:2:"), "{text}");
    assert!(text.contains("unparsable-file"));
    assert!(text.contains("latin1.rs:1:1: warning[MCP901 unparsable-file] could not read this file: the file is not valid UTF-8"), "{text}");
    assert!(
        text.contains("ok.rs:2:") && text.contains("server-initiated-request"),
        "{text}"
    );
}

#[test]
fn a_closed_pipe_is_not_an_error() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cargo-mcp-lint"))
        .args(["--format", "concise", "--exit-zero", "tests/fixtures/lint"])
        .current_dir(workspace_root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

#[test]
fn the_report_can_go_to_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.sarif");
    let output = lint(&[
        "--format",
        "sarif",
        "--exit-zero",
        "-o",
        path.to_str().unwrap(),
        LOGGING_FIXTURE,
    ]);
    assert_eq!(output.status.code(), Some(0));
    assert!(stdout(&output).is_empty());
    let sarif: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
}

/// Dogfood: this workspace, with its own configuration, has nothing to report.
#[test]
fn this_workspace_lints_clean() {
    let output = lint(&["--format", "concise"]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    assert!(
        stdout(&output).starts_with("no findings in "),
        "{}",
        stdout(&output)
    );
}

/// The quick-start example: the legacy fixture server built on rmcp 2.2.
#[test]
fn the_legacy_fixture_server_shows_every_legacy_flow() {
    let output = lint(&["--format", "concise", "tests/legacy-server"]);
    assert_eq!(output.status.code(), Some(1));
    insta::assert_snapshot!("legacy_fixture_server", stdout(&output));
}

#[test]
fn suppression_markers_inside_strings_and_doc_comments_are_not_directives() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("lib.rs"),
        "use rmcp::Peer;\n/// Write `// mcp-lint: allow(rule) reason` to silence a rule.\nconst HINT: &str = \"// mcp-lint: allow(nothing)\";\nfn f(peer: Peer<rmcp::RoleServer>) {\n    let _ = peer.list_roots(); // mcp-lint: allow(deprecated-roots, server-initiated-request) migrating in #42\n}\n",
    )
    .unwrap();
    let output = lint_in(dir.path(), &["--format", "concise", "lib.rs"]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert!(
        stdout(&output).contains("no findings in 1 file"),
        "{}",
        stdout(&output)
    );
    assert!(
        stdout(&output).contains("2 suppressed"),
        "{}",
        stdout(&output)
    );
}

/// Every output format renders a TypeScript file's findings (positions, rule, fix).
#[test]
fn every_format_renders_typescript_findings() {
    const TS_FILE: &str = "tests/fixtures/lint/typescript/deprecated-include-context/positive.ts";
    let concise = lint(&["--format", "concise", TS_FILE]);
    assert_eq!(concise.status.code(), Some(1), "{}", stderr(&concise));
    assert!(stdout(&concise).contains(&format!(
        "{TS_FILE}:9:21: warning[MCP104 deprecated-include-context]"
    )));
    assert!(stdout(&concise).contains(&format!(
        "{TS_FILE}:11:24: error[MCP201 server-initiated-request]"
    )));

    let full = lint(&["--color", "never", TS_FILE]);
    let text = stdout(&full);
    assert!(
        text.contains("includeContext: \"allServers\" as const"),
        "{text}"
    );
    assert!(
        text.contains("(unsafe fix, `--fix --unsafe-fixes`)"),
        "{text}"
    );

    let json = lint(&["--format", "json", TS_FILE]);
    let document: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    let diagnostics = document["diagnostics"].as_array().unwrap();
    let include = diagnostics
        .iter()
        .find(|d| d["name"] == "deprecated-include-context")
        .unwrap();
    assert_eq!(include["path"], TS_FILE);
    assert_eq!(
        (include["line"].as_u64(), include["column"].as_u64()),
        (Some(9), Some(21))
    );
    assert_eq!(include["fix"]["applicability"], "unsafe");

    let sarif = lint(&["--format", "sarif", TS_FILE]);
    let sarif: serde_json::Value = serde_json::from_str(&stdout(&sarif)).unwrap();
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), diagnostics.len());
    assert!(results.iter().any(|r| r["ruleId"] == "MCP104"
        && r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == TS_FILE));

    let github = lint(&["--format", "github", TS_FILE]);
    assert!(stdout(&github).lines().any(|line| line
        .starts_with(&format!("::warning file={TS_FILE},line=9,"))
        && line.contains("title=MCP104")));
}
