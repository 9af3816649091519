//! `package.json`: a dependency on `@modelcontextprotocol/sdk` 1.x is `legacy-sdk-version`.
//!
//! The 1.x package speaks up to 2025-11-25 and has no 2.x release: the 2026-07-28 line is the
//! split `@modelcontextprotocol/server` / `client` packages. The unsafe fix rewrites the one
//! dependency entry (its key and its version string, nothing else of the file) to
//! `@modelcontextprotocol/server` [`MODERN_REQUIREMENT`]; the imports then need the SDK's own
//! codemod (`@modelcontextprotocol/codemod`), which is why the fix is unsafe.

use std::sync::Arc;

use mcp_migrate_rules::{FixAvailability, RuleId};
use oxc_allocator::Allocator;
use oxc_ast::ast::{Expression, ObjectExpression, ObjectPropertyKind};
use oxc_parser::Parser;
use oxc_span::{GetSpan, SourceType};

use crate::diagnostic::{ByteSpan, Diagnostic, SourceFile};
use crate::fix::{Edit, Fix};

/// The legacy package.
pub const LEGACY_PACKAGE: &str = "@modelcontextprotocol/sdk";
/// The package and requirement the fix moves a server to.
pub const MODERN_PACKAGE: &str = "@modelcontextprotocol/server";
pub const MODERN_REQUIREMENT: &str = "^2.4.0";

const DEPENDENCY_TABLES: &[&str] = &[
    "dependencies",
    "devDependencies",
    "peerDependencies",
    "optionalDependencies",
];

/// A manifest that never names the SDK has nothing to report.
pub fn may_match(bytes: &[u8]) -> bool {
    memchr::memmem::find(bytes, LEGACY_PACKAGE.as_bytes()).is_some()
}

/// The findings of one `package.json`.
pub fn lint_file(file: &Arc<SourceFile>) -> Vec<Diagnostic> {
    if let Err(error) = serde_json::from_str::<serde_json::Value>(&file.text) {
        let offset = file.offset(error.line(), error.column().saturating_sub(1));
        return vec![Diagnostic {
            rule: RuleId::UnparsableFile,
            severity: RuleId::UnparsableFile.rule().default_severity,
            file: file.clone(),
            span: ByteSpan::new(offset, offset),
            message: format!("could not parse this file as JSON: {error}"),
            help: Some("nothing else in this file was linted".into()),
            label: Some("syntax error".into()),
            fix: None,
        }];
    }
    // JSON is a JavaScript expression: oxc gives the spans serde_json does not.
    let allocator = Allocator::default();
    let Ok(Expression::ObjectExpression(root)) =
        Parser::new(&allocator, &file.text, SourceType::mjs()).parse_expression()
    else {
        return Vec::new();
    };
    let mut diagnostics = Vec::new();
    for table in DEPENDENCY_TABLES {
        let Some(Expression::ObjectExpression(dependencies)) = property(&root, table) else {
            continue;
        };
        for kind in &dependencies.properties {
            let ObjectPropertyKind::ObjectProperty(entry) = kind else {
                continue;
            };
            if entry.key.static_name().as_deref() != Some(LEGACY_PACKAGE) {
                continue;
            }
            let Expression::StringLiteral(version) = &entry.value else {
                continue;
            };
            if !is_legacy_requirement(&version.value) {
                continue;
            }
            let key_span = entry.key.span();
            let span = ByteSpan::new(version.span.start as usize, version.span.end as usize);
            let fix = Fix::new(
                FixAvailability::Unsafe,
                format!(
                    "depend on `{MODERN_PACKAGE}` `{MODERN_REQUIREMENT}` instead of `{LEGACY_PACKAGE}` `{}`",
                    version.value
                ),
                vec![
                    Edit::replace(
                        ByteSpan::new(key_span.start as usize, key_span.end as usize),
                        format!("\"{MODERN_PACKAGE}\""),
                    ),
                    Edit::replace(span, format!("\"{MODERN_REQUIREMENT}\"")),
                ],
            );
            diagnostics.push(Diagnostic {
                rule: RuleId::LegacySdkVersion,
                severity: RuleId::LegacySdkVersion.rule().default_severity,
                file: file.clone(),
                span,
                message: format!(
                    "`{LEGACY_PACKAGE}` `{}` (in `{table}`) is the 1.x SDK, which speaks MCP up to 2025-11-25 only",
                    version.value
                ),
                help: Some(format!(
                    "move to `{MODERN_PACKAGE}` 2.x (and `@modelcontextprotocol/client` for clients); `npx @modelcontextprotocol/codemod` rewrites the imports"
                )),
                label: Some("1.x SDK".into()),
                fix: Some(fix),
            });
        }
    }
    diagnostics
}

