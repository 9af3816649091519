//! `cargo mcp-lint` on real MCP projects, one scorer for every language: the corpus of
//! `tests/corpus/crates.txt` (public servers, gateways and clients on rmcp before 3.x, fetched from
//! crates.io at pinned versions by `tests/corpus/fetch.sh`) against the hand-checked
//! `tests/corpus/ground-truth.txt`; the TypeScript/JavaScript corpus of `tests/corpus/typescript/`
//! (npm packages, `packages.txt`, fetched by its `fetch.sh` with `npm pack`) against its own
//! `ground-truth.txt`; and the Python corpus of `tests/corpus/python-packages.txt` (PyPI wheels,
//! fetched by `tests/corpus/fetch-python.sh` with pip) against `tests/corpus/python-ground-truth.txt`.
//!
//! Prints recall and precision (`-- --nocapture`), per rule and in total, and every miss and
//! unexpected finding; fails below recall 0.95 or precision 0.97, when a `forbid` look-alike is
//! reported, or when a ground-truth line no longer holds its text. See `docs/lint/accuracy.md`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use cargo_mcp_lint::config::Config;
use cargo_mcp_lint::walk;
use mcp_migrate_tests::workspace_root;

const MIN_RECALL: f64 = 0.95;
const MIN_PRECISION: f64 = 0.97;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Expect,
    Accept,
    Forbid,
}

#[derive(Debug)]
struct Entry {
    kind: Kind,
    path: String,
    line: usize,
    /// A rule name, or `*` for any rule (forbid only).
    rule: String,
    text: String,
}

type Finding = (String, usize, String);

/// One real-project corpus: where its files, fetch script and ground truth are.
struct Corpus {
    name: &'static str,
    /// Relative to the workspace root.
    fetch_script: &'static str,
    ground_truth: &'static str,
    /// The directory below the test target's temporary directory it is fetched into.
    cache: &'static str,
    /// The environment variable naming another build's `--format concise` output to score
    /// instead of this build's findings.
    override_variable: &'static str,
}

const RUST: Corpus = Corpus {
    name: "real-project corpus",
    fetch_script: "tests/corpus/fetch.sh",
    ground_truth: "tests/corpus/ground-truth.txt",
    cache: "lint-corpus",
    override_variable: "MCP_LINT_CORPUS_FINDINGS",
};

const TYPESCRIPT: Corpus = Corpus {
    name: "TypeScript/JavaScript corpus",
    fetch_script: "tests/corpus/typescript/fetch.sh",
    ground_truth: "tests/corpus/typescript/ground-truth.txt",
    cache: "lint-corpus-typescript",
    override_variable: "MCP_LINT_TS_CORPUS_FINDINGS",
};

const PYTHON: Corpus = Corpus {
    name: "Python corpus",
    fetch_script: "tests/corpus/fetch-python.sh",
    ground_truth: "tests/corpus/python-ground-truth.txt",
    cache: "lint-corpus-python",
    override_variable: "MCP_LINT_PYTHON_CORPUS_FINDINGS",
};

fn ground_truth(corpus: &Corpus) -> Vec<Entry> {
    let file = workspace_root().join(corpus.ground_truth);
    let text = std::fs::read_to_string(&file).unwrap();
    let mut entries = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let parse = || -> Option<Entry> {
            let (head, tail) = line.split_once(" | ")?;
            let text = tail.split(" -- ").next()?.trim().to_owned();
            let mut fields = head.split_whitespace();
            let kind = match fields.next()? {
                "expect" => Kind::Expect,
                "accept" => Kind::Accept,
                "forbid" => Kind::Forbid,
                _ => return None,
            };
            let (path, number) = fields.next()?.rsplit_once(':')?;
            let rule = fields.next()?.to_owned();
            Some(Entry {
                kind,
                path: path.to_owned(),
                line: number.parse().ok()?,
                rule,
                text,
            })
        };
        entries.push(parse().unwrap_or_else(|| {
            panic!("{}:{}: malformed entry: {line}", file.display(), number + 1)
        }));
    }
    entries
}

