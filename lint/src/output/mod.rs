//! Renderers: one small module per output format, all fed the same sorted diagnostics.

use std::io::{self, Write};

use crate::diagnostic::Diagnostic;

mod concise;
mod full;
mod github;
mod json;
mod sarif;
#[cfg(test)]
mod tests;

/// The output formats of `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// miette's graphical report: source snippet, label, help and the rule's code and URL
    Full,
    /// one line per finding: `path:line:column: severity[CODE name] message`
    Concise,
    /// one JSON document: `{"version":1,"diagnostics":[...],"summary":{...}}`
    Json,
    /// SARIF 2.1.0, for GitHub code scanning and other SARIF viewers
    Sarif,
    /// GitHub Actions workflow commands (`::error file=...::message`), shown as annotations
    Github,
}

/// Counts over a whole run, printed by every format.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Summary {
    /// Files read: Rust sources and manifests.
    pub files_scanned: usize,
    /// Rust files that the byte-level pre-filter proved irrelevant, so syn never parsed them.
    pub files_skipped_by_prefilter: usize,
    pub errors: usize,
    pub warnings: usize,
    pub infos: usize,
    /// Findings silenced by inline suppression comments.
    pub suppressed: usize,
    /// Findings a `--baseline` file knows (not reported, not failing).
    #[serde(skip_serializing_if = "is_zero")]
    pub baselined: usize,
    /// Baseline entries that matched no finding (fixed, or changed beyond recognition).
    #[serde(skip_serializing_if = "is_zero")]
    pub stale_baseline_entries: usize,
    /// Findings outside the lines changed since `--new-from-rev` (not reported).
    #[serde(skip_serializing_if = "is_zero")]
    pub unchanged_lines: usize,
}

fn is_zero(count: &usize) -> bool {
    *count == 0
}

impl Summary {
    /// Counts the severities of `diagnostics` (replacing earlier counts).
    pub fn count(&mut self, diagnostics: &[Diagnostic]) {
        (self.errors, self.warnings, self.infos) = (0, 0, 0);
        for diagnostic in diagnostics {
            match diagnostic.severity {
                mcp_migrate_rules::Severity::Error => self.errors += 1,
                mcp_migrate_rules::Severity::Warning => self.warnings += 1,
                mcp_migrate_rules::Severity::Info => self.infos += 1,
            }
        }
    }
}

/// Options that change how a report looks, not what it says.
#[derive(Debug, Clone, Copy, Default)]
pub struct RenderOptions {
    /// ANSI colours and Unicode box drawing (the `full` format only).
    pub color: bool,
}

/// Writes `diagnostics` (already sorted) and the summary in `format`.
pub fn render(
    format: Format,
    diagnostics: &[Diagnostic],
    summary: &Summary,
    options: RenderOptions,
    out: &mut dyn Write,
) -> io::Result<()> {
    match format {
        Format::Full => full::render(diagnostics, summary, options, out),
        Format::Concise => concise::render(diagnostics, summary, out),
        Format::Json => json::render(diagnostics, summary, out),
        Format::Sarif => sarif::render(diagnostics, out),
        Format::Github => github::render(diagnostics, summary, out),
    }
}

/// A path as the user should see it in every format: `/` separators on every platform.
pub(crate) fn display_path(path: &std::path::Path) -> String {
    let text = path.to_string_lossy();
    if std::path::MAIN_SEPARATOR == '/' {
        text.into_owned()
    } else {
        text.replace(std::path::MAIN_SEPARATOR, "/")
    }
}

/// The closing line of the human formats, e.g.
/// `found 3 errors, 2 warnings in 14 files (9 skipped by pre-filter, 1 suppressed)`.
fn summary_line(summary: &Summary) -> String {
    fn counted(count: usize, singular: &str, plural: &str) -> String {
        format!("{count} {}", if count == 1 { singular } else { plural })
    }

    let findings: Vec<String> = [
        (summary.errors, "error", "errors"),
        (summary.warnings, "warning", "warnings"),
        (summary.infos, "info", "infos"),
    ]
    .into_iter()
    .filter(|(count, _, _)| *count > 0)
    .map(|(count, singular, plural)| counted(count, singular, plural))
    .collect();
    let mut line = if findings.is_empty() {
        String::from("no findings")
    } else {
        format!("found {}", findings.join(", "))
    };
    line.push_str(" in ");
    line.push_str(&counted(summary.files_scanned, "file", "files"));

    let mut notes = Vec::new();
    if summary.files_skipped_by_prefilter > 0 {
        notes.push(format!(
            "{} skipped by pre-filter",
            summary.files_skipped_by_prefilter
        ));
    }
    if summary.suppressed > 0 {
        notes.push(format!("{} suppressed", summary.suppressed));
    }
    if summary.baselined > 0 {
        notes.push(format!("{} baselined", summary.baselined));
    }
    if summary.stale_baseline_entries > 0 {
        notes.push(format!(
            "{} stale baseline entries",
            summary.stale_baseline_entries
        ));
    }
    if summary.unchanged_lines > 0 {
        notes.push(format!("{} on unchanged lines", summary.unchanged_lines));
    }
    if !notes.is_empty() {
        line.push_str(&format!(" ({})", notes.join(", ")));
    }
    line
}
