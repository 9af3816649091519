//! `--fix`, `--unsafe-fixes` and `--diff` end to end, on copies of the rule fixtures: each
//! fixable rule's fixture has `<file>.fixed` expectations next to the files the fixes change
//! (regenerate them with `UPDATE_FIXED=1 cargo test -p cargo-mcp-lint --test fixes`, then review
//! the diff).

mod support;

use std::path::Path;

use support::{lint_in, text, workspace_root};

/// The fixtures of the rules that have fixes, and the files their fixes change.
const FIXED: &[(&str, &[&str])] = &[
    (
        "deprecated-include-context",
        &["src/positive.rs", "Cargo.toml"],
    ),
    ("deprecated-logging", &["src/positive.rs", "Cargo.toml"]),
    ("legacy-sdk-version", &["Cargo.toml"]),
    // Display-only: the -32042 rewrite is shown, never applied (the `.fixed` file is unchanged).
    (
        "server-initiated-request",
        &["Cargo.toml", "src/positive_background.rs"],
    ),
    ("unused-suppression", &["src/positive.rs"]),
    // TypeScript/JavaScript: the front-end's own fixes, and package.json's SDK move.
    ("typescript/deprecated-include-context", &["positive.ts"]),
    (
        "typescript/deprecated-logging",
        &["positive.ts", "positive_capabilities.ts"],
    ),
    ("typescript/legacy-sdk-version", &["package.json"]),
    ("typescript/unused-suppression", &["positive.ts"]),
    // Python: the include_context fix, the SDK bumps, an unused `#` suppression.
    ("python/deprecated-include-context", &["positive.py"]),
    (
        "python/legacy-sdk-version",
        &["pyproject.toml", "requirements.txt"],
    ),
    ("python/unused-suppression", &["positive.py"]),
];

/// Copies a fixture directory into a fresh temporary directory.
fn copy_fixture(name: &str) -> tempfile::TempDir {
    let source = workspace_root().join("tests/fixtures/lint").join(name);
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&source, dir.path());
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else if entry.path().extension().is_none_or(|e| e != "fixed") {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn parses(path: &Path, text: &str) -> bool {
    if path.extension().is_some_and(|e| e == "rs") {
        syn::parse_file(text).is_ok()
    } else if let Some(kind) = cargo_mcp_lint::fix::SourceKind::of_other(path) {
        cargo_mcp_lint::fix::parses(text, kind)
    } else {
        text.parse::<toml_edit::DocumentMut>().is_ok()
    }
}

#[test]
fn fixes_of_every_fixable_fixture_match_their_fixed_expectations_and_are_idempotent() {
    let update = std::env::var_os("UPDATE_FIXED").is_some();
    for (name, files) in FIXED {
        let dir = copy_fixture(name);
        let fixed = lint_in(dir.path(), &["--fix", "--unsafe-fixes", "--exit-zero", "."]);
        assert_eq!(
            fixed.status.code(),
            Some(0),
            "{name}: {}",
            text(&fixed.stderr)
        );
        assert!(
            text(&fixed.stderr).contains("fixed "),
            "{name}: {}",
            text(&fixed.stderr)
        );
        for file in *files {
            let actual = std::fs::read_to_string(dir.path().join(file)).unwrap();
            let expectation = workspace_root()
                .join("tests/fixtures/lint")
                .join(name)
                .join(format!("{file}.fixed"));
            if update {
                std::fs::write(&expectation, &actual).unwrap();
            }
            let expected = std::fs::read_to_string(&expectation).unwrap_or_else(|_| {
                panic!(
                    "{} is missing (UPDATE_FIXED=1 writes it)",
                    expectation.display()
                )
            });
            assert_eq!(
                actual, expected,
                "{name}/{file} differs from its .fixed expectation"
            );
            assert!(
                parses(Path::new(file), &actual),
                "{name}/{file} no longer parses"
            );
        }
        // Fixing again changes nothing: no diff, exit 0.
        let again = lint_in(dir.path(), &["--diff", "--unsafe-fixes", "."]);
        assert_eq!(
            again.status.code(),
            Some(0),
            "{name}: {}",
            text(&again.stdout)
        );
        assert_eq!(
            text(&again.stdout),
            "",
            "{name}: a second pass still changes something"
        );
    }
}

#[test]
fn diff_prints_the_fixes_and_writes_nothing() {
    let dir = copy_fixture("deprecated-logging");
    let before = std::fs::read_to_string(dir.path().join("src/positive.rs")).unwrap();
    let output = lint_in(dir.path(), &["--diff", "--unsafe-fixes", "."]);
    assert_eq!(
        output.status.code(),
        Some(1),
        "something would change: exit 1"
    );
    let diff = text(&output.stdout);
    assert!(
        diff.contains("--- a/src/positive.rs\n+++ b/src/positive.rs\n"),
        "{diff}"
    );
    assert!(
        diff.contains("-                .enable_logging() //~ deprecated-logging\n"),
        "{diff}"
    );
    assert!(
        diff.contains("+        tracing::info!(logger = ?start.logger, data = %start.data); //~ deprecated-logging\n"),
        "{diff}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/positive.rs")).unwrap(),
        before,
        "--diff wrote the file"
    );
}

