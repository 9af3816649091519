//! `Cargo.toml` reading: which names the MCP SDK goes by in a crate's code, and the manifest rules
//! (`legacy-sdk-version`, `legacy-sse-transport`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mcp_migrate_rules::{RuleId, Severity};
use toml_edit::{ImDocument, Item, Table, TableLike, Value};

use crate::diagnostic::{ByteSpan, Diagnostic, SourceFile};

/// The crates.io name of the Rust MCP SDK.
pub const RMCP: &str = "rmcp";

/// The first rmcp major release that speaks MCP 2026-07-28 (MRTR arrived in rmcp 3.0.0).
const FIRST_MODERN_MAJOR: u64 = 3;

/// rmcp Cargo features of the HTTP+SSE transport (rmcp <= 0.10; removed in 0.11).
const SSE_FEATURES: &[&str] = &[
    "transport-sse",
    "transport-sse-server",
    "transport-sse-client",
    "transport-sse-client-reqwest",
];

/// One dependency on rmcp, under whatever name the crate gives it.
#[derive(Debug, Clone)]
pub struct SdkDependency {
    /// The name the crate's code uses as a path root (`legacy-rmcp` becomes `legacy_rmcp`).
    pub code_name: String,
    /// The version requirement and its span, when the entry gives one.
    pub version: Option<(String, ByteSpan)>,
    /// `workspace = true`: the version lives in the workspace root's `[workspace.dependencies]`.
    pub inherited: bool,
    pub features: Vec<(String, ByteSpan)>,
}

/// What the linter needs from one `Cargo.toml`.
#[derive(Debug)]
pub struct Manifest {
    pub path: PathBuf,
    pub file: Arc<SourceFile>,
    pub package_name: Option<String>,
    pub is_workspace_root: bool,
    /// Every dependency on rmcp in any dependency table, including `[workspace.dependencies]`.
    pub sdk_dependencies: Vec<SdkDependency>,
}

/// A manifest as [`Manifest::parse`] left it.
pub type ParsedManifest = Result<Manifest, ManifestError>;

/// A manifest that is not valid TOML.
#[derive(Debug, thiserror::Error)]
#[error("{path} is not valid TOML: {message}")]
pub struct ManifestError {
    pub path: PathBuf,
    pub message: String,
    pub span: ByteSpan,
    pub file: Arc<SourceFile>,
}

impl ManifestError {
    pub fn to_diagnostic(&self) -> Diagnostic {
        Diagnostic {
            rule: RuleId::UnparsableFile,
            severity: RuleId::UnparsableFile.rule().default_severity,
            file: self.file.clone(),
            span: self.span,
            message: format!("`Cargo.toml` is not valid TOML: {}", self.message.trim()),
            help: Some("fix the manifest; `cargo metadata` reports the same error".into()),
            label: Some("parse error here".into()),
            fix: None,
        }
    }
}

impl Manifest {
    /// Parses `text`, the content of the manifest at `path` (`display_path` is what users see).
    pub fn parse(path: &Path, display_path: PathBuf, text: String) -> Result<Self, ManifestError> {
        let file = SourceFile::new(display_path, text);
        let document = ImDocument::parse(file.text.as_str()).map_err(|error| {
            let span = error.span().unwrap_or(0..0);
            ManifestError {
                path: path.to_path_buf(),
                message: error.message().to_owned(),
                span: ByteSpan::new(span.start, span.end),
                file: file.clone(),
            }
        })?;
        let root = document.as_table();
        let package_name = root
            .get("package")
            .and_then(|package| package.get("name"))
            .and_then(Item::as_str)
            .map(str::to_owned);
        let mut sdk_dependencies = Vec::new();
        for table in dependency_tables(root) {
            collect_sdk_dependencies(table, &mut sdk_dependencies);
        }
        Ok(Manifest {
            path: path.to_path_buf(),
            file: file.clone(),
            package_name,
            is_workspace_root: root.contains_key("workspace"),
            sdk_dependencies,
        })
    }

    /// Reads and parses the manifest at `path`.
    pub fn read(path: &Path, display_path: PathBuf) -> Result<Self, ManifestError> {
        let text = std::fs::read_to_string(path).map_err(|error| ManifestError {
            path: path.to_path_buf(),
            message: error.to_string(),
            span: ByteSpan::new(0, 0),
            file: SourceFile::new(display_path.clone(), String::new()),
        })?;
        Manifest::parse(path, display_path, text)
    }

