//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, a Node program): its
//! installation, its server runs, and the judgement of their results against an
//! expected-failures baseline (the suite's own file format and rules).
//!
//! - [`Suite::install`]: Node 22 and the suite, installed once with npm into
//!   `<target>/conformance-node` (kept between runs, reinstalled when a version differs);
//! - [`Suite::run_server`]: `conformance server --url URL --requirements REVISION
//!   --expected-failures FILE -o DIR`, then every `checks.json` it wrote;
//! - [`Baseline`] and [`evaluate`]: which failures are expected, which are not, which baseline
//!   entries are stale (their check passes now), and a score table.

use super::command::npm_install_into;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::build::target_dir;

/// The npm package of the suite.
pub const SUITE_PACKAGE: &str = "@modelcontextprotocol/conformance";
/// The suite release the project is measured against (the first with 2026-07-28 scenarios; the
/// npm `latest` has none).
pub const SUITE_VERSION: &str = "0.2.0-alpha.12";
/// The suite needs Node >= 22 (it imports `fs.globSync`); the npm package `node@22` ships one.
pub const NODE_MAJOR: &str = "22";

/// An installed suite: the Node binary and the suite's entry point.
#[derive(Debug, Clone)]
pub struct Suite {
    pub node: PathBuf,
    pub entry: PathBuf,
}

impl Suite {
    /// Node 22 and the suite in `dir` (`node_modules/...`), if both are there at the right
    /// versions.
    fn installed_in(dir: &Path) -> Result<Suite, String> {
        let node = dir.join("node_modules/.bin/node");
        let package = dir.join("node_modules").join(SUITE_PACKAGE);
        let output = Command::new(&node)
            .arg("--version")
            .output()
            .map_err(|e| format!("cannot run {}: {e}", node.display()))?;
        let version = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        if !version.starts_with(&format!("v{NODE_MAJOR}.")) {
            return Err(format!(
                "{} is {version:?}, not Node {NODE_MAJOR}",
                node.display()
            ));
        }
        let manifest = std::fs::read_to_string(package.join("package.json"))
            .map_err(|e| format!("no {SUITE_PACKAGE} in {}: {e}", dir.display()))?;
        let manifest: Value = serde_json::from_str(&manifest)
            .map_err(|e| format!("unreadable package.json of {SUITE_PACKAGE}: {e}"))?;
        if manifest["version"] != SUITE_VERSION {
            return Err(format!(
                "{SUITE_PACKAGE} is {}, not {SUITE_VERSION}",
                manifest["version"]
            ));
        }
        Ok(Suite {
            node,
            entry: package.join("dist/index.js"),
        })
    }

    /// Installs Node 22 and the suite into `<target>/conformance-node` unless they are there at
    /// the right versions already; once per test process. Panics with the reason (no network,
    /// no `npm`, ...): a conformance test must never pass by skipping.
    ///
    /// Blocking: call it from `spawn_blocking` ([`Suite::install_async`] does).
    pub fn install() -> Suite {
        static INSTALLED: OnceLock<Result<Suite, String>> = OnceLock::new();
        match INSTALLED.get_or_init(|| install_into(&target_dir().join("conformance-node"))) {
            Ok(suite) => suite.clone(),
            Err(why) => panic!("{why}"),
        }
    }

    /// [`Suite::install`] from async code.
    pub async fn install_async() -> Suite {
        tokio::task::spawn_blocking(Suite::install)
            .await
            .expect("installing the conformance suite panicked")
    }

