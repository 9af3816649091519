//! Finding what to lint: the cargo workspace of the current directory, or the given paths
//! (directories walked in parallel, honouring `.gitignore`), and the crate each file belongs to.
//!
//! Besides Rust files and `Cargo.toml`, the walk collects the sources of the other front-ends
//! (TypeScript/JavaScript and Python, [`Language`]) and their manifests (`package.json`,
//! `pyproject.toml`, `requirements*.txt`, [`ManifestKind`]). It never enters installed
//! dependencies ([`crate::lang::SKIPPED_DIRS`]: `node_modules`, virtualenvs) nor cargo target
//! directories; build output such as `dist/` or `build/` is skipped only when `.gitignore` says
//! so (as it usually does), like any other path: what is committed is linted.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::lang::{Language, ManifestKind, SKIPPED_DIRS};
use crate::manifest::{Manifest, ParsedManifest};
use crate::rust::CrateContext;

/// The files of one run.
#[derive(Debug, Default)]
pub struct Targets {
    pub rust_files: Vec<PathBuf>,
    /// The `Cargo.toml` files.
    pub manifests: Vec<PathBuf>,
    /// The sources of the other front-ends (TypeScript/JavaScript, Python), each file's
    /// language told by [`Language::of`].
    pub sources: Vec<PathBuf>,
    /// The manifests of the other ecosystems ([`ManifestKind::of`]).
    pub package_manifests: Vec<PathBuf>,
    /// The text of each manifest (of either list) found by the directory walk, read once by the walker threads
    /// (configuration, crate contexts and the manifest rules all use it). A manifest missing here
    /// is read when needed, and its read error reported then.
    pub manifest_texts: HashMap<PathBuf, String>,
    /// The workspace root, when linting a cargo workspace (where configuration is looked up).
    pub workspace_root: Option<PathBuf>,
    /// The paths named on the command line. Naming an excluded path lints it anyway.
    pub explicit: Vec<PathBuf>,
}

impl Targets {
    /// Whether `path` should be skipped: an exclude matches it, and the user did not name it, or
    /// name a directory whose direct contents the excludes cover (`cargo mcp-lint tests/fixtures`
    /// lints the fixtures even though the workspace excludes `tests/fixtures/**`).
    pub fn is_excluded(&self, path: &Path, config: &crate::config::Config) -> bool {
        config.is_excluded(path)
            && !self.explicit.iter().any(|named| {
                path.starts_with(named)
                    && (config.is_excluded(named) || config.is_excluded(&named.join("entry")))
            })
    }
}

/// Why targets could not be found.
#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    #[error("no such file or directory: {0}")]
    Missing(PathBuf),
    #[error("could not read the cargo workspace (`cargo metadata` failed): {0}")]
    Metadata(String),
}

/// With no paths: every member of the cargo workspace of the current directory.
pub fn workspace_targets() -> Result<Targets, WalkError> {
    let metadata = cargo_metadata::MetadataCommand::new()
        .no_deps()
        .exec()
        .map_err(|error| WalkError::Metadata(error.to_string()))?;
    let root = metadata.workspace_root.clone().into_std_path_buf();
    let mut dirs: Vec<PathBuf> = metadata
        .workspace_packages()
        .iter()
        .filter_map(|package| {
            package
                .manifest_path
                .parent()
                .map(|dir| dir.to_path_buf().into_std_path_buf())
        })
        .collect();
    dirs.sort();
    // A member nested in another member's directory is walked with its parent.
    dirs.dedup_by(|inner, outer| inner.starts_with(outer));
    let mut targets = collect(&dirs)?;
    let root_manifest = root.join("Cargo.toml");
    if root_manifest.is_file() && !targets.manifests.contains(&root_manifest) {
        targets.manifests.push(root_manifest);
    }
    targets.workspace_root = Some(root);
    Ok(targets)
}

/// The given files and directories.
pub fn path_targets(paths: &[PathBuf]) -> Result<Targets, WalkError> {
    let mut targets = collect(paths)?;
    targets.explicit = paths.to_vec();
    Ok(targets)
}

