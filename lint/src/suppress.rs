//! Inline suppressions: `// mcp-lint: allow(RULE[, RULE]) REASON` (in `Cargo.toml`: `# mcp-lint: ...`;
//! in TypeScript/JavaScript also `/* mcp-lint: ... */`).
//!
//! A comment that shares its line with code covers that line; a comment on a line of its own
//! covers the next line holding code. A reason is required. Suppressions that silence nothing are
//! reported as `unused-suppression`; unknown rules and missing reasons as `malformed-suppression`.

use std::collections::HashSet;
use std::sync::Arc;

use mcp_migrate_rules::{suggest, RuleId};

use crate::diagnostic::{ByteSpan, Diagnostic, SourceFile};

const MARKER: &str = "mcp-lint:";

#[derive(Debug)]
struct Suppression {
    /// The 1-based line the comment covers.
    target_line: usize,
    rules: Vec<(RuleId, bool)>,
    span: ByteSpan,
}

/// Which comment syntax a file uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommentStyle {
    /// `//` (Rust)
    Slashes,
    /// `#` (TOML)
    Hash,
    /// `//` and `/* */` (TypeScript and JavaScript; comments as the TypeScript parser finds them)
    Script,
    /// `#` (Python; comments as Python's tokenizer finds them, never inside a string)
    Python,
    /// No comments at all (JSON): nothing can be suppressed.
    NoComments,
}

/// The outcome of applying a file's suppressions.
#[derive(Debug, Default)]
pub struct Applied {
    pub kept: Vec<Diagnostic>,
    pub suppressed: usize,
}

/// Drops the diagnostics that a suppression comment covers and adds the findings about the
/// comments themselves. `enabled` tells whether a rule is on at all: a suppression for a rule
/// that is off is not reported as unused.
pub fn apply(
    file: &Arc<SourceFile>,
    style: CommentStyle,
    diagnostics: Vec<Diagnostic>,
    enabled: impl Fn(RuleId) -> bool,
) -> Applied {
    if !file.text.contains(MARKER) {
        return Applied {
            kept: diagnostics,
            suppressed: 0,
        };
    }
    let (mut suppressions, mut findings) = parse(file, style);
    let mut applied = Applied::default();
    for diagnostic in diagnostics {
        let line = diagnostic.location().line;
        let covering = suppressions.iter_mut().find_map(|suppression| {
            (suppression.target_line == line)
                .then_some(())
                .and_then(|()| {
                    suppression
                        .rules
                        .iter_mut()
                        .find(|(rule, _)| *rule == diagnostic.rule)
                })
        });
        match covering {
            Some((_, used)) if !is_meta(diagnostic.rule) => {
                *used = true;
                applied.suppressed += 1;
            }
            _ => applied.kept.push(diagnostic),
        }
    }
    for suppression in &suppressions {
        for (rule, used) in &suppression.rules {
            if !used && enabled(*rule) {
                findings.push(meta(
                    file,
                    RuleId::UnusedSuppression,
                    suppression.span,
                    format!(
                        "unused suppression: `{}` reports nothing on line {}",
                        rule.rule().name,
                        suppression.target_line
                    ),
                    "remove the suppression, or move it to the line it was meant for",
                ));
            }
        }
    }
    applied.kept.extend(findings);
    applied
}

fn is_meta(rule: RuleId) -> bool {
    matches!(
        rule,
        RuleId::UnusedSuppression | RuleId::MalformedSuppression
    )
}

fn meta(
    file: &Arc<SourceFile>,
    rule: RuleId,
    span: ByteSpan,
    message: String,
    help: &str,
) -> Diagnostic {
    Diagnostic {
        rule,
        severity: rule.rule().default_severity,
        file: file.clone(),
        span,
        message,
        help: Some(help.to_owned()),
        label: Some("suppression comment".into()),
        fix: None,
    }
}

