//! The per-rule fixtures under `tests/fixtures/lint/`: every annotated `//~ RULE` (`#~ RULE` in
//! TOML) must be reported on its line, and nothing else may be. Conventions:
//! `tests/fixtures/lint/CONVENTIONS.md`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cargo_mcp_lint::config::Config;
use cargo_mcp_lint::lang::Language;
use cargo_mcp_lint::walk;
use mcp_migrate_rules::{Family, RULES};
use mcp_migrate_tests::workspace_root;

type Expectations = BTreeMap<(PathBuf, usize), Vec<String>>;

fn fixture_root() -> PathBuf {
    workspace_root().join("tests/fixtures/lint")
}

fn fixture_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(fixture_root())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// The annotations of every file below `dir`.
fn expected(dir: &Path) -> Expectations {
    let targets = walk::path_targets(&[dir.to_path_buf()]).unwrap();
    let mut expected = Expectations::new();
    for path in targets
        .rust_files
        .iter()
        .chain(&targets.manifests)
        .chain(&targets.sources)
        .chain(&targets.package_manifests)
    {
        // JSON has no comments: `package.json`'s annotations are `LINE RULE [RULE...]` lines of
        // `package.json.expected` beside it.
        if path.extension().is_some_and(|e| e == "json") {
            let sidecar = path.with_extension("json.expected");
            let text = std::fs::read_to_string(&sidecar).unwrap_or_default();
            for line in text.lines() {
                let mut words = line.split_whitespace();
                let Some(number) = words.next().and_then(|n| n.parse::<usize>().ok()) else {
                    continue;
                };
                let mut rules: Vec<String> = words.map(str::to_owned).collect();
                rules.sort();
                expected.insert((path.clone(), number), rules);
            }
            continue;
        }
        // `//` comments in Rust and TypeScript/JavaScript, `#` in TOML and Python.
        let marker = match cargo_mcp_lint::lang::Language::of(path) {
            Some(Language::Rust | Language::TypeScript) => "//~",
            _ => "#~",
        };
        let text = std::fs::read_to_string(path).unwrap();
        for (index, line) in text.lines().enumerate() {
            if let Some(position) = line.find(marker) {
                let mut rules: Vec<String> = line[position + marker.len()..]
                    .split_whitespace()
                    .map(str::to_owned)
                    .collect();
                rules.sort();
                expected.insert((path.clone(), index + 1), rules);
            }
        }
    }
    expected
}

fn actual(dir: &Path) -> Expectations {
    let targets = walk::path_targets(&[dir.to_path_buf()]).unwrap();
    let outcome = cargo_mcp_lint::lint(&targets, &Config::default(), true);
    let cwd = std::env::current_dir().unwrap();
    let mut actual = Expectations::new();
    for diagnostic in &outcome.diagnostics {
        let path = cwd.join(&diagnostic.file.path);
        let path = if path.exists() {
            path
        } else {
            diagnostic.file.path.clone()
        };
        actual
            .entry((path, diagnostic.location().line))
            .or_default()
            .push(diagnostic.rule().name.to_owned());
    }
    for rules in actual.values_mut() {
        rules.sort();
    }
    actual
}

#[test]
fn every_fixture_reports_exactly_its_annotations() {
    let mut failures = Vec::new();
    for dir in fixture_dirs() {
        let expected = expected(&dir);
        let actual = actual(&dir);
        let keys: std::collections::BTreeSet<_> = expected.keys().chain(actual.keys()).collect();
        for key in keys {
            let want = expected.get(key).cloned().unwrap_or_default();
            let got = actual.get(key).cloned().unwrap_or_default();
            if want != got {
                let line_text = std::fs::read_to_string(&key.0)
                    .ok()
                    .and_then(|text| {
                        text.lines()
                            .nth(key.1 - 1)
                            .map(str::trim)
                            .map(str::to_owned)
                    })
                    .unwrap_or_default();
                failures.push(format!(
                    "{}:{}: expected {want:?}, got {got:?}\n    {line_text}",
                    key.0
                        .strip_prefix(fixture_root())
                        .unwrap_or(&key.0)
                        .display(),
                    key.1
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} fixture mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_protocol_rule_has_a_fixture_directory_with_positive_cases() {
    let names: Vec<String> = fixture_dirs()
        .iter()
        .map(|dir| dir.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for rule in RULES.iter().filter(|rule| rule.family != Family::Linter) {
        assert!(
            names.contains(&rule.name.to_owned()),
            "no fixture for {}",
            rule.name
        );
        let expected = expected(&fixture_root().join(rule.name));
        assert!(
            expected.values().flatten().any(|name| name == rule.name),
            "the fixture of {} has no annotated case of it",
            rule.name
        );
        assert!(!rule.docs.is_empty(), "{} has no documentation", rule.name);
    }
}

#[test]
fn negative_files_carry_no_annotation() {
    for dir in fixture_dirs() {
        for (path, _) in expected(&dir).keys() {
            let name = path.file_name().unwrap().to_string_lossy();
            assert!(
                !name.starts_with("negative")
                    && !path.starts_with(fixture_root().join("lookalikes-no-mcp"))
                    && !path.starts_with(fixture_root().join("modern-rmcp3")),
                "{} must stay silent but carries an annotation",
                path.display()
            );
        }
    }
}
