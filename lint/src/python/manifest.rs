//! Python manifests: `pyproject.toml` (PEP 621 `dependencies`, optional dependencies, dependency
//! groups, Poetry tables) and `requirements*.txt`. A requirement that allows only `mcp` 1.x, or
//! only `fastmcp` / `fastmcp-slim` releases before 4.0 (every one of which requires `mcp<2`:
//! checked in the published 3.0.0 and 3.4.11 metadata; 4.0.0 requires `mcp>=2.0,<3`), is
//! `legacy-sdk-version`, with an unsafe fix that rewrites the version part of that requirement.

use std::sync::Arc;

use mcp_migrate_rules::RuleId;
use toml_edit::{ImDocument, Item, Value};

use crate::diagnostic::{ByteSpan, Diagnostic, SourceFile};
use crate::fix::{Applicability, Edit, Fix};
pub use crate::lang::ManifestKind;

/// A Python SDK package and the first major release that speaks MCP 2026-07-28.
struct Package {
    name: &'static str,
    first_modern_major: u64,
    modern_requirement: &'static str,
}

const PACKAGES: &[Package] = &[
    Package {
        name: "mcp",
        first_modern_major: 2,
        modern_requirement: ">=2.3",
    },
    Package {
        name: "fastmcp",
        first_modern_major: 4,
        modern_requirement: ">=4.2",
    },
    Package {
        name: "fastmcp-slim",
        first_modern_major: 4,
        modern_requirement: ">=4.2",
    },
];

fn package(name: &str) -> Option<&'static Package> {
    // PEP 503 normalisation: case-insensitive, runs of `-`, `_`, `.` are one `-`.
    let normalised = name.to_ascii_lowercase().replace(['_', '.'], "-");
    PACKAGES.iter().find(|package| package.name == normalised)
}

/// The byte pre-filter: a manifest that never spells `mcp` declares no SDK.
pub fn may_match(bytes: &[u8]) -> bool {
    memchr::memmem::find(bytes, b"mcp").is_some() || memchr::memmem::find(bytes, b"MCP").is_some()
}

/// Whether a fixed manifest is still well-formed (TOML for `pyproject.toml`; any text is a
/// requirements file).
pub fn parses(text: &str, kind: ManifestKind) -> bool {
    match kind {
        ManifestKind::Pyproject => text.parse::<toml_edit::DocumentMut>().is_ok(),
        ManifestKind::Requirements | ManifestKind::PackageJson => true,
    }
}

/// The findings of a `requirements*.txt`: a line that is not a requirement is skipped.
pub fn lint_requirements(file: &Arc<SourceFile>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut offset = 0;
    for line in file.text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        // A comment starts at `#` at the line start or after whitespace.
        let content = match line.find(" #").or_else(|| line.find("\t#")) {
            Some(index) => &line[..index],
            None if line.trim_start().starts_with('#') => "",
            None => line,
        };
        let trimmed = content.trim_end();
        let leading = trimmed.len() - trimmed.trim_start().len();
        let requirement = trimmed.trim_start();
        if requirement.is_empty() || requirement.starts_with('-') {
            continue;
        }
        if let Some(found) = parse_requirement(requirement) {
            let span = ByteSpan::new(
                start + leading + found.specifier.start,
                start + leading + found.specifier.end,
            );
            if let Some(diagnostic) = check(file, &found, span, false) {
                out.push(diagnostic);
            }
        }
    }
    out
}

