//! Name resolution without a compiler: each file's `use` map, resolved through the crate's names
//! for the MCP SDK (renamed dependencies included).
//!
//! Blind spots (documented in the README): items re-exported by another crate or module
//! (`pub use rmcp;` in a wrapper crate, `use crate::mcp::Peer`), glob imports of anything but the
//! SDK, and the types of expressions (there is no type inference; see `analyzer.rs`).

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use proc_macro2::Span;
use syn::visit::Visit;

/// The canonical root of every SDK path after resolution.
pub const SDK_ROOT: &str = "rmcp";

/// One name brought into scope by a `use` item.
#[derive(Debug, Clone)]
pub struct Import {
    /// The full path, its root canonicalised to [`SDK_ROOT`] when it names the SDK.
    pub path: Vec<String>,
    /// The span of the imported name (or of `self` in `use a::b::{self}`).
    pub span: Span,
    /// The index of its `use` item in the file (names of one `use` share it).
    pub item: usize,
}

/// The `use` map of one file.
#[derive(Debug, Default)]
pub struct UseMap {
    names: HashMap<String, Vec<String>>,
    sdk_names: HashSet<String>,
    /// `use rmcp::model::*;` and the like: unresolved names may come from the SDK.
    sdk_glob: bool,
    /// Every import, in source order, for the rules that report at the `use` site.
    pub imports: Vec<Import>,
    /// Local names that hide a trigger word (`use rmcp::model::ContextInclusion as Ctx;`).
    pub trigger_aliases: Vec<String>,
}

/// A path after resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub segments: Vec<String>,
    /// The path names the SDK (its root resolved to rmcp, or an unresolved name under an SDK glob).
    pub is_sdk: bool,
    /// The first segment was a name imported by `use` (so the import already stood for it).
    pub through_import: bool,
}

impl Resolved {
    /// The last `n` segments (fewer if the path is shorter).
    pub fn tail(&self, n: usize) -> &[String] {
        &self.segments[self.segments.len().saturating_sub(n)..]
    }

    pub fn last(&self) -> &str {
        self.segments.last().map_or("", String::as_str)
    }
}

impl UseMap {
    /// Builds the map from every `use` item of the file, at any depth. `sdk_names` are the names
    /// under which the crate depends on rmcp (`rmcp` is always one).
    pub fn build<'a>(file: &syn::File, sdk_names: impl IntoIterator<Item = &'a str>) -> Self {
        let mut map = UseMap {
            sdk_names: sdk_names.into_iter().map(str::to_owned).collect(),
            ..UseMap::default()
        };
        map.sdk_names.insert(SDK_ROOT.to_owned());
        let mut collector = UseCollector {
            map: &mut map,
            item: 0,
        };
        collector.visit_file(file);
        map.trigger_aliases = map
            .names
            .iter()
            .filter(|(local, path)| {
                path.last().is_some_and(|last| {
                    last != *local && crate::prefilter::item_may_match(last.as_bytes())
                })
            })
            .map(|(local, _)| local.clone())
            .collect();
        map
    }

    /// Whether any `use` item imports from the SDK.
    pub fn imports_sdk(&self) -> bool {
        self.sdk_glob || self.imports.iter().any(|import| import.path[0] == SDK_ROOT)
    }

    /// Whether `name` is one of the crate's names for the SDK.
    pub fn is_sdk_name(&self, name: &str) -> bool {
        self.sdk_names.contains(name)
    }

    /// Resolves a path written in the file.
    pub fn resolve<'p>(&self, segments: impl IntoIterator<Item = &'p syn::Ident>) -> Resolved {
        let segments: Vec<String> = segments.into_iter().map(ToString::to_string).collect();
        self.resolve_strings(segments)
    }

    pub fn resolve_path(&self, path: &syn::Path) -> Resolved {
        self.resolve(path.segments.iter().map(|segment| &segment.ident))
    }

    fn resolve_strings(&self, mut segments: Vec<String>) -> Resolved {
        let Some(first) = segments.first() else {
            return Resolved {
                segments,
                is_sdk: false,
                through_import: false,
            };
        };
        if let Some(target) = self.names.get(first) {
            let mut resolved = target.clone();
            resolved.extend(segments.drain(1..));
            let is_sdk = resolved[0] == SDK_ROOT;
            return Resolved {
                segments: resolved,
                is_sdk,
                through_import: true,
            };
        }
        if self.sdk_names.contains(first) {
            segments[0] = SDK_ROOT.to_owned();
            return Resolved {
                segments,
                is_sdk: true,
                through_import: false,
            };
        }
        let local = matches!(first.as_str(), "crate" | "self" | "super" | "Self");
        Resolved {
            segments,
            is_sdk: !local && self.sdk_glob,
            through_import: false,
        }
    }

    fn canonical(&self, mut path: Vec<String>) -> Vec<String> {
        if path
            .first()
            .is_some_and(|first| self.sdk_names.contains(first))
        {
            path[0] = SDK_ROOT.to_owned();
        }
        path
    }
}

