//! Baselines (`--baseline FILE`, `--update-baseline`) and `--new-from-rev REV`: adopting the
//! linter on a codebase with known findings without fixing them all first.
//!
//! A baseline entry is keyed by (path, rule, fingerprint). The fingerprint hashes the rule code,
//! the finding's source lines with whitespace collapsed, and the path of items that encloses it
//! (`impl ServerHandler for Indexer::fn call_tool`) — never a line number — so inserting lines,
//! reformatting, or moving a function within its file keeps it. Identical findings in one item
//! share a key and are counted. A file that was renamed keeps its entries: an entry whose file no
//! longer exists matches the same (rule, fingerprint) under another path.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use syn::spanned::Spanned;

use crate::diagnostic::{ByteSpan, Diagnostic, SourceFile};

/// Bumped when the fingerprint changes meaning (old baselines then report every entry stale).
const VERSION: u32 = 1;

/// The file `--update-baseline` writes: sorted by path, rule and fingerprint.
#[derive(Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Baseline {
    pub version: u32,
    #[serde(default, rename = "finding")]
    pub findings: Vec<Entry>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry {
    /// As displayed, with `/` separators.
    pub path: String,
    /// The rule's name.
    pub rule: String,
    pub fingerprint: String,
    /// How many findings share this key (identical lines in one item).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub count: usize,
    /// For the reader of the file: the enclosing item and the first line of the finding.
    #[serde(default)]
    pub context: String,
}

fn one() -> usize {
    1
}

fn is_one(count: &usize) -> bool {
    *count == 1
}

#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    #[error("could not read the baseline {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the baseline {path} is not a valid baseline file: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("could not write the baseline {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl Baseline {
    /// Reads a baseline; a missing file is an empty baseline (the first `--update-baseline`).
    pub fn read(path: &Path) -> Result<Self, BaselineError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Baseline {
                    version: VERSION,
                    findings: Vec::new(),
                })
            }
            Err(source) => {
                return Err(BaselineError::Read {
                    path: path.to_owned(),
                    source,
                })
            }
        };
        toml::from_str(&text).map_err(|error| BaselineError::Parse {
            path: path.to_owned(),
            message: error.to_string(),
        })
    }

    /// The baseline of `diagnostics`, sorted and merged.
    pub fn of(diagnostics: &[Diagnostic]) -> Self {
        let mut merged: BTreeMap<(String, String, String), Entry> = BTreeMap::new();
        for diagnostic in diagnostics {
            let entry = entry(diagnostic);
            merged
                .entry((
                    entry.path.clone(),
                    entry.rule.clone(),
                    entry.fingerprint.clone(),
                ))
                .and_modify(|existing| existing.count += 1)
                .or_insert(entry);
        }
        Baseline {
            version: VERSION,
            findings: merged.into_values().collect(),
        }
    }

    pub fn write(&self, path: &Path) -> Result<(), BaselineError> {
        let body = toml::to_string(self).map_err(|error| BaselineError::Parse {
            path: path.to_owned(),
            message: error.to_string(),
        })?;
        let text = format!(
            "# cargo mcp-lint baseline: known findings that do not fail the run.\n\
             # Written by `cargo mcp-lint --update-baseline`; keyed by path, rule and a fingerprint\n\
             # of the finding's code and enclosing item (not line numbers).\n{body}"
        );
        std::fs::write(path, text).map_err(|source| BaselineError::Write {
            path: path.to_owned(),
            source,
        })
    }
}

/// What matching a run against a baseline found.
#[derive(Debug, Default)]
pub struct Matched {
    /// Findings the baseline does not know: these are reported and fail the run.
    pub new: Vec<Diagnostic>,
    /// Findings the baseline knows.
    pub baselined: Vec<Diagnostic>,
    /// Entries (with the count left) that matched nothing: fixed, or changed beyond recognition.
    pub stale: Vec<Entry>,
}