/// The corpus, fetched into the target directory (kept between runs; its fetch script takes a
/// lock and skips what is there already, so the tests of this binary may both ask for it).
fn fetch(corpus: &Corpus) -> PathBuf {
    let dest = Path::new(env!("CARGO_TARGET_TMPDIR")).join(corpus.cache);
    let status = Command::new("bash")
        .arg(workspace_root().join(corpus.fetch_script))
        .arg(&dest)
        .status()
        .expect("bash runs");
    assert!(status.success(), "{} failed", corpus.fetch_script);
    dest
}

/// The linter's findings on the corpus; with the corpus's override variable set to a file
/// (`MCP_LINT_CORPUS_FINDINGS`, `MCP_LINT_TS_CORPUS_FINDINGS`, `MCP_LINT_PYTHON_CORPUS_FINDINGS`),
/// those of another build instead, read from its `--format concise` output (run from the corpus
/// directory), to score it against the same ground truth.
fn findings(corpus: &Path, override_variable: &str) -> BTreeSet<Finding> {
    if let Ok(file) = std::env::var(override_variable) {
        return concise_findings(&std::fs::read_to_string(&file).unwrap());
    }
    let targets = walk::path_targets(&[corpus.to_path_buf()]).unwrap();
    let outcome = cargo_mcp_lint::lint(&targets, &Config::default(), true);
    outcome
        .diagnostics
        .iter()
        .map(|diagnostic| {
            let path = diagnostic
                .file
                .path
                .strip_prefix(corpus)
                .unwrap_or(&diagnostic.file.path)
                .to_string_lossy()
                .into_owned();
            (
                path,
                diagnostic.location().line,
                diagnostic.rule().name.to_owned(),
            )
        })
        .collect()
}

/// `path:line:column: severity[CODE name] message` lines.
fn concise_findings(text: &str) -> BTreeSet<Finding> {
    text.lines()
        .filter_map(|line| {
            let (location, rest) = line.split_once(": ")?;
            let mut parts = location.rsplitn(3, ':');
            let _column = parts.next()?;
            let line_number = parts.next()?.parse().ok()?;
            let path = parts.next()?.trim_start_matches("./").to_owned();
            let rule = rest
                .split_once('[')?
                .1
                .split_once(']')?
                .0
                .split_whitespace()
                .nth(1)?;
            Some((path, line_number, rule.to_owned()))
        })
        .collect()
}

fn ratio(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        1.0
    } else {
        part as f64 / whole as f64
    }
}

#[test]
fn real_projects_recall_and_precision() {
    score(&RUST);
}

#[test]
fn typescript_projects_recall_and_precision() {
    score(&TYPESCRIPT);
}

#[test]
fn python_projects_recall_and_precision() {
    score(&PYTHON);
}

