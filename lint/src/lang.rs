//! The languages the linter reads, how a file's language is told from its name, and the comment
//! syntax its suppressions use. The walk ([`crate::walk`]) sorts files with these; the dispatch in
//! `lib.rs` sends each to its front-end.

use std::path::Path;
use std::sync::Arc;

use crate::diagnostic::{Diagnostic, SourceFile};
use crate::suppress::CommentStyle;

/// The entry points of a front-end reached through the common dispatch (`lib.rs`).
#[derive(Debug, Clone, Copy)]
pub struct FrontEnd {
    /// A cheap test of the bytes: `false` when nothing in the file can be reported, so that,
    /// with the pre-filter on, it is not parsed.
    pub may_match: fn(&[u8]) -> bool,
    /// Lints one file: its findings, with their fixes attached; a file that does not parse is
    /// `unparsable-file`. The flag is the run's pre-filter switch: a front-end that skips, inside
    /// a file, what cannot match (TypeScript's top-level statements) parses everything without it.
    pub lint_file: fn(&Arc<SourceFile>, bool) -> Vec<Diagnostic>,
}

/// A source language with a front-end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Language {
    Rust,
    /// TypeScript and JavaScript, in every module flavour (`.ts .tsx .mts .cts .js .mjs .cjs`).
    TypeScript,
    /// Python sources (`.py`; stub files `.pyi` are not linted).
    Python,
}

impl Language {
    /// The language of a source file, from its extension. Declaration files (`.d.ts`, `.d.mts`,
    /// `.d.cts`) hold types only, like Python's `.pyi` stubs: neither is linted.
    pub fn of(path: &Path) -> Option<Language> {
        let ext = path.extension()?.to_str()?;
        match ext {
            "rs" => Some(Language::Rust),
            "ts" | "mts" | "cts" => {
                let stem = path.file_stem()?.to_str()?;
                (!stem.ends_with(".d")).then_some(Language::TypeScript)
            }
            "tsx" | "js" | "mjs" | "cjs" => Some(Language::TypeScript),
            "py" => Some(Language::Python),
            _ => None,
        }
    }

    /// The comment syntax of the language's suppressions.
    pub fn comment_style(self) -> CommentStyle {
        match self {
            Language::Rust => CommentStyle::Slashes,
            Language::TypeScript => CommentStyle::Script,
            Language::Python => CommentStyle::Python,
        }
    }

    /// The front-end the common dispatch sends the language's files to. `None` for Rust, which
    /// has its own pre-filtered passes in `lib.rs`.
    pub fn front_end(self) -> Option<FrontEnd> {
        match self {
            Language::TypeScript => Some(FrontEnd {
                may_match: crate::typescript::may_match,
                lint_file: crate::typescript::lint_file,
            }),
            Language::Python => Some(FrontEnd {
                may_match: crate::python::may_match,
                lint_file: |file, _| crate::python::lint_file(file),
            }),
            Language::Rust => None,
        }
    }
}

/// The dependency manifests of the other ecosystems (`Cargo.toml` is the walk's own
/// `manifests`): where a project declares its MCP SDK.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ManifestKind {
    /// npm's `package.json`.
    PackageJson,
    /// Python's `pyproject.toml` (also where `[tool.mcp-lint]` configuration lives).
    Pyproject,
    /// pip's `requirements.txt`, `requirements-dev.txt`, `requirements/…`: any
    /// `requirements*.txt`.
    Requirements,
}

impl ManifestKind {
    /// The kind of a manifest, from its file name.
    pub fn of(path: &Path) -> Option<ManifestKind> {
        let name = path.file_name()?.to_str()?;
        match name {
            "package.json" => Some(ManifestKind::PackageJson),
            "pyproject.toml" => Some(ManifestKind::Pyproject),
            _ if name.starts_with("requirements") && name.ends_with(".txt") => {
                Some(ManifestKind::Requirements)
            }
            _ => None,
        }
    }

    /// The front-end of the manifest's rules.
    pub fn front_end(self) -> Option<FrontEnd> {
        match self {
            ManifestKind::PackageJson => Some(FrontEnd {
                may_match: crate::typescript::package_json::may_match,
                lint_file: |file, _| crate::typescript::package_json::lint_file(file),
            }),
            ManifestKind::Pyproject => Some(FrontEnd {
                may_match: crate::python::manifest::may_match,
                lint_file: |file, _| crate::python::manifest::lint_pyproject(file),
            }),
            ManifestKind::Requirements => Some(FrontEnd {
                may_match: crate::python::manifest::may_match,
                lint_file: |file, _| crate::python::manifest::lint_requirements(file),
            }),
        }
    }

    /// The comment syntax of suppressions in the manifest (JSON has none).
    pub fn comment_style(self) -> CommentStyle {
        match self {
            ManifestKind::PackageJson => CommentStyle::NoComments,
            ManifestKind::Pyproject | ManifestKind::Requirements => CommentStyle::Hash,
        }
    }
}

/// Directory names the walk never enters, whatever `.gitignore` says: installed dependencies
/// (`node_modules`, Python virtual environments and `site-packages`) and bytecode caches. Their
/// code is not the project's, and a legacy SDK found there is reported through the manifest.
pub const SKIPPED_DIRS: &[&str] = &[
    "node_modules",
    ".venv",
    "venv",
    "site-packages",
    "__pycache__",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_and_manifests_are_told_from_names() {
        for (name, language) in [
            ("a.rs", Some(Language::Rust)),
            ("a.ts", Some(Language::TypeScript)),
            ("a.tsx", Some(Language::TypeScript)),
            ("a.mts", Some(Language::TypeScript)),
            ("a.cts", Some(Language::TypeScript)),
            ("a.js", Some(Language::TypeScript)),
            ("a.mjs", Some(Language::TypeScript)),
            ("a.cjs", Some(Language::TypeScript)),
            ("a.d.ts", None),
            ("a.d.mts", None),
            ("a.py", Some(Language::Python)),
            ("a.pyi", None),
            ("a.json", None),
            ("Makefile", None),
        ] {
            assert_eq!(Language::of(Path::new(name)), language, "{name}");
        }
        for (name, kind) in [
            ("package.json", Some(ManifestKind::PackageJson)),
            ("pyproject.toml", Some(ManifestKind::Pyproject)),
            ("requirements.txt", Some(ManifestKind::Requirements)),
            ("requirements-dev.txt", Some(ManifestKind::Requirements)),
            ("tsconfig.json", None),
            ("Cargo.toml", None),
        ] {
            assert_eq!(ManifestKind::of(Path::new(name)), kind, "{name}");
        }
    }
}