/// Splits `diagnostics` into new and baselined ones. `exists` tells whether a baseline path still
/// exists (an entry of a missing file may match the same finding in a renamed file).
pub fn apply(
    baseline: &Baseline,
    diagnostics: Vec<Diagnostic>,
    exists: impl Fn(&str) -> bool,
) -> Matched {
    if baseline.version != VERSION {
        return Matched {
            new: diagnostics,
            baselined: Vec::new(),
            stale: baseline.findings.clone(),
        };
    }
    let mut remaining: HashMap<(String, String, String), usize> = HashMap::new();
    for entry in &baseline.findings {
        *remaining
            .entry((
                entry.path.clone(),
                entry.rule.clone(),
                entry.fingerprint.clone(),
            ))
            .or_default() += entry.count;
    }
    let mut matched = Matched::default();
    let mut unmatched = Vec::new();
    for diagnostic in diagnostics {
        let entry = entry(&diagnostic);
        let key = (entry.path, entry.rule, entry.fingerprint);
        match remaining.get_mut(&key) {
            Some(count) if *count > 0 => {
                *count -= 1;
                matched.baselined.push(diagnostic);
            }
            _ => unmatched.push((diagnostic, key)),
        }
    }
    // Renamed files: an entry whose path is gone matches the same rule and fingerprint elsewhere.
    for (diagnostic, (_, rule, fingerprint)) in unmatched {
        let moved = remaining.iter_mut().find(|((path, r, f), count)| {
            **count > 0 && *r == rule && *f == fingerprint && !exists(path)
        });
        match moved {
            Some((_, count)) => {
                *count -= 1;
                matched.baselined.push(diagnostic);
            }
            None => matched.new.push(diagnostic),
        }
    }
    let mut stale: Vec<Entry> = baseline
        .findings
        .iter()
        .filter_map(|entry| {
            let key = (
                entry.path.clone(),
                entry.rule.clone(),
                entry.fingerprint.clone(),
            );
            let left = remaining.get_mut(&key)?;
            let count = (*left).min(entry.count);
            *left -= count;
            (count > 0).then(|| Entry {
                count,
                ..entry.clone()
            })
        })
        .collect();
    stale.sort();
    matched.stale = stale;
    matched
}