#[test]
fn the_report_after_fix_is_of_the_fixed_files() {
    // The walk reads each file once; after `--fix` the report must come from the files as fixed,
    // not from the texts read before fixing.
    let dir = copy_fixture("deprecated-logging");
    let args = ["--format", "concise", "--exit-zero"];
    let before = lint_in(dir.path(), &[&args[..], &["."]].concat());
    let fixed = lint_in(
        dir.path(),
        &[&args[..], &["--fix", "--unsafe-fixes", "."]].concat(),
    );
    let again = lint_in(dir.path(), &[&args[..], &["."]].concat());
    assert_ne!(
        text(&before.stdout),
        text(&again.stdout),
        "the fixes changed nothing that is reported"
    );
    assert_eq!(text(&fixed.stdout), text(&again.stdout));
}

#[test]
fn plain_fix_applies_only_safe_fixes() {
    let dir = copy_fixture("deprecated-include-context");
    let before = std::fs::read_to_string(dir.path().join("src/positive.rs")).unwrap();
    let output = lint_in(dir.path(), &["--fix", "--exit-zero", "."]);
    assert_eq!(output.status.code(), Some(0));
    assert!(
        text(&output.stderr).contains("fix(es) available with --unsafe-fixes"),
        "{}",
        text(&output.stderr)
    );
    let after = std::fs::read_to_string(dir.path().join("src/positive.rs")).unwrap();
    assert_eq!(after, before, "an unsafe fix was applied by plain --fix");
    // The diff of safe fixes only is empty here: exit 0.
    let diff = lint_in(dir.path(), &["--diff", "."]);
    assert_eq!(diff.status.code(), Some(0), "{}", text(&diff.stdout));
}

#[test]
fn json_and_sarif_carry_the_fix_and_its_applicability() {
    let root = workspace_root();
    let output = lint_in(
        &root,
        &[
            "--format",
            "json",
            "--exit-zero",
            "tests/fixtures/lint/deprecated-include-context",
            "tests/fixtures/lint/python/deprecated-include-context",
        ],
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let fixes: Vec<&serde_json::Value> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["name"] == "deprecated-include-context" && !d["fix"].is_null())
        .map(|d| &d["fix"])
        .collect();
    // Rust: three expressions and two JSON literals (the two `match` patterns have no fix);
    // Python: a keyword argument and a dict value, in their own quotes.
    assert_eq!(fixes.len(), 7, "{fixes:#?}");
    for fix in &fixes {
        assert_eq!(fix["applicability"], "unsafe");
        let edit = &fix["edits"][0];
        assert!(
            ["None", "\"none\"", "'none'"].contains(&edit["content"].as_str().unwrap()),
            "{edit}"
        );
        assert!(edit["line"].as_u64().unwrap() > 0 && edit["end_column"].as_u64().unwrap() > 0);
    }

    let output = lint_in(
        &root,
        &["--format", "sarif", "--exit-zero", "tests/legacy-server"],
    );
    let log: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let run = &log["runs"][0];
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    let applicability = |code: &str| {
        rules.iter().find(|r| r["id"] == code).unwrap()["properties"]["fixApplicability"].clone()
    };
    assert_eq!(applicability("MCP104"), "unsafe");
    assert_eq!(applicability("MCP201"), "display-only");
    assert_eq!(applicability("MCP902"), "safe");
    assert_eq!(applicability("MCP101"), "none");
    let url_fix = run["results"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|r| {
            r["fixes"].as_array().and_then(|fixes| {
                fixes
                    .iter()
                    .find(|f| f["properties"]["applicability"] == "display-only")
            })
        })
        .expect("the -32042 error has a display-only fix");
    let inserted = url_fix["artifactChanges"][0]["replacements"][0]["insertedContent"]["text"]
        .as_str()
        .unwrap();
    assert!(
        inserted.contains("ElicitRequestParams::UrlElicitationParams"),
        "{inserted}"
    );
    assert!(
        inserted.contains("\"https://vault.example.com/authorize\""),
        "{inserted}"
    );
}

