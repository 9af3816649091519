//! Automatic fixes: span-based edits attached to findings, and the engine that applies them.
//!
//! A [`Fix`] is a list of byte-range [`Edit`]s into the file as it was read, so untouched code
//! keeps its formatting and comments. [`attach`] computes the fixes of a file's findings (one
//! module per kind of source: [`rust`], [`manifest`], [`suppression`]); [`fix_text`] applies those
//! the caller allows, again and again until nothing applicable is left, and refuses the result if
//! it no longer parses. Applying is deterministic: fixes are taken in order of position (then
//! rule code), a fix that overlaps one already taken waits for the next pass, and a fixed text has
//! no fixes left, so fixing twice changes nothing the second time.

mod manifest;
pub(crate) mod python;
mod rust;
pub(crate) use rust::value_after_key;
mod suppression;

use std::sync::Arc;

pub use mcp_migrate_rules::FixAvailability as Applicability;
use mcp_migrate_rules::RuleId;

use crate::diagnostic::{ByteSpan, Diagnostic, SourceFile};
use crate::suppress::CommentStyle;

/// Replace `span` of the original text with `content` (an empty span inserts).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Edit {
    #[serde(skip)]
    pub span: ByteSpan,
    pub content: String,
}

impl Edit {
    pub fn replace(span: ByteSpan, content: impl Into<String>) -> Self {
        Edit {
            span,
            content: content.into(),
        }
    }

    pub fn delete(span: ByteSpan) -> Self {
        Edit::replace(span, "")
    }

    fn overlaps(&self, other: &Edit) -> bool {
        let (a, b) = (self.span, other.span);
        (a.start < b.end && b.start < a.end) || a.start == b.start
    }
}

/// One finding's fix: what it does, how safe it is, and its edits (never overlapping each other).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fix {
    pub applicability: Applicability,
    /// Imperative, e.g. "replace `ContextInclusion::ThisServer` with `ContextInclusion::None`".
    pub message: String,
    pub edits: Vec<Edit>,
}

impl Fix {
    pub fn new(applicability: Applicability, message: impl Into<String>, edits: Vec<Edit>) -> Self {
        Fix {
            applicability,
            message: message.into(),
            edits,
        }
    }

    fn start(&self) -> usize {
        self.edits.iter().map(|e| e.span.start).min().unwrap_or(0)
    }
}

/// Which fixes a run applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allowed {
    /// `--fix`: safe fixes.
    Safe,
    /// `--fix --unsafe-fixes`: safe and unsafe fixes.
    Unsafe,
}

impl Allowed {
    pub fn permits(self, applicability: Applicability) -> bool {
        match self {
            Allowed::Safe => applicability == Applicability::Safe,
            Allowed::Unsafe => applicability >= Applicability::Unsafe,
        }
    }
}

/// The kind of a source file, for computing fixes and for the parse check after fixing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    Rust,
    /// `Cargo.toml`.
    Manifest,
    /// A TypeScript/JavaScript file, parsed as its extension says. Its front-end attaches the
    /// fixes with the findings.
    TypeScript(oxc_span::SourceType),
    /// npm's `package.json` (fixes attached with the findings).
    PackageJson,
    /// A Python file (its front-end attaches the fixes with the findings).
    Python,
    /// `pyproject.toml` or `requirements*.txt` (fixes attached with the findings).
    PythonManifest(crate::lang::ManifestKind),
}

impl SourceKind {
    /// The kind of a file of the other front-ends (not Rust, not `Cargo.toml`), from its name;
    /// `None` for a file no fix is computed for.
    pub fn of_other(path: &std::path::Path) -> Option<SourceKind> {
        use crate::lang::{Language, ManifestKind};
        match (Language::of(path), ManifestKind::of(path)) {
            (Some(Language::TypeScript), _) => {
                Some(SourceKind::TypeScript(crate::typescript::source_type(path)))
            }
            (_, Some(ManifestKind::PackageJson)) => Some(SourceKind::PackageJson),
            (Some(Language::Python), _) => Some(SourceKind::Python),
            (_, Some(kind @ (ManifestKind::Pyproject | ManifestKind::Requirements))) => {
                Some(SourceKind::PythonManifest(kind))
            }
            _ => None,
        }
    }

    /// The comment syntax of its suppressions.
    pub fn comment_style(self) -> CommentStyle {
        use crate::lang::{Language, ManifestKind};
        match self {
            SourceKind::Rust => Language::Rust.comment_style(),
            SourceKind::Manifest => CommentStyle::Hash,
            SourceKind::TypeScript(_) => Language::TypeScript.comment_style(),
            SourceKind::PackageJson => ManifestKind::PackageJson.comment_style(),
            SourceKind::Python => Language::Python.comment_style(),
            SourceKind::PythonManifest(kind) => kind.comment_style(),
        }
    }
}

/// Computes the fix of every finding of `file` that has one (`diagnostics` are all of one file).
pub fn attach(file: &Arc<SourceFile>, kind: SourceKind, diagnostics: &mut [Diagnostic]) {
    attach_parsed(file, kind, diagnostics, None);
}

