//! The Python front-end: parse with Astral's `ruff_python_parser`, resolve names through the
//! file's imports and bindings, walk once. Covers the `mcp` 1.x/2.x SDK and the standalone
//! `fastmcp` 2.x (docs/lint/python.md lists what is resolved and what is not).

mod analyzer;
mod bindings;
mod imports;
pub mod manifest;
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
