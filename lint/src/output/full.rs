//! `--format full`: miette's graphical report for each finding (source snippet, label, help, the
//! rule's code and documentation URL), then the summary line.

use std::fmt;
use std::io::{self, Write};
use std::sync::Arc;

use mcp_migrate_rules::Severity;
use miette::{
    GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteError, NamedSource, SourceCode,
    SourceSpan, SpanContents,
};

use super::{display_path, summary_line, RenderOptions, Summary};
use crate::diagnostic::{Diagnostic, SourceFile};

pub(super) fn render(
    diagnostics: &[Diagnostic],
    summary: &Summary,
    options: RenderOptions,
    out: &mut dyn Write,
) -> io::Result<()> {
    let theme = if options.color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    // URLs as plain text, never OSC 8 hyperlinks: they must survive copying out of CI logs and
    // terminals that do not understand the escape sequence.
    let handler = GraphicalReportHandler::new_themed(theme).with_links(false);
    let mut report = String::new();
    for diagnostic in diagnostics {
        report.clear();
        handler
            .render_report(&mut report, &Report::new(diagnostic))
            .map_err(|fmt::Error| io::Error::other("failed to format a diagnostic"))?;
        out.write_all(report.as_bytes())?;
        writeln!(out)?;
    }
    writeln!(out, "{}", summary_line(summary))
}

/// A [`Diagnostic`] seen through miette's eyes.
struct Report<'a> {
    diagnostic: &'a Diagnostic,
    /// `MCP101(deprecated-sampling)`.
    code: String,
    source: NamedSource<SharedSource>,
}

impl<'a> Report<'a> {
    fn new(diagnostic: &'a Diagnostic) -> Self {
        let rule = diagnostic.rule();
        Report {
            diagnostic,
            code: format!("{}({})", rule.code, rule.name),
            source: NamedSource::new(
                display_path(&diagnostic.file.path),
                SharedSource(Arc::clone(&diagnostic.file)),
            ),
        }
    }
}

impl fmt::Debug for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.diagnostic, f)
    }
}

impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.diagnostic.message)
    }
}

impl std::error::Error for Report<'_> {}

impl miette::Diagnostic for Report<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        Some(Box::new(&self.code))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.diagnostic.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
            Severity::Info => miette::Severity::Advice,
        })
    }

    fn url<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        Some(Box::new(self.diagnostic.rule().url()))
    }

    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        let help = self.diagnostic.help.as_deref();
        let fix = self.diagnostic.fix.as_ref().map(|fix| {
            let how = match fix.applicability {
                crate::fix::Applicability::Safe => "safe fix, `--fix`",
                crate::fix::Applicability::Unsafe => "unsafe fix, `--fix --unsafe-fixes`",
                _ => "suggestion, not applied; `--format json` has the code",
            };
            format!("{} ({how})", fix.message)
        });
        match (help, fix) {
            (Some(help), Some(fix)) => Some(Box::new(format!("{help}\nfix: {fix}"))),
            (Some(help), None) => Some(Box::new(help)),
            (None, Some(fix)) => Some(Box::new(format!("fix: {fix}"))),
            (None, None) => None,
        }
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        Some(&self.source)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let span = self.diagnostic.span;
        let text = &self.diagnostic.file.text;
        let mut start = span.start.min(text.len());
        let mut end = span.end.clamp(start, text.len());
        // miette draws no label for an empty span at the very end of the text (where syn puts
        // "unexpected end of input"): point at the end of the last line instead.
        if start == end && start == text.len() {
            if let Some(last) = text.chars().next_back() {
                start -= last.len_utf8();
                end = if last == '\n' { start } else { text.len() };
            }
        }
        let label = self
            .diagnostic
            .label
            .clone()
            .unwrap_or_else(|| self.diagnostic.message.clone());
        Some(Box::new(std::iter::once(
            LabeledSpan::new_primary_with_span(Some(label), start..end),
        )))
    }
}

/// The text of a [`SourceFile`], shared with its diagnostics instead of copied into each report.
struct SharedSource(Arc<SourceFile>);

impl SourceCode for SharedSource {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let contents = <str as SourceCode>::read_span(
            &self.0.text,
            span,
            context_lines_before,
            context_lines_after,
        )?;
        // miette counts columns in bytes; every other format counts `char`s.
        let line_start = self.0.offset(contents.line() + 1, 0);
        let column = self
            .0
            .text
            .get(line_start..line_start + contents.column())
            .map_or(contents.column(), |before| before.chars().count());
        Ok(Box::new(CharColumn { contents, column }))
    }
}

/// Span contents whose column counts `char`s, like [`Diagnostic::location`].
struct CharColumn<'a> {
    contents: Box<dyn SpanContents<'a> + 'a>,
    column: usize,
}

impl<'a> SpanContents<'a> for CharColumn<'a> {
    fn data(&self) -> &'a [u8] {
        self.contents.data()
    }

    fn span(&self) -> &SourceSpan {
        self.contents.span()
    }

    fn name(&self) -> Option<&str> {
        self.contents.name()
    }

    fn line(&self) -> usize {
        self.contents.line()
    }

    fn column(&self) -> usize {
        self.column
    }

    fn line_count(&self) -> usize {
        self.contents.line_count()
    }

    fn language(&self) -> Option<&str> {
        self.contents.language()
    }
}
