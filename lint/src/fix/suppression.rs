//! `unused-suppression`: drop the rule that silences nothing from the comment, or the whole
//! comment when it names nothing else (safe: comments change no behaviour).

use super::{Applicability, Edit, Fix, SourceKind};
use crate::diagnostic::{ByteSpan, Diagnostic, SourceFile};

pub(super) fn fix(file: &SourceFile, kind: SourceKind, diagnostic: &Diagnostic) -> Option<Fix> {
    // The message names the unused rule: "unused suppression: `NAME` reports nothing ...".
    let name = diagnostic.message.split('`').nth(1)?;
    let unused = mcp_migrate_rules::lookup_id(name)?;
    let span = diagnostic.span;
    let comment = file.text.get(span.start..span.end)?;
    let open = comment.find("allow(")? + "allow(".len();
    let close = open + comment[open..].find(')')?;
    let kept: Vec<&str> = comment[open..close]
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty() && mcp_migrate_rules::lookup_id(s) != Some(unused))
        .collect();
    let message = format!("remove `{name}` from the suppression comment");
    if kept.is_empty() {
        return Some(Fix::new(
            Applicability::Safe,
            message,
            vec![Edit::delete(comment_extent(&file.text, span, kind))],
        ));
    }
    Some(Fix::new(
        Applicability::Safe,
        message,
        vec![Edit::replace(
            ByteSpan::new(span.start + open, span.start + close),
            kept.join(", "),
        )],
    ))
}

/// What to delete with a comment: its whole line when it stands alone, else the comment and the
/// blanks before it.
fn comment_extent(text: &str, span: ByteSpan, _kind: SourceKind) -> ByteSpan {
    let line_start = text[..span.start].rfind('\n').map_or(0, |i| i + 1);
    let before = &text[line_start..span.start];
    if before.trim().is_empty() {
        let end = text[span.end..]
            .find('\n')
            .map_or(text.len(), |i| span.end + i + 1);
        return ByteSpan::new(line_start, end);
    }
    let trimmed = before.trim_end().len();
    ByteSpan::new(line_start + trimmed, span.end)
}
