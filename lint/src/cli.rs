//! The command line: `cargo mcp-lint [OPTIONS] [PATH]...`.

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{ArgAction, CommandFactory, FromArgMatches, Parser};
use mcp_migrate_rules::{RuleId, Severity, RULES};

use crate::config::{Config, ConfigError, Layer, Level};
use crate::output::{self, Format, RenderOptions};
use crate::walk;
use crate::{baseline, fix, scaffold};

/// Exit code: nothing at error severity.
pub const EXIT_CLEAN: u8 = 0;
/// Exit code: at least one finding at error severity.
pub const EXIT_FINDINGS: u8 = 1;
/// Exit code: usage, configuration or internal error.
pub const EXIT_ERROR: u8 = 2;

/// Stack of each linting thread (see `rust::MAX_NESTING`).
const WORKER_STACK_BYTES: usize = 32 * 1024 * 1024;

/// Finds code that relies on what MCP 2026-07-28 deprecated or removed.
///
/// With no PATH, lints every member of the cargo workspace of the current directory. A PATH may be
/// a directory (walked honouring .gitignore; the Cargo.toml files in it are linted too) or a file.
#[derive(Debug, Parser)]
#[command(name = "cargo-mcp-lint", bin_name = "cargo mcp-lint", version)]
pub struct Args {
    /// Files or directories to lint (default: the cargo workspace of the current directory)
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Full)]
    pub format: Format,

    /// Write the report to FILE instead of standard output
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output_file: Option<PathBuf>,

    /// Turn a rule off (name, code, or `all`); repeatable, later flags win
    #[arg(short = 'A', long = "allow", value_name = "RULE", action = ArgAction::Append)]
    pub allow: Vec<String>,

    /// Report a rule as a warning (name, code, or `all`)
    #[arg(short = 'W', long = "warn", value_name = "RULE", action = ArgAction::Append)]
    pub warn: Vec<String>,

    /// Report a rule as an error, failing the run (name, code, or `all`)
    #[arg(short = 'D', long = "deny", value_name = "RULE", action = ArgAction::Append)]
    pub deny: Vec<String>,

    /// Exit 0 even when there are findings at error severity
    #[arg(long)]
    pub exit_zero: bool,

    /// Read configuration from FILE (an mcp-lint.toml) instead of looking it up
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Print the documentation of a rule and exit
    #[arg(long, value_name = "RULE", conflicts_with = "list_rules")]
    pub explain: Option<String>,

    /// Print the rule catalogue and exit
    #[arg(long)]
    pub list_rules: bool,

    /// When to use colours in the `full` format
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,

    /// Parse every file, even those the byte-level pre-filter proves irrelevant (for measurements)
    #[arg(long, hide = true)]
    pub no_prefilter: bool,

    /// Worker threads (default: one per core)
    #[arg(long, short = 'j', value_name = "N")]
    pub threads: Option<usize>,

    /// Apply safe fixes in place, then report what is left
    #[arg(long, help_heading = "Fixes")]
    pub fix: bool,

    /// Also apply unsafe fixes (behaviour may change); alone, implies --fix
    #[arg(long, help_heading = "Fixes")]
    pub unsafe_fixes: bool,

    /// Print the fixes as a unified diff instead of writing them; exit 1 if anything would change
    #[arg(long, help_heading = "Fixes", conflicts_with = "fix")]
    pub diff: bool,

    /// Print the MRTR scaffold of the tool handler at PATH:LINE (display-only) and exit
    #[arg(long, value_name = "PATH:LINE", help_heading = "Fixes", conflicts_with_all = ["fix", "diff"])]
    pub scaffold: Option<String>,

    /// With --fix: write the MRTR scaffolds of a file's handlers beside it, as FILE.mrtr.rs
    #[arg(long, requires = "fix", help_heading = "Fixes")]
    pub scaffolds: bool,

    /// Known findings: those FILE lists are reported as baselined and do not fail the run
    #[arg(long, value_name = "FILE", help_heading = "Adoption")]
    pub baseline: Option<PathBuf>,

    /// Write every current finding to the --baseline FILE (sorted, stable) and exit 0
    #[arg(long, requires = "baseline", help_heading = "Adoption")]
    pub update_baseline: bool,

    /// Report only findings on lines changed since the git revision REV (`git diff REV`)
    #[arg(long, value_name = "REV", help_heading = "Adoption")]
    pub new_from_rev: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

