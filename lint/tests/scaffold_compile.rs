//! The MRTR scaffolds of the rule fixtures and of the bundled legacy server compile against
//! rmcp 3: one generated crate (a module per source file: its scaffolds plus the items they use),
//! checked once with `cargo check` in its own target directory under the workspace's `target/`
//! (kept between runs, so only the first run builds rmcp 3's dependencies).

use std::path::PathBuf;

use cargo_mcp_lint::diagnostic::SourceFile;
use cargo_mcp_lint::scaffold::{self, standalone};

#[path = "support/scaffold_check.rs"]
mod scaffold_check;
use scaffold_check::check;

fn workspace_root() -> PathBuf {
    mcp_migrate_workspace_bins::workspace_root(env!("CARGO_MANIFEST_DIR"))
}

/// The sources to scaffold: the legacy server and every fixture file.
fn sources() -> Vec<PathBuf> {
    let root = workspace_root();
    let mut sources = vec![root.join("tests/legacy-server/src/main.rs")];
    let fixtures = root.join("tests/fixtures/lint");
    for dir in std::fs::read_dir(&fixtures).unwrap() {
        let src = dir.unwrap().path().join("src");
        let Ok(files) = std::fs::read_dir(&src) else {
            continue;
        };
        for file in files {
            let path = file.unwrap().path();
            if path.extension().is_some_and(|e| e == "rs")
                && !path.to_string_lossy().ends_with(".mrtr.rs")
            {
                sources.push(path);
            }
        }
    }
    sources.sort();
    sources
}

#[test]
fn scaffolds_of_the_fixtures_and_the_legacy_server_compile_against_rmcp_3() {
    let root = workspace_root();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    let mut lib = String::new();
    let mut handlers = Vec::new();
    for (index, source) in sources().iter().enumerate() {
        let text = std::fs::read_to_string(source).unwrap();
        let file = SourceFile::new(source.clone(), text.clone());
        let Ok((found, _)) = scaffold::file_scaffolds(&file) else {
            continue;
        };
        if found.is_empty() {
            continue;
        }
        handlers.extend(found.iter().map(|s| {
            format!(
                "{}::{}",
                source.strip_prefix(&root).unwrap().display(),
                s.handler
            )
        }));
        let module = standalone::module(&text, &found, &["legacy_rmcp", "rmcp"]).unwrap();
        let name = format!("m{index}");
        std::fs::write(src.join(format!("{name}.rs")), module).unwrap();
        lib.push_str(&format!(
            "/// {}\n#[allow(unused, deprecated, dead_code, non_snake_case)]\nmod {name};\n",
            source.strip_prefix(&root).unwrap().display()
        ));
    }
    // The legacy server's four mid-call handlers and the fixtures' direct ones.
    for expected in [
        "tests/legacy-server/src/main.rs::confirm_delete",
        "tests/legacy-server/src/main.rs::ask_twice",
        "tests/fixtures/lint/server-initiated-request/src/positive.rs::deploy",
        // A request raced against a timer in `tokio::select!`: the request's branch.
        "tests/fixtures/lint/server-initiated-request/src/positive.rs::rollback",
        // Tools returning a value rather than a `Result`, and structured (`Json<T>`) ones.
        "tests/fixtures/lint/server-initiated-request/src/positive_return_types.rs::ask_name",
        "tests/fixtures/lint/server-initiated-request/src/positive_return_types.rs::nickname",
        "tests/fixtures/lint/server-initiated-request/src/positive_return_types.rs::structured",
        "tests/fixtures/lint/server-initiated-request/src/positive_return_types.rs::structured_or_error",
        "tests/fixtures/lint/server-initiated-request/src/positive_return_types.rs::content",
        // Sequential requests (one round each), `join!` (one round for all), `select!` against
        // a timer, and the `prompts/get` / `resources/read` handlers.
        "tests/fixtures/lint/server-initiated-request/src/positive_rounds.rs::plan",
        "tests/fixtures/lint/server-initiated-request/src/positive_rounds.rs::survey",
        "tests/fixtures/lint/server-initiated-request/src/positive_rounds.rs::ask_in_time",
        "tests/fixtures/lint/server-initiated-request/src/positive_rounds.rs::get_prompt",
        "tests/fixtures/lint/server-initiated-request/src/positive_rounds.rs::read_resource",
        // Requests in macro arguments (`with_deadline!`, `format!`), futures used as values
        // (`join_all(vec![..])`), the legacy -32042 error.
        "tests/fixtures/lint/server-initiated-request/src/positive.rs::preflight",
        "tests/fixtures/lint/deprecated-roots/src/positive.rs::call_tool",
        "tests/fixtures/lint/deprecated-sampling/src/positive.rs::suggest_titles",
        "tests/legacy-server/src/main.rs::open_vault",
        // Requests made by closures the tool calls and by an `async` block it awaits.
        "tests/fixtures/lint/server-initiated-request/src/positive_closures.rs::approve",
        "tests/fixtures/lint/server-initiated-request/src/positive_closures.rs::summarise",
        "tests/fixtures/lint/server-initiated-request/src/positive_closures.rs::quick_approval",
        "tests/fixtures/lint/server-initiated-request/src/positive_closures.rs::strict",
        "tests/fixtures/lint/server-initiated-request/src/positive_closures.rs::per_file",
        "tests/fixtures/lint/server-initiated-request/src/positive_closures.rs::all_or_nothing",
        // `CustomRequest`s of a legacy method's name: the typed input request of that kind.
        "tests/fixtures/lint/server-initiated-request/src/positive_custom.rs::ticket",
        "tests/fixtures/lint/server-initiated-request/src/positive_custom.rs::roots",
    ] {
        assert!(
            handlers.iter().any(|h| h == expected),
            "{expected} not in {handlers:#?}"
        );
    }
    // The display-only `-32042` → `input_required` rewrites that stand alone (`Err(..)` in a
    // handler): each as the body of a function returning the handler's new type.
    let targets = cargo_mcp_lint::walk::path_targets(&[root.join("tests/legacy-server")]).unwrap();
    let outcome = cargo_mcp_lint::lint(&targets, &Default::default(), true);
    let rewrites: Vec<&str> = outcome
        .diagnostics
        .iter()
        .filter_map(|d| d.fix.as_ref())
        .filter(|fix| fix.applicability == cargo_mcp_lint::fix::Applicability::DisplayOnly)
        .map(|fix| fix.edits[0].content.as_str())
        .filter(|content| content.starts_with("Ok("))
        .collect();
    assert_eq!(rewrites.len(), 1, "the legacy server's `open_vault`");
    let mut url_fixes = String::from("use rmcp::model::*;\n");
    for (index, content) in rewrites.iter().enumerate() {
        url_fixes.push_str(&format!(
            "pub fn url_fix_{index}() -> Result<CallToolResponse, rmcp::ErrorData> {{\n{content}\n}}\n"
        ));
    }
    std::fs::write(src.join("url_fixes.rs"), url_fixes).unwrap();
    lib.push_str("mod url_fixes;\n");
    std::fs::write(src.join("lib.rs"), lib).unwrap();
    let output = check(dir.path());
    if !output.status.success() {
        // Keep the generated crate for reading the errors.
        let kept = dir.keep();
        panic!(
            "the scaffolds do not compile against rmcp 3 (crate kept in {}):\n{}",
            kept.display(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
