//! Where the Python walk's findings go: one finding per rule per statement, and an import
//! finding only when nothing else in the file reports that rule (as `rust/report.rs` does).

use rustc_hash::FxHashSet as HashSet;
use std::sync::Arc;

use mcp_migrate_rules::RuleId;
use ruff_text_size::TextRange;

use super::symbols::Finding;
use crate::diagnostic::{ByteSpan, Diagnostic, SourceFile};
use crate::fix::Fix;

/// Whether a rule reports one legacy use per statement. The others judge one value each (a
/// secret-looking field, a URL): two of them in one statement are two things to fix.
fn once_per_statement(rule: RuleId) -> bool {
    !matches!(
        rule,
        RuleId::FormElicitationSecret
            | RuleId::InsecureElicitationUrl
            | RuleId::UnsignedRequestState
            | RuleId::InputRequiredOutsideMrtr
            | RuleId::UnparsableFile
    )
}

pub struct Reporter<'a> {
    file: &'a Arc<SourceFile>,
    diagnostics: Vec<Diagnostic>,
    at_import: Vec<bool>,
    seen: HashSet<(RuleId, usize)>,
}

impl<'a> Reporter<'a> {
    pub fn new(file: &'a Arc<SourceFile>) -> Self {
        Reporter {
            file,
            diagnostics: Vec::new(),
            at_import: Vec::new(),
            seen: HashSet::default(),
        }
    }

    /// Reports `finding` at `range` in statement number `statement`, unless that statement
    /// already has a finding of the rule.
    pub fn report(
        &mut self,
        finding: Finding,
        range: TextRange,
        statement: usize,
        fix: Option<Fix>,
    ) {
        self.push(finding, range, statement, fix, false);
    }

    /// Reports a finding at an import (dropped in [`Reporter::finish`] when the rule has a use).
    pub fn report_import(&mut self, finding: Finding, range: TextRange, statement: usize) {
        self.push(finding, range, statement, None, true);
    }

    fn push(
        &mut self,
        finding: Finding,
        range: TextRange,
        statement: usize,
        fix: Option<Fix>,
        at_import: bool,
    ) {
        if once_per_statement(finding.rule) && !self.seen.insert((finding.rule, statement)) {
            return;
        }
        let span = ByteSpan::new(range.start().to_usize(), range.end().to_usize());
        if self
            .diagnostics
            .iter()
            .any(|d| d.rule == finding.rule && d.span == span)
        {
            return;
        }
        self.diagnostics.push(Diagnostic {
            rule: finding.rule,
            severity: finding.rule.rule().default_severity,
            file: self.file.clone(),
            span,
            message: finding.message,
            help: Some(finding.help),
            label: Some(finding.label.to_owned()),
            fix,
        });
        self.at_import.push(at_import);
    }

    /// The findings, without the imports of a rule that the file also reports elsewhere.
    pub fn finish(self) -> Vec<Diagnostic> {
        let used: HashSet<RuleId> = self
            .diagnostics
            .iter()
            .zip(&self.at_import)
            .filter(|(_, at_import)| !**at_import)
            .map(|(diagnostic, _)| diagnostic.rule)
            .collect();
        let mut out: Vec<Diagnostic> = self
            .diagnostics
            .into_iter()
            .zip(self.at_import)
            .filter(|(diagnostic, at_import)| !*at_import || !used.contains(&diagnostic.rule))
            .map(|(diagnostic, _)| diagnostic)
            .collect();
        out.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
        out
    }
}