/// Runs the linter with the process arguments (`cargo mcp-lint` passes `mcp-lint` first).
pub fn main() -> ExitCode {
    let mut arguments: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if arguments
        .get(1)
        .is_some_and(|argument| argument == "mcp-lint")
    {
        arguments.remove(1);
    }
    let matches = match Args::command().try_get_matches_from(arguments) {
        Ok(matches) => matches,
        Err(error) => {
            let code = if error.use_stderr() {
                EXIT_ERROR
            } else {
                EXIT_CLEAN
            };
            let _ = error.print();
            return ExitCode::from(code);
        }
    };
    let levels = ordered_levels(&matches);
    let args = match Args::from_arg_matches(&matches) {
        Ok(args) => args,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(EXIT_ERROR);
        }
    };
    ExitCode::from(run(args, levels))
}

/// `-A/-W/-D` in the order given, so that later flags win as they do for rustc.
fn ordered_levels(matches: &clap::ArgMatches) -> Vec<(usize, Level, String)> {
    let mut levels = Vec::new();
    for (id, level) in [
        ("allow", Level::Allow),
        ("warn", Level::Warn),
        ("deny", Level::Deny),
    ] {
        if let (Some(indices), Some(values)) =
            (matches.indices_of(id), matches.get_many::<String>(id))
        {
            for (index, value) in indices.zip(values) {
                levels.push((index, level, value.clone()));
            }
        }
    }
    levels.sort_by_key(|(index, _, _)| *index);
    levels
}

/// Runs one invocation and returns its exit code.
pub fn run(args: Args, ordered: Vec<(usize, Level, String)>) -> u8 {
    if args.list_rules {
        return print_or_broken_pipe(|out| list_rules(out));
    }
    if let Some(selector) = &args.explain {
        let Some(rule) = mcp_migrate_rules::lookup(selector) else {
            eprintln!(
                "error: {}",
                mcp_migrate_rules::UnknownRule(selector.clone())
            );
            return EXIT_ERROR;
        };
        return print_or_broken_pipe(|out| {
            writeln!(out, "{}", rule.docs.trim_end())?;
            writeln!(
                out,
                "\nCode: {}  Default: {}  Fix: {}  Docs: {}",
                rule.code,
                rule.default_severity,
                rule.fix,
                rule.url()
            )
        });
    }
    if let Some(location) = &args.scaffold {
        return print_scaffold(location);
    }
    let mut cli_levels = Vec::new();
    for (_, level, selector) in ordered {
        if selector == "all" {
            cli_levels.extend(RuleId::ALL.iter().map(|rule| (*rule, level)));
            continue;
        }
        match selector.parse::<RuleId>() {
            Ok(rule) => cli_levels.push((rule, level)),
            Err(error) => {
                eprintln!("error: {error}");
                return EXIT_ERROR;
            }
        }
    }
    // syn and the walk recurse once per nesting level (bounded by `rust::MAX_NESTING`): give the
    // workers room for that. Building the global pool only fails if it exists already.
    let mut pool = rayon::ThreadPoolBuilder::new().stack_size(WORKER_STACK_BYTES);
    if let Some(threads) = args.threads {
        pool = pool.num_threads(threads.max(1));
    }
    let _ = pool.build_global();

    let targets = if args.paths.is_empty() {
        walk::workspace_targets()
    } else {
        walk::path_targets(&args.paths)
    };
    let targets = match targets {
        Ok(targets) => targets,
        Err(error) => {
            eprintln!("error: {error}");
            return EXIT_ERROR;
        }
    };
    let config = match load_config(&args, &targets, cli_levels) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("{:?}", miette::Report::new(*error));
            return EXIT_ERROR;
        }
    };
    let mut outcome = crate::lint(&targets, &config, !args.no_prefilter);
    if args.diff {
        return print_diff(&targets, &config, &outcome, allowed_fixes(&args));
    }
    if args.fix || args.unsafe_fixes {
        match apply_fixes(&targets, &config, &outcome, allowed_fixes(&args)) {
            Ok(0) => {}
            // Report what the fixes left.
            Ok(_) => outcome = crate::lint(&targets, &config, !args.no_prefilter),
            Err(code) => return code,
        }
        if args.scaffolds {
            write_scaffolds(&outcome);
        }
    }
    if let Some(code) = adopt(&args, &mut outcome) {
        return code;
    }
    let color = match args.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            args.output_file.is_none()
                && io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none()
        }
    };
    let options = RenderOptions { color };
    let rendered = match &args.output_file {
        Some(path) => std::fs::File::create(path).and_then(|file| {
            let mut writer = io::BufWriter::new(file);
            output::render(
                args.format,
                &outcome.diagnostics,
                &outcome.summary,
                options,
                &mut writer,
            )?;
            writer.flush()
        }),
        None => {
            let stdout = io::stdout();
            let mut writer = io::BufWriter::new(stdout.lock());
            output::render(
                args.format,
                &outcome.diagnostics,
                &outcome.summary,
                options,
                &mut writer,
            )
            .and_then(|()| writer.flush())
        }
    };
    if let Err(error) = rendered {
        // A closed pipe (`cargo mcp-lint | head`) is the reader's choice, not a failure.
        if error.kind() != io::ErrorKind::BrokenPipe {
            eprintln!("error: could not write the report: {error}");
            return EXIT_ERROR;
        }
    }
    let has_errors = outcome
        .diagnostics
        .iter()
        .any(|diagnostic| diagnostic.severity == Severity::Error);
    if has_errors && !args.exit_zero {
        EXIT_FINDINGS
    } else {
        EXIT_CLEAN
    }
}

