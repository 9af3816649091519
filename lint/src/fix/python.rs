//! Fixes of the Python front-end: `include_context="thisServer"` → `"none"` (unsafe: the sampled
//! prompt loses the context the client would have added). Computed when the finding is made,
//! from the literal's own text, so the quote style stays.

use ruff_python_ast::ExprStringLiteral;
use ruff_text_size::Ranged;

use super::{Applicability, Edit, Fix};
use crate::diagnostic::ByteSpan;

/// The fix of a deprecated `include_context` literal: the same quotes around `none`. A literal
/// made of implicitly concatenated parts, or with a prefix, is left to the user.
pub(crate) fn include_context_none(source: &str, literal: &ExprStringLiteral) -> Option<Fix> {
    if literal.value.is_implicit_concatenated() {
        return None;
    }
    let range = literal.range();
    let text = source.get(range.start().to_usize()..range.end().to_usize())?;
    let quote = text.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let value = literal.value.to_str();
    Some(Fix::new(
        Applicability::Unsafe,
        format!("replace `{text}` with `{quote}none{quote}`"),
        vec![Edit::replace(
            ByteSpan::new(range.start().to_usize(), range.end().to_usize()),
            format!("{quote}none{quote}"),
        )],
    ))
    .filter(|_| matches!(value, "thisServer" | "allServers"))
}
