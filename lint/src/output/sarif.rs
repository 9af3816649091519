//! `--format sarif`: one SARIF 2.1.0 log with one run, for GitHub code scanning and other viewers.
//!
//! Every catalogue rule is listed under `tool.driver.rules` (not only those that fired), so a
//! viewer can explain any rule, and each result points at its rule by `ruleId` and `ruleIndex`.
//! Results carry a `partialFingerprints` entry that survives lines moving up or down: see
//! [`Fingerprints`].

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;

use mcp_migrate_rules::{Family, FixAvailability, Rule, Severity, RULES};
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::display_path;
use crate::diagnostic::Diagnostic;

const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";
const INFORMATION_URI: &str = "https://github.com/mcp-migrate/mcp-migrate";
/// The base that relative artifact URIs resolve against: the directory the linter ran in.
const SRCROOT: &str = "%SRCROOT%";
/// The key of our entry in `partialFingerprints`; bump the version when the hashed text changes.
const FINGERPRINT_KEY: &str = "mcpLint/v1";

pub(super) fn render(diagnostics: &[Diagnostic], out: &mut dyn Write) -> io::Result<()> {
    let mut fingerprints = Fingerprints::default();
    let results = diagnostics
        .iter()
        .map(|diagnostic| result(diagnostic, &mut fingerprints))
        .collect();
    let log = Log {
        schema: SCHEMA,
        version: "2.1.0",
        runs: [Run {
            tool: Tool {
                driver: Driver {
                    name: "cargo-mcp-lint",
                    information_uri: INFORMATION_URI,
                    version: env!("CARGO_PKG_VERSION"),
                    rules: RULES.iter().map(rule_descriptor).collect(),
                },
            },
            original_uri_base_ids: BTreeMap::from([(
                SRCROOT,
                OriginalUriBase {
                    description: Message {
                        text:
                            "the directory `cargo mcp-lint` ran in; result paths are relative to it",
                    },
                },
            )]),
            column_kind: "unicodeCodePoints",
            results,
        }],
    };
    serde_json::to_writer_pretty(&mut *out, &log)?;
    writeln!(out)
}

