//! The Python front-end on the Python rule fixtures (`tests/fixtures/lint/python/<rule>/`):
//! every `#~ RULE` annotation is reported on its line and nothing else is; the findings as
//! rendered are an insta snapshot; the fixes turn each file with a `.fixed` file
//! beside it into exactly that text (regenerate with `UPDATE_FIXED=1`, then review the diff).
//! Each file goes through the run's own per-file path (`lint_other_source`: suppressions in `#`
//! comments, fixes).

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cargo_mcp_lint::config::Config;
use cargo_mcp_lint::diagnostic::Diagnostic;
use cargo_mcp_lint::fix;
use cargo_mcp_lint::lang::ManifestKind;
use cargo_mcp_lint::python;
use support::workspace_root;

/// Every file of the Python fixtures (`tests/fixtures/lint/python/<rule>/`), sorted, as paths
/// relative to the fixtures.
fn python_files() -> Vec<PathBuf> {
    let root = workspace_root().join("tests/fixtures/lint");
    let mut files = Vec::new();
    for entry in std::fs::read_dir(root.join("python")).unwrap() {
        let dir = entry.unwrap().path();
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for file in entries {
            let path = file.unwrap().path();
            let lintable =
                path.extension().is_some_and(|e| e == "py") || ManifestKind::of(&path).is_some();
            if lintable {
                files.push(path.strip_prefix(&root).unwrap().to_path_buf());
            }
        }
    }
    files.sort();
    files
}

/// The file's findings as a run reports them: suppressions applied, fixes attached.
fn lint_text(path: &Path, text: &str) -> Vec<Diagnostic> {
    cargo_mcp_lint::lint_other_source(path, path, text.to_owned(), &Config::default())
}

fn lint(relative: &Path) -> Vec<Diagnostic> {
    let path = workspace_root().join("tests/fixtures/lint").join(relative);
    lint_text(relative, &std::fs::read_to_string(path).unwrap())
}

#[test]
fn every_python_fixture_reports_exactly_its_annotations() {
    let files = python_files();
    assert!(files.len() >= 20, "{files:?}");
    let mut failures = Vec::new();
    for relative in &files {
        let text =
            std::fs::read_to_string(workspace_root().join("tests/fixtures/lint").join(relative))
                .unwrap();
        let mut expected: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        for (index, line) in text.lines().enumerate() {
            if let Some(position) = line.find("#~") {
                let mut rules: Vec<String> = line[position + 2..]
                    .split_whitespace()
                    .map(str::to_owned)
                    .collect();
                rules.sort();
                expected.insert(index + 1, rules);
            }
        }
        let name = relative.file_name().unwrap().to_string_lossy();
        assert!(
            !name.starts_with("negative") || expected.is_empty(),
            "{} must stay silent but carries an annotation",
            relative.display()
        );
        let mut actual: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        for diagnostic in lint(relative) {
            actual
                .entry(diagnostic.location().line)
                .or_default()
                .push(diagnostic.rule().name.to_owned());
        }
        actual.values_mut().for_each(|rules| rules.sort());
        if expected != actual {
            failures.push(format!(
                "{}:\n  expected {expected:?}\n  got      {actual:?}",
                relative.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn python_fixture_findings_snapshot() {
    let mut out = String::new();
    for relative in python_files() {
        for diagnostic in lint(&relative) {
            let location = diagnostic.location();
            out.push_str(&format!(
                "{}:{}:{} {} {} [{}] {}\n",
                relative.display(),
                location.line,
                location.column,
                diagnostic.rule().code,
                diagnostic.rule().name,
                diagnostic.severity,
                diagnostic.message,
            ));
            if let Some(fix) = &diagnostic.fix {
                out.push_str(&format!(
                    "    fix ({:?}): {}\n",
                    fix.applicability, fix.message
                ));
            }
        }
    }
    insta::assert_snapshot!(out);
}

/// Applies every fix (unsafe ones included) pass after pass, refusing a text that no longer parses.
fn fix_all(relative: &Path, original: &str) -> String {
    let mut current = original.to_owned();
    for _ in 0..8 {
        let diagnostics = lint_text(relative, &current);
        let (next, applied) =
            fix::apply(&current, diagnostics.iter().filter_map(|d| d.fix.as_ref()));
        if applied == 0 || next == current {
            break;
        }
        let parses = match ManifestKind::of(relative) {
            Some(kind) => python::manifest::parses(&next, kind),
            None => python::parses(&next),
        };
        assert!(parses, "{}: the fixes broke the file", relative.display());
        current = next;
    }
    current
}

#[test]
fn python_fixes_match_their_fixed_expectations_and_are_idempotent() {
    let update = std::env::var_os("UPDATE_FIXED").is_some();
    let root = workspace_root().join("tests/fixtures/lint");
    let mut checked = 0;
    for relative in python_files() {
        let path = root.join(&relative);
        let fixed_path = PathBuf::from(format!("{}.fixed", path.display()));
        let original = std::fs::read_to_string(&path).unwrap();
        let fixed = fix_all(&relative, &original);
        if update {
            if fixed != original || fixed_path.exists() {
                std::fs::write(&fixed_path, &fixed).unwrap();
            }
            continue;
        }
        if !fixed_path.exists() {
            assert_eq!(
                fixed,
                original,
                "{} has fixes but no .fixed file",
                relative.display()
            );
            continue;
        }
        let expected = std::fs::read_to_string(&fixed_path).unwrap();
        assert_eq!(fixed, expected, "{}", relative.display());
        assert_eq!(
            fix_all(&relative, &fixed),
            fixed,
            "fixing twice changes {}",
            relative.display()
        );
        checked += 1;
    }
    assert!(update || checked >= 3, "only {checked} fixed files checked");
}
