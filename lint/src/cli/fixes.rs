//! `--fix`, `--unsafe-fixes`, `--diff`, `--scaffold` and `--scaffolds`.

use std::path::{Path, PathBuf};

use mcp_migrate_rules::RuleId;

use super::{print_or_broken_pipe, Args, EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS};
use crate::config::Config;
use crate::{fix, scaffold, walk};

pub(super) fn allowed_fixes(args: &Args) -> fix::Allowed {
    if args.unsafe_fixes {
        fix::Allowed::Unsafe
    } else {
        fix::Allowed::Safe
    }
}

/// `--diff`: the unified diff of every file the fixes would change; exit 1 if there is one.
pub(super) fn print_diff(
    targets: &walk::Targets,
    config: &Config,
    outcome: &crate::Outcome,
    allowed: fix::Allowed,
) -> u8 {
    let fixed = crate::fix_files(targets, config, outcome, allowed);
    let mut changed = 0;
    let cwd = std::env::current_dir().unwrap_or_default();
    let code = print_or_broken_pipe(|out| {
        for (path, original, result) in &fixed {
            let display = crate::display_path(path, &cwd);
            if let Some(warning) = &result.warning {
                eprintln!("warning: {}: {warning}", display.display());
            }
            if result.fixed != *original {
                changed += 1;
                let name = display.to_string_lossy().replace('\\', "/");
                write!(out, "{}", fix::unified_diff(&name, original, &result.fixed))?;
            }
        }
        Ok(())
    });
    if code != EXIT_CLEAN {
        return code;
    }
    eprintln!("{changed} file(s) would be changed");
    if changed > 0 {
        EXIT_FINDINGS
    } else {
        EXIT_CLEAN
    }
}

/// `--fix`: writes the fixed files; returns how many fixes were applied.
pub(super) fn apply_fixes(
    targets: &walk::Targets,
    config: &Config,
    outcome: &crate::Outcome,
    allowed: fix::Allowed,
) -> Result<usize, u8> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let mut applied = 0;
    let mut files = 0;
    for (path, original, result) in crate::fix_files(targets, config, outcome, allowed) {
        let display = crate::display_path(&path, &cwd);
        if let Some(warning) = &result.warning {
            eprintln!("warning: {}: {warning}", display.display());
        }
        if result.fixed == original {
            continue;
        }
        if let Err(error) = std::fs::write(&path, &result.fixed) {
            eprintln!("error: could not write {}: {error}", display.display());
            return Err(EXIT_ERROR);
        }
        applied += result.applied;
        files += 1;
    }
    if applied > 0 {
        eprintln!("fixed {applied} finding(s) in {files} file(s)");
    }
    let remaining_unsafe = outcome
        .diagnostics
        .iter()
        .filter(|d| {
            d.fix
                .as_ref()
                .is_some_and(|f| f.applicability == fix::Applicability::Unsafe)
        })
        .count();
    if allowed == fix::Allowed::Safe && remaining_unsafe > 0 {
        eprintln!("{remaining_unsafe} more fix(es) available with --unsafe-fixes");
    }
    Ok(applied)
}

/// `--scaffold PATH:LINE`.
pub(super) fn print_scaffold(location: &str) -> u8 {
    let Some((path, line)) = location
        .rsplit_once(':')
        .and_then(|(path, line)| Some((path, line.parse::<usize>().ok()?)))
    else {
        eprintln!("error: --scaffold wants PATH:LINE (e.g. src/tools.rs:42), not `{location}`");
        return EXIT_ERROR;
    };
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) => {
            eprintln!("error: could not read {path}: {error}");
            return EXIT_ERROR;
        }
    };
    let file = crate::diagnostic::SourceFile::new(PathBuf::from(path), text);
    match scaffold::scaffold_at(&file, line) {
        Ok(found) => print_or_broken_pipe(|out| {
            write!(out, "{}", scaffold::render(Path::new(path), &[found]))
        }),
        Err(error) => {
            eprintln!("error: {path}:{line}: {error}");
            EXIT_ERROR
        }
    }
}

/// `--fix --scaffolds`: `FILE.mrtr.rs` beside each file with a handler that awaits a client
/// request mid-call.
pub(super) fn write_scaffolds(outcome: &crate::Outcome) {
    let mut files: Vec<&Path> = outcome
        .diagnostics
        .iter()
        .filter(|d| d.rule == RuleId::ServerInitiatedRequest)
        .map(|d| d.file.path.as_path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.dedup();
    for path in files {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        let file = crate::diagnostic::SourceFile::new(path.to_path_buf(), text);
        let (found, skipped) = match scaffold::file_scaffolds(&file) {
            Ok(result) => result,
            Err(error) => {
                eprintln!("warning: no scaffolds for {error}");
                continue;
            }
        };
        for skip in skipped {
            eprintln!(
                "note: {}:{}: no scaffold: {}",
                path.display(),
                skip.line,
                skip.reason
            );
        }
        if found.is_empty() {
            continue;
        }
        let target = path.with_extension("mrtr.rs");
        match std::fs::write(&target, scaffold::render(path, &found)) {
            Ok(()) => eprintln!(
                "wrote {} ({} handler(s): {})",
                target.display(),
                found.len(),
                found
                    .iter()
                    .map(|s| s.handler.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Err(error) => eprintln!("warning: could not write {}: {error}", target.display()),
        }
    }
}
