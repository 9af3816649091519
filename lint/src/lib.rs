//! `cargo mcp-lint`: finds code that relies on what MCP 2026-07-28 deprecated or removed.
//!
//! Data flow: [`walk`] finds the files (the cargo workspace, or the given paths) and the crate of
//! each; [`config`] decides rule levels and excludes; every Rust file passes the byte-level
//! [`prefilter`] and, if it may match, is parsed by syn and walked once by the [`rust`] front-end
//! (in parallel, with rayon); manifests go through [`manifest`]; [`suppress`] applies inline
//! comments; [`output`] renders the sorted findings.

#![forbid(unsafe_code)]

pub mod cli;
pub mod config;
pub mod diagnostic;
pub mod manifest;
pub mod output;
pub mod prefilter;
pub mod rust;
pub mod suppress;
pub mod walk;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;

use config::Config;
use diagnostic::{ByteSpan, Diagnostic, SourceFile};
use mcp_migrate_rules::RuleId;
use output::Summary;
use suppress::CommentStyle;
use walk::{CrateIndex, Targets};

/// The findings of a run, sorted, and its counts.
#[derive(Debug, Default)]
pub struct Outcome {
    pub diagnostics: Vec<Diagnostic>,
    pub summary: Summary,
}

/// Lints `targets` under `config`. `use_prefilter: false` parses every file (for measurements).
pub fn lint(targets: &Targets, config: &Config, use_prefilter: bool) -> Outcome {
    let cwd = std::env::current_dir().unwrap_or_default();
    let mut index = CrateIndex::default();
    let rust_jobs: Vec<(PathBuf, Arc<rust::CrateContext>)> = targets
        .rust_files
        .iter()
        .filter(|path| !targets.is_excluded(path, config))
        .map(|path| (path.clone(), index.context_for(path)))
        .collect();
    let manifests: Vec<&PathBuf> = targets
        .manifests
        .iter()
        .filter(|path| !targets.is_excluded(path, config))
        .collect();

    let rust_results: Vec<FileResult> = rust_jobs
        .par_iter()
        .map(|(path, context)| {
            lint_rust(
                path,
                &display_path(path, &cwd),
                context,
                config,
                use_prefilter,
            )
        })
        .collect();
    let manifest_results: Vec<FileResult> = manifests
        .par_iter()
        .map(|path| lint_manifest(path, &display_path(path, &cwd), config, use_prefilter))
        .collect();

    let mut outcome = Outcome::default();
    outcome.summary.files_scanned = rust_jobs.len() + manifests.len();
    for result in rust_results.into_iter().chain(manifest_results) {
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

#[derive(Debug, Default)]
struct FileResult {
    diagnostics: Vec<Diagnostic>,
    suppressed: usize,
    skipped: bool,
}

fn lint_rust(
    path: &Path,
    display: &Path,
    context: &rust::CrateContext,
    config: &Config,
    use_prefilter: bool,
) -> FileResult {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) => return unreadable(display, &error.to_string(), config),
    };
    if use_prefilter && !prefilter::may_match(&bytes, context.depends_on_sdk) {
        return FileResult {
            skipped: true,
            ..FileResult::default()
        };
    }
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(_) => return unreadable(display, "the file is not valid UTF-8", config),
    };
    let file = SourceFile::new(display.to_path_buf(), text);
    let diagnostics = rust::lint_file(&file, context);
    finish(&file, CommentStyle::Slashes, diagnostics, path, config)
}

fn lint_manifest(path: &Path, display: &Path, config: &Config, use_prefilter: bool) -> FileResult {
    if use_prefilter {
        // Both manifest rules are about an rmcp dependency: a manifest that never names rmcp
        // (and carries no suppression comment) has nothing to report and is not parsed.
        match std::fs::read(path) {
            Ok(bytes) if !prefilter::manifest_may_match(&bytes) => {
                return FileResult {
                    skipped: true,
                    ..FileResult::default()
                };
            }
            _ => {}
        }
    }
    match manifest::Manifest::read(path, display.to_path_buf()) {
        Ok(manifest) => {
            let diagnostics = manifest.check();
            finish(
                &manifest.file,
                CommentStyle::Hash,
                diagnostics,
                path,
                config,
            )
        }
        Err(error) => {
            let diagnostic = error.into_diagnostic();
            let file = diagnostic.file.clone();
            finish(&file, CommentStyle::Hash, vec![diagnostic], path, config)
        }
    }
}

/// Applies suppressions, then configured severities (dropping rules that are off).
fn finish(
    file: &Arc<SourceFile>,
    style: CommentStyle,
    diagnostics: Vec<Diagnostic>,
    path: &Path,
    config: &Config,
) -> FileResult {
    let applied = suppress::apply(file, style, diagnostics, |rule| {
        config.severity(rule, path).is_some()
    });
    let diagnostics = applied
        .kept
        .into_iter()
        .filter_map(|mut diagnostic| {
            diagnostic.severity = config.severity(diagnostic.rule, path)?;
            Some(diagnostic)
        })
        .collect();
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
        }],
        ..FileResult::default()
    }
}

/// The path relative to the working directory when it lies below it, with `./` stripped.
pub fn display_path(path: &Path, cwd: &Path) -> PathBuf {
    let relative = path.strip_prefix(cwd).unwrap_or(path);
    relative.strip_prefix(".").unwrap_or(relative).to_path_buf()
}
