//! Configuration: `mcp-lint.toml`, `[workspace.metadata.mcp-lint]` and
//! `[package.metadata.mcp-lint]` (or `[tool.mcp-lint]` in a Python project's `pyproject.toml`),
//! then `-A/-W/-D` on the command line. The same settings and excludes apply to every language.
//!
//! ```toml
//! [workspace.metadata.mcp-lint]
//! exclude = ["tests/fixtures/**"]
//!
//! [workspace.metadata.mcp-lint.rules]
//! deprecated-logging = "allow"   # allow | warn | deny
//! MCP403 = "deny"
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use globset::{Glob, GlobSet, GlobSetBuilder};
use mcp_migrate_rules::{RuleId, Severity};
use serde::Deserialize;
use toml::Spanned;

use crate::diagnostic::{ByteSpan, SourceFile};

mod excludes;

use excludes::Directory;

/// A rule level as written in configuration and on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Turn the rule off.
    Allow,
    /// Report at warning severity.
    Warn,
    /// Report at error severity (fails the run).
    Deny,
}

/// The settings of one configuration table.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    #[serde(default)]
    rules: BTreeMap<Spanned<String>, Level>,
    #[serde(default)]
    exclude: Vec<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize)]
struct ManifestShape {
    workspace: Option<MetadataHolder>,
    package: Option<MetadataHolder>,
}

#[derive(Debug, Default, Deserialize)]
struct MetadataHolder {
    metadata: Option<Metadata>,
}

#[derive(Debug, Default, Deserialize)]
struct Metadata {
    #[serde(rename = "mcp-lint")]
    mcp_lint: Option<toml::Value>,
}

/// A configuration error, pointing at the offending text.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("invalid mcp-lint configuration in {path}: {message}")]
#[diagnostic(code(mcp_lint::config))]
pub struct ConfigError {
    pub path: PathBuf,
    pub message: String,
    #[source_code]
    pub source_code: miette::NamedSource<String>,
    #[label("{label}")]
    pub span: Option<miette::SourceSpan>,
    pub label: String,
    #[help]
    pub help: Option<String>,
}

impl ConfigError {
    fn new(
        file: &SourceFile,
        message: String,
        span: Option<ByteSpan>,
        help: Option<String>,
    ) -> Self {
        ConfigError {
            path: file.path.clone(),
            message: message.clone(),
            source_code: miette::NamedSource::new(
                file.path.display().to_string(),
                file.text.clone(),
            ),
            span: span.map(|span| (span.start, span.end - span.start).into()),
            label: message,
            help,
        }
    }
}

/// One configuration layer: rule levels and excludes from one file.
#[derive(Debug, Clone, Default)]
pub struct Layer {
    pub levels: Vec<(RuleId, Level)>,
    /// Excludes, relative to `base`.
    pub excludes: Vec<String>,
    pub base: PathBuf,
}

impl Layer {
    /// Reads a dedicated `mcp-lint.toml` (its settings are top-level).
    pub fn from_config_file(path: &Path) -> Result<Layer, Box<ConfigError>> {
        let (file, _) = read(path)?;
        let settings: Settings =
            toml::from_str(&file.text).map_err(|error| toml_error(&file, &error))?;
        Layer::from_settings(&file, settings, parent(path))
    }

    /// Reads `[workspace.metadata.mcp-lint]` (when `workspace`) or `[package.metadata.mcp-lint]`.
    /// `None` when the manifest has no such table.
    pub fn from_manifest(path: &Path, workspace: bool) -> Result<Option<Layer>, Box<ConfigError>> {
        Layer::from_manifest_text(path, None, workspace)
    }