/// The findings of a `pyproject.toml`; one that is not valid TOML is `unparsable-file`.
pub fn lint_pyproject(file: &Arc<SourceFile>) -> Vec<Diagnostic> {
    let document = match ImDocument::parse(file.text.as_str()) {
        Ok(document) => document,
        Err(error) => {
            let span = error.span().unwrap_or(0..0);
            return vec![Diagnostic {
                rule: RuleId::UnparsableFile,
                severity: RuleId::UnparsableFile.rule().default_severity,
                file: file.clone(),
                span: ByteSpan::new(span.start, span.end),
                message: format!(
                    "`pyproject.toml` is not valid TOML: {}",
                    error.message().trim()
                ),
                help: Some("fix the manifest; `pip install .` reports the same error".into()),
                label: Some("parse error here".into()),
                fix: None,
            }];
        }
    };
    let root = document.as_table();
    let mut out = Vec::new();
    // PEP 621 / PEP 735: arrays of PEP 508 strings.
    let mut arrays: Vec<&Item> = Vec::new();
    if let Some(project) = root.get("project") {
        arrays.extend(project.get("dependencies"));
        if let Some(optional) = project
            .get("optional-dependencies")
            .and_then(Item::as_table_like)
        {
            arrays.extend(optional.iter().map(|(_, item)| item));
        }
    }
    if let Some(groups) = root.get("dependency-groups").and_then(Item::as_table_like) {
        arrays.extend(groups.iter().map(|(_, item)| item));
    }
    for array in arrays.iter().filter_map(|item| item.as_array()) {
        for value in array.iter() {
            let (Value::String(string), Some(range)) = (value, value.span()) else {
                continue;
            };
            let Some(found) = parse_requirement(string.value()) else {
                continue;
            };
            let span = ByteSpan::new(range.start, range.end);
            if let Some(diagnostic) = check(file, &found, span, true) {
                out.push(diagnostic);
            }
        }
    }
    // Poetry: `mcp = "^1.2"` or `mcp = { version = "^1.2", extras = [...] }`.
    let poetry = root.get("tool").and_then(|tool| tool.get("poetry"));
    let mut tables: Vec<&Item> = Vec::new();
    if let Some(poetry) = poetry {
        tables.extend(poetry.get("dependencies"));
        tables.extend(poetry.get("dev-dependencies"));
        if let Some(groups) = poetry.get("group").and_then(Item::as_table_like) {
            tables.extend(
                groups
                    .iter()
                    .filter_map(|(_, group)| group.get("dependencies")),
            );
        }
    }
    for table in tables.iter().filter_map(|item| item.as_table_like()) {
        for (name, item) in table.iter() {
            let Some(package) = package(name) else {
                continue;
            };
            let version = match item {
                Item::Value(Value::String(string)) => Some((string, item.span())),
                Item::Value(Value::InlineTable(inline)) => match inline.get("version") {
                    Some(value @ Value::String(string)) => Some((string, value.span())),
                    _ => None,
                },
                Item::Table(table) => match table.get("version") {
                    Some(item @ Item::Value(Value::String(string))) => Some((string, item.span())),
                    _ => None,
                },
                _ => None,
            };
            let Some((version, Some(range))) = version else {
                continue;
            };
            if !poetry_is_legacy(version.value(), package.first_modern_major) {
                continue;
            }
            let span = ByteSpan::new(range.start, range.end);
            let replacement = Value::from(package.modern_requirement).to_string();
            out.push(diagnostic(
                file,
                package,
                version.value(),
                span,
                replacement.trim().to_owned(),
            ));
        }
    }
    out
}

/// A requirement as written: its name, and where its version specifier sits in it.
struct Requirement<'a> {
    text: &'a str,
    name: &'a str,
    specifier: std::ops::Range<usize>,
}

/// `name[extras] specifiers ; markers` (a URL requirement, `name @ url`, has no version).
fn parse_requirement(text: &str) -> Option<Requirement<'_>> {
    let name_end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(text.len());
    let name = &text[..name_end];
    if name.is_empty() {
        return None;
    }
    let mut rest = name_end;
    let after_name = &text[rest..];
    let trimmed = after_name.trim_start();
    rest += after_name.len() - trimmed.len();
    if trimmed.starts_with('[') {
        rest += trimmed.find(']')? + 1;
    }
    let tail = &text[rest..];
    if tail.trim_start().starts_with('@') {
        return None;
    }
    let end = rest + tail.find(';').unwrap_or(tail.len());
    let specifier_text = &text[rest..end];
    let start = rest + (specifier_text.len() - specifier_text.trim_start().len());
    let end = rest + specifier_text.trim_end().len();
    Some(Requirement {
        text,
        name,
        specifier: start..end.max(start),
    })
}