fn property<'e, 'a>(object: &'e ObjectExpression<'a>, name: &str) -> Option<&'e Expression<'a>> {
    object.properties.iter().find_map(|kind| match kind {
        ObjectPropertyKind::ObjectProperty(property)
            if property.key.static_name().as_deref() == Some(name) =>
        {
            Some(&property.value)
        }
        _ => None,
    })
}

/// Whether an npm requirement selects the 1.x (or 0.x) SDK: its first version number's major
/// is 0 or 1 (`^1.17.0`, `~1.2`, `1.x`, `>=1.10.0 <2`, `1.32.2`). Tags, `*`, URLs, `file:`,
/// `workspace:` and `npm:` aliases say nothing about the version and are not reported.
pub fn is_legacy_requirement(requirement: &str) -> bool {
    let requirement = requirement.trim();
    if requirement.contains(':') || requirement.contains('/') {
        return false;
    }
    let Some(start) = requirement.find(|c: char| c.is_ascii_digit()) else {
        return false;
    };
    // The digit must start the version, not sit inside a tag such as `next1`.
    if requirement[..start]
        .chars()
        .any(|c| c.is_ascii_alphabetic() && c != 'v')
    {
        return false;
    }
    let major: String = requirement[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    matches!(major.parse::<u64>(), Ok(0 | 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_requirements_are_those_of_major_zero_or_one() {
        for legacy in [
            "^1.17.0",
            "~1.2",
            "1.x",
            ">=1.10.0 <2",
            "1.32.2",
            "v1.0.0",
            "0.6.0",
        ] {
            assert!(is_legacy_requirement(legacy), "{legacy}");
        }
        for other in [
            "latest",
            "*",
            "next",
            "workspace:*",
            "file:../sdk",
            "npm:x@1",
            "2.0.0",
            "",
        ] {
            assert!(!is_legacy_requirement(other), "{other}");
        }
    }

    #[test]
    fn the_dependency_is_reported_at_its_version_and_fixed_in_place() {
        let text = "{\n  \"name\": \"x\",\n  \"dependencies\": {\n    \"zod\": \"^3\",\n    \"@modelcontextprotocol/sdk\": \"^1.17.0\"\n  },\n  \"devDependencies\": { \"@modelcontextprotocol/sdk\": \"latest\" }\n}\n";
        let file = SourceFile::new("package.json".into(), text.into());
        let diagnostics = lint_file(&file);
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(diagnostics[0].snippet(), "\"^1.17.0\"");
        assert_eq!(diagnostics[0].location().line, 5);
        let fix = diagnostics[0].fix.as_ref().unwrap();
        let (fixed, applied) = crate::fix::apply(text, [fix]);
        assert_eq!(applied, 1);
        assert!(fixed.contains("\"@modelcontextprotocol/server\": \"^2.4.0\""));
        assert!(serde_json::from_str::<serde_json::Value>(&fixed).is_ok());
        assert!(lint_file(&SourceFile::new("package.json".into(), fixed)).is_empty());
    }

    #[test]
    fn broken_json_is_unparsable() {
        let file = SourceFile::new("package.json".into(), "{\n  \"a\": ,\n}".into());
        let diagnostics = lint_file(&file);
        assert_eq!(diagnostics[0].rule, RuleId::UnparsableFile);
        assert_eq!(diagnostics[0].location().line, 2);
    }
}
