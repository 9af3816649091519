//! `--format concise`: one line per finding, `path:line:column: severity[CODE name] message`.

use std::io::{self, Write};

use super::{display_path, summary_line, Summary};
use crate::diagnostic::Diagnostic;

pub(super) fn render(
    diagnostics: &[Diagnostic],
    summary: &Summary,
    out: &mut dyn Write,
) -> io::Result<()> {
    for diagnostic in diagnostics {
        let rule = diagnostic.rule();
        let location = diagnostic.location();
        writeln!(
            out,
            "{}:{}:{}: {}[{} {}] {}",
            display_path(&diagnostic.file.path),
            location.line,
            location.column,
            diagnostic.severity,
            rule.code,
            rule.name,
            diagnostic.message,
        )?;
    }
    writeln!(out, "{}", summary_line(summary))
}