/// The finding for a requirement of a legacy release. `quoted`: `span` is a TOML string holding
/// the whole requirement (the fix rewrites the string); otherwise `span` is the specifier.
fn check(
    file: &Arc<SourceFile>,
    requirement: &Requirement<'_>,
    span: ByteSpan,
    quoted: bool,
) -> Option<Diagnostic> {
    let package = package(requirement.name)?;
    let specifier = requirement.text.get(requirement.specifier.clone())?;
    let specifier = specifier.trim_start_matches('(').trim_end_matches(')');
    if !pep440_is_legacy(specifier, package.first_modern_major) {
        return None;
    }
    let replacement = if quoted {
        let mut text = requirement.text.to_owned();
        text.replace_range(requirement.specifier.clone(), package.modern_requirement);
        Value::from(text).to_string().trim().to_owned()
    } else {
        package.modern_requirement.to_owned()
    };
    Some(diagnostic(file, package, specifier, span, replacement))
}

fn diagnostic(
    file: &Arc<SourceFile>,
    package: &Package,
    specifier: &str,
    span: ByteSpan,
    replacement: String,
) -> Diagnostic {
    let name = package.name;
    let major = package.first_modern_major;
    let modern = package.modern_requirement;
    Diagnostic {
        rule: RuleId::LegacySdkVersion,
        severity: RuleId::LegacySdkVersion.rule().default_severity,
        file: file.clone(),
        span,
        message: format!(
            "`{name}` `{specifier}` allows no {major}.x release, and the releases it allows predate MCP 2026-07-28"
        ),
        help: Some(format!(
            "upgrade to `{name}{modern}`: it speaks 2026-07-28 and has MRTR (`InputRequiredResult`, the `Elicit`/`Sample` resolvers); see docs/lint/python.md"
        )),
        label: Some(format!("allows no {name} {major}.x release")),
        fix: Some(Fix::new(
            Applicability::Unsafe,
            format!("require `{name}{modern}` instead of `{specifier}`"),
            vec![Edit::replace(span, replacement)],
        )),
    }
}