struct UseCollector<'m> {
    map: &'m mut UseMap,
    /// The index of the `use` item being read.
    item: usize,
}

impl UseCollector<'_> {
    fn tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(path) => {
                prefix.push(path.ident.to_string());
                self.tree(prefix, &path.tree);
                prefix.pop();
            }
            syn::UseTree::Name(name) => {
                let (local, full) = if name.ident == "self" {
                    (prefix.last().cloned().unwrap_or_default(), prefix.clone())
                } else {
                    let mut full = prefix.clone();
                    full.push(name.ident.to_string());
                    (name.ident.to_string(), full)
                };
                self.add(local, full, name.ident.span());
            }
            syn::UseTree::Rename(rename) => {
                let mut full = prefix.clone();
                if rename.ident != "self" {
                    full.push(rename.ident.to_string());
                }
                self.add(rename.rename.to_string(), full, rename.ident.span());
            }
            syn::UseTree::Glob(_) => {
                let canonical = self.map.canonical(prefix.clone());
                if canonical.first().is_some_and(|root| root == SDK_ROOT) {
                    self.map.sdk_glob = true;
                }
            }
            syn::UseTree::Group(group) => {
                for item in &group.items {
                    self.tree(prefix, item);
                }
            }
        }
    }

    fn add(&mut self, local: String, full: Vec<String>, span: Span) {
        if full.is_empty() {
            return;
        }
        // `use rmcp;` / `use rmcp as mcp;`: the local name becomes another name for the SDK.
        let canonical = self.map.canonical(full);
        if canonical.len() == 1 && canonical[0] == SDK_ROOT {
            self.map.sdk_names.insert(local.clone());
        }
        self.map.imports.push(Import {
            path: canonical.clone(),
            span,
            item: self.item,
        });
        if local != "_" {
            self.map.names.insert(local, canonical);
        }
    }
}

impl<'ast> Visit<'ast> for UseCollector<'_> {
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let mut prefix = Vec::new();
        self.tree(&mut prefix, &item.tree);
        self.item += 1;
    }
}

/// The identifiers of `path`, in order (`rmcp::model::CustomRequest::new` → its four names),
/// for matching a path against a written one.
pub fn segment_names(path: &syn::Path) -> Vec<String> {
    path.segments
        .iter()
        .map(|segment| segment.ident.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(map: &UseMap, path: &str) -> Resolved {
        map.resolve_path(&syn::parse_str::<syn::Path>(path).unwrap())
    }

    #[test]
    fn aliases_renamed_crates_and_globs_resolve_to_the_sdk() {
        let file: syn::File = syn::parse_str(
            "use legacy_rmcp::model::{ContextInclusion as Ctx, self};
             use legacy_rmcp::service::*;
             use crate::net::Peer as NetPeer;
             fn f() { use std::fmt; }",
        )
        .unwrap();
        let map = UseMap::build(&file, ["legacy_rmcp"]);
        let ctx = resolve(&map, "Ctx::ThisServer");
        assert_eq!(
            ctx.segments,
            ["rmcp", "model", "ContextInclusion", "ThisServer"]
        );
        assert!(ctx.is_sdk && ctx.through_import);
        assert!(resolve(&map, "model::ErrorCode").is_sdk);
        assert!(resolve(&map, "legacy_rmcp::Peer").is_sdk);
        assert!(!resolve(&map, "legacy_rmcp::Peer").through_import);
        assert!(!resolve(&map, "NetPeer").is_sdk);
        assert!(!resolve(&map, "fmt::Display").is_sdk);
        assert!(!resolve(&map, "crate::Peer").is_sdk);
        // Unresolved names may come from the SDK glob.
        assert!(resolve(&map, "RequestContext").is_sdk);
        assert!(map.imports_sdk());
    }

    #[test]
    fn without_sdk_imports_nothing_resolves_to_the_sdk() {
        let file: syn::File = syn::parse_str("use lsp::ContextInclusion;").unwrap();
        let map = UseMap::build(&file, []);
        assert!(!resolve(&map, "ContextInclusion::ThisServer").is_sdk);
        assert!(!resolve(&map, "Peer").is_sdk);
        assert!(!map.imports_sdk());
    }

    #[test]
    fn use_of_the_crate_itself_adds_a_name() {
        let file: syn::File = syn::parse_str("use rmcp as mcp;").unwrap();
        let map = UseMap::build(&file, []);
        assert!(resolve(&map, "mcp::model::ContextInclusion").is_sdk);
    }
}
