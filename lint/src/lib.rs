//! `cargo mcp-lint`: finds code that relies on what MCP 2026-07-28 deprecated or removed.
//!
//! Data flow: [`walk`] finds the files (the cargo workspace, or the given paths) and the crate of
//! each; [`config`] decides rule levels and excludes; every Rust file passes the byte-level
//! [`prefilter`] and, if it may match, is parsed by syn and walked once by the [`rust`] front-end
//! (in parallel, with rayon); manifests go through [`manifest`]; the files of the other languages
//! ([`lang`]: TypeScript/JavaScript, [`typescript`]) and their manifests go to their front-ends
//! ([`lang::FrontEnd`]); [`suppress`] applies inline comments; [`output`] renders the sorted
//! findings.

#![forbid(unsafe_code)]

pub mod baseline;
pub mod cli;
pub mod config;
pub mod diagnostic;
pub mod fix;
pub mod lang;
pub mod manifest;
pub mod output;
pub mod prefilter;
pub mod python;
pub mod rust;
pub mod scaffold;
pub mod suppress;
pub mod typescript;
pub mod walk;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;

use config::Config;
use diagnostic::{ByteSpan, Diagnostic, SourceFile};
use fix::SourceKind;
use lang::{FrontEnd, Language, ManifestKind};
use mcp_migrate_rules::RuleId;
use output::Summary;
use rust::crate_peers::{CratePeers, Declared};
use walk::{CrateIndex, Targets};

/// The findings of a run, sorted, and its counts.
#[derive(Debug, Default)]
pub struct Outcome {
    pub diagnostics: Vec<Diagnostic>,
    pub summary: Summary,
    /// The peer fields of each crate's structs (by manifest), for linting its files again.
    pub crate_peers: HashMap<PathBuf, Arc<CratePeers>>,
}

/// Lints `targets` under `config`. `use_prefilter: false` parses every file, and every item of
/// each (for measurements, and to check that the pre-filters change nothing that is reported).
///
/// Two parallel passes: the first reads every file and runs the pre-filter (cheap, and balanced
/// by rayon whatever the order); the second parses the few files that pass, largest first, handed
/// out one at a time, so that a crate full of matching files does not end up on one worker.
pub fn lint(targets: &Targets, config: &Config, use_prefilter: bool) -> Outcome {
    let cwd = std::env::current_dir().unwrap_or_default();
    // The manifests that name rmcp are parsed once, in parallel: for the crate index (its SDK
    // names) and for their own rules.
    let parsed: HashMap<&Path, manifest::ParsedManifest> = targets
        .manifests
        .par_iter()
        .filter_map(|path| {
            let text = targets.manifest_texts.get(path.as_path())?;
            text.contains(manifest::RMCP).then(|| {
                let display = display_path(path, &cwd);
                (
                    path.as_path(),
                    manifest::Manifest::parse(path, display, text.clone()),
                )
            })
        })
        .collect();
    // One manifest lookup per directory, from the texts the walk read.
    let mut index = CrateIndex::with_texts(&targets.manifest_texts).with_parsed(&parsed);
    let contexts: Vec<Arc<rust::CrateContext>> = targets
        .rust_files
        .iter()
        .map(|path| index.context_for(path))
        .collect();

    let ((first_pass, manifest_results), other_results) = rayon::join(
        || {
            rayon::join(
                || {
                    targets
                        .rust_files
                        .par_iter()
                        .zip(&contexts)
                        .map(|(path, context)| {
                            if targets.is_excluded(path, config) {
                                return (Pass::Excluded, Declared::default());
                            }
                            read_and_filter(path, context, &cwd, config, use_prefilter)
                        })
                        .collect::<Vec<(Pass, Declared)>>()
                },
                || {
                    targets
                        .manifests
                        .par_iter()
                        .filter(|path| !targets.is_excluded(path, config))
                        .map(|path| {
                            let text = targets.manifest_texts.get(path.as_path());
                            match parsed.get(path.as_path()) {
                                Some(manifest) => check_manifest(manifest, path, config),
                                None => {
                                    let display = display_path(path, &cwd);
                                    lint_manifest(path, text, &display, config, use_prefilter)
                                }
                            }
                        })
                        .collect::<Vec<FileResult>>()
                },
            )
        },
        || lint_other_languages(targets, config, &cwd, use_prefilter),
    );

    let mut outcome = Outcome::default();
    let mut survivors = Vec::new();
    let mut results = manifest_results;
    results.extend(other_results);
    outcome.summary.files_scanned = results.len();
    // The peer fields each crate's files declare, for the walk of its other files.
    let (first_pass, declared): (Vec<Pass>, Vec<Declared>) = first_pass.into_iter().unzip();
    let contexts =
        rust::crate_peers::with_crate_peers(&contexts, declared, &mut outcome.crate_peers);
    for ((path, context), pass) in targets.rust_files.iter().zip(&contexts).zip(first_pass) {
        match pass {
            Pass::Excluded => continue,
            Pass::Done(result) => results.push(result),
            Pass::Parse(text, mask) => survivors.push((path, context, text, mask)),
        }
        outcome.summary.files_scanned += 1;
    }
    // Largest first, one file per job: the big files start early and the small ones fill in.
    survivors.sort_by_key(|(_, _, text, _)| std::cmp::Reverse(text.len()));
    let parsed: Vec<FileResult> = survivors
        .into_par_iter()
        .with_max_len(1)
        .map(|(path, context, text, mask)| {
            lint_rust(path, &display_path(path, &cwd), context, text, config, mask)
        })
        .collect();

    for result in results.into_iter().chain(parsed) {
        outcome.summary.files_skipped_by_prefilter += usize::from(result.skipped);
        outcome.summary.suppressed += result.suppressed;
        outcome.diagnostics.extend(result.diagnostics);
    }
    outcome
        .diagnostics
        .sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    outcome.summary.count(&outcome.diagnostics);
    outcome
}

