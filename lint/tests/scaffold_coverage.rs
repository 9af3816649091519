//! Scaffold coverage on real code: for every `server-initiated-request` finding in the rule
//! fixtures, the legacy server and the real-project corpus (`tests/corpus/crates.txt`, fetched by
//! `tests/corpus/fetch.sh`), `--scaffold` at the finding's line either produces a handler that
//! compiles against rmcp 3 (one generated crate, a module per source file with the items its
//! scaffolds use) or refuses with a specific reason. The table of the outcomes is the one
//! `docs/lint/fixes.md` shows (between its `scaffold-coverage` markers); this test keeps it true.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use cargo_mcp_lint::config::Config;
use cargo_mcp_lint::diagnostic::SourceFile;
use cargo_mcp_lint::scaffold::{self, standalone, Scaffold};

#[path = "support/scaffold_check.rs"]
mod scaffold_check;
use scaffold_check::check;

fn workspace_root() -> PathBuf {
    mcp_migrate_workspace_bins::workspace_root(env!("CARGO_MANIFEST_DIR"))
}

/// The real-project corpus, fetched into the target directory (kept between runs; the fetch
/// script locks and skips what is there already).
fn corpus() -> PathBuf {
    let dest = Path::new(env!("CARGO_TARGET_TMPDIR")).join("lint-corpus");
    let status = Command::new("bash")
        .arg(workspace_root().join("tests/corpus/fetch.sh"))
        .arg(&dest)
        .status()
        .expect("bash runs");
    assert!(status.success(), "tests/corpus/fetch.sh failed");
    dest
}

/// The lines of `server-initiated-request` findings below `paths`: file → lines.
fn findings(paths: &[PathBuf]) -> BTreeMap<PathBuf, BTreeSet<usize>> {
    let targets = cargo_mcp_lint::walk::path_targets(paths).unwrap();
    let outcome = cargo_mcp_lint::lint(&targets, &Config::default(), true);
    let mut out: BTreeMap<PathBuf, BTreeSet<usize>> = BTreeMap::new();
    for diagnostic in &outcome.diagnostics {
        let rust = diagnostic.file.path.extension().is_some_and(|e| e == "rs");
        if rust && diagnostic.rule().name == "server-initiated-request" {
            out.entry(diagnostic.file.path.clone())
                .or_default()
                .insert(diagnostic.location().line);
        }
    }
    out
}

/// The kind of a refusal, from its message (each names its handler and its reason).
fn refusal_kind(reason: &str) -> &'static str {
    const KINDS: &[(&str, &str)] = &[
        ("runs in a task of its own", "request in a spawned task"),
        ("answers no client request", "no originating request"),
        ("is a helper function", "helper function"),
        ("inside the helper", "handler calls a request helper"),
        (
            "inside a `ServerRequest::CustomRequest` whose method is not a string literal",
            "CustomRequest of a method not known statically",
        ),
        ("inside the macro", "request inside another macro"),
        ("inside a closure", "request inside a closure"),
        (
            "is stored or handed on",
            "request closure stored or handed on",
        ),
        (
            "leaves its body with",
            "request closure leaving with ? or return",
        ),
        ("is handed to `", "request closure handed to a combinator"),
        ("inside an `async` block", "request inside an async block"),
        ("racing several requests", "select! racing several requests"),
        ("without a type", "untyped elicit"),
        ("is a `#[prompt]` method", "#[prompt] method"),
        ("is not `async`", "handler not async"),
        ("is not a `#[tool]`", "non-tool value"),
        ("awaits no", "no request awaited by the handler itself"),
        ("does not parse", "source does not parse as Rust 2018+"),
        ("returns nothing", "handler returns nothing"),
    ];
    KINDS
        .iter()
        .find(|(needle, _)| reason.contains(needle))
        .map_or("unclassified", |(_, kind)| kind)
}

#[derive(Default)]
struct Tally {
    findings: usize,
    compiled: usize,
    failed: usize,
    refused: BTreeMap<&'static str, usize>,
}