#[derive(Serialize)]
struct Log {
    #[serde(rename = "$schema")]
    schema: &'static str,
    version: &'static str,
    runs: [Run; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Run {
    tool: Tool,
    original_uri_base_ids: BTreeMap<&'static str, OriginalUriBase>,
    column_kind: &'static str,
    results: Vec<SarifResult>,
}

#[derive(Serialize)]
struct OriginalUriBase {
    description: Message<&'static str>,
}

#[derive(Serialize)]
struct Tool {
    driver: Driver,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Driver {
    name: &'static str,
    information_uri: &'static str,
    version: &'static str,
    rules: Vec<ReportingDescriptor>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReportingDescriptor {
    id: &'static str,
    name: &'static str,
    short_description: Message<&'static str>,
    full_description: Message<&'static str>,
    help: MultiformatMessage,
    help_uri: String,
    default_configuration: Configuration,
    properties: RuleProperties,
}

#[derive(Serialize)]
struct Message<T> {
    text: T,
}

#[derive(Serialize)]
struct MultiformatMessage {
    text: &'static str,
    markdown: &'static str,
}

#[derive(Serialize)]
struct Configuration {
    level: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RuleProperties {
    tags: [Family; 1],
    precision: &'static str,
    /// `safe`, `unsafe`, `display-only` or `none` (the catalogue's fix applicability).
    fix_applicability: FixAvailability,
}

/// A SARIF `fix`: the edits of one finding's fix, with its applicability in the property bag.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifFix {
    description: Message<String>,
    artifact_changes: [ArtifactChange; 1],
    properties: FixProperties,
}

#[derive(Serialize)]
struct FixProperties {
    applicability: FixAvailability,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ArtifactChange {
    artifact_location: ArtifactLocation,
    replacements: Vec<Replacement>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Replacement {
    deleted_region: Region,
    inserted_content: Message<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult {
    rule_id: &'static str,
    rule_index: usize,
    level: &'static str,
    message: Message<String>,
    locations: [ResultLocation; 1],
    partial_fingerprints: BTreeMap<&'static str, String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    fixes: Vec<SarifFix>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResultLocation {
    physical_location: PhysicalLocation,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PhysicalLocation {
    artifact_location: ArtifactLocation,
    region: Region,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ArtifactLocation {
    uri: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    uri_base_id: Option<&'static str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Region {
    start_line: usize,
    start_column: usize,
    end_line: usize,
    end_column: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    snippet: Option<Message<String>>,
}

fn rule_descriptor(rule: &'static Rule) -> ReportingDescriptor {
    ReportingDescriptor {
        id: rule.code,
        name: rule.name,
        short_description: Message { text: rule.summary },
        full_description: Message { text: rule.summary },
        // The docs are Markdown written to read well as plain text too.
        help: MultiformatMessage {
            text: rule.docs,
            markdown: rule.docs,
        },
        help_uri: rule.url(),
        default_configuration: Configuration {
            level: level(rule.default_severity),
        },
        properties: RuleProperties {
            tags: [rule.family],
            precision: precision(rule.family),
            fix_applicability: rule.fix,
        },
    }
}

/// How often a finding is a true positive (GitHub code scanning's `precision` property). The
/// security rules judge intent from names and values (is this field a secret? is this state
/// sealed?), so they are `medium`; the others match known APIs and method names.
fn precision(family: Family) -> &'static str {
    match family {
        Family::Security => "medium",
        Family::Deprecated | Family::ProtocolFlow | Family::Transport | Family::Linter => "high",
    }
}

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

fn result(diagnostic: &Diagnostic, fingerprints: &mut Fingerprints) -> SarifResult {
    let rule = diagnostic.rule();
    let location = diagnostic.location();
    let (uri, uri_base_id) = artifact_uri(&diagnostic.file.path);
    let snippet = diagnostic.snippet();
    SarifResult {
        rule_id: rule.code,
        rule_index: RULES
            .iter()
            .position(|entry| entry.code == rule.code)
            .expect("a diagnostic's rule is in the catalogue"),
        level: level(diagnostic.severity),
        message: Message {
            text: diagnostic.message.clone(),
        },
        locations: [ResultLocation {
            physical_location: PhysicalLocation {
                artifact_location: ArtifactLocation { uri, uri_base_id },
                region: Region {
                    start_line: location.line,
                    start_column: location.column,
                    end_line: location.end_line,
                    end_column: location.end_column,
                    snippet: (!snippet.is_empty()).then(|| Message {
                        text: snippet.to_owned(),
                    }),
                },
            },
        }],
        partial_fingerprints: BTreeMap::from([(FINGERPRINT_KEY, fingerprints.next(diagnostic))]),
        fixes: diagnostic
            .fix
            .iter()
            .map(|fix| sarif_fix(diagnostic, fix))
            .collect(),
    }
}

fn sarif_fix(diagnostic: &Diagnostic, fix: &crate::fix::Fix) -> SarifFix {
    let (uri, uri_base_id) = artifact_uri(&diagnostic.file.path);
    let file = &diagnostic.file;
    SarifFix {
        description: Message {
            text: fix.message.clone(),
        },
        artifact_changes: [ArtifactChange {
            artifact_location: ArtifactLocation { uri, uri_base_id },
            replacements: fix
                .edits
                .iter()
                .map(|edit| {
                    let (start_line, start_column) = file.line_column(edit.span.start);
                    let (end_line, end_column) = file.line_column(edit.span.end);
                    Replacement {
                        deleted_region: Region {
                            start_line,
                            start_column,
                            end_line,
                            end_column,
                            snippet: None,
                        },
                        inserted_content: Message {
                            text: edit.content.clone(),
                        },
                    }
                })
                .collect(),
        }],
        properties: FixProperties {
            applicability: fix.applicability,
        },
    }
}

/// Computes `partialFingerprints` values: SHA-256 over the rule code, the path, the trimmed text
/// of the diagnostic's first line and how many earlier diagnostics had the same three. Line
/// numbers stay out, so inserting or deleting lines above a finding keeps its fingerprint, and
/// the occurrence index tells apart identical lines in one file.
#[derive(Default)]
struct Fingerprints {
    seen: HashMap<(&'static str, String, String), usize>,
}

impl Fingerprints {
    fn next(&mut self, diagnostic: &Diagnostic) -> String {
        let code = diagnostic.rule().code;
        let path = display_path(&diagnostic.file.path);
        let line = diagnostic.location().line;
        let line_text = diagnostic.file.line_text(line).trim().to_owned();

        let mut hasher = Sha256::new();
        for part in [code, path.as_str(), line_text.as_str()] {
            hasher.update(part.as_bytes());
            hasher.update([0]);
        }
        let occurrence = self.seen.entry((code, path, line_text)).or_insert(0);
        hasher.update(occurrence.to_string().as_bytes());
        *occurrence += 1;

        hasher
            .finalize()
            .iter()
            .fold(String::with_capacity(64), |mut hex, byte| {
                let _ = write!(hex, "{byte:02x}");
                hex
            })
    }
}

/// The `artifactLocation.uri` of a path (percent-encoded as a URI reference) and its base:
/// relative paths resolve against `%SRCROOT%`, absolute ones become `file:` URIs.
fn artifact_uri(path: &Path) -> (String, Option<&'static str>) {
    let displayed = display_path(path);
    if path.is_absolute() {
        let rooted = if displayed.starts_with('/') {
            displayed
        } else {
            // A Windows path such as `C:/src/main.rs`.
            format!("/{displayed}")
        };
        (format!("file://{}", encode_path(&rooted)), None)
    } else {
        (encode_path(&displayed), Some(SRCROOT))
    }
}

/// Percent-encodes every byte that may not stand as itself in the path of a URI reference
/// (RFC 3986 `pchar` and `/`). `:` is encoded too, so a first segment never reads as a scheme.
fn encode_path(path: &str) -> String {
    let mut encoded = String::with_capacity(path.len());
    for byte in path.bytes() {
        match byte {
            b'A'..=b'Z'
            | b'a'..=b'z'
            | b'0'..=b'9'
            | b'-'
            | b'.'
            | b'_'
            | b'~'
            | b'!'
            | b'$'
            | b'&'
            | b'\''
            | b'('
            | b')'
            | b'*'
            | b'+'
            | b','
            | b';'
            | b'='
            | b'@'
            | b'/' => encoded.push(char::from(byte)),
            _ => {
                let _ = write!(encoded, "%{byte:02X}");
            }
        }
    }
    encoded
}
