//! Where the walk's findings go: one finding per rule per statement, and a `use` finding only
//! when nothing else in the file reports that rule.
//!
//! A legacy use is one thing to change, however many of its names a statement mentions (an import
//! list, a signature that names a request type twice, a builder chain that enables `roots` and
//! `roots.listChanged`), so the first finding of a rule in a statement stands for the rest. An
//! import is only worth reporting when the file has no use of that rule to point at: the use is
//! where the change happens, and the import goes with it.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::sync::Arc;

use mcp_migrate_rules::RuleId;
use proc_macro2::Span;

use super::symbols::Finding;
use crate::diagnostic::{ByteSpan, Diagnostic, SourceFile};

/// The statement (or item, or `use` item) a finding belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unit {
    /// The whole file (nothing encloses the finding).
    File,
    /// A statement or item, numbered in walk order.
    Stmt(usize),
    /// A `use` item, by its index in the file's use map.
    Use(usize),
}

/// Whether a rule reports one legacy use per statement. The others judge one value each (a
/// secret-looking property, a URL, a `requestState`, an `input_required` result): two of them
/// in one builder chain or `match` are two things to fix.
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
    /// Whether each diagnostic was reported at a `use` item.
    at_import: Vec<bool>,
    seen: HashSet<(RuleId, Unit)>,
    units: Vec<Unit>,
    next_unit: usize,
    /// How many enclosing nodes already reported each rule (nested findings are not repeated).
    reporting: HashMap<RuleId, usize>,
}

impl<'a> Reporter<'a> {
    pub fn new(file: &'a Arc<SourceFile>) -> Self {
        Reporter {
            file,
            diagnostics: Vec::new(),
            at_import: Vec::new(),
            seen: HashSet::default(),
            units: Vec::new(),
            next_unit: 0,
            reporting: HashMap::default(),
        }
    }

    /// Opens a new statement (or item, or `match` arm) for the findings until [`Reporter::leave_stmt`].
    pub fn enter_stmt(&mut self) {
        self.units.push(Unit::Stmt(self.next_unit));
        self.next_unit += 1;
    }

    pub fn leave_stmt(&mut self) {
        self.units.pop();
    }

    /// Reports `finding` at `span` in the current statement, unless an enclosing node already
    /// reports its rule or the statement already has a finding of that rule.
    pub fn report(&mut self, finding: &Finding, span: Span) -> bool {
        let unit = self.units.last().copied().unwrap_or(Unit::File);
        self.push(finding, span, unit)
    }

    /// Reports a finding at a `use` item.
    pub fn report_import(&mut self, finding: &Finding, span: Span, item: usize) -> bool {
        self.push(finding, span, Unit::Use(item))
    }

    fn push(&mut self, finding: &Finding, span: Span, unit: Unit) -> bool {
        if self.reporting.get(&finding.rule).copied().unwrap_or(0) > 0
            || (once_per_statement(finding.rule) && !self.seen.insert((finding.rule, unit)))
        {
            return false;
        }
        let byte_span = ByteSpan::from_proc_macro(self.file, span);
        if self
            .diagnostics
            .iter()
            .any(|d| d.rule == finding.rule && d.span == byte_span)
        {
            return false;
        }
        self.diagnostics.push(Diagnostic {
            rule: finding.rule,
            severity: finding.rule.rule().default_severity,
            file: self.file.clone(),
            span: byte_span,
            message: finding.message.clone(),
            help: finding.help.clone(),
            label: finding.label.clone(),
            fix: None,
        });
        self.at_import.push(matches!(unit, Unit::Use(_)));
        true
    }

    /// Marks `rules` as reported by an enclosing node (see [`Reporter::unmark`]).
    pub fn mark(&mut self, rules: &[RuleId]) {
        for rule in rules {
            *self.reporting.entry(*rule).or_default() += 1;
        }
    }

    pub fn unmark(&mut self, rules: &[RuleId]) {
        for rule in rules {
            if let Some(count) = self.reporting.get_mut(rule) {
                *count -= 1;
            }
        }
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
        self.diagnostics
            .into_iter()
            .zip(self.at_import)
            .filter(|(diagnostic, at_import)| !*at_import || !used.contains(&diagnostic.rule))
            .map(|(diagnostic, _)| diagnostic)
            .collect()
    }
}