    /// Runs `conformance server` against `url` for the scenarios `requirements` (a spec
    /// revision, e.g. `2026-07-28`) requires, with `baseline` as `--expected-failures`; results go
    /// to `out` (emptied first). Fails the test after `limit`.
    pub async fn run_server(
        &self,
        url: &str,
        requirements: &str,
        baseline: &Path,
        out: &Path,
        limit: Duration,
    ) -> SuiteRun {
        if out.exists() {
            std::fs::remove_dir_all(out)
                .unwrap_or_else(|e| panic!("cannot empty {}: {e}", out.display()));
        }
        std::fs::create_dir_all(out)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", out.display()));
        let results = out.join("results");
        let mut command = tokio::process::Command::new(&self.node);
        command
            .arg(&self.entry)
            .args(["server", "--url", url, "--requirements", requirements])
            .arg("--expected-failures")
            .arg(baseline)
            .arg("-o")
            .arg(&results)
            // The suite talks to nothing but `url`; keep proxies out of the way of loopback.
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        let started = Instant::now();
        let output = match tokio::time::timeout(limit, command.output()).await {
            Ok(Ok(output)) => output,
            Ok(Err(e)) => panic!("cannot run the conformance suite ({command:?}): {e}"),
            Err(_) => panic!("the conformance suite did not finish within {limit:?} ({url})"),
        };
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        let _ = std::fs::write(out.join("suite.stdout.txt"), &stdout);
        let _ = std::fs::write(out.join("suite.stderr.txt"), &stderr);
        let scenarios = read_results(&stdout, &results);
        SuiteRun {
            exit_ok: output.status.success(),
            exit_status: output.status.to_string(),
            stdout,
            stderr,
            out: out.to_path_buf(),
            elapsed: started.elapsed(),
            scenarios,
        }
    }
}

/// Runs `npm install` into a fresh sibling directory of `dir` and renames it into place, so that
/// a concurrent test process never sees a half-installed tree.
fn install_into(dir: &Path) -> Result<Suite, String> {
    npm_install_into(
        dir,
        &[
            format!("node@{NODE_MAJOR}"),
            format!("{SUITE_PACKAGE}@{SUITE_VERSION}"),
        ],
        "the conformance test",
        Suite::installed_in,
    )
}

/// Status of one check, as the suite writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    Info,
    Skipped,
    Success,
    Warning,
    Failure,
}

impl Status {
    fn parse(status: &str) -> Status {
        match status {
            "SUCCESS" => Status::Success,
            "WARNING" => Status::Warning,
            "SKIPPED" => Status::Skipped,
            "INFO" => Status::Info,
            // FAILURE, and anything unknown: better loud than silently green.
            _ => Status::Failure,
        }
    }

    /// What the suite's baseline treats as failed.
    pub fn failed(self) -> bool {
        matches!(self, Status::Failure | Status::Warning)
    }

    /// The suite's precedence when a check id repeats (`collapseDuplicateChecks`).
    fn severity(self) -> u8 {
        match self {
            Status::Failure => 3,
            Status::Warning => 2,
            Status::Success => 1,
            Status::Skipped | Status::Info => 0,
        }
    }
}

/// One check of a scenario.
#[derive(Debug, Clone)]
pub struct Check {
    pub id: String,
    pub status: Status,
    pub error: Option<String>,
}

/// The checks of one scenario; `checks` is empty with `missing` set when the suite wrote no
/// `checks.json` for it (the scenario crashed).
#[derive(Debug, Clone)]
pub struct ScenarioResult {
    pub name: String,
    pub checks: Vec<Check>,
    pub missing: Option<String>,
}

impl ScenarioResult {
    /// One verdict per check id, most severe occurrence first, like the suite's baseline logic
    /// (`INFO` checks carry no verdict and are left out).
    pub fn collapsed(&self) -> BTreeMap<String, Status> {
        let mut verdicts: BTreeMap<String, Status> = BTreeMap::new();
        for check in &self.checks {
            if check.status == Status::Info {
                continue;
            }
            let verdict = verdicts.entry(check.id.clone()).or_insert(check.status);
            if check.status.severity() >= verdict.severity() {
                *verdict = check.status;
            }
        }
        verdicts
    }
}

/// A finished `conformance server` run.
#[derive(Debug)]
pub struct SuiteRun {
    pub exit_ok: bool,
    pub exit_status: String,
    pub stdout: String,
    pub stderr: String,
    pub out: PathBuf,
    pub elapsed: Duration,
    pub scenarios: Vec<ScenarioResult>,
}