/// The plain comments of a file: (byte offset of the opener, text from the opener to the line
/// end). Rust files go through rustc's own lexer, so `//` inside string literals and doc comments
/// (which are documentation, not directives) never count; TOML lines are scanned with quote
/// tracking.
fn comments(file: &SourceFile, style: CommentStyle) -> Vec<(usize, &str)> {
    let text = file.text.as_str();
    let mut out = Vec::new();
    match style {
        CommentStyle::Slashes => {
            use ra_ap_rustc_lexer::{tokenize, FrontmatterAllowed, TokenKind};
            let mut offset = 0usize;
            for token in tokenize(text, FrontmatterAllowed::No) {
                let end = offset + token.len as usize;
                if token.kind == (TokenKind::LineComment { doc_style: None }) {
                    out.push((offset, &text[offset..end]));
                }
                offset = end;
            }
        }
        CommentStyle::Hash => {
            let mut line_start = 0;
            for line in text.split('\n') {
                let mut quote: Option<char> = None;
                let mut escaped = false;
                for (index, ch) in line.char_indices() {
                    match (quote, ch) {
                        (Some('"'), '\\') if !escaped => {
                            escaped = true;
                            continue;
                        }
                        (Some(open), _) if ch == open && !escaped => quote = None,
                        (None, '"' | '\'') => quote = Some(ch),
                        (None, '#') => {
                            out.push((line_start + index, line[index..].trim_end_matches('\r')));
                            break;
                        }
                        _ => {}
                    }
                    escaped = false;
                }
                line_start += line.len() + 1;
            }
        }
        CommentStyle::Script => {
            for (start, end) in crate::typescript::comments(&file.path, text) {
                out.push((start, &text[start..end]));
            }
        }
        CommentStyle::Python => {
            for (start, end) in crate::python::comments(text) {
                out.push((start, &text[start..end]));
            }
        }
        CommentStyle::NoComments => {}
    }
    out
}

fn parse(file: &Arc<SourceFile>, style: CommentStyle) -> (Vec<Suppression>, Vec<Diagnostic>) {
    let opener = match style {
        CommentStyle::Slashes | CommentStyle::Script | CommentStyle::NoComments => "//",
        CommentStyle::Hash | CommentStyle::Python => "#",
    };
    let mut suppressions = Vec::new();
    let mut findings = Vec::new();
    let lines: Vec<&str> = file.text.split('\n').collect();
    for (start, comment) in comments(file, style) {
        // A block comment's text ends before its `*/`; its opener is as long as `//`.
        let inner = match comment.strip_prefix("/*") {
            Some(block) if style == CommentStyle::Script => {
                block.strip_suffix("*/").unwrap_or(block)
            }
            _ => &comment[opener.len()..],
        };
        let Some(rest) = inner.trim_start().strip_prefix(MARKER) else {
            continue;
        };
        let rest = rest.trim();
        let span = ByteSpan::new(start, start + comment.trim_end().len());
        let (line, _) = file.line_column(start);
        let index = line - 1;
        // A block comment followed by code on its line shares that line with the code.
        let comment_end = start + comment.len();
        let rest_of_line = &file.text[comment_end..];
        let code_after = !rest_of_line[..rest_of_line.find('\n').unwrap_or(rest_of_line.len())]
            .trim()
            .is_empty();
        let own_line = file.text[file.offset(line, 0)..start].trim().is_empty() && !code_after;
        let target_line = if own_line {
            next_code_line(&lines, index, opener)
        } else {
            line
        };
        let Some(body) = rest.strip_prefix("allow(") else {
            findings.push(meta(
                file,
                RuleId::MalformedSuppression,
                span,
                "malformed suppression: expected `mcp-lint: allow(RULE) reason`".into(),
                "write `// mcp-lint: allow(rule-name) why this is acceptable`",
            ));
            continue;
        };
        let Some(close) = body.find(')') else {
            findings.push(meta(
                file,
                RuleId::MalformedSuppression,
                span,
                "malformed suppression: `allow(` is not closed".into(),
                "write `// mcp-lint: allow(rule-name) why this is acceptable`",
            ));
            continue;
        };
        let reason = body[close + 1..]
            .trim_start_matches([':', '-', ' ', '\t'])
            .trim();
        let mut rules = Vec::new();
        let mut seen = HashSet::new();
        for selector in body[..close]
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            match mcp_migrate_rules::lookup_id(selector) {
                Some(rule) if seen.insert(rule) => rules.push((rule, false)),
                Some(_) => {}
                None => {
                    let hint = suggest(selector).map_or_else(
                        || "`cargo mcp-lint --list-rules` lists the rules".to_owned(),
                        |rule| format!("did you mean `{}`?", rule.name),
                    );
                    findings.push(meta(
                        file,
                        RuleId::MalformedSuppression,
                        span,
                        format!("malformed suppression: unknown rule `{selector}`"),
                        &hint,
                    ));
                }
            }
        }
        if rules.is_empty() {
            if !findings.iter().any(|f| f.span == span) {
                findings.push(meta(
                    file,
                    RuleId::MalformedSuppression,
                    span,
                    "malformed suppression: no rule named".into(),
                    "name the rule: `mcp-lint: allow(rule-name) reason`",
                ));
            }
            continue;
        }
        if reason.is_empty() {
            findings.push(meta(
                file,
                RuleId::MalformedSuppression,
                span,
                "malformed suppression: no reason given".into(),
                "say why after the parenthesis: `mcp-lint: allow(rule-name) client pinned to 2025-11-25`",
            ));
            continue;
        }
        suppressions.push(Suppression {
            target_line,
            rules,
            span,
        });
    }
    (suppressions, findings)
}