    /// [`Layer::from_manifest`] with the manifest's text when it was read already.
    pub fn from_manifest_text(
        path: &Path,
        text: Option<&str>,
        workspace: bool,
    ) -> Result<Option<Layer>, Box<ConfigError>> {
        if text.is_some_and(|text| !text.contains("mcp-lint")) {
            return Ok(None);
        }
        let file = match text {
            Some(text) => SourceFile::new(path.to_path_buf(), text.to_owned()),
            None => read(path)?.0,
        };
        if !file.text.contains("mcp-lint") {
            return Ok(None);
        }
        // The table with its spans, in one parse when the text has it well-formed: the parse
        // below (which reports what is wrong) then succeeds too, and finds the same table.
        if let Some(settings) = settings_with_spans(&file, workspace) {
            return Layer::from_settings(&file, settings, parent(path)).map(Some);
        }
        let shape: ManifestShape =
            toml::from_str(&file.text).map_err(|error| toml_error(&file, &error))?;
        let holder = if workspace {
            shape.workspace
        } else {
            shape.package
        };
        let Some(value) = holder.and_then(|h| h.metadata).and_then(|m| m.mcp_lint) else {
            return Ok(None);
        };
        // Re-read the table with spans: deserialise the same text into a shape that keeps them.
        let settings = settings_with_spans(&file, workspace)
            .unwrap_or_else(|| Settings::deserialize(value).unwrap_or_default());
        Layer::from_settings(&file, settings, parent(path)).map(Some)
    }

    /// Reads `[tool.mcp-lint]` of a `pyproject.toml`; `None` when it has no such table.
    pub fn from_pyproject_text(
        path: &Path,
        text: Option<&str>,
    ) -> Result<Option<Layer>, Box<ConfigError>> {
        #[derive(Deserialize)]
        struct Shape {
            tool: Option<Tool>,
        }
        #[derive(Deserialize)]
        struct Tool {
            #[serde(rename = "mcp-lint")]
            mcp_lint: Option<Settings>,
        }
        if text.is_some_and(|text| !text.contains("mcp-lint")) {
            return Ok(None);
        }
        let file = match text {
            Some(text) => SourceFile::new(path.to_path_buf(), text.to_owned()),
            None => read(path)?.0,
        };
        if !file.text.contains("mcp-lint") {
            return Ok(None);
        }
        let shape: Shape = toml::from_str(&file.text).map_err(|error| toml_error(&file, &error))?;
        match shape.tool.and_then(|tool| tool.mcp_lint) {
            Some(settings) => Layer::from_settings(&file, settings, parent(path)).map(Some),
            None => Ok(None),
        }
    }

    fn from_settings(
        file: &SourceFile,
        settings: Settings,
        base: PathBuf,
    ) -> Result<Layer, Box<ConfigError>> {
        let mut levels = Vec::new();
        for (selector, level) in settings.rules {
            let Some(rule) = mcp_migrate_rules::lookup_id(selector.get_ref()) else {
                let help = mcp_migrate_rules::suggest(selector.get_ref())
                    .map(|rule| format!("did you mean `{}`?", rule.name))
                    .or_else(|| Some("`cargo mcp-lint --list-rules` lists the rules".into()));
                let span = selector.span();
                return Err(Box::new(ConfigError::new(
                    file,
                    format!("unknown rule `{}`", selector.get_ref()),
                    Some(ByteSpan::new(span.start, span.end)),
                    help,
                )));
            };
            levels.push((rule, level));
        }
        let mut excludes = Vec::new();
        for pattern in settings.exclude {
            if let Err(error) = Glob::new(pattern.get_ref()) {
                let span = pattern.span();
                return Err(Box::new(ConfigError::new(
                    file,
                    format!("invalid exclude pattern: {error}"),
                    Some(ByteSpan::new(span.start, span.end)),
                    None,
                )));
            }
            excludes.push(pattern.into_inner());
        }
        Ok(Layer {
            levels,
            excludes,
            base,
        })
    }
}

fn settings_with_spans(file: &SourceFile, workspace: bool) -> Option<Settings> {
    #[derive(Deserialize)]
    struct Holder {
        metadata: Option<Inner>,
    }
    #[derive(Deserialize)]
    struct Inner {
        #[serde(rename = "mcp-lint")]
        mcp_lint: Option<Settings>,
    }
    #[derive(Deserialize)]
    struct Shape {
        workspace: Option<Holder>,
        package: Option<Holder>,
    }
    let shape: Shape = toml::from_str(&file.text).ok()?;
    let holder = if workspace {
        shape.workspace
    } else {
        shape.package
    };
    holder?.metadata?.mcp_lint
}

