//! The linter never panics, whatever the input: every fixture file cut at many points, with bytes
//! flipped, and pathological inputs, go through the Rust and TypeScript front-ends and the manifest readers.

use std::path::Path;

use cargo_mcp_lint::diagnostic::SourceFile;
use cargo_mcp_lint::manifest::Manifest;
use cargo_mcp_lint::rust::{lint_file, CrateContext};
use mcp_migrate_tests::workspace_root;

fn fixture_files(extension: &str) -> Vec<std::path::PathBuf> {
    let targets =
        cargo_mcp_lint::walk::path_targets(&[workspace_root().join("tests/fixtures/lint")])
            .unwrap();
    targets
        .rust_files
        .into_iter()
        .chain(targets.manifests)
        .filter(|path| path.extension().is_some_and(|e| e == extension))
        .collect()
}

fn context() -> CrateContext {
    CrateContext {
        sdk_names: vec!["rmcp".into(), "legacy_rmcp".into()],
        depends_on_sdk: true,
        // A Rust 2015 crate: every file syn rejects also goes through the 2015 rewrites.
        manifest: Some(workspace_root().join("tests/fixtures/lint/rust-2015/Cargo.toml")),
        ..CrateContext::default()
    }
}

#[test]
fn truncated_and_corrupted_rust_never_panics() {
    let mut linted = 0;
    for path in fixture_files("rs") {
        let text = std::fs::read_to_string(&path).unwrap();
        let cuts: Vec<usize> = (0..text.len())
            .step_by(53)
            .filter(|i| text.is_char_boundary(*i))
            .collect();
        for cut in cuts {
            let truncated = SourceFile::new(path.clone(), text[..cut].to_owned());
            let _ = lint_file(&truncated, &context());
            // Swap one delimiter for another: unbalanced groups inside macro bodies.
            let mut corrupted = text.clone();
            if let Some(position) = corrupted[cut..].find(['(', '{', '[']) {
                corrupted.replace_range(cut + position..cut + position + 1, "}");
            }
            let _ = lint_file(&SourceFile::new(path.clone(), corrupted), &context());
            linted += 2;
        }
    }
    assert!(linted > 1000, "only {linted} variants linted");
}

#[test]
fn pathological_sources_are_handled() {
    let deep = format!("fn f() {{ {}x{} }}", "(".repeat(5000), ")".repeat(5000));
    let deep_macro = format!(
        "fn f() {{ tokio::select! {{ {} }} }}",
        "[".repeat(3000) + &"]".repeat(3000)
    );
    let sources = [
        String::new(),
        "\u{feff}fn main() {}".to_owned(),
        "fn f() { json!({\"method\": }) ; json!({ : }) ; json!([,,]) }".to_owned(),
        "fn f() { elicit_safe!(); x.elicit::<>(); peer.elicit_url(); }".to_owned(),
        "use rmcp::{self, *, model::{*, self as m}}; fn f(p: Peer<'_>) { p.create_message() }"
            .to_owned(),
        deep,
        deep_macro,
        // Just under the limit: parsed and walked for real.
        format!("fn f() {{ {}x{} }}", "(".repeat(250), ")".repeat(250)),
        format!(
            "fn f() {{ json!({}1{}) }}",
            "[".repeat(250),
            "]".repeat(250)
        ),
    ];
    for source in sources {
        // Deep nesting must not overflow the stack of a thread like the CLI's workers.
        let handle = std::thread::Builder::new()
            .stack_size(32 * 1024 * 1024)
            .spawn(move || {
                let file = SourceFile::new("pathological.rs".into(), source);
                lint_file(&file, &context()).len()
            })
            .unwrap();
        assert!(handle.join().is_ok(), "the linter panicked");
    }
}

#[test]
fn truncated_manifests_never_panic() {
    for path in fixture_files("toml") {
        let text = std::fs::read_to_string(&path).unwrap();
        for cut in (0..text.len()).filter(|i| text.is_char_boundary(*i)) {
            if let Ok(manifest) = Manifest::parse(
                Path::new("Cargo.toml"),
                "Cargo.toml".into(),
                text[..cut].to_owned(),
            ) {
                let _ = manifest.check();
            }
        }
    }
}

/// The TypeScript/JavaScript front-end and `package.json` on every TypeScript fixture cut at
/// many points and with a delimiter swapped: findings or `unparsable-file`, never a panic.
#[test]
fn truncated_and_corrupted_typescript_never_panics() {
    let targets = cargo_mcp_lint::walk::path_targets(&[
        workspace_root().join("tests/fixtures/lint/typescript")
    ])
    .unwrap();
    let mut linted = 0;
    for path in targets.sources.iter().chain(&targets.package_manifests) {
        // With the statement filter (`true`) and without.
        let lint: fn(&std::sync::Arc<SourceFile>, bool) -> Vec<_> =
            if path.extension().is_some_and(|e| e == "json") {
                |file, _| cargo_mcp_lint::typescript::package_json::lint_file(file)
            } else {
                cargo_mcp_lint::typescript::lint_file
            };
        let text = std::fs::read_to_string(path).unwrap();
        let cuts: Vec<usize> = (0..text.len())
            .step_by(17)
            .filter(|i| text.is_char_boundary(*i))
            .collect();
        for cut in cuts {
            let truncated = SourceFile::new(path.clone(), text[..cut].to_owned());
            let mut corrupted = text.clone();
            if let Some(position) = corrupted[cut..].find(['(', '{', '[', '"', '`']) {
                corrupted.replace_range(cut + position..cut + position + 1, "}");
            }
            let corrupted = SourceFile::new(path.clone(), corrupted);
            for filter in [true, false] {
                let _ = lint(&truncated, filter);
                let _ = lint(&corrupted, filter);
            }
            linted += 2;
        }
    }
    assert!(linted > 500, "only {linted} variants linted");
}
