use super::*;

fn fix(applicability: Applicability, edits: &[(usize, usize, &str)]) -> Fix {
    Fix::new(
        applicability,
        "test",
        edits
            .iter()
            .map(|(start, end, content)| Edit::replace(ByteSpan::new(*start, *end), *content))
            .collect(),
    )
}

#[test]
fn edits_keep_the_untouched_text_and_apply_in_position_order() {
    let text = "let a = 1; // one\nlet b = 2; // two\n";
    let fixes = [
        fix(Applicability::Safe, &[(26, 27, "20")]),
        fix(Applicability::Safe, &[(8, 9, "10")]),
    ];
    let (out, applied) = apply(text, &fixes);
    assert_eq!(out, "let a = 10; // one\nlet b = 20; // two\n");
    assert_eq!(applied, 2);
}

#[test]
fn overlapping_fixes_resolve_the_same_way_whatever_their_order() {
    let text = "abcdefgh";
    let first = fix(Applicability::Safe, &[(1, 4, "X")]);
    let second = fix(Applicability::Safe, &[(3, 6, "Y")]);
    let third = fix(Applicability::Safe, &[(6, 7, "Z")]);
    let forward = apply(text, [&first, &second, &third]);
    let backward = apply(text, [&third, &second, &first]);
    assert_eq!(forward, backward);
    assert_eq!(forward, ("aXefZh".to_owned(), 2));
    // A fix whose edits are not all free is skipped as a whole (the earlier fix wins).
    let both = fix(Applicability::Safe, &[(0, 1, "A"), (2, 3, "C")]);
    assert_eq!(apply(text, [&first, &both]), ("AbCdefgh".to_owned(), 1));
    let late = fix(Applicability::Safe, &[(2, 3, "C"), (7, 8, "H")]);
    assert_eq!(apply(text, [&late, &first]), ("aXefgh".to_owned(), 1));
    // Two insertions at one point would depend on order: only the first is taken.
    let insert_a = fix(Applicability::Safe, &[(2, 2, "1")]);
    let insert_b = fix(Applicability::Safe, &[(2, 2, "2")]);
    assert_eq!(apply(text, [&insert_a, &insert_b]).1, 1);
}

#[test]
fn out_of_range_or_mid_character_edits_are_skipped_not_a_panic() {
    let text = "é";
    let bad = [
        fix(Applicability::Safe, &[(1, 2, "x")]),
        fix(Applicability::Safe, &[(0, 9, "x")]),
    ];
    assert_eq!(apply(text, &bad), ("é".to_owned(), 0));
}

#[test]
fn allowed_levels() {
    assert!(Allowed::Safe.permits(Applicability::Safe));
    assert!(!Allowed::Safe.permits(Applicability::Unsafe));
    assert!(Allowed::Unsafe.permits(Applicability::Unsafe));
    assert!(!Allowed::Unsafe.permits(Applicability::DisplayOnly));
    assert!(!Allowed::Unsafe.permits(Applicability::None));
}

#[test]
fn a_fix_that_breaks_the_syntax_is_refused_and_the_file_kept() {
    let original = "fn main() { let x = 1; }\n";
    let file = SourceFile::new("a.rs".into(), original.to_owned());
    let breaking = Diagnostic {
        rule: RuleId::DeprecatedLogging,
        severity: mcp_migrate_rules::Severity::Warning,
        file: file.clone(),
        span: ByteSpan::new(0, 2),
        message: String::new(),
        help: None,
        label: None,
        fix: Some(fix(Applicability::Safe, &[(10, 11, "")])),
    };
    let result = fix_text(original, SourceKind::Rust, Allowed::Safe, |_| {
        vec![breaking.clone()]
    });
    assert_eq!(result.fixed, original);
    assert_eq!(result.applied, 0);
    assert!(result.warning.unwrap().contains("no longer parses"));
}

#[test]
fn unified_diff_has_git_headers() {
    let diff = unified_diff("src/a.rs", "a\nb\n", "a\nc\n");
    assert!(
        diff.starts_with("--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,2 +1,2 @@\n"),
        "{diff}"
    );
    assert!(diff.contains("-b\n+c\n"));
}