fn score(which: &Corpus) {
    let corpus = fetch(which);
    let truth = ground_truth(which);
    // Each entry still points at the line it was written for.
    for entry in &truth {
        let file = corpus.join(&entry.path);
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|error| panic!("{}: {error}", file.display()));
        let line = text.lines().nth(entry.line - 1).unwrap_or_default();
        assert!(
            line.contains(&entry.text),
            "{}:{}: the line no longer contains {:?}: {line:?}",
            entry.path,
            entry.line,
            entry.text
        );
    }
    let key = |entry: &Entry| (entry.path.clone(), entry.line, entry.rule.clone());
    let expected: BTreeSet<Finding> = truth
        .iter()
        .filter(|e| e.kind == Kind::Expect)
        .map(key)
        .collect();
    let accepted: BTreeSet<Finding> = truth
        .iter()
        .filter(|e| e.kind == Kind::Accept)
        .map(key)
        .collect();
    let forbidden = |finding: &Finding| {
        truth.iter().any(|e| {
            e.kind == Kind::Forbid
                && e.path == finding.0
                && e.line == finding.1
                && (e.rule == "*" || e.rule == finding.2)
        })
    };
    let reported = findings(&corpus, which.override_variable);
    let counted: BTreeSet<&Finding> = reported.iter().filter(|f| !accepted.contains(f)).collect();
    let hits: BTreeSet<&Finding> = counted
        .iter()
        .copied()
        .filter(|f| expected.contains(f))
        .collect();
    let misses: Vec<&Finding> = expected.iter().filter(|f| !reported.contains(f)).collect();
    let noise: Vec<&Finding> = counted
        .iter()
        .copied()
        .filter(|f| !expected.contains(f))
        .collect();

    let mut per_rule: BTreeMap<&str, (usize, usize, usize)> = BTreeMap::new();
    for finding in &expected {
        per_rule.entry(&finding.2).or_default().0 += 1;
    }
    for finding in &hits {
        per_rule.entry(&finding.2).or_default().1 += 1;
    }
    for finding in &noise {
        per_rule.entry(&finding.2).or_default().2 += 1;
    }
    let recall = ratio(hits.len(), expected.len());
    let precision = ratio(hits.len(), counted.len());
    println!(
        "{}: {} expected, {} reported ({} accepted either way), {} found, {} missed, {} unexpected",
        which.name,
        expected.len(),
        reported.len(),
        reported.len() - counted.len(),
        hits.len(),
        misses.len(),
        noise.len()
    );
    println!(
        "{:<36} {:>8} {:>6} {:>10}",
        "rule", "expected", "found", "unexpected"
    );
    for (rule, (want, found, extra)) in &per_rule {
        println!("{rule:<36} {want:>8} {found:>6} {extra:>10}");
    }
    println!("recall    {recall:.3} (target >= {MIN_RECALL})");
    println!("precision {precision:.3} (target >= {MIN_PRECISION})");
    for (path, line, rule) in &misses {
        println!("missed      {path}:{line} {rule}");
    }
    for (path, line, rule) in &noise {
        let kind = if forbidden(&(path.clone(), *line, rule.clone())) {
            "forbidden  "
        } else {
            "unexpected "
        };
        println!("{kind} {path}:{line} {rule}");
    }
    let forbidden_reported: Vec<&&Finding> = noise.iter().filter(|f| forbidden(f)).collect();
    assert!(
        forbidden_reported.is_empty(),
        "look-alikes reported: {forbidden_reported:?}"
    );
    assert!(
        recall >= MIN_RECALL,
        "recall {recall:.3} < {MIN_RECALL}: {misses:?}"
    );
    assert!(
        precision >= MIN_PRECISION,
        "precision {precision:.3} < {MIN_PRECISION}: {noise:?}"
    );
}

/// The pre-filters (files without a trigger word, and top-level items without one) skip only
/// what cannot be reported: on the real projects and on every rule fixture, the findings are
/// those of a full parse of every file.
#[test]
fn prefilters_change_no_finding() {
    for dir in [
        fetch(&RUST),
        fetch(&TYPESCRIPT),
        fetch(&PYTHON),
        workspace_root().join("tests/fixtures/lint"),
    ] {
        let targets = walk::path_targets(std::slice::from_ref(&dir)).unwrap();
        let render = |use_prefilter: bool| -> Vec<String> {
            let outcome = cargo_mcp_lint::lint(&targets, &Config::default(), use_prefilter);
            outcome
                .diagnostics
                .iter()
                .map(|d| {
                    let location = d.location();
                    format!(
                        "{}:{}:{} {} {}",
                        d.file.path.display(),
                        location.line,
                        location.column,
                        d.rule().name,
                        d.message
                    )
                })
                .collect()
        };
        let filtered = render(true);
        assert!(!filtered.is_empty(), "{}", dir.display());
        assert_eq!(filtered, render(false), "{}", dir.display());
    }
}