/// The baseline entry of one finding.
pub fn entry(diagnostic: &Diagnostic) -> Entry {
    let path = crate::output::display_path(&diagnostic.file.path);
    let rule = diagnostic.rule().name.to_owned();
    let snippet = normalised_lines(&diagnostic.file, diagnostic.span);
    let item = enclosing_item(&diagnostic.file, diagnostic.span);
    let mut hasher = Sha256::new();
    for part in [diagnostic.rule().code, item.as_str(), snippet.as_str()] {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    let fingerprint = hasher.finalize()[..8]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let first_line = snippet.lines().next().unwrap_or("");
    let shown: String = first_line.chars().take(80).collect();
    Entry {
        path,
        rule,
        fingerprint,
        count: 1,
        context: if item.is_empty() {
            shown
        } else {
            format!("{item}: {shown}")
        },
    }
}

/// The whole lines the span touches, each trimmed, runs of whitespace collapsed to one space.
fn normalised_lines(file: &SourceFile, span: ByteSpan) -> String {
    let (first, _) = file.line_column(span.start);
    let (last, _) = file.line_column(span.end.max(span.start));
    (first..=last)
        .map(|line| {
            file.line_text(line)
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The path of named items around `span` in a Rust file (`mod a::impl X for Y::fn f`); for a
/// TOML manifest, the table header above it. Empty when there is none, when the file does not
/// parse, and for the other languages (their fingerprint is the rule and the lines).
fn enclosing_item(file: &SourceFile, span: ByteSpan) -> String {
    let is_rust = file.path.extension().is_some_and(|e| e == "rs");
    if !is_rust {
        if file.path.extension().is_none_or(|e| e != "toml") {
            return String::new();
        }
        return file.text[..span.start.min(file.text.len())]
            .lines()
            .rev()
            .map(str::trim)
            .find(|line| line.starts_with('['))
            .unwrap_or("")
            .to_owned();
    }
    let Ok(syntax) = syn::parse_file(&file.text) else {
        return String::new();
    };
    let mut names = Vec::new();
    enclosing_in(file, &syntax.items, span.start, &mut names);
    names.join("::")
}

fn enclosing_in(file: &SourceFile, items: &[syn::Item], offset: usize, names: &mut Vec<String>) {
    let contains = |node: &dyn Spanned| {
        let span = ByteSpan::from_proc_macro(file, node.span());
        span.start <= offset && offset < span.end
    };
    for item in items {
        if !contains(item) {
            continue;
        }
        match item {
            syn::Item::Fn(function) => names.push(format!("fn {}", function.sig.ident)),
            syn::Item::Mod(module) => {
                names.push(format!("mod {}", module.ident));
                if let Some((_, inner)) = &module.content {
                    enclosing_in(file, inner, offset, names);
                }
            }
            syn::Item::Impl(block) => {
                let ty = &block.self_ty;
                names.push(match &block.trait_ {
                    Some((_, path, _)) => {
                        format!("impl {} for {}", quote::quote!(#path), quote::quote!(#ty))
                    }
                    None => format!("impl {}", quote::quote!(#ty)),
                });
                for member in &block.items {
                    if let syn::ImplItem::Fn(function) = member {
                        if contains(function) {
                            names.push(format!("fn {}", function.sig.ident));
                        }
                    }
                }
            }
            syn::Item::Trait(block) => {
                names.push(format!("trait {}", block.ident));
                for member in &block.items {
                    if let syn::TraitItem::Fn(function) = member {
                        if contains(function) {
                            names.push(format!("fn {}", function.sig.ident));
                        }
                    }
                }
            }
            syn::Item::Struct(item) => names.push(format!("struct {}", item.ident)),
            syn::Item::Enum(item) => names.push(format!("enum {}", item.ident)),
            syn::Item::Const(item) => names.push(format!("const {}", item.ident)),
            syn::Item::Static(item) => names.push(format!("static {}", item.ident)),
            syn::Item::Use(_) => names.push("use".to_owned()),
            _ => {}
        }
        return;
    }
}

/// `--new-from-rev REV`: the lines changed since `rev` (the working tree against `rev`, plus
/// untracked files), by absolute path; a file mapped to `None` is new as a whole.
#[derive(Debug, Default)]
pub struct ChangedLines {
    files: HashMap<PathBuf, Option<Vec<(usize, usize)>>>,
}

impl ChangedLines {
    /// Runs `git diff --unified=0 REV` (and `git ls-files --others`) in `dir`.
    pub fn since(rev: &str, dir: &Path) -> Result<Self, String> {
        let git = |args: &[&str]| -> Result<String, String> {
            let output = std::process::Command::new("git")
                .args(args)
                .current_dir(dir)
                .output()
                .map_err(|error| format!("could not run git: {error}"))?;
            if !output.status.success() {
                return Err(format!(
                    "`git {}` failed: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&output.stderr).trim()
                ));
            }
            Ok(String::from_utf8_lossy(&output.stdout).into_owned())
        };
        let root = PathBuf::from(git(&["rev-parse", "--show-toplevel"])?.trim());
        let diff = git(&[
            "diff",
            "--unified=0",
            "--no-color",
            "--no-ext-diff",
            "--find-renames",
            rev,
            "--",
        ])?;
        let mut changed = ChangedLines::default();
        let mut current: Option<PathBuf> = None;
        for line in diff.lines() {
            if let Some(path) = line.strip_prefix("+++ ") {
                current = path.strip_prefix("b/").map(|p| root.join(p));
                if let Some(path) = &current {
                    changed.files.insert(path.clone(), Some(Vec::new()));
                }
            } else if let Some(hunk) = line.strip_prefix("@@ ") {
                let Some(path) = &current else { continue };
                // `-a,b +c,d @@`: lines c .. c+d-1 are new (d = 0: a pure deletion at c).
                let added = hunk
                    .split_whitespace()
                    .find_map(|part| part.strip_prefix('+'))
                    .unwrap_or("0");
                let (start, count) = match added.split_once(',') {
                    Some((start, count)) => {
                        (start.parse().unwrap_or(0), count.parse().unwrap_or(0))
                    }
                    None => (added.parse().unwrap_or(0), 1),
                };
                if let Some(Some(ranges)) = changed.files.get_mut(path) {
                    if count > 0 {
                        ranges.push((start, start + count - 1));
                    }
                }
            }
        }
        for path in git(&["ls-files", "--others", "--exclude-standard", "--full-name"])?.lines() {
            changed.files.insert(root.join(path), None);
        }
        Ok(changed)
    }

    /// Whether a finding lies on a changed line (any line of its span).
    pub fn contains(&self, diagnostic: &Diagnostic, cwd: &Path) -> bool {
        let path = cwd.join(&diagnostic.file.path);
        let path = path.canonicalize().unwrap_or(path);
        let Some(ranges) = self.files.get(&path) else {
            return false;
        };
        let Some(ranges) = ranges else {
            return true;
        };
        let location = diagnostic.location();
        ranges
            .iter()
            .any(|(start, end)| *start <= location.end_line && location.line <= *end)
    }
}

#[cfg(test)]
mod tests;