#[test]
fn every_finding_is_scaffolded_or_refused_with_its_reason_and_the_docs_show_the_table() {
    let root = workspace_root();
    let corpus = corpus();
    let groups = [
        (
            "rule fixtures and legacy server",
            findings(&[
                root.join("tests/fixtures/lint"),
                root.join("tests/legacy-server"),
            ]),
        ),
        (
            "real-project corpus",
            findings(std::slice::from_ref(&corpus)),
        ),
    ];

    // Scaffold at each finding; a module per file holding its distinct scaffolds.
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    let mut lib = String::new();
    let mut tallies: Vec<(&str, Tally)> = Vec::new();
    // (group index, module name, findings whose scaffold is in it)
    let mut modules: Vec<(usize, String, usize)> = Vec::new();
    let mut unclassified = Vec::new();
    for (group, (name, files)) in groups.iter().enumerate() {
        let mut tally = Tally::default();
        for (path, lines) in files {
            let text = std::fs::read_to_string(path).unwrap();
            let file = SourceFile::new(path.clone(), text.clone());
            let mut scaffolds: Vec<Scaffold> = Vec::new();
            let mut scaffolded = 0;
            for &line in lines {
                tally.findings += 1;
                match scaffold::scaffold_at(&file, line) {
                    Ok(found) => {
                        scaffolded += 1;
                        if !scaffolds.iter().any(|s| s.line == found.line) {
                            scaffolds.push(found);
                        }
                    }
                    Err(reason) => {
                        let kind = refusal_kind(&reason);
                        if kind == "unclassified" {
                            unclassified.push(format!("{}:{line}: {reason}", path.display()));
                        }
                        *tally.refused.entry(kind).or_default() += 1;
                    }
                }
            }
            if scaffolds.is_empty() {
                continue;
            }
            let module = format!("m{}", modules.len());
            let text = standalone::module(&text, &scaffolds, &["legacy_rmcp", "rmcp"]).unwrap();
            std::fs::write(src.join(format!("{module}.rs")), text).unwrap();
            lib.push_str(&format!(
                "/// {}\n#[allow(unused, deprecated, dead_code, non_snake_case)]\nmod {module};\n",
                path.display()
            ));
            modules.push((group, module, scaffolded));
        }
        tallies.push((name, tally));
    }
    assert!(
        unclassified.is_empty(),
        "refusals without a known reason:\n{}",
        unclassified.join("\n")
    );

    // One `cargo check`; the modules its errors point at did not compile.
    std::fs::write(src.join("lib.rs"), lib).unwrap();
    let output = check(dir.path());
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let failing: BTreeSet<&str> = stderr
        .lines()
        .filter(|line| line.contains(": error"))
        .filter_map(|line| {
            line.strip_prefix("src/")?
                .split_once(".rs:")
                .map(|(m, _)| m)
        })
        .collect();
    assert!(
        output.status.success() || !failing.is_empty(),
        "cargo check failed outside the modules:\n{stderr}"
    );
    for (group, module, scaffolded) in &modules {
        let tally = &mut tallies[*group].1;
        if failing.contains(module.as_str()) {
            tally.failed += scaffolded;
        } else {
            tally.compiled += scaffolded;
        }
    }

    // Nothing scaffolded fails to compile (kept when it does, for reading the errors).
    let table = render(&tallies);
    println!("{table}");
    let failed: usize = tallies.iter().map(|(_, t)| t.failed).sum();
    if failed > 0 {
        let kept = dir.keep();
        panic!(
            "{failed} scaffolds do not compile (crate kept in {}):\n{stderr}",
            kept.display()
        );
    }
    let mut total = Tally::default();
    for (_, tally) in &tallies {
        total.findings += tally.findings;
        total.compiled += tally.compiled;
        for (kind, count) in &tally.refused {
            *total.refused.entry(kind).or_default() += count;
        }
    }
    assert!(
        compiled_percent(&total) >= MIN_COMPILED_PERCENT,
        "fewer than {MIN_COMPILED_PERCENT} % of the findings with an originating request get a \
         scaffold that compiles:\n{table}"
    );
    let docs = std::fs::read_to_string(root.join("docs/lint/fixes.md")).unwrap();
    let shown = docs
        .split_once("<!-- scaffold-coverage -->\n")
        .and_then(|(_, rest)| rest.split_once("<!-- /scaffold-coverage -->"))
        .map(|(table, _)| table);
    assert_eq!(
        shown,
        Some(table.as_str()),
        "docs/lint/fixes.md must show, between `<!-- scaffold-coverage -->` and \
         `<!-- /scaffold-coverage -->`:\n{table}"
    );
}

/// The refusals of findings that have no originating request: no scaffold can exist for them.
const NO_ORIGIN: &[&str] = &["no originating request", "request in a spawned task"];

/// The share of the findings that have an originating request whose scaffold compiles, in
/// per cent: what the scaffolds must reach (at least [`MIN_COMPILED_PERCENT`]).
fn compiled_percent(total: &Tally) -> f64 {
    let without: usize = NO_ORIGIN
        .iter()
        .filter_map(|kind| total.refused.get(kind))
        .sum();
    let with_origin = total.findings - without;
    100.0 * total.compiled as f64 / with_origin.max(1) as f64
}

const MIN_COMPILED_PERCENT: f64 = 90.0;

/// The coverage table: one row per group and a total, then the refusals by reason.
fn render(tallies: &[(&str, Tally)]) -> String {
    let percent = |part: usize, whole: usize| {
        if whole == 0 {
            "–".to_owned()
        } else {
            format!("{:.0} %", 100.0 * part as f64 / whole as f64)
        }
    };
    let mut out = String::from(
        "| source | findings | scaffold compiles | refused with a reason | scaffold fails to compile |\n\
         |---|---:|---:|---:|---:|\n",
    );
    let mut total = Tally::default();
    for (name, tally) in tallies {
        let refused: usize = tally.refused.values().sum();
        out.push_str(&format!(
            "| {name} | {} | {} ({}) | {refused} | {} |\n",
            tally.findings,
            tally.compiled,
            percent(tally.compiled, tally.findings),
            tally.failed
        ));
        total.findings += tally.findings;
        total.compiled += tally.compiled;
        total.failed += tally.failed;
        for (kind, count) in &tally.refused {
            *total.refused.entry(kind).or_default() += count;
        }
    }
    let refused: usize = total.refused.values().sum();
    out.push_str(&format!(
        "| **total** | {} | {} ({}) | {refused} | {} |\n\nRefusals by reason: ",
        total.findings,
        total.compiled,
        percent(total.compiled, total.findings),
        total.failed
    ));
    let mut reasons: Vec<(&&str, &usize)> = total.refused.iter().collect();
    reasons.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let reasons: Vec<String> = reasons
        .iter()
        .map(|(kind, count)| format!("{kind} {count}"))
        .collect();
    out.push_str(&reasons.join(", "));
    out.push_str(".\n");
    let without: usize = NO_ORIGIN
        .iter()
        .filter_map(|kind| total.refused.get(kind))
        .sum();
    out.push_str(&format!(
        "\nOf the {} findings that have an originating request, {} ({:.0} %) get a scaffold that \
         compiles.\n",
        total.findings - without,
        total.compiled,
        compiled_percent(&total)
    ));
    out
}
