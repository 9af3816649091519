//! `--format json`: exactly one pretty-printed JSON document,
//! `{"version":1,"diagnostics":[...],"summary":{...}}`.

use std::io::{self, Write};

use mcp_migrate_rules::Severity;
use serde::Serialize;

use super::{display_path, Summary};
use crate::diagnostic::Diagnostic;

/// Bumped whenever a key changes meaning or disappears; new keys may appear without a bump.
const VERSION: u32 = 1;

#[derive(Serialize)]
struct Report<'a> {
    version: u32,
    diagnostics: Vec<JsonDiagnostic<'a>>,
    summary: &'a Summary,
}

#[derive(Serialize)]
struct JsonDiagnostic<'a> {
    code: &'static str,
    name: &'static str,
    severity: Severity,
    /// As displayed, with `/` separators.
    path: String,
    /// 1-based; columns count `char`s; the end is exclusive.
    line: usize,
    column: usize,
    end_line: usize,
    end_column: usize,
    message: &'a str,
    help: Option<&'a str>,
    /// The finding's fix (`null` when it has none): applicability, message and edits.
    fix: Option<JsonFix<'a>>,
}

#[derive(Serialize)]
struct JsonFix<'a> {
    /// `safe` (`--fix`), `unsafe` (`--unsafe-fixes`) or `display-only` (never applied).
    applicability: mcp_migrate_rules::FixAvailability,
    message: &'a str,
    edits: Vec<JsonEdit<'a>>,
}

/// Replace the text from (line, column) to (end_line, end_column), exclusive, with `content`.
#[derive(Serialize)]
struct JsonEdit<'a> {
    line: usize,
    column: usize,
    end_line: usize,
    end_column: usize,
    content: &'a str,
}

fn json_fix<'a>(diagnostic: &'a Diagnostic) -> Option<JsonFix<'a>> {
    let fix = diagnostic.fix.as_ref()?;
    let file = &diagnostic.file;
    Some(JsonFix {
        applicability: fix.applicability,
        message: &fix.message,
        edits: fix
            .edits
            .iter()
            .map(|edit| {
                let (line, column) = file.line_column(edit.span.start);
                let (end_line, end_column) = file.line_column(edit.span.end);
                JsonEdit {
                    line,
                    column,
                    end_line,
                    end_column,
                    content: &edit.content,
                }
            })
            .collect(),
    })
}

pub(super) fn render(
    diagnostics: &[Diagnostic],
    summary: &Summary,
    out: &mut dyn Write,
) -> io::Result<()> {
    let report = Report {
        version: VERSION,
        diagnostics: diagnostics
            .iter()
            .map(|diagnostic| {
                let rule = diagnostic.rule();
                let location = diagnostic.location();
                JsonDiagnostic {
                    code: rule.code,
                    name: rule.name,
                    severity: diagnostic.severity,
                    path: display_path(&diagnostic.file.path),
                    line: location.line,
                    column: location.column,
                    end_line: location.end_line,
                    end_column: location.end_column,
                    message: &diagnostic.message,
                    help: diagnostic.help.as_deref(),
                    fix: json_fix(diagnostic),
                }
            })
            .collect(),
        summary,
    };
    serde_json::to_writer_pretty(&mut *out, &report)?;
    writeln!(out)
}