/// The scenarios the suite ran (from its `=== Running scenario: NAME ===` lines), each with the
/// checks of its `server-NAME-<timestamp>/checks.json`.
fn read_results(stdout: &str, results: &Path) -> Vec<ScenarioResult> {
    let dirs: Vec<String> = std::fs::read_dir(results)
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    stdout
        .lines()
        .filter_map(|line| {
            line.trim()
                .strip_prefix("=== Running scenario: ")?
                .strip_suffix(" ===")
        })
        .map(|name| {
            let prefix = format!("server-{name}-");
            // The rest is the run's timestamp (`2026-07-28T12-00-00-000Z`): digits first.
            let dir = dirs.iter().find(|dir| {
                dir.strip_prefix(&prefix)
                    .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
            });
            let Some(dir) = dir else {
                return ScenarioResult {
                    name: name.to_owned(),
                    checks: Vec::new(),
                    missing: Some("the suite wrote no checks.json (see its output)".into()),
                };
            };
            let path = results.join(dir).join("checks.json");
            match read_checks(&path) {
                Ok(checks) => ScenarioResult {
                    name: name.to_owned(),
                    checks,
                    missing: None,
                },
                Err(why) => ScenarioResult {
                    name: name.to_owned(),
                    checks: Vec::new(),
                    missing: Some(why),
                },
            }
        })
        .collect()
}

fn read_checks(path: &Path) -> Result<Vec<Check>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let checks: Vec<Value> = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not a JSON array: {e}", path.display()))?;
    Ok(checks
        .iter()
        .map(|check| Check {
            id: check["id"].as_str().unwrap_or("<no id>").to_owned(),
            status: Status::parse(check["status"].as_str().unwrap_or("")),
            error: check["errorMessage"].as_str().map(str::to_owned),
        })
        .collect())
}

/// One line of an expected-failures file: `scenario` (the whole scenario may fail) or
/// `scenario:check-id` (only that check may), and the comment that says why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaselineEntry {
    pub scenario: String,
    pub check: Option<String>,
    pub reason: String,
}

impl BaselineEntry {
    /// As written in the file.
    pub fn label(&self) -> String {
        match &self.check {
            Some(check) => format!("{}:{check}", self.scenario),
            None => self.scenario.clone(),
        }
    }
}

/// The `server:` list of the suite's expected-failures YAML file: one `- entry  # reason` per
/// line. Only that subset of YAML is read; an entry without a reason comment is an error (every
/// excused check must say why).
#[derive(Debug, Clone, Default)]
pub struct Baseline {
    pub entries: Vec<BaselineEntry>,
}

impl Baseline {
    pub fn load(path: &Path) -> Baseline {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        Baseline::parse(&text).unwrap_or_else(|why| panic!("{}: {why}", path.display()))
    }

    pub fn parse(text: &str) -> Result<Baseline, String> {
        let mut entries = Vec::new();
        let mut in_server = false;
        for (n, line) in text.lines().enumerate() {
            let n = n + 1;
            let (code, comment) = match line.split_once('#') {
                Some((code, comment)) => (code, Some(comment.trim())),
                None => (line, None),
            };
            let code = code.trim_end();
            if code.trim().is_empty() {
                continue;
            }
            if !code.starts_with(' ') && !code.starts_with('-') {
                let key = code.trim();
                in_server = match key {
                    "server:" | "server: []" => true,
                    "client:" | "client: []" => false,
                    other => return Err(format!("line {n}: unexpected `{other}`")),
                };
                continue;
            }
            let Some(entry) = code.trim().strip_prefix("- ") else {
                return Err(format!(
                    "line {n}: expected `- scenario:check-id  # reason`"
                ));
            };
            if !in_server {
                continue;
            }
            let entry = entry.trim();
            let reason = comment
                .filter(|reason| !reason.is_empty())
                .ok_or_else(|| format!("line {n}: `{entry}` needs a `# reason` comment"))?;
            if entry.contains(char::is_whitespace) {
                // `- a: b` is a YAML mapping, which the suite rejects.
                return Err(format!("line {n}: `{entry}` must not contain spaces"));
            }
            let (scenario, check) = match entry.split_once(':') {
                Some((scenario, check)) if !scenario.is_empty() && !check.is_empty() => {
                    (scenario, Some(check.to_owned()))
                }
                Some(_) => return Err(format!("line {n}: `{entry}` is not `scenario:check-id`")),
                None => (entry, None),
            };
            entries.push(BaselineEntry {
                scenario: scenario.to_owned(),
                check,
                reason: reason.to_owned(),
            });
        }
        Ok(Baseline { entries })
    }

    fn excuses(&self, scenario: &str, check: &str) -> Option<&BaselineEntry> {
        self.entries.iter().find(|entry| {
            entry.scenario == scenario && entry.check.as_deref().is_none_or(|c| c == check)
        })
    }
}

