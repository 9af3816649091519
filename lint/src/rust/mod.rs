//! The Rust front-end: parse with syn, resolve names through the file's `use` map, walk once.

mod analyzer;
pub mod imports;
pub mod macros;
mod symbols;
pub mod words;

pub use symbols::METHOD_NAMES;

use std::sync::Arc;

use mcp_migrate_rules::RuleId;

use crate::diagnostic::{ByteSpan, Diagnostic, SourceFile};
use analyzer::{Analyzer, FileContext};
use imports::UseMap;

/// What the linter knows about the crate a file belongs to.
#[derive(Debug, Clone, Default)]
pub struct CrateContext {
    /// The names under which the crate's code reaches rmcp (renamed dependencies included).
    pub sdk_names: Vec<String>,
    /// The crate's manifest declares an rmcp dependency.
    pub depends_on_sdk: bool,
}

/// Deeper delimiter nesting than this is not parsed: syn and the walk recurse once per level, and
/// no hand-written code nests this deep (generated code that does is reported, not linted).
pub const MAX_NESTING: usize = 256;

/// Lints one Rust source file. A syntax error becomes an `unparsable-file` finding.
pub fn lint_file(file: &Arc<SourceFile>, crate_context: &CrateContext) -> Vec<Diagnostic> {
    if let Some(offset) = too_deep(&file.text) {
        return vec![Diagnostic {
            rule: RuleId::UnparsableFile,
            severity: RuleId::UnparsableFile.rule().default_severity,
            file: file.clone(),
            span: ByteSpan::new(offset, offset + 1),
            message: format!(
                "delimiters nest deeper than {MAX_NESTING} levels here; the file was not linted"
            ),
            help: Some("this is usually generated code: exclude it in the configuration".into()),
            label: Some("too deep".into()),
        }];
    }
    let syntax = match syn::parse_file(&file.text) {
        Ok(syntax) => syntax,
        Err(error) => return vec![syntax_error(file, &error)],
    };
    let uses = UseMap::build(&syntax, crate_context.sdk_names.iter().map(String::as_str));
    let sdk_active = crate_context.depends_on_sdk
        || uses.imports_sdk()
        || crate_context
            .sdk_names
            .iter()
            .chain(std::iter::once(&imports::SDK_ROOT.to_owned()))
            .any(|name| file.text.contains(&format!("{name}::")));
    Analyzer::new(FileContext {
        file,
        uses: &uses,
        sdk_active,
    })
    .run(&syntax)
}

fn syntax_error(file: &Arc<SourceFile>, error: &syn::Error) -> Diagnostic {
    let span = ByteSpan::from_proc_macro(file, error.span());
    Diagnostic {
        rule: RuleId::UnparsableFile,
        severity: RuleId::UnparsableFile.rule().default_severity,
        file: file.clone(),
        span,
        message: format!("could not parse this file as Rust: {error}"),
        help: Some(
            "`cargo check` shows the same error; nothing else in this file was linted".into(),
        ),
        label: Some("syntax error".into()),
    }
}

/// The offset of the first delimiter that opens level `MAX_NESTING + 1`, found with rustc's lexer
/// (so delimiters in strings and comments do not count).
fn too_deep(text: &str) -> Option<usize> {
    use ra_ap_rustc_lexer::{tokenize, FrontmatterAllowed, TokenKind};
    let mut depth = 0usize;
    let mut offset = 0usize;
    for token in tokenize(text, FrontmatterAllowed::No) {
        match token.kind {
            TokenKind::OpenParen | TokenKind::OpenBrace | TokenKind::OpenBracket => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Some(offset);
                }
            }
            TokenKind::CloseParen | TokenKind::CloseBrace | TokenKind::CloseBracket => {
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        offset += token.len as usize;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_limit_counts_real_delimiters_only() {
        let deep = format!(
            "fn f() {{ {}1{} }}",
            "(".repeat(MAX_NESTING),
            ")".repeat(MAX_NESTING)
        );
        assert!(too_deep(&deep).is_some());
        let shallow = format!("fn f() {{ let s = \"{}\"; }}", "(".repeat(1000));
        assert_eq!(too_deep(&shallow), None);
    }
}
