//! `--format github`: GitHub Actions workflow commands, which the runner turns into annotations
//! on the pull request (`::error file=...,line=...::message`).

use std::io::{self, Write};

use mcp_migrate_rules::Severity;

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
        let command = match diagnostic.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "notice",
        };
        let mut message = diagnostic.message.clone();
        if let Some(help) = &diagnostic.help {
            message.push_str("\nhelp: ");
            message.push_str(help);
        }
        writeln!(
            out,
            "::{command} file={},line={},col={},endLine={},endColumn={},title={}::{}",
            escape_property(&display_path(&diagnostic.file.path)),
            location.line,
            location.column,
            location.end_line,
            location.end_column,
            escape_property(&format!("{} {}", rule.code, rule.name)),
            escape_data(&message),
        )?;
    }
    writeln!(out, "{}", summary_line(summary))
}

/// Escapes the message of a workflow command (what follows the second `::`).
fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a property value (`file=`, `title=`): data escaping plus `:` and `,`.
fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_follows_the_runner_rules() {
        assert_eq!(
            escape_data("50% done\r\nnext: a,b"),
            "50%25 done%0D%0Anext: a,b"
        );
        assert_eq!(escape_property("C:\\a,b%\n"), "C%3A\\a%2Cb%25%0A");
    }
}