/// Per scenario: checks that passed, failed as expected, failed unexpectedly (raw counts, like
/// the suite's summary; `WARNING` counts as failed, as in the suite's baseline logic).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Score {
    pub passed: usize,
    pub expected: usize,
    pub unexpected: usize,
}

impl Score {
    pub fn total(&self) -> usize {
        self.passed + self.expected + self.unexpected
    }
}

/// The judgement of a run against a baseline.
#[derive(Debug, Clone, Default)]
pub struct Evaluation {
    pub scores: BTreeMap<String, Score>,
    /// `scenario:check-id — message` of each failure the baseline does not excuse.
    pub unexpected: Vec<String>,
    /// Baseline entries whose checks pass now (stale baselines are defects too).
    pub stale: Vec<String>,
    /// Baseline entries that failed as expected.
    pub expected: Vec<String>,
}

impl Evaluation {
    pub fn is_clean(&self) -> bool {
        self.unexpected.is_empty() && self.stale.is_empty()
    }

    /// `passed/total` over all scenarios.
    pub fn totals(&self) -> Score {
        self.scores.values().fold(Score::default(), |sum, s| Score {
            passed: sum.passed + s.passed,
            expected: sum.expected + s.expected,
            unexpected: sum.unexpected + s.unexpected,
        })
    }

    /// A Markdown table: scenario, passed/total, expected failures, unexpected failures.
    pub fn table(&self) -> String {
        let mut table =
            String::from("| scenario | passed / checks | expected failures | unexpected |\n");
        table.push_str("|---|---|---|---|\n");
        for (scenario, score) in &self.scores {
            let _ = writeln!(
                table,
                "| {scenario} | {}/{} | {} | {} |",
                score.passed,
                score.total(),
                score.expected,
                score.unexpected
            );
        }
        let total = self.totals();
        let _ = writeln!(
            table,
            "| **total** | **{}/{}** | {} | {} |",
            total.passed,
            total.total(),
            total.expected,
            total.unexpected
        );
        table
    }

    /// The table plus the lists, for the test output.
    pub fn report(&self) -> String {
        let mut report = self.table();
        for (title, lines) in [
            ("Expected failures (baseline)", &self.expected),
            (
                "Stale baseline entries (passing now: remove them)",
                &self.stale,
            ),
            ("UNEXPECTED failures", &self.unexpected),
        ] {
            if !lines.is_empty() {
                let _ = writeln!(report, "\n{title}:");
                for line in lines {
                    let _ = writeln!(report, "  {line}");
                }
            }
        }
        report
    }
}