fn read(path: &Path) -> Result<(Arc<SourceFile>, ()), Box<ConfigError>> {
    let text = std::fs::read_to_string(path).map_err(|error| {
        Box::new(ConfigError {
            path: path.to_path_buf(),
            message: error.to_string(),
            source_code: miette::NamedSource::new(path.display().to_string(), String::new()),
            span: None,
            label: String::new(),
            help: None,
        })
    })?;
    Ok((SourceFile::new(path.to_path_buf(), text), ()))
}

fn parent(path: &Path) -> PathBuf {
    path.parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

fn toml_error(file: &SourceFile, error: &toml::de::Error) -> Box<ConfigError> {
    let span = error.span().map(|span| ByteSpan::new(span.start, span.end));
    Box::new(ConfigError::new(
        file,
        error.message().to_owned(),
        span,
        None,
    ))
}

/// The effective configuration of a run.
#[derive(Debug, Default)]
pub struct Config {
    /// Layers from the outermost (workspace) to the innermost; CLI levels come last.
    root: Option<Layer>,
    packages: Vec<Layer>,
    cli: Vec<(RuleId, Level)>,
    excludes: Option<GlobSet>,
    /// The absolute directory of the layer of each exclude pattern.
    exclude_bases: Vec<PathBuf>,
    /// The absolute directory of each package layer.
    package_bases: Vec<PathBuf>,
    /// The working directory, taken once: relative paths are made absolute against it without a
    /// `getcwd` per file.
    cwd: PathBuf,
    /// The directories of a run's files, with their excludes decided once
    /// ([`Config::decide_directories`]), sorted by the path as the run's files spell it.
    directories: Vec<Directory>,
}

impl Config {
    pub fn new(root: Option<Layer>, packages: Vec<Layer>, cli: Vec<(RuleId, Level)>) -> Self {
        let cwd = std::env::current_dir().unwrap_or_default();
        let mut builder = GlobSetBuilder::new();
        let mut bases = Vec::new();
        let mut any = false;
        for layer in root.iter().chain(&packages) {
            for pattern in &layer.excludes {
                if let Ok(glob) = Glob::new(pattern) {
                    builder.add(glob);
                    bases.push(absolute_dir(&cwd, &layer.base));
                    any = true;
                }
            }
        }
        // One base per layer is enough: each base is tried with the whole set.
        bases.sort();
        bases.dedup();
        let package_bases = packages
            .iter()
            .map(|package| absolute_dir(&cwd, &package.base))
            .collect();
        Config {
            root,
            packages,
            cli,
            excludes: any.then(|| builder.build().ok()).flatten(),
            exclude_bases: bases,
            package_bases,
            cwd,
            directories: Vec::new(),
        }
    }

    /// The severity of `rule` for a file at `path`, or `None` when the rule is off.
    pub fn severity(&self, rule: RuleId, path: &Path) -> Option<Severity> {
        let mut level = None;
        if let Some(root) = &self.root {
            level = last_level(&root.levels, rule).or(level);
        }
        let absolute = absolute(&self.cwd, path);
        for (package, base) in self.packages.iter().zip(&self.package_bases) {
            if absolute.starts_with(base) {
                level = last_level(&package.levels, rule).or(level);
            }
        }
        level = last_level(&self.cli, rule).or(level);
        match level {
            None => Some(rule.rule().default_severity),
            Some(Level::Allow) => None,
            Some(Level::Warn) => Some(Severity::Warning),
            Some(Level::Deny) => Some(Severity::Error),
        }
    }
}

fn last_level(levels: &[(RuleId, Level)], rule: RuleId) -> Option<Level> {
    levels
        .iter()
        .rev()
        .find(|(r, _)| *r == rule)
        .map(|(_, level)| *level)
}

/// `std::path::absolute` against a working directory taken once (it calls `getcwd` for every
/// relative path otherwise).
fn absolute(cwd: &Path, path: &Path) -> PathBuf {
    let joined;
    let path = if path.is_relative() && !cwd.as_os_str().is_empty() {
        joined = cwd.join(path);
        &joined
    } else {
        path
    };
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

fn absolute_dir(cwd: &Path, path: &Path) -> PathBuf {
    if path.as_os_str().is_empty() {
        absolute(cwd, Path::new("."))
    } else {
        absolute(cwd, path)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn pyproject_tool_table_is_a_layer_with_spanned_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pyproject.toml");
        let text = "[project]\nname = \"x\"\n\n[tool.mcp-lint]\nexclude = [\"gen/**\"]\n\n[tool.mcp-lint.rules]\ndeprecated-logging = \"allow\"\n";
        let layer = Layer::from_pyproject_text(&path, Some(text))
            .unwrap()
            .unwrap();
        assert_eq!(layer.levels, [(RuleId::DeprecatedLogging, Level::Allow)]);
        assert_eq!(layer.excludes, ["gen/**"]);
        assert_eq!(layer.base, dir.path());
        assert!(
            Layer::from_pyproject_text(&path, Some("[project]\nname = \"x\"\n"))
                .unwrap()
                .is_none()
        );
        let error =
            Layer::from_pyproject_text(&path, Some("[tool.mcp-lint.rules]\nno-such = \"deny\"\n"))
                .unwrap_err();
        assert_eq!(error.message, "unknown rule `no-such`");
        assert!(error.span.is_some());
    }

    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn levels_layer_in_order_and_cli_wins() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            dir.path(),
            "mcp-lint.toml",
            "exclude = [\"gen/**\"]\n[rules]\ndeprecated-logging = \"allow\"\nMCP101 = \"deny\"\n",
        );
        let layer = Layer::from_config_file(&path).unwrap();
        let config = Config::new(
            Some(layer),
            vec![],
            vec![(RuleId::DeprecatedLogging, Level::Warn)],
        );
        let file = dir.path().join("src/lib.rs");
        assert_eq!(
            config.severity(RuleId::DeprecatedSampling, &file),
            Some(Severity::Error)
        );
        assert_eq!(
            config.severity(RuleId::DeprecatedLogging, &file),
            Some(Severity::Warning)
        );
        assert_eq!(
            config.severity(RuleId::DeprecatedRoots, &file),
            Some(Severity::Warning)
        );
        assert!(config.is_excluded(&dir.path().join("gen/a/b.rs")));
        assert!(!config.is_excluded(&file));
    }

    #[test]
    fn unknown_rules_point_at_their_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            dir.path(),
            "Cargo.toml",
            "[package]\nname = \"x\"\n\n[package.metadata.mcp-lint.rules]\ndeprecated-sampeling = \"deny\"\n",
        );
        let error = Layer::from_manifest(&path, false).unwrap_err();
        assert_eq!(error.message, "unknown rule `deprecated-sampeling`");
        assert_eq!(
            error.help.as_deref(),
            Some("did you mean `deprecated-sampling`?")
        );
        let span = error.span.unwrap();
        assert_eq!(
            &error.source_code.inner()[span.offset()..span.offset() + span.len()],
            "deprecated-sampeling"
        );
    }

    #[test]
    fn bad_levels_and_unknown_keys_are_errors_with_spans() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            dir.path(),
            "mcp-lint.toml",
            "[rules]\ndeprecated-roots = \"loud\"\n",
        );
        let error = Layer::from_config_file(&path).unwrap_err();
        assert!(
            error.message.contains("unknown variant `loud`"),
            "{}",
            error.message
        );
        assert!(error.span.is_some());
        let path = write(dir.path(), "mcp-lint.toml", "exclud = []\n");
        let error = Layer::from_config_file(&path).unwrap_err();
        assert!(
            error.message.contains("unknown field `exclud`"),
            "{}",
            error.message
        );
    }

    #[test]
    fn manifests_without_the_table_have_no_layer() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "Cargo.toml", "[package]\nname = \"x\"\n");
        assert!(Layer::from_manifest(&path, false).unwrap().is_none());
    }
}