/// Fixes every file whose findings carry an allowed fix, in memory: the fixed texts (only those
/// that changed or were refused), keyed by the path the walk found. Each file is linted again
/// after every pass, with its own crate context and configuration.
pub fn fix_files(
    targets: &Targets,
    config: &Config,
    outcome: &Outcome,
    allowed: fix::Allowed,
) -> Vec<(PathBuf, String, fix::FileFix)> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let mut wanted: Vec<&Path> = outcome
        .diagnostics
        .iter()
        .filter(|d| {
            d.fix
                .as_ref()
                .is_some_and(|f| allowed.permits(f.applicability))
        })
        .map(|d| d.file.path.as_path())
        .collect();
    wanted.sort();
    wanted.dedup();
    let mut index = CrateIndex::with_texts(&targets.manifest_texts);
    let mut jobs = Vec::new();
    for path in targets.rust_files.iter().chain(&targets.manifests) {
        let display = display_path(path, &cwd);
        if wanted.binary_search(&display.as_path()).is_ok() {
            let is_manifest = targets.manifests.contains(path);
            // Linted again with the peer fields the run found in the crate's other files.
            let context = (!is_manifest).then(|| {
                let context = index.context_for(path);
                let peers = context
                    .manifest
                    .as_ref()
                    .and_then(|manifest| outcome.crate_peers.get(manifest));
                match peers {
                    Some(peers) => Arc::new(rust::CrateContext {
                        peers: Some(peers.clone()),
                        ..(*context).clone()
                    }),
                    None => context,
                }
            });
            jobs.push((path.clone(), display, context));
        }
    }
    let others: Vec<(PathBuf, PathBuf, SourceKind)> = targets
        .sources
        .iter()
        .chain(&targets.package_manifests)
        .filter_map(|path| {
            let display = display_path(path, &cwd);
            let kind = SourceKind::of_other(path)?;
            wanted
                .binary_search(&display.as_path())
                .is_ok()
                .then(|| (path.clone(), display, kind))
        })
        .collect();
    let other_fixes = others.into_par_iter().filter_map(|(path, display, kind)| {
        let original = std::fs::read_to_string(&path).ok()?;
        let result = fix::fix_text(&original, kind, allowed, |text| {
            lint_other_source(&path, &display, text.to_owned(), config)
        });
        (result.fixed != original || result.warning.is_some()).then_some((path, original, result))
    });
    jobs.into_par_iter()
        .filter_map(|(path, display, context)| {
            let original = std::fs::read_to_string(&path).ok()?;
            let kind = if context.is_some() {
                fix::SourceKind::Rust
            } else {
                fix::SourceKind::Manifest
            };
            let result = fix::fix_text(&original, kind, allowed, |text| {
                lint_source(&path, &display, context.as_deref(), text.to_owned(), config)
            });
            (result.fixed != original || result.warning.is_some())
                .then_some((path, original, result))
        })
        .chain(other_fixes)
        .collect()
}

