//! A user clones this repository alone: no tracked file may refer to a folder beside it (the
//! reference material the project was written from) or to a path on one of its developers'
//! machines. Vendored copies live under `tests/schemas/` with their sources noted.

use std::path::Path;
use std::process::Command;

use mcp_migrate_tests::workspace_root;

/// Fragments that name something outside the repository, put together at run time so that this
/// file does not name them itself.
fn forbidden() -> Vec<(String, bool)> {
    let parent = "..";
    vec![
        // (fragment, must start a path: the character before it is not part of a path)
        (format!("{parent}/shared/"), false),
        (format!("{parent}/shared\""), false),
        (["shared", "spec", ""].join("/"), false),
        (["shared", "docs", ""].join("/"), false),
        (["", "work", ""].join("/"), true),
        (["", "root", ""].join("/"), true),
    ]
}

fn tracked_files(root: &Path) -> Vec<String> {
    let output = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root)
        .output();
    match output {
        Ok(output) if output.status.success() => String::from_utf8(output.stdout)
            .unwrap()
            .split('\0')
            .filter(|path| !path.is_empty())
            .map(str::to_string)
            .collect(),
        // Not a git checkout (a source archive): every file under the root but `target/`.
        _ => walk(root, root),
    }
}

fn walk(root: &Path, dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy();
        if name == "target" || name == ".git" || name == "node_modules" {
            continue;
        }
        if path.is_dir() {
            files.extend(walk(root, &path));
        } else {
            files.push(
                path.strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
            );
        }
    }
    files
}

fn starts_a_path(text: &str, at: usize) -> bool {
    let before = text[..at].chars().next_back();
    !matches!(before, Some(c) if c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'))
}

#[test]
fn no_tracked_file_refers_to_a_path_outside_the_repository() {
    let root = workspace_root();
    let patterns = forbidden();
    let mut offenders = Vec::new();
    for file in tracked_files(&root) {
        if file.ends_with("Cargo.lock") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(root.join(&file)) else {
            continue; // binary or unreadable: not a reference
        };
        for (number, line) in text.lines().enumerate() {
            for (fragment, must_start_path) in &patterns {
                let hit = line
                    .match_indices(fragment.as_str())
                    .any(|(at, _)| !must_start_path || starts_a_path(line, at));
                if hit {
                    offenders.push(format!("{file}:{}: {}", number + 1, line.trim()));
                    break;
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "tracked files refer to paths outside the repository:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_check_sees_a_reference_to_a_sibling_folder() {
    // The detector itself: a line naming the sibling folder is caught, a `bench/work/` path is not.
    let patterns = forbidden();
    let caught = |line: &str| {
        patterns.iter().any(|(fragment, must_start_path)| {
            line.match_indices(fragment.as_str())
                .any(|(at, _)| !must_start_path || starts_a_path(line, at))
        })
    };
    assert!(caught(&format!("see `{}/shared/{}/x.json`", "..", "spec")));
    assert!(caught(&format!("PathBuf::from(\"/{}/main\")", "work")));
    assert!(!caught("written to bench/work/tree"));
    assert!(!caught("a shared lane of the profile"));
}