fn next_code_line(lines: &[&str], index: usize, opener: &str) -> usize {
    lines
        .iter()
        .enumerate()
        .skip(index + 1)
        .find(|(_, line)| {
            let trimmed = line.trim();
            !trimmed.is_empty() && !trimmed.starts_with(opener)
        })
        .map_or(index + 2, |(next, _)| next + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diagnostic(file: &Arc<SourceFile>, rule: RuleId, line: usize) -> Diagnostic {
        let start = file.offset(line, 0);
        Diagnostic {
            rule,
            severity: rule.rule().default_severity,
            file: file.clone(),
            span: ByteSpan::new(start, start + 1),
            message: "m".into(),
            help: None,
            label: None,
            fix: None,
        }
    }

    #[test]
    fn trailing_and_preceding_comments_cover_their_lines() {
        let file = SourceFile::new(
            "a.rs".into(),
            "// mcp-lint: allow(deprecated-sampling) pinned client\n\n// another comment\ncall();\nother(); // mcp-lint: allow(MCP103, deprecated-roots) legacy path\nthird();\n"
                .into(),
        );
        let diagnostics = vec![
            diagnostic(&file, RuleId::DeprecatedSampling, 4),
            diagnostic(&file, RuleId::DeprecatedLogging, 5),
            diagnostic(&file, RuleId::DeprecatedLogging, 6),
        ];
        let applied = apply(&file, CommentStyle::Slashes, diagnostics, |_| true);
        assert_eq!(applied.suppressed, 2);
        let kept: Vec<_> = applied
            .kept
            .iter()
            .map(|d| (d.rule, d.location().line))
            .collect();
        // line 6 is not covered; `deprecated-roots` on line 5 is unused.
        assert_eq!(
            kept,
            [
                (RuleId::DeprecatedLogging, 6),
                (RuleId::UnusedSuppression, 5)
            ]
        );
    }

    #[test]
    fn unknown_rules_and_missing_reasons_are_malformed() {
        let file = SourceFile::new(
            "a.rs".into(),
            "a(); // mcp-lint: allow(deprecated-sampeling) reason\nb(); // mcp-lint: allow(deprecated-sampling)\nc(); // mcp-lint: nope\n".into(),
        );
        let diagnostics = vec![diagnostic(&file, RuleId::DeprecatedSampling, 2)];
        let applied = apply(&file, CommentStyle::Slashes, diagnostics, |_| true);
        assert_eq!(applied.suppressed, 0);
        let messages: Vec<_> = applied.kept.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "m",
                "malformed suppression: unknown rule `deprecated-sampeling`",
                "malformed suppression: no reason given",
                "malformed suppression: expected `mcp-lint: allow(RULE) reason`",
            ]
        );
        assert_eq!(
            applied.kept[1].help.as_deref(),
            Some("did you mean `deprecated-sampling`?")
        );
    }

    #[test]
    fn suppressions_for_disabled_rules_are_not_unused() {
        let file = SourceFile::new(
            "Cargo.toml".into(),
            "rmcp = \"2\" # mcp-lint: allow(legacy-sdk-version) migration tracked in #12\n".into(),
        );
        let applied = apply(&file, CommentStyle::Hash, vec![], |_| false);
        assert!(applied.kept.is_empty());
        let applied = apply(&file, CommentStyle::Hash, vec![], |_| true);
        assert_eq!(applied.kept[0].rule, RuleId::UnusedSuppression);
    }
}