/// Lints one file's text as the run would (suppressions, configured severities, fixes); a
/// manifest when `context` is `None`.
pub fn lint_source(
    path: &Path,
    display: &Path,
    context: Option<&rust::CrateContext>,
    text: String,
    config: &Config,
) -> Vec<Diagnostic> {
    match context {
        Some(context) => {
            let mask = rust::Mask::WithoutTrigger(None);
            lint_rust(path, display, context, text, config, mask).diagnostics
        }
        None => lint_manifest(path, Some(&text), display, config, false).diagnostics,
    }
}

/// Lints one file of the other front-ends ([`lang::FrontEnd`]) as the run would; nothing for a
/// file no front-end reads.
pub fn lint_other_source(
    path: &Path,
    display: &Path,
    text: String,
    config: &Config,
) -> Vec<Diagnostic> {
    other_front_end(path)
        .map(|(front_end, kind)| {
            let file = SourceFile::new(display.to_path_buf(), text);
            lint_with_front_end(&file, front_end, kind, path, config, true).diagnostics
        })
        .unwrap_or_default()
}

/// The front-end of a file of [`Targets::sources`] or [`Targets::package_manifests`], and its
/// kind; `None` while its language has no front-end.
fn other_front_end(path: &Path) -> Option<(FrontEnd, SourceKind)> {
    let front_end = match Language::of(path) {
        Some(language) => language.front_end(),
        None => ManifestKind::of(path).and_then(ManifestKind::front_end),
    }?;
    Some((front_end, SourceKind::of_other(path)?))
}

/// Every file of the other front-ends; a file whose language has no front-end yet is left out
/// (not counted as scanned). As for Rust: one parallel pass reads and pre-filters, then the
/// files that pass are linted largest first, one per job, so that a large bundle does not start
/// last and run alone.
fn lint_other_languages(
    targets: &Targets,
    config: &Config,
    cwd: &Path,
    use_prefilter: bool,
) -> Vec<FileResult> {
    enum Read {
        Done(FileResult),
        Lint(Arc<SourceFile>, FrontEnd, SourceKind, PathBuf),
    }
    let read: Vec<Read> = targets
        .sources
        .par_iter()
        .chain(targets.package_manifests.par_iter())
        .filter(|path| !targets.is_excluded(path, config))
        .filter_map(|path| {
            let (front_end, kind) = other_front_end(path)?;
            let display = display_path(path, cwd);
            let text = match targets.manifest_texts.get(path.as_path()) {
                Some(text) => text.clone(),
                None => match std::fs::read_to_string(path) {
                    Ok(text) => text,
                    Err(error) => {
                        return Some(Read::Done(unreadable(&display, &error.to_string(), config)))
                    }
                },
            };
            if use_prefilter && !(front_end.may_match)(text.as_bytes()) {
                return Some(Read::Done(FileResult {
                    skipped: true,
                    ..FileResult::default()
                }));
            }
            let file = SourceFile::new(display, text);
            Some(Read::Lint(file, front_end, kind, path.clone()))
        })
        .collect();
    let mut results = Vec::new();
    let mut survivors = Vec::new();
    for entry in read {
        match entry {
            Read::Done(result) => results.push(result),
            Read::Lint(file, front_end, kind, path) => {
                survivors.push((file, front_end, kind, path))
            }
        }
    }
    survivors.sort_by_key(|(file, ..)| std::cmp::Reverse(file.text.len()));
    let linted: Vec<FileResult> = survivors
        .into_par_iter()
        .with_max_len(1)
        .map(|(file, front_end, kind, path)| {
            lint_with_front_end(&file, front_end, kind, &path, config, use_prefilter)
        })
        .collect();
    results.extend(linted);
    results
}