    /// The names under which this crate's code can reach rmcp (empty when it does not depend on it).
    pub fn sdk_code_names(&self) -> impl Iterator<Item = &str> {
        self.sdk_dependencies
            .iter()
            .map(|dependency| dependency.code_name.as_str())
    }

    pub fn depends_on_sdk(&self) -> bool {
        !self.sdk_dependencies.is_empty()
    }

    /// The manifest rules: an rmcp release older than 3.0 and the HTTP+SSE transport features.
    pub fn check(&self) -> Vec<Diagnostic> {
        let mut diagnostics = Vec::new();
        for dependency in &self.sdk_dependencies {
            if let Some((requirement, span)) = &dependency.version {
                if requirement_is_legacy(requirement) {
                    diagnostics.push(self.diagnostic(
                        RuleId::LegacySdkVersion,
                        *span,
                        format!(
                            "`{}` requires rmcp `{requirement}`, which predates MCP 2026-07-28",
                            dependency.code_name.replace('_', "-")
                        ),
                        "upgrade to rmcp 3 (`rmcp = \"3\"`): it speaks 2026-07-28 and has MRTR \
                         (`InputRequiredResult`, `RequestStateCodec`)",
                        "allows no rmcp 3.x release",
                    ));
                }
            }
            for (feature, span) in &dependency.features {
                if SSE_FEATURES.contains(&feature.as_str()) {
                    diagnostics.push(self.diagnostic(
                        RuleId::LegacySseTransport,
                        *span,
                        format!(
                            "rmcp feature `{feature}` enables the deprecated HTTP+SSE transport"
                        ),
                        "use Streamable HTTP: features `transport-streamable-http-server` / \
                         `transport-streamable-http-client-reqwest`",
                        "HTTP+SSE transport",
                    ));
                }
            }
        }
        diagnostics
    }

    fn diagnostic(
        &self,
        rule: RuleId,
        span: ByteSpan,
        message: String,
        help: &str,
        label: &str,
    ) -> Diagnostic {
        Diagnostic {
            rule,
            severity: rule.rule().default_severity,
            file: self.file.clone(),
            span,
            message,
            help: Some(help.to_owned()),
            label: Some(label.to_owned()),
            fix: None,
        }
    }
}

/// Whether a version requirement allows no release that speaks 2026-07-28.
pub fn requirement_is_legacy(requirement: &str) -> bool {
    let Ok(parsed) = semver::VersionReq::parse(requirement.trim()) else {
        return false;
    };
    let probes = ["3.0.0", "3.11.0", "3.999.0", "4.0.0", "99.0.0"];
    if probes
        .iter()
        .any(|probe| parsed.matches(&semver::Version::parse(probe).expect("valid probe")))
    {
        return false;
    }
    // Pre-releases such as `=3.0.0-beta.1` match no plain probe but are MRTR-capable.
    !parsed.comparators.iter().any(|comparator| {
        comparator.major >= FIRST_MODERN_MAJOR
            && !matches!(comparator.op, semver::Op::Less | semver::Op::LessEq)
    })
}

/// Every dependency table of a manifest: `[dependencies]`, `[dev-dependencies]`,
/// `[build-dependencies]`, their `[target.'cfg(..)'.*]` forms and `[workspace.dependencies]`.
fn dependency_tables(root: &Table) -> Vec<&dyn TableLike> {
    const KINDS: [&str; 4] = [
        "dependencies",
        "dev-dependencies",
        "dev_dependencies",
        "build-dependencies",
    ];
    let mut tables: Vec<&dyn TableLike> = Vec::new();
    for kind in KINDS {
        if let Some(table) = root.get(kind).and_then(Item::as_table_like) {
            tables.push(table);
        }
    }
    if let Some(targets) = root.get("target").and_then(Item::as_table_like) {
        for (_, target) in targets.iter() {
            for kind in KINDS {
                if let Some(table) = target.get(kind).and_then(Item::as_table_like) {
                    tables.push(table);
                }
            }
        }
    }
    if let Some(table) = root
        .get("workspace")
        .and_then(|workspace| workspace.get("dependencies"))
        .and_then(Item::as_table_like)
    {
        tables.push(table);
    }
    tables
}