/// The numeric release of a version (`1.9.0rc1` → `[1, 9, 0]`, `1.*` → `[1]`).
fn release(version: &str) -> Vec<u64> {
    version
        .trim()
        .trim_start_matches(['v', 'V'])
        .split('.')
        .map_while(|part| {
            let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .collect()
}

/// Whether a PEP 440 specifier set allows no release of major `major` or later: one of its
/// clauses caps the version below it (`<2`, `<=1.9`, `==1.2.*`, `~=1.4`).
fn pep440_is_legacy(specifier: &str, major: u64) -> bool {
    specifier
        .split(',')
        .any(|clause| clause_caps_below(clause.trim(), major))
}

fn clause_caps_below(clause: &str, major: u64) -> bool {
    let operators = ["===", "==", "~=", "<=", ">=", "!=", "<", ">"];
    let Some(operator) = operators.iter().find(|op| clause.starts_with(**op)) else {
        return false;
    };
    let release = release(&clause[operator.len()..]);
    let Some(&first) = release.first() else {
        return false;
    };
    match *operator {
        // `<2`, `<2.0.0`: below 2.0; `<2.1` allows 2.0.
        "<" => first < major || (first == major && release[1..].iter().all(|part| *part == 0)),
        "<=" | "==" | "===" | "~=" => first < major,
        _ => false,
    }
}

/// Whether a Poetry constraint allows no release of major `major` or later: `^1.2`, `~1.2`,
/// `1.9.0` (exact), `1.*`, or PEP 440 clauses.
fn poetry_is_legacy(constraint: &str, major: u64) -> bool {
    constraint.split(',').any(|clause| {
        let clause = clause.trim();
        if let Some(version) = clause.strip_prefix('^') {
            return release(version).first().is_some_and(|first| *first < major);
        }
        if let Some(version) = clause.strip_prefix('~').filter(|v| !v.starts_with('=')) {
            return release(version).first().is_some_and(|first| *first < major);
        }
        if clause.starts_with(|c: char| c.is_ascii_digit()) {
            return release(clause).first().is_some_and(|first| *first < major);
        }
        clause_caps_below(clause, major)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lint(name: &str, text: &str) -> Vec<(String, String)> {
        let file = SourceFile::new(name.into(), text.to_owned());
        let diagnostics = match ManifestKind::of(std::path::Path::new(name)).unwrap() {
            ManifestKind::Pyproject => lint_pyproject(&file),
            _ => lint_requirements(&file),
        };
        diagnostics
            .iter()
            .map(|d| {
                assert_eq!(d.rule, RuleId::LegacySdkVersion);
                let fix = d.fix.as_ref().unwrap();
                (d.snippet().to_owned(), fix.edits[0].content.clone())
            })
            .collect()
    }

    #[test]
    fn requirement_lines() {
        let text = "\
# mcp<2 in a comment
mcp<2
MCP[cli] >= 1.2, < 2.0.0 ; python_version >= '3.10'
mcp>=1.2
mcp<2.1
mcp~=1.9
mcp==1.*  # pinned
fastmcp==2.14.7
fastmcp_slim<4
fastmcp>=4
fastmcp
-r other.txt
mcp @ https://example.com/mcp.whl
mcpx<2
";
        assert_eq!(
            lint("requirements-dev.txt", text),
            [
                ("<2".to_owned(), ">=2.3".to_owned()),
                (">= 1.2, < 2.0.0".to_owned(), ">=2.3".to_owned()),
                ("~=1.9".to_owned(), ">=2.3".to_owned()),
                ("==1.*".to_owned(), ">=2.3".to_owned()),
                ("==2.14.7".to_owned(), ">=4.2".to_owned()),
                ("<4".to_owned(), ">=4.2".to_owned()),
            ]
        );
    }

    #[test]
    fn pyproject_tables() {
        let text = r#"
[project]
name = "server"
dependencies = ["mcp[cli]>=1.6,<2; python_version >= '3.10'", "httpx>=0.27", "fastmcp>=4.2"]

[project.optional-dependencies]
sse = ["fastmcp==2.10.0"]

[dependency-groups]
dev = ["mcp"]

[tool.poetry.dependencies]
mcp = "^1.9"
fastmcp = { version = "~2.3", extras = ["cli"] }
httpx = "^0.27"

[tool.poetry.group.test.dependencies]
mcp = ">=2.3"
"#;
        assert_eq!(
            lint("pyproject.toml", text),
            [
                (
                    "\"mcp[cli]>=1.6,<2; python_version >= '3.10'\"".to_owned(),
                    "\"mcp[cli]>=2.3; python_version >= '3.10'\"".to_owned()
                ),
                (
                    "\"fastmcp==2.10.0\"".to_owned(),
                    "\"fastmcp>=4.2\"".to_owned()
                ),
                ("\"^1.9\"".to_owned(), "\">=2.3\"".to_owned()),
                ("\"~2.3\"".to_owned(), "\">=4.2\"".to_owned()),
            ]
        );
    }

    #[test]
    fn the_fixes_leave_a_valid_manifest_with_no_finding() {
        let text = "[project]\ndependencies = [\"mcp<2\"]\n[tool.poetry.dependencies]\nmcp = {version = \"^1.2\"}\n";
        let file = SourceFile::new("pyproject.toml".into(), text.to_owned());
        let diagnostics = lint_pyproject(&file);
        assert_eq!(diagnostics.len(), 2);
        let (fixed, applied) =
            crate::fix::apply(text, diagnostics.iter().filter_map(|d| d.fix.as_ref()));
        assert_eq!(applied, 2);
        assert!(parses(&fixed, ManifestKind::Pyproject));
        let again = SourceFile::new("pyproject.toml".into(), fixed);
        assert!(lint_pyproject(&again).is_empty());
    }

    #[test]
    fn invalid_toml_is_unparsable() {
        let file = SourceFile::new("pyproject.toml".into(), "[project\n".into());
        let diagnostics = lint_pyproject(&file);
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(diagnostics[0].rule, RuleId::UnparsableFile);
    }
}