fn lint_with_front_end(
    file: &Arc<SourceFile>,
    front_end: FrontEnd,
    kind: SourceKind,
    path: &Path,
    config: &Config,
    use_prefilter: bool,
) -> FileResult {
    let diagnostics = (front_end.lint_file)(file, use_prefilter);
    finish(file, kind, diagnostics, path, config, None)
}

#[derive(Debug, Default)]
struct FileResult {
    diagnostics: Vec<Diagnostic>,
    suppressed: usize,
    skipped: bool,
}

/// What the first pass decided about a Rust file.
enum Pass {
    /// An exclude matches it: not counted, not read.
    Excluded,
    /// Settled without parsing: skipped by the pre-filter, or unreadable.
    Done(FileResult),
    /// Its text, for the second pass, and what of it syn may skip (see [`read_and_filter`]).
    Parse(String, rust::Mask),
}

fn read_and_filter(
    path: &Path,
    context: &rust::CrateContext,
    cwd: &Path,
    config: &Config,
    use_prefilter: bool,
) -> (Pass, Declared) {
    thread_local! {
        /// One read buffer per thread: most files are dropped after the pre-filter, and only
        /// those that pass are copied out.
        static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    BUFFER.with_borrow_mut(|buffer| {
        buffer.clear();
        let read = std::fs::File::open(path).and_then(|mut file| {
            use std::io::Read;
            file.read_to_end(buffer)
        });
        if let Err(error) = read {
            let display = display_path(path, cwd);
            let pass = Pass::Done(unreadable(&display, &error.to_string(), config));
            return (pass, Declared::default());
        }
        // The first pass reads every file of the crate: the peer fields its structs declare are
        // collected here, for the walk of the crate's other files.
        let declared = if context.depends_on_sdk && rust::crate_peers::may_declare(buffer) {
            std::str::from_utf8(buffer)
                .map(|text| rust::crate_peers::declared(text, context))
                .unwrap_or_default()
        } else {
            Declared::default()
        };
        let skipped = Pass::Done(FileResult {
            skipped: true,
            ..FileResult::default()
        });
        // Without the pre-filter, every item is parsed too. In a crate that depends on the SDK,
        // the pre-filter's words are those that decide which items syn parses: where they start
        // is found once, here, and handed on.
        let mask = if !use_prefilter {
            rust::Mask::Nothing
        } else if context.depends_on_sdk {
            let starts = prefilter::trigger_starts(buffer);
            if starts.is_empty() {
                return (skipped, declared);
            }
            rust::Mask::WithoutTrigger(Some(starts))
        } else if prefilter::may_match(buffer, false) {
            rust::Mask::WithoutTrigger(None)
        } else {
            return (skipped, declared);
        };
        let Ok(text) = std::str::from_utf8(buffer) else {
            let display = display_path(path, cwd);
            let pass = Pass::Done(unreadable(&display, "the file is not valid UTF-8", config));
            return (pass, declared);
        };
        (Pass::Parse(text.to_owned(), mask), declared)
    })
}

fn lint_rust(
    path: &Path,
    display: &Path,
    context: &rust::CrateContext,
    text: String,
    config: &Config,
    mask: rust::Mask,
) -> FileResult {
    let file = SourceFile::new(display.to_path_buf(), text);
    let (diagnostics, syntax) = rust::lint_file_parsed(&file, context, mask);
    finish(
        &file,
        SourceKind::Rust,
        diagnostics,
        path,
        config,
        syntax.as_ref(),
    )
}

fn lint_manifest(
    path: &Path,
    text: Option<&String>,
    display: &Path,
    config: &Config,
    use_prefilter: bool,
) -> FileResult {
    if use_prefilter {
        // Both manifest rules are about an rmcp dependency: a manifest that never names rmcp
        // (and carries no suppression comment) has nothing to report and is not parsed.
        let may_match = match text {
            Some(text) => prefilter::manifest_may_match(text.as_bytes()),
            None => std::fs::read(path).map_or(true, |bytes| prefilter::manifest_may_match(&bytes)),
        };
        if !may_match {
            return FileResult {
                skipped: true,
                ..FileResult::default()
            };
        }
    }
    let manifest = match text {
        Some(text) => manifest::Manifest::parse(path, display.to_path_buf(), text.clone()),
        None => manifest::Manifest::read(path, display.to_path_buf()),
    };
    check_manifest(&manifest, path, config)
}

/// The findings of a parsed manifest (or its parse error).
fn check_manifest(manifest: &manifest::ParsedManifest, path: &Path, config: &Config) -> FileResult {
    match manifest {
        Ok(manifest) => {
            let diagnostics = manifest.check();
            finish(
                &manifest.file,
                SourceKind::Manifest,
                diagnostics,
                path,
                config,
                None,
            )
        }
        Err(error) => {
            let diagnostic = error.to_diagnostic();
            let file = diagnostic.file.clone();
            finish(
                &file,
                SourceKind::Manifest,
                vec![diagnostic],
                path,
                config,
                None,
            )
        }
    }
}

/// Applies suppressions, then configured severities (dropping rules that are off), then fixes
/// (from `syntax`, the tree the findings came from, when there is one).
fn finish(
    file: &Arc<SourceFile>,
    kind: SourceKind,
    diagnostics: Vec<Diagnostic>,
    path: &Path,
    config: &Config,
    syntax: Option<&syn::File>,
) -> FileResult {
    let applied = suppress::apply(file, kind.comment_style(), diagnostics, |rule| {
        config.severity(rule, path).is_some()
    });
    let mut diagnostics: Vec<Diagnostic> = applied
        .kept
        .into_iter()
        .filter_map(|mut diagnostic| {
            diagnostic.severity = config.severity(diagnostic.rule, path)?;
            Some(diagnostic)
        })
        .collect();
    fix::attach_parsed(file, kind, &mut diagnostics, syntax);
    FileResult {
        diagnostics,
        suppressed: applied.suppressed,
        skipped: false,
    }
}

fn unreadable(display: &Path, reason: &str, config: &Config) -> FileResult {
    let Some(severity) = config.severity(RuleId::UnparsableFile, display) else {
        return FileResult::default();
    };
    let file = SourceFile::new(display.to_path_buf(), String::new());
    FileResult {
        diagnostics: vec![Diagnostic {
            rule: RuleId::UnparsableFile,
            severity,
            file,
            span: ByteSpan::new(0, 0),
            message: format!("could not read this file: {reason}"),
            help: Some("nothing in this file was linted".into()),
            label: None,
            fix: None,
        }],
        ..FileResult::default()
    }
}

/// The path relative to the working directory when it lies below it, with `./` stripped.
pub fn display_path(path: &Path, cwd: &Path) -> PathBuf {
    let relative = path.strip_prefix(cwd).unwrap_or(path);
    relative.strip_prefix(".").unwrap_or(relative).to_path_buf()
}
