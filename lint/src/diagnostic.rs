//! The finding type every front-end produces and every renderer consumes.

use std::path::PathBuf;
use std::sync::Arc;

use mcp_migrate_rules::{Rule, RuleId, Severity};

/// A source file as the linter read it, shared by all the diagnostics found in it.
#[derive(Debug)]
pub struct SourceFile {
    /// The path as the user should see it (relative to the working directory when possible).
    pub path: PathBuf,
    pub text: String,
    line_starts: Vec<usize>,
}

impl SourceFile {
    pub fn new(path: PathBuf, text: String) -> Arc<Self> {
        let mut line_starts = vec![0];
        line_starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|index| index + 1));
        Arc::new(SourceFile {
            path,
            text,
            line_starts,
        })
    }

    /// `text`, a copy of this file with some bytes other than line breaks replaced (the same
    /// lines): the line index is copied, not rebuilt.
    pub fn with_same_lines(&self, text: String) -> Arc<Self> {
        debug_assert_eq!(text.len(), self.text.len());
        Arc::new(SourceFile {
            path: self.path.clone(),
            text,
            line_starts: self.line_starts.clone(),
        })
    }

    /// The byte offset of a 1-based line and a 0-based column counted in `char`s, as
    /// `proc_macro2::LineColumn` reports them. Out-of-range positions clamp to the text.
    pub fn offset(&self, line: usize, char_column: usize) -> usize {
        let Some(&start) = self.line_starts.get(line.saturating_sub(1)) else {
            return self.text.len();
        };
        let line_text = &self.text[start..];
        let line_text = &line_text[..line_text.find('\n').unwrap_or(line_text.len())];
        start
            + line_text
                .char_indices()
                .nth(char_column)
                .map_or(line_text.len(), |(index, _)| index)
    }

    /// The 1-based line and 1-based column (in `char`s) of a byte offset.
    pub fn line_column(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line_index = self.line_starts.partition_point(|&start| start <= offset) - 1;
        let start = self.line_starts[line_index];
        let column = self
            .text
            .get(start..offset)
            .map_or(0, |s| s.chars().count());
        (line_index + 1, column + 1)
    }

    /// The text of a 1-based line, without its line break.
    pub fn line_text(&self, line: usize) -> &str {
        let Some(&start) = self.line_starts.get(line.saturating_sub(1)) else {
            return "";
        };
        let rest = &self.text[start..];
        rest[..rest.find('\n').unwrap_or(rest.len())].trim_end_matches('\r')
    }

    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }
}

/// A byte range in a [`SourceFile`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSpan {
    pub start: usize,
    pub end: usize,
}

impl ByteSpan {
    pub fn new(start: usize, end: usize) -> Self {
        ByteSpan {
            start,
            end: end.max(start),
        }
    }

    /// The span of a token as syn saw it (requires proc-macro2's `span-locations`).
    pub fn from_proc_macro(file: &SourceFile, span: proc_macro2::Span) -> Self {
        let start = span.start();
        let end = span.end();
        ByteSpan::new(
            file.offset(start.line, start.column),
            file.offset(end.line, end.column),
        )
    }
}

/// What the linter found. The rule decides code, name and URL; the severity is the configured one.
#[derive(Debug, Clone)]
pub struct Diagnostic {
    pub rule: RuleId,
    pub severity: Severity,
    pub file: Arc<SourceFile>,
    pub span: ByteSpan,
    pub message: String,
    pub help: Option<String>,
    /// A short label shown under the source snippet.
    pub label: Option<String>,
    /// The automatic fix, when the rule has one for this finding (see [`crate::fix`]).
    pub fix: Option<crate::fix::Fix>,
}

/// Where a diagnostic sits, 1-based, end inclusive of the last character's column + 1 (exclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Location {
    pub line: usize,
    pub column: usize,
    pub end_line: usize,
    pub end_column: usize,
}

impl Diagnostic {
    pub fn rule(&self) -> &'static Rule {
        self.rule.rule()
    }

    pub fn location(&self) -> Location {
        let (line, column) = self.file.line_column(self.span.start);
        let (end_line, end_column) = self.file.line_column(self.span.end);
        Location {
            line,
            column,
            end_line,
            end_column,
        }
    }

    /// The source text the span covers.
    pub fn snippet(&self) -> &str {
        self.file
            .text
            .get(self.span.start..self.span.end)
            .unwrap_or("")
    }

    /// Order for stable output: path, then position, then rule code.
    pub fn sort_key(&self) -> (&std::path::Path, usize, usize, &'static str) {
        (
            self.file.path.as_path(),
            self.span.start,
            self.span.end,
            self.rule().code,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_and_line_columns_round_trip_with_multibyte_text() {
        let file = SourceFile::new("a.rs".into(), "fn é() {}\nlet x = \"ü\";\n".into());
        let offset = file.offset(2, 8);
        assert_eq!(&file.text[offset..offset + 1], "\"");
        assert_eq!(file.line_column(offset), (2, 9));
        assert_eq!(file.line_text(1), "fn é() {}");
        assert_eq!(file.offset(99, 0), file.text.len());
        assert_eq!(file.offset(1, 99), "fn é() {}".len());
    }
}
