//! `legacy-sdk-version`: raise the rmcp requirement in `Cargo.toml` to a 3.x release.
//!
//! The finding's span is the version string (of `rmcp = "2.2"`, of a `version = ..` key in an
//! inline or standard table, renamed or not). The fix replaces that one value, located again with
//! `toml_edit`, so the table's form, its features, its key order and every comment stay as they
//! are.

use toml_edit::{ImDocument, Item, Table, Value};

use super::{Applicability, Edit, Fix};
use crate::diagnostic::{ByteSpan, SourceFile};

/// The requirement a bumped manifest asks for (the release the project's own tests use).
pub const MODERN_REQUIREMENT: &str = "3.11";

pub(super) fn version_bump(file: &SourceFile, span: ByteSpan) -> Option<Fix> {
    let document = ImDocument::parse(file.text.as_str()).ok()?;
    let found = find_string(document.as_table(), span)?;
    // The value as toml_edit writes a fresh string (quotes, escapes); the decor around the old
    // value (spaces, a trailing comment) is outside the span and stays.
    let content = Value::from(MODERN_REQUIREMENT).to_string();
    Some(Fix::new(
        Applicability::Unsafe,
        format!("require rmcp `{MODERN_REQUIREMENT}` instead of `{found}`"),
        vec![Edit::replace(span, content.trim())],
    ))
}

/// The string value whose span is `span`, anywhere in the document.
fn find_string(table: &Table, span: ByteSpan) -> Option<String> {
    table.iter().find_map(|(_, item)| match item {
        Item::Value(value) => find_in_value(value, span),
        Item::Table(table) => find_string(table, span),
        _ => None,
    })
}

fn find_in_value(value: &Value, span: ByteSpan) -> Option<String> {
    match value {
        Value::String(string) => {
            let range = string.span()?;
            (range.start == span.start && range.end == span.end).then(|| string.value().clone())
        }
        Value::InlineTable(table) => table
            .iter()
            .find_map(|(_, value)| find_in_value(value, span)),
        _ => None,
    }
}