fn collect(paths: &[PathBuf]) -> Result<Targets, WalkError> {
    let mut targets = Targets::default();
    let mut dirs = Vec::new();
    for path in paths {
        if path.is_dir() {
            dirs.push(path.clone());
        } else if path.is_file() {
            classify(path.clone(), &mut targets);
        } else {
            return Err(WalkError::Missing(path.clone()));
        }
    }
    if let Some((first, rest)) = dirs.split_first() {
        let mut builder = ignore::WalkBuilder::new(first);
        for dir in rest {
            builder.add(dir);
        }
        // Honour .gitignore even outside a git repository (fixtures, unpacked crates).
        builder.require_git(false);
        builder.filter_entry(|entry| {
            // Skip installed dependencies, and cargo target directories that no .gitignore
            // mentions.
            !(entry.file_type().is_some_and(|t| t.is_dir())
                && (SKIPPED_DIRS.iter().any(|name| entry.file_name() == *name)
                    || entry.path().join("CACHEDIR.TAG").is_file()))
        });
        let found = Mutex::new(Targets::default());
        builder.build_parallel().run(|| {
            Box::new(|entry| {
                if let Ok(entry) = entry {
                    if entry.file_type().is_some_and(|t| t.is_file()) {
                        let path = entry.into_path();
                        // Read manifests here, on the walker threads, outside the lock.
                        let text = (is_manifest(&path) || ManifestKind::of(&path).is_some())
                            .then(|| std::fs::read_to_string(&path).ok())
                            .flatten();
                        let mut found = found.lock().expect("walker threads do not panic");
                        if let Some(text) = text {
                            found.manifest_texts.insert(path.clone(), text);
                        }
                        classify(path, &mut found);
                    }
                }
                ignore::WalkState::Continue
            })
        });
        let found = found.into_inner().expect("walker threads do not panic");
        targets.rust_files.extend(found.rust_files);
        targets.manifests.extend(found.manifests);
        targets.sources.extend(found.sources);
        targets.package_manifests.extend(found.package_manifests);
        targets.manifest_texts.extend(found.manifest_texts);
    }
    // Byte order (not `Path`'s component order, several times slower on 10,000s of paths): the
    // order only has to be deterministic, findings are sorted at the end.
    targets
        .rust_files
        .sort_unstable_by(|a, b| a.as_os_str().cmp(b.as_os_str()));
    targets.rust_files.dedup();
    targets
        .manifests
        .sort_unstable_by(|a, b| a.as_os_str().cmp(b.as_os_str()));
    targets.manifests.dedup();
    for list in [&mut targets.sources, &mut targets.package_manifests] {
        list.sort_unstable_by(|a, b| a.as_os_str().cmp(b.as_os_str()));
        list.dedup();
    }
    Ok(targets)
}

fn is_manifest(path: &Path) -> bool {
    path.file_name().is_some_and(|name| name == "Cargo.toml")
}

fn classify(path: PathBuf, targets: &mut Targets) {
    if path.extension().is_some_and(|ext| ext == "rs") {
        targets.rust_files.push(path);
    } else if is_manifest(&path) {
        targets.manifests.push(path);
    } else if Language::of(&path).is_some() {
        targets.sources.push(path);
    } else if ManifestKind::of(&path).is_some() {
        targets.package_manifests.push(path);
    }
}

/// Finds, for each Rust file, the crate it belongs to (the nearest `Cargo.toml` above it with a
/// `[package]`), reading each manifest once.
#[derive(Debug, Default)]
pub struct CrateIndex<'t> {
    by_dir: HashMap<PathBuf, Option<Arc<CrateContext>>>,
    /// Manifest texts already read (by the walk); others are read from disk.
    texts: Option<&'t HashMap<PathBuf, String>>,
    /// Manifests already parsed (those of the walk that name rmcp); others are parsed here.
    parsed: Option<&'t HashMap<&'t Path, ParsedManifest>>,
    /// Manifests that could not be parsed while looking for context (reported if linted).
    pub package_dirs: BTreeSet<PathBuf>,
}

impl<'t> CrateIndex<'t> {
    /// An index that takes manifest texts from `texts` when it has them.
    pub fn with_texts(texts: &'t HashMap<PathBuf, String>) -> Self {
        CrateIndex {
            texts: Some(texts),
            ..CrateIndex::default()
        }
    }

