//! Tests of the renderers: one snapshot per format over the same few findings, plus checks of
//! what the machine-readable formats promise (JSON keys and types, SARIF schema and fingerprints).

use std::sync::Arc;

use mcp_migrate_rules::{RuleId, Severity, RULES};
use serde_json::Value;

use super::*;
use crate::diagnostic::{ByteSpan, SourceFile};

const SERVER: &str = "\
use rmcp::model::CreateMessageRequestParam;

async fn ask(peer: Peer<RoleServer>) -> Result<(), Error> {
    let réponse = peer.create_message(params).await?;
    let answer = peer
        .create_elicitation(form)
        .await?;
    Ok(())
}
";

const ODD: &str = "// mcp-lint: allow(deprecated-roots) reason: legacy clients\nfn main() {}\n";

/// The byte span of the `occurrence`-th (0-based) `needle` in `file`.
fn span_of(file: &SourceFile, needle: &str, occurrence: usize) -> ByteSpan {
    let (start, _) = file
        .text
        .match_indices(needle)
        .nth(occurrence)
        .unwrap_or_else(|| panic!("`{needle}` is not in {}", file.path.display()));
    ByteSpan::new(start, start + needle.len())
}

fn diagnostic(
    rule: RuleId,
    severity: Severity,
    file: &Arc<SourceFile>,
    span: ByteSpan,
    message: &str,
    help: Option<&str>,
    label: Option<&str>,
) -> Diagnostic {
    Diagnostic {
        rule,
        severity,
        file: Arc::clone(file),
        span,
        message: message.to_owned(),
        help: help.map(str::to_owned),
        label: label.map(str::to_owned),
        fix: None,
    }
}

/// A warning after a non-ASCII identifier, an error spanning three lines, and an info in a file
/// whose path needs escaping in every format (space, comma, percent sign).
fn fixture() -> (Vec<Diagnostic>, Summary) {
    let server = SourceFile::new("src/server.rs".into(), SERVER.to_owned());
    let odd = SourceFile::new("src/odd dir/a,b%.rs".into(), ODD.to_owned());
    let diagnostics = vec![
        diagnostic(
            RuleId::DeprecatedSampling,
            Severity::Warning,
            &server,
            span_of(&server, "create_message", 0),
            "sampling (`sampling/createMessage`) is deprecated in MCP 2026-07-28",
            Some("call the model from the server, or return `input_required` and let the client sample"),
            Some("sampling request sent here"),
        ),
        diagnostic(
            RuleId::ServerInitiatedRequest,
            Severity::Error,
            &server,
            ByteSpan::new(
                span_of(&server, "peer\n", 0).start,
                span_of(&server, ".await?;\n    Ok", 0).start + ".await".len(),
            ),
            "`create_elicitation` sends a request to the client and awaits the reply",
            Some("return `input_required` with the elicitation and resume on the retried call"),
            None,
        ),
        diagnostic(
            RuleId::UnusedSuppression,
            Severity::Info,
            &odd,
            span_of(&odd, "allow(deprecated-roots)", 0),
            "`deprecated-roots` reports nothing on this line: 50% of a rule, 0 findings",
            None,
            Some("unused"),
        ),
    ];
    let mut summary = Summary {
        files_scanned: 14,
        files_skipped_by_prefilter: 9,
        suppressed: 1,
        ..Summary::default()
    };
    summary.count(&diagnostics);
    (diagnostics, summary)
}

fn render_to_string(format: Format, diagnostics: &[Diagnostic], summary: &Summary) -> String {
    render_with(format, diagnostics, summary, RenderOptions::default())
}

