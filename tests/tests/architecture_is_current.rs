//! ARCHITECTURE.md describes the code as it is: every source module of the two tools and the rule
//! catalogue is named there, and every `.rs` file it names exists.

use std::path::{Path, PathBuf};

use mcp_migrate_tests::workspace_root;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap_or_default();
        if name == "target" || name == ".git" || name == "node_modules" {
            continue;
        }
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// The `.rs` paths a Markdown text names (`front/http.rs`, `lint/src/rust/mod.rs`, ...).
fn named_paths(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    for word in text.split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '/' | '.' | '-'))) {
        let word = word.trim_end_matches('.');
        if word.ends_with(".rs") && word.len() > 3 {
            names.push(word.to_string());
        }
    }
    names
}

/// Whether the path `name` written in ARCHITECTURE.md names the source file `relative` (relative
/// to its crate's `src/`): one is a path suffix of the other (`imports.rs` inside the
/// `rust/mod.rs` block names `rust/imports.rs`). A bare `mod.rs` names nothing.
fn names(name: &str, relative: &str) -> bool {
    let suffix = |long: &str, short: &str| long == short || long.ends_with(&format!("/{short}"));
    name != "mod.rs" && (suffix(name, relative) || suffix(relative, name))
}

#[test]
fn every_module_is_named_and_every_named_module_exists() {
    let root = workspace_root();
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let named = named_paths(&text);

    let mut sources = Vec::new();
    for krate in ["proxy/src", "lint/src", "rules/src"] {
        let mut files = Vec::new();
        rust_files(&root.join(krate), &mut files);
        for file in files {
            let relative = file.strip_prefix(root.join(krate)).unwrap();
            let relative = relative.to_string_lossy().replace('\\', "/");
            // Unit-test files beside their module (`x/tests.rs`) are part of that module.
            if relative.ends_with("/tests.rs") || relative.contains("/tests/") {
                continue;
            }
            sources.push((krate, relative));
        }
    }
    let missing: Vec<String> = sources
        .iter()
        .filter(|(_, relative)| !named.iter().any(|name| names(name, relative)))
        .map(|(krate, relative)| format!("{krate}/{relative}"))
        .collect();
    assert!(
        missing.is_empty(),
        "modules ARCHITECTURE.md does not name:\n{}",
        missing.join("\n")
    );

    // Every `.rs` file of the repository (tests and fixtures too): a named file must be one of them.
    let mut every = Vec::new();
    rust_files(&root, &mut every);
    let every: Vec<String> = every
        .iter()
        .map(|file| {
            let relative = file.strip_prefix(&root).unwrap();
            relative.to_string_lossy().replace('\\', "/")
        })
        .collect();
    let unknown: Vec<&String> = named
        .iter()
        .filter(|name| name.as_str() != "mod.rs" && !every.iter().any(|file| names(name, file)))
        .collect();
    assert!(
        unknown.is_empty(),
        "ARCHITECTURE.md names files that do not exist: {unknown:?}"
    );
}