    /// The same index, taking parsed manifests from `parsed` when it has them.
    pub fn with_parsed(self, parsed: &'t HashMap<&'t Path, ParsedManifest>) -> Self {
        CrateIndex {
            parsed: Some(parsed),
            ..self
        }
    }

    fn manifest_text(&self, path: &Path) -> Option<Cow<'t, str>> {
        match self.texts.and_then(|texts| texts.get(path)) {
            Some(text) => Some(Cow::Borrowed(text.as_str())),
            None => std::fs::read_to_string(path).ok().map(Cow::Owned),
        }
    }

    pub fn context_for(&mut self, file: &Path) -> Arc<CrateContext> {
        let mut visited = Vec::new();
        let mut found = None;
        for dir in file.ancestors().skip(1) {
            if let Some(cached) = self.by_dir.get(dir) {
                found = cached.clone();
                break;
            }
            visited.push(dir.to_path_buf());
            let manifest_path = dir.join("Cargo.toml");
            if let Some(text) = self.manifest_text(&manifest_path) {
                // Byte-level shortcut: a manifest that never says `rmcp` has no SDK dependency.
                if !text.contains(crate::manifest::RMCP) {
                    if text.contains("[package]") {
                        self.package_dirs.insert(dir.to_path_buf());
                        found = Some(Arc::new(CrateContext {
                            manifest: Some(manifest_path),
                            ..CrateContext::default()
                        }));
                        break;
                    }
                    continue;
                }
                let owned;
                let parsed = match self
                    .parsed
                    .and_then(|parsed| parsed.get(manifest_path.as_path()))
                {
                    Some(parsed) => parsed,
                    None => {
                        owned = Manifest::parse(
                            &manifest_path,
                            manifest_path.clone(),
                            text.into_owned(),
                        );
                        &owned
                    }
                };
                if let Ok(manifest) = parsed {
                    if manifest.package_name.is_some() {
                        self.package_dirs.insert(dir.to_path_buf());
                        found = Some(Arc::new(CrateContext {
                            sdk_names: manifest.sdk_code_names().map(str::to_owned).collect(),
                            depends_on_sdk: manifest.depends_on_sdk(),
                            manifest: Some(manifest_path),
                            peers: None,
                        }));
                        break;
                    }
                }
            }
        }
        for dir in visited {
            self.by_dir.insert(dir, found.clone());
        }
        found.unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_language_is_collected_and_installed_dependencies_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for file in [
            "src/main.rs",
            "Cargo.toml",
            "web/server.ts",
            "web/app.tsx",
            "web/bin/cli.mjs",
            "web/types.d.ts",
            "web/package.json",
            "web/node_modules/@modelcontextprotocol/sdk/dist/server.js",
            "web/node_modules/@modelcontextprotocol/sdk/package.json",
            "py/server.py",
            "py/stubs.pyi",
            "py/pyproject.toml",
            "py/requirements-dev.txt",
            "py/.venv/lib/python3.12/site-packages/mcp/server.py",
            "py/venv/lib/mcp.py",
            "py/__pycache__/server.py",
        ] {
            let path = root.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, "").unwrap();
        }
        let targets = path_targets(&[root.to_path_buf()]).unwrap();
        let relative = |paths: &[PathBuf]| -> Vec<String> {
            paths
                .iter()
                .map(|p| p.strip_prefix(root).unwrap().to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(relative(&targets.rust_files), ["src/main.rs"]);
        assert_eq!(relative(&targets.manifests), ["Cargo.toml"]);
        assert_eq!(
            relative(&targets.sources),
            [
                "py/server.py",
                "web/app.tsx",
                "web/bin/cli.mjs",
                "web/server.ts"
            ]
        );
        assert_eq!(
            relative(&targets.package_manifests),
            [
                "py/pyproject.toml",
                "py/requirements-dev.txt",
                "web/package.json"
            ]
        );
        // The walk read the manifests' texts for configuration and the manifest rules.
        assert!(targets
            .manifest_texts
            .contains_key(&root.join("web/package.json")));
    }
}
