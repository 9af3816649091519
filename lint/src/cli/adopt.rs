//! `--new-from-rev`, `--baseline` and `--update-baseline`: adopting the linter with known
//! findings.

use super::{Args, EXIT_CLEAN, EXIT_ERROR};
use crate::baseline;

/// `--new-from-rev`, then `--baseline` / `--update-baseline`. `Some(code)` ends the run.
pub(super) fn adopt(args: &Args, outcome: &mut crate::Outcome) -> Option<u8> {
    let cwd = std::env::current_dir().unwrap_or_default();
    if let Some(rev) = &args.new_from_rev {
        let changed = match baseline::ChangedLines::since(rev, &cwd) {
            Ok(changed) => changed,
            Err(error) => {
                eprintln!("error: --new-from-rev {rev}: {error}");
                return Some(EXIT_ERROR);
            }
        };
        let before = outcome.diagnostics.len();
        outcome
            .diagnostics
            .retain(|diagnostic| changed.contains(diagnostic, &cwd));
        outcome.summary.unchanged_lines = before - outcome.diagnostics.len();
        let diagnostics = std::mem::take(&mut outcome.diagnostics);
        outcome.summary.count(&diagnostics);
        outcome.diagnostics = diagnostics;
    }
    let path = args.baseline.as_ref()?;
    if args.update_baseline {
        let baseline = baseline::Baseline::of(&outcome.diagnostics);
        return Some(match baseline.write(path) {
            Ok(()) => {
                eprintln!(
                    "wrote {} baseline entries for {} findings to {}",
                    baseline.findings.len(),
                    outcome.diagnostics.len(),
                    path.display()
                );
                EXIT_CLEAN
            }
            Err(error) => {
                eprintln!("error: {error}");
                EXIT_ERROR
            }
        });
    }
    let known = match baseline::Baseline::read(path) {
        Ok(known) => known,
        Err(error) => {
            eprintln!("error: {error}");
            return Some(EXIT_ERROR);
        }
    };
    let diagnostics = std::mem::take(&mut outcome.diagnostics);
    let matched = baseline::apply(&known, diagnostics, |entry| cwd.join(entry).exists());
    for entry in &matched.stale {
        eprintln!(
            "warning: stale baseline entry ({} x{}): {} `{}` in {}; `--update-baseline` drops it",
            entry.fingerprint, entry.count, entry.rule, entry.context, entry.path
        );
    }
    outcome.diagnostics = matched.new;
    outcome.summary.baselined = matched.baselined.len();
    outcome.summary.stale_baseline_entries = matched.stale.iter().map(|e| e.count).sum();
    let diagnostics = std::mem::take(&mut outcome.diagnostics);
    outcome.summary.count(&diagnostics);
    outcome.diagnostics = diagnostics;
    None
}
