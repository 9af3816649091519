//! The Python front-end: parse with Astral's `ruff_python_parser`, resolve names through the
//! file's imports and bindings, walk once. Covers the `mcp` 1.x/2.x SDK and the standalone
//! `fastmcp` 2.x (docs/lint/python.md lists what is resolved and what is not).

mod analyzer;
mod bindings;
mod imports;
pub mod manifest;
mod mrtr;
mod report;
mod symbols;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use mcp_migrate_rules::RuleId;
use ruff_python_parser::ParseError;

use crate::diagnostic::{ByteSpan, Diagnostic, SourceFile};

/// Lints one Python source file. A syntax error becomes an `unparsable-file` finding; a stub
/// file (`.pyi`) has no behaviour to lint and gives nothing.
pub fn lint_file(file: &Arc<SourceFile>) -> Vec<Diagnostic> {
    if file.path.extension().is_some_and(|ext| ext == "pyi") {
        return Vec::new();
    }
    match ruff_python_parser::parse_module(&file.text) {
        Ok(parsed) => analyzer::run(file, parsed.suite()),
        Err(error) => vec![syntax_error(file, &error)],
    }
}

/// The words without one of which a Python file has nothing to report: every finding names the
/// SDK's package (`mcp`, also in `fastmcp` and `mcp_types`), a JSON-RPC method, an `include_context`
/// spelling or a hand-built `input_required` result.
const TRIGGERS: &[&str] = &[
    "mcp",
    "include_context",
    "includeContext",
    "notifications/",
    "sampling/",
    "roots/",
    "elicitation/",
    "resources/",
    "logging/",
    "input_required",
];

/// The byte pre-filter of the common dispatch: `false` when the file cannot have a finding.
pub fn may_match(bytes: &[u8]) -> bool {
    TRIGGERS
        .iter()
        .any(|word| memchr::memmem::find(bytes, word.as_bytes()).is_some())
}

/// The comments of a Python file as its tokenizer finds them (`#` inside a string is no
/// comment): byte ranges from the `#` to the line end, for the suppressions.
pub fn comments(text: &str) -> Vec<(usize, usize)> {
    use ruff_python_ast::token::TokenKind;
    use ruff_text_size::Ranged;
    let parsed =
        ruff_python_parser::parse_unchecked_source(text, ruff_python_ast::PySourceType::Python);
    parsed
        .tokens()
        .iter()
        .filter(|token| token.kind() == TokenKind::Comment)
        .map(|token| (token.start().to_usize(), token.end().to_usize()))
        .collect()
}

/// Whether `text` still parses as Python (checked before a fixed file is written).
pub fn parses(text: &str) -> bool {
    ruff_python_parser::parse_module(text).is_ok()
}

fn syntax_error(file: &Arc<SourceFile>, error: &ParseError) -> Diagnostic {
    let start = (error.location.start().to_usize()).min(file.text.len());
    let end = (error.location.end().to_usize()).clamp(start, file.text.len());
    Diagnostic {
        rule: RuleId::UnparsableFile,
        severity: RuleId::UnparsableFile.rule().default_severity,
        file: file.clone(),
        span: ByteSpan::new(start, end),
        message: format!("could not parse this file as Python: {}", error.error),
        help: Some(
            "`python -m py_compile` shows the same error; nothing else in this file was linted"
                .into(),
        ),
        label: Some("syntax error".into()),
        fix: None,
    }
}
