//! `legacy-sdk-version`: raise the rmcp requirement in `Cargo.toml` to a 3.x release.
//!
//! The finding's span is the version string (of `rmcp = "2.2"`, of a `version = ..` key in an
//! inline or standard table, renamed or not). The fix replaces that one value, so the table's
//! form, its features, its key order and every comment stay as they are.

use toml_edit::Value;

use super::{Applicability, Edit, Fix};
use crate::diagnostic::{ByteSpan, SourceFile};

/// The requirement a bumped manifest asks for (the release the project's own tests use).
pub const MODERN_REQUIREMENT: &str = "3.11";

pub(super) fn version_bump(file: &SourceFile, span: ByteSpan) -> Option<Fix> {
    // The span is the string literal itself: parsing it alone reads its value (quotes and
    // escapes) without parsing the whole manifest again.
    let literal = file.text.get(span.start..span.end)?;
    let Ok(Value::String(found)) = literal.parse::<Value>() else {
        return None;
    };
    let found = found.value();
    // The value as toml_edit writes a fresh string (quotes, escapes); the decor around the old
    // value (spaces, a trailing comment) is outside the span and stays.
    let content = Value::from(MODERN_REQUIREMENT).to_string();
    Some(Fix::new(
        Applicability::Unsafe,
        format!("require rmcp `{MODERN_REQUIREMENT}` instead of `{found}`"),
        vec![Edit::replace(span, content.trim())],
    ))
}