#[test]
fn explain_and_list_rules_state_the_fix_applicability() {
    let root = workspace_root();
    let explain = text(&lint_in(&root, &["--explain", "MCP103"]).stdout);
    assert!(explain.contains("Fix: unsafe"), "{explain}");
    let list = text(&lint_in(&root, &["--list-rules"]).stdout);
    let line = list.lines().find(|l| l.starts_with("MCP902")).unwrap();
    assert!(line.contains(" safe "), "{line}");
}

#[test]
fn scaffold_prints_the_mrtr_shape_of_the_handler_at_a_line() {
    let root = workspace_root();
    let source = std::fs::read_to_string(root.join("tests/legacy-server/src/main.rs")).unwrap();
    let line = source
        .lines()
        .position(|l| l.contains("async fn ask_name("))
        .unwrap()
        + 1;
    let location = format!("tests/legacy-server/src/main.rs:{line}");
    let output = lint_in(&root, &["--scaffold", &location]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let scaffold = text(&output.stdout);
    assert!(scaffold.contains("async fn ask_name("), "{scaffold}");
    assert!(
        scaffold.contains("\"ask_name.elicitation.1\""),
        "{scaffold}"
    );
    assert!(
        scaffold.contains("mrtr::schema_of::<UserName>()?"),
        "{scaffold}"
    );
    assert!(syn::parse_file(&scaffold).is_ok(), "the scaffold parses");

    for (location, message) in [
        ("tests/legacy-server/src/main.rs", "wants PATH:LINE"),
        (
            "tests/legacy-server/src/main.rs:1",
            "no method of an `impl` block holds line 1",
        ),
        ("no/such/file.rs:3", "could not read no/such/file.rs"),
    ] {
        let output = lint_in(&root, &["--scaffold", location]);
        assert_eq!(output.status.code(), Some(2), "{location}");
        assert!(
            text(&output.stderr).contains(message),
            "{}",
            text(&output.stderr)
        );
    }
}

/// The line of `needle` in the workspace file `path`, as `path:LINE`.
fn location_of(path: &str, needle: &str) -> String {
    let source = std::fs::read_to_string(workspace_root().join(path)).unwrap();
    let line = source.lines().position(|l| l.contains(needle)).unwrap() + 1;
    format!("{path}:{line}")
}

#[test]
fn scaffold_of_a_tool_returning_a_string_wraps_its_value() {
    const RETURN_TYPES: &str =
        "tests/fixtures/lint/server-initiated-request/src/positive_return_types.rs";
    // `async fn ask_name(&self, ctx: RequestContext<RoleServer>) -> String` calling
    // `ctx.peer.create_elicitation(..)`: the line of the request itself, as a finding names it.
    let location = location_of(RETURN_TYPES, "ctx.peer.create_elicitation(");
    let output = lint_in(&workspace_root(), &["--scaffold", &location]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let scaffold = text(&output.stdout);
    for expected in [
        "async fn ask_name(",
        "-> Result<rmcp::model::CallToolResponse, rmcp::ErrorData>",
        "mrtr::done::<String>(",
    ] {
        assert!(scaffold.contains(expected), "{expected}: {scaffold}");
    }
    assert!(syn::parse_file(&scaffold).is_ok(), "the scaffold parses");
}

/// Requests in a macro's arguments, a request future used as a value, a `ServerRequest` sent by
/// hand and the legacy -32042 error: each rewritten in place.
#[test]
fn scaffolds_rewrite_requests_in_macros_futures_sent_requests_and_the_url_error() {
    const POSITIVE: &str = "tests/fixtures/lint/server-initiated-request/src/positive.rs";
    const ROUNDS: &str = "tests/fixtures/lint/server-initiated-request/src/positive_rounds.rs";
    const SAMPLING: &str = "tests/fixtures/lint/deprecated-sampling/src/positive.rs";
    const ROOTS: &str = "tests/fixtures/lint/deprecated-roots/src/positive.rs";
    const LEGACY: &str = "tests/legacy-server/src/main.rs";
    for (location, expected) in [
        // `with_deadline!(30, peer.create_elicitation_with_timeout(..))`: the macro awaits a
        // future that is ready with the answer.
        (
            location_of(POSITIVE, "let window = with_deadline!("),
            vec![
                "let window = with_deadline!(",
                "std::future::ready(match rounds.answer(\"preflight.elicitation.3\")",
            ],
        ),
        // `matches!(peer.elicit::<T>(..).await, ..)` in a helper: hoisted, the pattern kept.
        (
            location_of(ROUNDS, "matches!(peer.elicit::<Project>"),
            vec![
                "let elicitation_1 = match rounds.answer(\"confirm_step.elicitation.1\")",
                "Ok(matches!(elicitation_1, Ok(Some(_))))",
            ],
        ),
        // `format!("..", context.peer.list_roots().await)`: hoisted before the statement.
        (
            location_of(ROOTS, "let scope = format!("),
            vec!["let scope = format!(\"searching {:?}\", roots_2);"],
        ),
        // `join_all(vec![peer.create_message(..), ..])`: ready futures, a round each.
        (
            location_of(SAMPLING, "let replies = futures::future::join_all"),
            vec!["vec![std::future::ready(sampling_1), std::future::ready(sampling_2)]"],
        ),
        // `peer.send_request(request)` of a `ServerRequest` built into a binding.
        (
            location_of(SAMPLING, "pub async fn ask_model_raw("),
            vec![
                "Some(answer) => mrtr::client_result(&request, answer),",
                "mrtr::input_request(request)?",
            ],
        ),
        // `return Err(McpError::url_elicitation_required(..));`: a URL-mode input request.
        (
            location_of(LEGACY, "async fn open_vault("),
            vec![
                "if rounds.answer(\"open_vault.elicitation.1\").is_none() {",
                "rmcp::model::ElicitRequestParams::UrlElicitationParams",
                "url: (\"https://vault.example.com/authorize\").to_string(),",
            ],
        ),
    ] {
        let output = lint_in(&workspace_root(), &["--scaffold", &location]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{location}: {}",
            text(&output.stderr)
        );
        let scaffold = text(&output.stdout);
        for expected in expected {
            assert!(
                scaffold.contains(expected),
                "{location}: `{expected}` in\n{scaffold}"
            );
        }
        assert!(syn::parse_file(&scaffold).is_ok(), "{location}: parses");
    }
}

#[test]
fn scaffold_refusals_name_their_reason() {
    const BACKGROUND: &str =
        "tests/fixtures/lint/server-initiated-request/src/positive_background.rs";
    const SAMPLING: &str = "tests/fixtures/lint/deprecated-sampling/src/positive.rs";
    const CUSTOM: &str = "tests/fixtures/lint/server-initiated-request/src/positive_custom.rs";
    const CLOSURES: &str = "tests/fixtures/lint/server-initiated-request/src/positive_closures.rs";
    for (location, reason) in [
        (
            location_of(CLOSURES, "let later = move ||"),
            "`deferred`: the closure `later` that makes a request is stored or handed on",
        ),
        (
            location_of(CLOSURES, ".then(|file|"),
            "`streamed`: the closure that makes a request is handed to `then(..)`",
        ),
        (
            location_of(SAMPLING, "async fn polish_later("),
            "`polish_later`: the request inside `spawn(..)` runs in a task of its own, which \
             outlives the call: it answers no client request",
        ),
        (
            location_of(CUSTOM, "async fn relay("),
            "`relay`: the request inside a `ServerRequest::CustomRequest` whose method is not a \
             string literal is not rewritten: which request it stands for is known only when it \
             runs",
        ),
        (
            location_of(BACKGROUND, "pub async fn ask_current("),
            "`ask_current` answers no client request",
        ),
        (
            location_of(BACKGROUND, "pub fn start_nightly("),
            "ask for the input in the next tool call's arguments instead, or drop the feature",
        ),
    ] {
        let output = lint_in(&workspace_root(), &["--scaffold", &location]);
        assert_eq!(output.status.code(), Some(2), "{location}");
        assert!(
            text(&output.stderr).contains(reason),
            "{location}: {}",
            text(&output.stderr)
        );
    }
}

#[test]
fn fix_with_scaffolds_writes_them_beside_the_handlers() {
    let dir = tempfile::tempdir().unwrap();
    let root = workspace_root();
    for relative in ["Cargo.toml", "src/main.rs"] {
        let target = dir.path().join(relative);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(root.join("tests/legacy-server").join(relative), target).unwrap();
    }
    let output = lint_in(dir.path(), &["--fix", "--scaffolds", "--exit-zero", "."]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(
            "src/main.mrtr.rs (9 handler(s): ask_name, confirm_delete, connect_account, \
             open_vault, summarize, list_workspace_roots, ask_twice, ask_three, rounds)"
        ),
        "{stderr}"
    );
    let written = std::fs::read_to_string(dir.path().join("src/main.mrtr.rs")).unwrap();
    assert!(syn::parse_file(&written).is_ok());
    // The helpers the handlers share are written once, in their MRTR form.
    for helper in ["async fn sample(", "async fn fetch_roots("] {
        assert_eq!(written.matches(helper).count(), 1, "{helper}");
    }
    // One impl per original impl: the tools' and `fault_router`'s (`rounds`).
    assert_eq!(
        written.matches("impl FixtureServer").count(),
        2,
        "one impl per original impl"
    );
    assert_eq!(written.matches("#[tool_router]").count(), 1);
}

/// The pre-filters (skipped files, blanked items, cut `let`s and `use`s) change no fix: the fixes
/// are made from the blanked file's syntax tree, so a blank where a fix quotes the code (a
/// scaffold quoting the arguments of a legacy call, `vec![..]` included) or where its span starts
/// (the attributes of a removed `set_level`) would show here.
#[test]
fn prefilters_change_no_fix() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("Cargo.toml"),
        "[package]\nname = \"x\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nrmcp = \"0.8\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("src/lib.rs"),
        "use rmcp::model::{CreateMessageRequest, CreateMessageRequestParams, SamplingMessage, ServerRequest};\n\
         use std::fmt::Write as _;\n\
         pub fn ask(topic: &str) -> ServerRequest {\n\
         \x20   let label = format!(\"{topic}\");\n\
         \x20   ServerRequest::CreateMessageRequest(CreateMessageRequest::new(\n\
         \x20       CreateMessageRequestParams::new(vec![SamplingMessage::user_text(\"Summarise the deploy\")], 100),\n\
         \x20   ))\n\
         }\n\
         pub struct H;\n\
         impl rmcp::ServerHandler for H {\n\
         \x20   #[tracing::instrument(skip_all)]\n\
         \x20   async fn set_level(&self, request: rmcp::model::SetLevelRequestParams, _context: rmcp::service::RequestContext<rmcp::RoleServer>) -> Result<(), rmcp::ErrorData> {\n\
         \x20       Ok(())\n\
         \x20   }\n\
         }\n",
    )
    .unwrap();
    let fixtures = workspace_root().join("tests/fixtures/lint");
    for root in [dir.path().to_path_buf(), fixtures] {
        let targets = cargo_mcp_lint::walk::path_targets(std::slice::from_ref(&root)).unwrap();
        let render = |use_prefilter: bool| -> Vec<String> {
            let config = cargo_mcp_lint::config::Config::default();
            cargo_mcp_lint::lint(&targets, &config, use_prefilter)
                .diagnostics
                .iter()
                .map(|d| format!("{} {:?} {:?}", d.file.path.display(), d.span, d.fix))
                .collect()
        };
        let filtered = render(true);
        assert!(
            filtered.iter().any(|d| d.contains("Some(")),
            "{}",
            root.display()
        );
        assert_eq!(filtered, render(false), "{}", root.display());
        if root == dir.path() {
            assert!(
                filtered.iter().any(|d| d.contains("Summarise the deploy")),
                "{filtered:#?}"
            );
        }
    }
}