/// [`attach`], with the syntax tree the findings came from when the caller has it (a Rust file
/// is then not parsed again). The tree may be of the file with its skipped items blanked
/// (`rust/items.rs`): the nodes a fix rewrites are those of a finding, never blanked.
pub fn attach_parsed(
    file: &Arc<SourceFile>,
    kind: SourceKind,
    diagnostics: &mut [Diagnostic],
    syntax: Option<&syn::File>,
) {
    if !diagnostics
        .iter()
        .any(|d| d.rule().fix != Applicability::None)
    {
        return;
    }
    for diagnostic in diagnostics.iter_mut() {
        if diagnostic.rule == RuleId::UnusedSuppression {
            diagnostic.fix = suppression::fix(file, kind, diagnostic);
        }
    }
    match kind {
        SourceKind::Rust => rust::attach(file, diagnostics, syntax),
        SourceKind::Manifest => {
            for diagnostic in diagnostics.iter_mut() {
                if diagnostic.rule == RuleId::LegacySdkVersion {
                    diagnostic.fix = manifest::version_bump(file, diagnostic.span);
                }
            }
        }
        // The front-end attached them, from the tree it walked.
        SourceKind::TypeScript(_)
        | SourceKind::PackageJson
        | SourceKind::Python
        | SourceKind::PythonManifest(_) => {}
    }
}

/// Applies the allowed fixes of one pass: in order of position, skipping a fix that overlaps
/// one already taken. Returns the new text and the number of fixes applied.
pub fn apply<'a>(text: &str, fixes: impl IntoIterator<Item = &'a Fix>) -> (String, usize) {
    let mut fixes: Vec<&Fix> = fixes.into_iter().collect();
    fixes.sort_by_key(|fix| fix.start());
    let mut taken: Vec<&Edit> = Vec::new();
    let mut applied = 0;
    for fix in fixes {
        let valid = fix.edits.iter().all(|edit| {
            edit.span.end <= text.len()
                && text.is_char_boundary(edit.span.start)
                && text.is_char_boundary(edit.span.end)
        });
        let clash = fix
            .edits
            .iter()
            .any(|edit| taken.iter().any(|other| edit.overlaps(other)));
        if valid && !clash && !fix.edits.is_empty() {
            taken.extend(&fix.edits);
            applied += 1;
        }
    }
    taken.sort_by_key(|edit| (edit.span.start, edit.span.end));
    let mut out = String::with_capacity(text.len());
    let mut cursor = 0;
    for edit in taken {
        out.push_str(&text[cursor..edit.span.start]);
        out.push_str(&edit.content);
        cursor = edit.span.end;
    }
    out.push_str(&text[cursor..]);
    (out, applied)
}

/// The passes a file gets at most (a fix that waited for an overlapping one runs in the next).
const MAX_PASSES: usize = 8;

/// The result of fixing one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileFix {
    pub fixed: String,
    pub applied: usize,
    /// Set when the fixes were refused (the text would no longer parse); `fixed` is then the
    /// original text.
    pub warning: Option<String>,
}

/// Fixes `original` with the fixes `lint` attaches, pass after pass, until no allowed fix is
/// left. If a pass leaves text that does not parse, the file is left as it was, with a warning.
pub fn fix_text(
    original: &str,
    kind: SourceKind,
    allowed: Allowed,
    mut lint: impl FnMut(&str) -> Vec<Diagnostic>,
) -> FileFix {
    let unchanged = |warning: Option<String>| FileFix {
        fixed: original.to_owned(),
        applied: 0,
        warning,
    };
    if !parses(original, kind) {
        return unchanged(None);
    }
    let mut current = original.to_owned();
    let mut applied = 0;
    for _ in 0..MAX_PASSES {
        let diagnostics = lint(&current);
        let fixes = diagnostics
            .iter()
            .filter_map(|d| d.fix.as_ref())
            .filter(|fix| allowed.permits(fix.applicability));
        let (next, count) = apply(&current, fixes);
        if count == 0 || next == current {
            break;
        }
        if !parses(&next, kind) {
            return unchanged(Some(
                "the fixes would leave a file that no longer parses; it was left unchanged"
                    .to_owned(),
            ));
        }
        current = next;
        applied += count;
    }
    FileFix {
        fixed: current,
        applied,
        warning: None,
    }
}

/// Whether `text` is still a well-formed file of its kind.
pub fn parses(text: &str, kind: SourceKind) -> bool {
    match kind {
        SourceKind::Rust => syn::parse_file(text).is_ok(),
        SourceKind::Manifest => text.parse::<toml_edit::DocumentMut>().is_ok(),
        SourceKind::TypeScript(source_type) => crate::typescript::parses(text, source_type),
        SourceKind::PackageJson => serde_json::from_str::<serde_json::Value>(text).is_ok(),
        SourceKind::Python => crate::python::parses(text),
        SourceKind::PythonManifest(kind) => crate::python::manifest::parses(text, kind),
    }
}

/// A unified diff of one file's fix (`--diff`), with `a/` and `b/` paths as git prints them.
pub fn unified_diff(path: &str, before: &str, after: &str) -> String {
    similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

/// Formats tokens of an expression with prettyplease (which formats whole files).
pub(crate) fn format_expr(expr: &syn::Expr) -> String {
    let file: syn::File = syn::parse_quote! { fn __f() { #expr } };
    let text = prettyplease::unparse(&file);
    // `fn __f() {\n    EXPR\n}\n`: take the body and remove one level of indentation.
    let body = text
        .trim_end()
        .strip_prefix("fn __f() {")
        .and_then(|rest| rest.strip_suffix('}'))
        .unwrap_or(&text);
    body.trim_matches('\n')
        .lines()
        .map(|line| line.strip_prefix("    ").unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests;
