use super::*;
use mcp_migrate_rules::RuleId;

const SERVER: &str = r#"use rmcp::model::{ContextInclusion, LoggingLevel};

impl ServerHandler for Indexer {
    async fn set_level(&self, request: SetLevelRequestParams) -> Result<(), McpError> {
        Ok(())
    }
}

pub fn scope() -> Option<ContextInclusion> {
    Some(ContextInclusion::ThisServer)
}

pub fn other_scope() -> Option<ContextInclusion> {
    Some(ContextInclusion::ThisServer)
}

pub fn twice() -> Vec<Option<ContextInclusion>> {
    vec![
        Some(ContextInclusion::AllServers),
        Some(ContextInclusion::AllServers),
    ]
}
"#;

/// Findings where the analyzer puts them (a `set_level` override's name, each deprecated
/// `ContextInclusion` path), made here so that these tests do not depend on detection details.
fn findings(path: &str, text: &str) -> Vec<Diagnostic> {
    let file = SourceFile::new(path.into(), text.to_owned());
    let mut out = Vec::new();
    for (needle, rule) in [
        ("set_level", RuleId::DeprecatedLogging),
        (
            "ContextInclusion::ThisServer",
            RuleId::DeprecatedIncludeContext,
        ),
        (
            "ContextInclusion::AllServers",
            RuleId::DeprecatedIncludeContext,
        ),
    ] {
        for (start, _) in text.match_indices(needle) {
            out.push(Diagnostic {
                rule,
                severity: rule.rule().default_severity,
                file: file.clone(),
                span: ByteSpan::new(start, start + needle.len()),
                message: String::new(),
                help: None,
                label: None,
                fix: None,
            });
        }
    }
    out.sort_by_key(|d| d.span);
    out
}

fn no_file_is_gone(_: &str) -> bool {
    true
}

#[test]
fn the_same_code_is_fully_baselined() {
    let diagnostics = findings("src/lib.rs", SERVER);
    assert_eq!(diagnostics.len(), 5, "{diagnostics:#?}");
    let baseline = Baseline::of(&diagnostics);
    // The two identical lines of `twice` share a key, counted twice.
    assert_eq!(baseline.findings.len(), 4);
    assert!(baseline.findings.iter().any(|entry| entry.count == 2));
    let matched = apply(&baseline, findings("src/lib.rs", SERVER), no_file_is_gone);
    assert_eq!((matched.new.len(), matched.baselined.len()), (0, 5));
    assert!(matched.stale.is_empty());
}

#[test]
fn inserted_lines_and_reformatting_keep_the_baseline() {
    let baseline = Baseline::of(&findings("src/lib.rs", SERVER));
    let edited = SERVER
        .replace(
            "impl ServerHandler",
            "/// Docs.\n\n// A comment.\nconst LIMIT: u32 = 3;\n\nimpl ServerHandler",
        )
        .replace(
            "    Some(ContextInclusion::ThisServer)\n}\n\npub fn other",
            "    let _unused = LIMIT;\n      Some(ContextInclusion::ThisServer)\n}\n\npub fn other",
        );
    let matched = apply(&baseline, findings("src/lib.rs", &edited), no_file_is_gone);
    assert_eq!((matched.new.len(), matched.baselined.len()), (0, 5));
    assert!(matched.stale.is_empty());
}

#[test]
fn moved_functions_keep_the_baseline() {
    let baseline = Baseline::of(&findings("src/lib.rs", SERVER));
    let (head, rest) = SERVER.split_at(SERVER.find("pub fn scope").unwrap());
    let (scope, rest) = rest.split_at(rest.find("pub fn other_scope").unwrap());
    let moved = format!("{head}{rest}\n{scope}");
    assert_ne!(moved, SERVER);
    let matched = apply(&baseline, findings("src/lib.rs", &moved), no_file_is_gone);
    assert_eq!((matched.new.len(), matched.baselined.len()), (0, 5));
}

#[test]
fn renamed_files_keep_their_entries_once_the_old_path_is_gone() {
    let baseline = Baseline::of(&findings("src/lib.rs", SERVER));
    let renamed = findings("src/server.rs", SERVER);
    let matched = apply(&baseline, renamed.clone(), |path| path != "src/lib.rs");
    assert_eq!((matched.new.len(), matched.baselined.len()), (0, 5));
    assert!(matched.stale.is_empty());
    // While the old file still exists, a copy elsewhere is new code.
    let matched = apply(&baseline, renamed, |_| true);
    assert_eq!((matched.new.len(), matched.baselined.len()), (5, 0));
    assert_eq!(matched.stale.len(), 4);
}

#[test]
fn a_new_finding_fails_and_a_fixed_one_is_stale() {
    let baseline = Baseline::of(&findings("src/lib.rs", SERVER));
    let changed = SERVER
        .replacen(
            "Some(ContextInclusion::AllServers),",
            "Some(ContextInclusion::None),",
            1,
        )
        .replace("fn other_scope", "fn renamed_scope");
    let matched = apply(&baseline, findings("src/lib.rs", &changed), no_file_is_gone);
    // `other_scope` renamed: its finding is another item's now (new), its entry stale; one of
    // the two identical lines of `twice` is gone: its count of 2 leaves 1 stale.
    assert_eq!(matched.new.len(), 1, "{:#?}", matched.new);
    assert_eq!(matched.baselined.len(), 3);
    let mut stale: Vec<(String, usize)> = matched
        .stale
        .iter()
        .map(|entry| (entry.context.clone(), entry.count))
        .collect();
    stale.sort();
    assert_eq!(
        stale,
        [
            (
                "fn other_scope: Some(ContextInclusion::ThisServer)".to_owned(),
                1
            ),
            (
                "fn twice: Some(ContextInclusion::AllServers),".to_owned(),
                1
            ),
        ]
    );
}

#[test]
fn the_written_file_is_sorted_stable_and_reads_back() {
    let mut diagnostics = findings("src/lib.rs", SERVER);
    diagnostics.extend(findings("src/a.rs", SERVER));
    let baseline = Baseline::of(&diagnostics);
    diagnostics.reverse();
    assert_eq!(
        Baseline::of(&diagnostics),
        baseline,
        "order of findings matters"
    );
    let keys: Vec<_> = baseline
        .findings
        .iter()
        .map(|e| (&e.path, &e.rule, &e.fingerprint))
        .collect();
    assert!(keys.windows(2).all(|pair| pair[0] < pair[1]));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("baseline.toml");
    baseline.write(&path).unwrap();
    let first = std::fs::read_to_string(&path).unwrap();
    assert_eq!(Baseline::read(&path).unwrap(), baseline);
    Baseline::read(&path).unwrap().write(&path).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), first);
    assert!(
        first.contains("[[finding]]\npath = \"src/a.rs\"\nrule = \"deprecated-include-context\"")
    );
}

#[test]
fn a_broken_baseline_is_a_clear_error_and_a_missing_one_is_empty() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("baseline.toml");
    assert!(Baseline::read(&path).unwrap().findings.is_empty());
    std::fs::write(&path, "version = 1\n[[finding]]\npath = 3\n").unwrap();
    let error = Baseline::read(&path).unwrap_err().to_string();
    assert!(error.contains("is not a valid baseline file"), "{error}");
}