fn render_with(
    format: Format,
    diagnostics: &[Diagnostic],
    summary: &Summary,
    options: RenderOptions,
) -> String {
    let mut out = Vec::new();
    render(format, diagnostics, summary, options, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn sarif_json(diagnostics: &[Diagnostic]) -> Value {
    serde_json::from_str(&render_to_string(
        Format::Sarif,
        diagnostics,
        &Summary::default(),
    ))
    .unwrap()
}

#[test]
fn fixture_locations_count_chars_and_cross_lines() {
    let (diagnostics, _) = fixture();
    let [sampling, request, suppression] = &diagnostics[..] else {
        panic!("three diagnostics")
    };
    // `réponse` is 7 chars but 8 bytes: the column counts chars.
    assert_eq!(
        (sampling.location().line, sampling.location().column),
        (4, 24)
    );
    assert_eq!(request.location().line, 5);
    assert_eq!(request.location().end_line, 7);
    assert_eq!(suppression.location().column, 14);
}

#[test]
fn full_report() {
    let (diagnostics, summary) = fixture();
    let output = render_to_string(Format::Full, &diagnostics, &summary);
    assert!(output.contains("MCP101(deprecated-sampling)"));
    assert!(
        output.contains("[src/server.rs:4:24]"),
        "columns count chars"
    );
    assert!(output.contains(&RuleId::DeprecatedSampling.rule().url()));
    assert!(
        !output.contains('\u{1b}'),
        "no escape sequences without colour"
    );
    insta::assert_snapshot!(output);
}

#[test]
fn full_report_in_colour_prints_urls_as_text() {
    let (diagnostics, summary) = fixture();
    let output = render_with(
        Format::Full,
        &diagnostics,
        &summary,
        RenderOptions { color: true },
    );
    assert!(output.contains("\u{1b}["), "ANSI colours");
    assert!(!output.contains("\u{1b}]8;"), "no OSC 8 hyperlinks");
    assert!(output.contains(&RuleId::ServerInitiatedRequest.rule().url()));
}

#[test]
fn full_report_survives_spans_at_the_end_of_the_text_and_empty_files() {
    let empty = SourceFile::new("empty.rs".into(), String::new());
    let short = SourceFile::new("short.rs".into(), "fn main() {".to_owned());
    let diagnostics = [
        diagnostic(
            RuleId::UnparsableFile,
            Severity::Warning,
            &empty,
            ByteSpan::new(0, 0),
            "empty",
            None,
            None,
        ),
        diagnostic(
            RuleId::UnparsableFile,
            Severity::Warning,
            &short,
            ByteSpan::new(11, 11),
            "unexpected end of input",
            None,
            Some("expected `}`"),
        ),
        diagnostic(
            RuleId::UnparsableFile,
            Severity::Warning,
            &short,
            ByteSpan::new(5, 500),
            "span past the end",
            None,
            None,
        ),
    ];
    let output = render_to_string(Format::Full, &diagnostics, &Summary::default());
    assert!(output.contains("expected `}`"), "{output}");
    assert!(output.contains("span past the end"), "{output}");
    assert!(!output.contains("Failed to read"), "{output}");
}

#[test]
fn concise_report() {
    let (diagnostics, summary) = fixture();
    let output = render_to_string(Format::Concise, &diagnostics, &summary);
    assert!(output.contains("src/server.rs:4:24: warning[MCP101 deprecated-sampling] "));
    insta::assert_snapshot!(output);
}

#[test]
fn github_report() {
    let (diagnostics, summary) = fixture();
    let output = render_to_string(Format::Github, &diagnostics, &summary);
    let commands: Vec<&str> = output
        .lines()
        .filter(|line| line.starts_with("::"))
        .collect();
    assert_eq!(commands.len(), diagnostics.len(), "one command per finding");
    insta::assert_snapshot!(output);
}

#[test]
fn json_report() {
    let (diagnostics, summary) = fixture();
    let output = render_to_string(Format::Json, &diagnostics, &summary);
    assert!(output.ends_with("}\n"));
    insta::assert_snapshot!(output);
}

#[test]
fn json_report_is_one_document_with_the_documented_keys_and_types() {
    let (diagnostics, summary) = fixture();
    let output = render_to_string(Format::Json, &diagnostics, &summary);
    // Exactly one document: a streaming parse finds one value and nothing after it.
    let documents: Vec<Value> = serde_json::Deserializer::from_str(&output)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(documents.len(), 1);
    let document = documents[0].as_object().unwrap();

    let keys = |object: &serde_json::Map<String, Value>| {
        let mut keys: Vec<String> = object.keys().cloned().collect();
        keys.sort();
        keys
    };
    assert_eq!(keys(document), ["diagnostics", "summary", "version"]);
    assert_eq!(document["version"], 1);

    let entries = document["diagnostics"].as_array().unwrap();
    assert_eq!(entries.len(), 3);
    for entry in entries {
        let entry = entry.as_object().unwrap();
        assert_eq!(
            keys(entry),
            [
                "code",
                "column",
                "end_column",
                "end_line",
                "fix",
                "help",
                "line",
                "message",
                "name",
                "path",
                "severity"
            ]
        );
        for key in ["code", "name", "path", "message"] {
            assert!(entry[key].is_string(), "{key} is a string");
        }
        for key in ["line", "column", "end_line", "end_column"] {
            assert!(entry[key].as_u64().unwrap() >= 1, "{key} is 1-based");
        }
        assert!(["error", "warning", "info"].contains(&entry["severity"].as_str().unwrap()));
        assert!(entry["help"].is_string() || entry["help"].is_null());
        assert!(entry["fix"].is_null());
    }
    assert_eq!(entries[0]["code"], "MCP101");
    assert_eq!(entries[0]["name"], "deprecated-sampling");
    assert_eq!(entries[0]["severity"], "warning");
    assert_eq!(entries[0]["path"], "src/server.rs");
    assert_eq!(
        (&entries[0]["line"], &entries[0]["column"]),
        (&Value::from(4), &Value::from(24))
    );
    assert_eq!(
        (&entries[0]["end_line"], &entries[0]["end_column"]),
        (&Value::from(4), &Value::from(38))
    );
    assert_eq!(entries[1]["severity"], "error");
    assert_eq!(entries[1]["end_line"], 7);
    assert_eq!(entries[2]["severity"], "info");
    assert!(entries[2]["help"].is_null());

    let summary_keys = keys(document["summary"].as_object().unwrap());
    assert_eq!(
        summary_keys,
        [
            "errors",
            "files_scanned",
            "files_skipped_by_prefilter",
            "infos",
            "suppressed",
            "warnings"
        ]
    );
    assert_eq!(document["summary"], serde_json::to_value(&summary).unwrap());
    assert_eq!(document["summary"]["errors"], 1);
}

#[test]
fn json_report_without_findings() {
    let output = render_to_string(Format::Json, &[], &Summary::default());
    let document: Value = serde_json::from_str(&output).unwrap();
    assert_eq!(document["diagnostics"], Value::Array(Vec::new()));
}

#[test]
fn sarif_report() {
    let (diagnostics, _) = fixture();
    let mut log = sarif_json(&diagnostics);
    // The rule documentation and the crate version change on their own schedule; check them
    // here and keep them out of the snapshot.
    let driver = &mut log["runs"][0]["tool"]["driver"];
    assert_eq!(driver["version"], env!("CARGO_PKG_VERSION"));
    driver["version"] = "[version]".into();
    for (descriptor, rule) in driver["rules"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .zip(RULES)
    {
        assert_eq!(descriptor["help"]["markdown"], rule.docs);
        assert_eq!(descriptor["help"]["text"], rule.docs);
        descriptor["help"]["markdown"] = format!("[docs of {}]", rule.name).into();
        descriptor["help"]["text"] = format!("[docs of {}]", rule.name).into();
    }
    insta::assert_snapshot!(serde_json::to_string_pretty(&log).unwrap());
}

#[test]
fn sarif_report_is_valid_against_the_sarif_2_1_0_schema() {
    // The official OASIS schema (`$id` https://raw.githubusercontent.com/oasis-tcs/sarif-spec/
    // master/Schemata/sarif-schema-2.1.0.json), copied unchanged from `src/schema.json` of the
    // crate serde-sarif 0.8.0 on crates.io (SHA-256 af47e7b6...5cea).
    let schema_path = mcp_migrate_workspace_bins::workspace_root(env!("CARGO_MANIFEST_DIR"))
        .join("tests/schemas/sarif-2.1.0.json");
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap();

    // Formats are checked too: the fixture's `src/odd dir/a,b%.rs` is only a valid
    // `uri-reference` once percent-encoded.
    let (diagnostics, _) = fixture();
    for log in [sarif_json(&diagnostics), sarif_json(&[])] {
        let errors: Vec<String> = validator
            .iter_errors(&log)
            .map(|error| format!("{} at {}", error, error.instance_path))
            .collect();
        assert!(errors.is_empty(), "{errors:#?}");
    }

    // The validator does reject what the schema forbids.
    let mut broken = sarif_json(&diagnostics);
    broken["runs"][0]["results"][0]["level"] = "fatal".into();
    assert!(!validator.is_valid(&broken));
}

#[test]
fn sarif_lists_every_rule_and_indexes_results_into_them() {
    let (diagnostics, _) = fixture();
    let log = sarif_json(&diagnostics);
    let run = &log["runs"][0];
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    assert_eq!(rules.len(), RULES.len());
    for (descriptor, rule) in rules.iter().zip(RULES) {
        assert_eq!(descriptor["id"], rule.code);
        assert_eq!(descriptor["helpUri"], rule.url());
    }
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), diagnostics.len());
    for (result, diagnostic) in results.iter().zip(&diagnostics) {
        let index = usize::try_from(result["ruleIndex"].as_u64().unwrap()).unwrap();
        assert_eq!(rules[index]["id"], result["ruleId"]);
        assert_eq!(result["ruleId"], diagnostic.rule().code);
    }
    assert_eq!(results[2]["level"], "note");
    assert_eq!(
        results[2]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "src/odd%20dir/a,b%25.rs"
    );
}

#[test]
fn sarif_absolute_paths_become_file_uris() {
    let file = SourceFile::new("/home/me/my crate/src/lib.rs".into(), "fn f() {}\n".into());
    let log = sarif_json(&[diagnostic(
        RuleId::LegacySseTransport,
        Severity::Warning,
        &file,
        ByteSpan::new(3, 4),
        "message",
        None,
        None,
    )]);
    let artifact =
        &log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"];
    assert_eq!(artifact["uri"], "file:///home/me/my%20crate/src/lib.rs");
    assert!(artifact.get("uriBaseId").is_none());
}

fn fingerprints(file: &Arc<SourceFile>, spans: &[ByteSpan]) -> Vec<String> {
    let diagnostics: Vec<Diagnostic> = spans
        .iter()
        .map(|&span| {
            diagnostic(
                RuleId::DeprecatedLogging,
                Severity::Warning,
                file,
                span,
                "protocol logging is deprecated",
                None,
                None,
            )
        })
        .collect();
    sarif_json(&diagnostics)["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|result| {
            result["partialFingerprints"]["mcpLint/v1"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[test]
fn sarif_fingerprints_survive_moved_lines_and_tell_repeated_lines_apart() {
    let before = SourceFile::new(
        "src/log.rs".into(),
        "fn a() {\n    peer.notify_logging_message(m).await;\n    peer.notify_logging_message(m).await;\n}\n"
            .into(),
    );
    let after = SourceFile::new(
        "src/log.rs".into(),
        "// a new comment\n\nfn a() {\n        peer.notify_logging_message(m).await;\n    peer.notify_logging_message(m).await;\n}\n"
            .into(),
    );
    let spans = |file: &SourceFile| {
        vec![
            span_of(file, "notify_logging_message", 0),
            span_of(file, "notify_logging_message", 1),
        ]
    };
    let old = fingerprints(&before, &spans(&before));
    let new = fingerprints(&after, &spans(&after));
    assert_eq!(old, new, "moving and re-indenting lines keeps fingerprints");
    assert_ne!(old[0], old[1], "identical lines get different fingerprints");
    assert_eq!(old[0].len(), 64, "hex SHA-256");

    let elsewhere = SourceFile::new("src/other.rs".into(), before.text.clone());
    assert_ne!(
        fingerprints(&elsewhere, &spans(&elsewhere)),
        old,
        "the path counts"
    );
    let edited = SourceFile::new("src/log.rs".into(), before.text.replace("(m)", "(message)"));
    assert_ne!(
        fingerprints(&edited, &spans(&edited))[0],
        old[0],
        "the line's text counts"
    );
}

#[test]
fn summary_lines() {
    let mut summary = Summary {
        files_scanned: 1,
        ..Summary::default()
    };
    assert_eq!(summary_line(&summary), "no findings in 1 file");
    summary.files_scanned = 14;
    summary.files_skipped_by_prefilter = 9;
    assert_eq!(
        summary_line(&summary),
        "no findings in 14 files (9 skipped by pre-filter)"
    );
    summary.errors = 3;
    summary.warnings = 2;
    summary.suppressed = 1;
    assert_eq!(
        summary_line(&summary),
        "found 3 errors, 2 warnings in 14 files (9 skipped by pre-filter, 1 suppressed)"
    );
    summary.errors = 0;
    summary.warnings = 1;
    summary.files_skipped_by_prefilter = 0;
    assert_eq!(
        summary_line(&summary),
        "found 1 warning in 14 files (1 suppressed)"
    );
}