fn collect_sdk_dependencies(table: &dyn TableLike, out: &mut Vec<SdkDependency>) {
    for (key, item) in table.iter() {
        let (version, package, inherited, features) = match item {
            Item::Value(Value::String(version)) => (Some(spanned_str(version)), None, false, None),
            Item::Value(Value::InlineTable(inline)) => entry_fields(inline),
            Item::Table(table) => entry_fields(table),
            _ => continue,
        };
        let crate_name = package.unwrap_or(key);
        if crate_name != RMCP {
            continue;
        }
        out.push(SdkDependency {
            code_name: key.replace('-', "_"),
            version,
            inherited,
            features: features.unwrap_or_default(),
        });
    }
}

type EntryFields<'a> = (
    Option<(String, ByteSpan)>,
    Option<&'a str>,
    bool,
    Option<Vec<(String, ByteSpan)>>,
);

fn entry_fields(entry: &dyn TableLike) -> EntryFields<'_> {
    let version = entry
        .get("version")
        .and_then(Item::as_value)
        .and_then(Value::as_str)
        .and_then(|_| match entry.get("version") {
            Some(Item::Value(Value::String(version))) => Some(spanned_str(version)),
            _ => None,
        });
    let package = entry.get("package").and_then(Item::as_str);
    let inherited = entry
        .get("workspace")
        .and_then(Item::as_bool)
        .unwrap_or(false);
    let features = entry.get("features").and_then(Item::as_array).map(|array| {
        array
            .iter()
            .filter_map(|value| match value {
                Value::String(feature) => Some(spanned_str(feature)),
                _ => None,
            })
            .collect()
    });
    (version, package, inherited, features)
}

fn spanned_str(value: &toml_edit::Formatted<String>) -> (String, ByteSpan) {
    let span = value.span().unwrap_or(0..0);
    (value.value().clone(), ByteSpan::new(span.start, span.end))
}

/// The severity a manifest rule gets before configuration: its catalogue default.
pub fn default_severity(rule: RuleId) -> Severity {
    rule.rule().default_severity
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_requirements_are_those_that_allow_no_rmcp_3() {
        for legacy in [
            "2.2", "=2.2.0", "0.10", "^1", "<3", "~2.1", "0.8.5", ">=1, <3",
        ] {
            assert!(requirement_is_legacy(legacy), "{legacy}");
        }
        for modern in ["3", "3.11", ">=2", "=3.0.0-beta.1", "*", "^3.1.4", "4"] {
            assert!(!requirement_is_legacy(modern), "{modern}");
        }
        assert!(!requirement_is_legacy("not a version"));
    }

    #[test]
    fn renamed_and_inherited_sdk_dependencies_are_found_with_spans() {
        let text = r#"
[package]
name = "gateway"

[dependencies]
legacy-rmcp = { package = "rmcp", version = "0.10.0", features = ["transport-sse-server", "server"] }
rmcp = { workspace = true }
serde = "1"

[target.'cfg(unix)'.dev-dependencies]
rmcp = "2.2"
"#;
        let manifest =
            Manifest::parse(Path::new("Cargo.toml"), "Cargo.toml".into(), text.into()).unwrap();
        let names: Vec<_> = manifest.sdk_code_names().collect();
        assert_eq!(names, ["legacy_rmcp", "rmcp", "rmcp"]);
        assert!(manifest.sdk_dependencies[1].inherited);
        let diagnostics = manifest.check();
        let found: Vec<_> = diagnostics
            .iter()
            .map(|d| (d.rule, d.snippet().to_owned()))
            .collect();
        assert_eq!(
            found,
            [
                (RuleId::LegacySdkVersion, "\"0.10.0\"".to_owned()),
                (
                    RuleId::LegacySseTransport,
                    "\"transport-sse-server\"".to_owned()
                ),
                (RuleId::LegacySdkVersion, "\"2.2\"".to_owned()),
            ]
        );
    }

    #[test]
    fn invalid_toml_is_an_error_with_a_position() {
        let error = Manifest::parse(
            Path::new("Cargo.toml"),
            "Cargo.toml".into(),
            "[package\nname = 1".into(),
        )
        .unwrap_err();
        let diagnostic = error.to_diagnostic();
        assert_eq!(diagnostic.rule, RuleId::UnparsableFile);
        assert_eq!(diagnostic.location().line, 1);
    }
}
