//! The command line: `cargo mcp-lint [OPTIONS] [PATH]...`.

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{ArgAction, CommandFactory, FromArgMatches, Parser};
use mcp_migrate_rules::{RuleId, Severity, RULES};

use crate::config::{Config, ConfigError, Layer, Level};
use crate::output::{self, Format, RenderOptions};
use crate::walk;
mod adopt;
mod fixes;

use adopt::adopt;
use fixes::{allowed_fixes, apply_fixes, print_diff, print_scaffold, write_scaffolds};

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

/// Which binary runs: they differ only in the name they print and in the leading argument cargo
/// passes a subcommand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Program {
    /// `cargo-mcp-lint`, run directly or as `cargo mcp-lint` (which passes `mcp-lint` first).
    CargoSubcommand,
    /// `mcp-lint`, the standalone binary of the Python and npm packages (docs/lint/install.md).
    Standalone,
}

/// Runs `cargo-mcp-lint` with the process arguments.
pub fn main() -> ExitCode {
    main_as(Program::CargoSubcommand)
}

/// Runs the linter as `program` with the process arguments.
pub fn main_as(program: Program) -> ExitCode {
    let mut arguments: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let mut command = Args::command();
    match program {
        Program::CargoSubcommand => {
            if arguments
                .get(1)
                .is_some_and(|argument| argument == "mcp-lint")
            {
                arguments.remove(1);
            }
        }
        Program::Standalone => command = command.name("mcp-lint").bin_name("mcp-lint"),
    }
    let matches = match command.try_get_matches_from(arguments) {
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
    // workers room for that.
    let mut pool = rayon::ThreadPoolBuilder::new().stack_size(WORKER_STACK_BYTES);
    if let Some(threads) = args.threads {
        pool = pool.num_threads(threads.max(1));
    }
    match pool.build() {
        // The whole job runs on one of the pool's threads: between two parallel steps the serial
        // ones (crate contexts, peer fields, sorting, the report) run there too, and each
        // parallel step starts on that thread at once instead of waking a worker while the main
        // thread goes to sleep until a worker wakes it again (two wake-ups per step).
        Ok(pool) => pool.install(|| lint_job(&args, cli_levels)),
        Err(error) => {
            eprintln!("error: could not start the linting threads: {error}");
            EXIT_ERROR
        }
    }
}

/// Finds the targets, lints them (fixing them if asked) and writes the report: the exit code.
fn lint_job(args: &Args, cli_levels: Vec<(RuleId, Level)>) -> u8 {
    // Also after `--fix`: the manifest texts a walk reads are those from before the fixes.
    let find_targets = || {
        if args.paths.is_empty() {
            walk::workspace_targets()
        } else {
            walk::path_targets(&args.paths)
        }
        .map_err(|error| {
            eprintln!("error: {error}");
            EXIT_ERROR
        })
    };
    let targets = match find_targets() {
        Ok(targets) => targets,
        Err(code) => return code,
    };
    let config = match load_config(args, &targets, cli_levels) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("{:?}", miette::Report::new(*error));
            return EXIT_ERROR;
        }
    };
    let mut outcome = crate::lint(&targets, &config, !args.no_prefilter);
    if args.diff {
        return print_diff(&targets, &config, &outcome, allowed_fixes(args));
    }
    if args.fix || args.unsafe_fixes {
        match apply_fixes(&targets, &config, &outcome, allowed_fixes(args)) {
            Ok(0) => {}
            // Report what the fixes left, from a new walk.
            Ok(_) => match find_targets() {
                Ok(fixed) => outcome = crate::lint(&fixed, &config, !args.no_prefilter),
                Err(code) => return code,
            },
            Err(code) => return code,
        }
        if args.scaffolds {
            write_scaffolds(&outcome);
        }
    }
    if let Some(code) = adopt(args, &mut outcome) {
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
        Some(path) => std::fs::File::create(path).map(|file| Box::new(file) as Box<dyn Write>),
        None => Ok(Box::new(io::stdout().lock()) as Box<dyn Write>),
    }
    .and_then(|out| {
        let mut writer = io::BufWriter::new(out);
        output::render(
            args.format,
            &outcome.diagnostics,
            &outcome.summary,
            options,
            &mut writer,
        )?;
        writer.flush()
    });
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

/// Finds the configuration: `--config`, else the nearest `mcp-lint.toml`,
/// `[workspace.metadata.mcp-lint]` or `pyproject.toml` `[tool.mcp-lint]` from the workspace root
/// (or the working directory) upwards; plus `[package.metadata.mcp-lint]` of every package whose
/// files are linted, and `[tool.mcp-lint]` of every `pyproject.toml` the walk found.
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
    for manifest in &targets.package_manifests {
        if crate::lang::ManifestKind::of(manifest) == Some(crate::lang::ManifestKind::Pyproject) {
            let text = targets.manifest_texts.get(manifest).map(String::as_str);
            if let Some(layer) = Layer::from_pyproject_text(manifest, text)? {
                packages.push(layer);
            }
        }
    }
    let mut config = Config::new(root, packages, cli_levels);
    config.decide_directories(
        targets
            .rust_files
            .iter()
            .chain(&targets.manifests)
            .chain(&targets.sources)
            .chain(&targets.package_manifests)
            .map(PathBuf::as_path),
    );
    Ok(config)
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
        let pyproject = dir.join("pyproject.toml");
        if pyproject.is_file() {
            if let Some(layer) = Layer::from_pyproject_text(&pyproject, None)? {
                return Ok(Some(layer));
            }
        }
    }
    Ok(None)
}