/// `--fix` lints a file again after each pass: a finding that only the crate's other files make
/// known (a peer field of a struct declared in another file) is found again there, so its
/// suppression stays used and is kept, while a truly unused one in the same file goes.
#[test]
fn fix_keeps_the_suppression_of_a_finding_another_file_makes_known() {
    let dir = copy_fixture("server-initiated-request");
    let ask = dir.path().join("src/cross_file_ask.rs");
    let original = std::fs::read_to_string(&ask).unwrap();
    let request = "let answer = self.client.elicit::<crate::ConfirmDeploy>(question).await;";
    let used = format!("{request} // mcp-lint: allow(server-initiated-request) session confirm");
    let unused = "    // mcp-lint: allow(deprecated-logging) nothing logs here\n";
    let text = original
        .replace(&format!("{request} //~ server-initiated-request"), &used)
        .replace(
            "    pub async fn summary(",
            &format!("{unused}    pub async fn summary("),
        );
    assert!(text.contains(&used) && text.contains(unused));
    std::fs::write(&ask, &text).unwrap();
    let output = lint_in(dir.path(), &["--fix", "--exit-zero", "src"]);
    assert!(output.status.success(), "{}", text_of(&output));
    let fixed = std::fs::read_to_string(&ask).unwrap();
    assert!(fixed.contains(&used), "the used suppression went:\n{fixed}");
    assert!(
        !fixed.contains(unused.trim()),
        "the unused one stayed:\n{fixed}"
    );
}

fn text_of(output: &std::process::Output) -> String {
    format!("{}{}", text(&output.stdout), text(&output.stderr))
}
