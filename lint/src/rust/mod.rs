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

/// Lints one Rust source file. A syntax error becomes an `unparsable-file` finding.
pub fn lint_file(file: &Arc<SourceFile>, crate_context: &CrateContext) -> Vec<Diagnostic> {
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