/// Judges `scenarios` against `baseline` with the suite's rules (`evaluateBaseline`), over every
/// scenario that ran, scored or not:
/// - a failed check (`FAILURE` or `WARNING`, per id the most severe occurrence) that no entry
///   excuses is unexpected; a scenario without results is unexpected;
/// - an entry whose check (or, for a whole-scenario entry, whose scenario) passes is stale;
/// - an entry whose check is absent or `SKIPPED` says nothing either way.
pub fn evaluate(scenarios: &[ScenarioResult], baseline: &Baseline) -> Evaluation {
    let mut evaluation = Evaluation::default();
    let mut excused: BTreeSet<String> = BTreeSet::new();
    for scenario in scenarios {
        let score = evaluation.scores.entry(scenario.name.clone()).or_default();
        if let Some(why) = &scenario.missing {
            score.unexpected += 1;
            evaluation
                .unexpected
                .push(format!("{} — no results: {why}", scenario.name));
            continue;
        }
        for check in &scenario.checks {
            if check.status == Status::Success {
                score.passed += 1;
            } else if check.status.failed() {
                if baseline.excuses(&scenario.name, &check.id).is_some() {
                    score.expected += 1;
                } else {
                    score.unexpected += 1;
                }
            }
        }
        let verdicts = scenario.collapsed();
        for (id, status) in &verdicts {
            if !status.failed() {
                continue;
            }
            match baseline.excuses(&scenario.name, id) {
                Some(entry) => {
                    if excused.insert(entry.label()) {
                        evaluation.expected.push(entry.label());
                    }
                }
                None => {
                    let message = scenario
                        .checks
                        .iter()
                        .rev()
                        .find(|check| &check.id == id && check.status == *status)
                        .and_then(|check| check.error.clone())
                        .unwrap_or_default();
                    evaluation
                        .unexpected
                        .push(format!("{}:{id} ({status:?}) — {message}", scenario.name));
                }
            }
        }
        for entry in baseline
            .entries
            .iter()
            .filter(|entry| entry.scenario == scenario.name)
        {
            let passes = match &entry.check {
                Some(check) => verdicts.get(check) == Some(&Status::Success),
                None => !verdicts.values().any(|status| status.failed()),
            };
            if passes {
                evaluation.stale.push(entry.label());
            }
        }
    }
    evaluation
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(id: &str, status: Status) -> Check {
        Check {
            id: id.into(),
            status,
            error: Some(format!("{id} said so")),
        }
    }

    fn scenario(name: &str, checks: Vec<Check>) -> ScenarioResult {
        ScenarioResult {
            name: name.into(),
            checks,
            missing: None,
        }
    }

    #[test]
    fn the_baseline_file_format_is_read_with_reasons() {
        let baseline = Baseline::parse(
            "# header\nserver:\n  # a group comment\n  - a:x  # why x\n  - b   # all of b\nclient:\n  - c:y  # not ours\n",
        )
        .unwrap();
        assert_eq!(
            baseline.entries,
            vec![
                BaselineEntry {
                    scenario: "a".into(),
                    check: Some("x".into()),
                    reason: "why x".into()
                },
                BaselineEntry {
                    scenario: "b".into(),
                    check: None,
                    reason: "all of b".into()
                },
            ]
        );
        assert!(Baseline::parse("server:\n  - a:x\n").is_err(), "no reason");
        assert!(Baseline::parse("server:\n  - a: x  # r\n").is_err());
        assert!(Baseline::parse("server: []\n").unwrap().entries.is_empty());
    }

    #[test]
    fn failures_are_expected_unexpected_or_stale_like_the_suite_says() {
        let baseline = Baseline::parse(
            "server:\n  - s:bad  # r\n  - s:fixed  # r\n  - s:absent  # r\n  - w  # r\n",
        )
        .unwrap();
        let results = vec![
            scenario(
                "s",
                vec![
                    check("ok", Status::Success),
                    check("bad", Status::Success),
                    check("bad", Status::Failure),
                    check("fixed", Status::Success),
                    check("new", Status::Warning),
                    check("note", Status::Info),
                    check("skip", Status::Skipped),
                ],
            ),
            scenario("w", vec![check("any", Status::Failure)]),
            ScenarioResult {
                name: "crashed".into(),
                checks: Vec::new(),
                missing: Some("no checks.json".into()),
            },
        ];
        let evaluation = evaluate(&results, &baseline);
        assert_eq!(evaluation.expected, vec!["s:bad", "w"]);
        assert_eq!(evaluation.stale, vec!["s:fixed"]);
        assert_eq!(evaluation.unexpected.len(), 2, "{evaluation:#?}");
        assert!(evaluation.unexpected[0].starts_with("s:new (Warning)"));
        assert!(evaluation.unexpected[1].starts_with("crashed"));
        assert_eq!(
            evaluation.scores["s"],
            Score {
                passed: 3,
                expected: 1,
                unexpected: 1
            }
        );
        assert!(!evaluation.is_clean());
        assert!(evaluation.table().contains("| s | 3/5 | 1 | 1 |"));
    }

    #[test]
    fn results_are_found_by_scenario_name_not_by_prefix() {
        let dir = tempfile::tempdir().unwrap();
        for (name, checks) in [
            (
                "server-tools-list-2026-07-28T00-00-00-000Z",
                r#"[{"id":"a","status":"SUCCESS"}]"#,
            ),
            (
                "server-tools-list-extra-2026-07-28T00-00-00-000Z",
                r#"[{"id":"b","status":"FAILURE"}]"#,
            ),
        ] {
            std::fs::create_dir(dir.path().join(name)).unwrap();
            std::fs::write(dir.path().join(name).join("checks.json"), checks).unwrap();
        }
        let stdout = "=== Running scenario: tools-list ===\n=== Running scenario: tools-list-extra ===\n=== Running scenario: gone ===\n";
        let results = read_results(stdout, dir.path());
        assert_eq!(results.len(), 3);
        assert_eq!(results[0].checks[0].id, "a");
        assert_eq!(results[1].checks[0].id, "b");
        assert!(results[2].missing.is_some());
    }
}