/// `--new-from-rev`, then `--baseline` / `--update-baseline`. `Some(code)` ends the run.
fn adopt(args: &Args, outcome: &mut crate::Outcome) -> Option<u8> {
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

/// `--scaffold PATH:LINE`.
fn print_scaffold(location: &str) -> u8 {
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
fn write_scaffolds(outcome: &crate::Outcome) {
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

fn allowed_fixes(args: &Args) -> fix::Allowed {
    if args.unsafe_fixes {
        fix::Allowed::Unsafe
    } else {
        fix::Allowed::Safe
    }
}

/// `--diff`: the unified diff of every file the fixes would change; exit 1 if there is one.
fn print_diff(
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
fn apply_fixes(
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

fn print_or_broken_pipe(print: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> u8 {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    match print(&mut out).and_then(|()| out.flush()) {
        Ok(()) => EXIT_CLEAN,
        Err(error) if error.kind() == io::ErrorKind::BrokenPipe => EXIT_CLEAN,
        Err(error) => {
            eprintln!("error: {error}");
            EXIT_ERROR
        }
    }
}

fn list_rules(out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "{:<7} {:<36} {:<8} {:<13} SUMMARY",
        "CODE", "NAME", "DEFAULT", "FIX"
    )?;
    for rule in RULES {
        writeln!(
            out,
            "{:<7} {:<36} {:<8} {:<13} {}",
            rule.code, rule.name, rule.default_severity, rule.fix, rule.summary
        )?;
    }
    Ok(())
}

/// Finds the configuration: `--config`, else the nearest `mcp-lint.toml` or
/// `[workspace.metadata.mcp-lint]` from the workspace root (or the working directory) upwards;
/// plus `[package.metadata.mcp-lint]` of every package whose files are linted.
fn load_config(
    args: &Args,
    targets: &walk::Targets,
    cli_levels: Vec<(RuleId, Level)>,
) -> Result<Config, Box<ConfigError>> {
    let root = match &args.config {
        Some(path) => Some(Layer::from_config_file(path)?),
        None => {
            let start = targets
                .workspace_root
                .clone()
                .or_else(|| std::env::current_dir().ok())
                .unwrap_or_default();
            find_root_layer(&start)?
        }
    };
    let mut packages = Vec::new();
    let mut package_dirs: Vec<&Path> = targets
        .manifests
        .iter()
        .filter_map(|manifest| manifest.parent())
        .collect();
    package_dirs.sort();
    package_dirs.dedup();
    for dir in package_dirs {
        let manifest = dir.join("Cargo.toml");
        let text = targets.manifest_texts.get(&manifest).map(String::as_str);
        if let Some(layer) = Layer::from_manifest_text(&manifest, text, false)? {
            packages.push(layer);
        }
    }
    Ok(Config::new(root, packages, cli_levels))
}

fn find_root_layer(start: &Path) -> Result<Option<Layer>, Box<ConfigError>> {
    for dir in start.ancestors() {
        for name in ["mcp-lint.toml", ".mcp-lint.toml"] {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Ok(Some(Layer::from_config_file(&candidate)?));
            }
        }
        let manifest = dir.join("Cargo.toml");
        if manifest.is_file() {
            let text = std::fs::read_to_string(&manifest).unwrap_or_default();
            if text.contains("[workspace") {
                return Layer::from_manifest(&manifest, true);
            }
        }
    }
    Ok(None)
}
