//! Peers kept in struct fields across the files of a crate.
//!
//! The walk of one file knows the peer fields of the structs that file declares. A struct is
//! often declared in one file (`state.rs`: `pub struct Session { client: Peer<RoleServer> }`)
//! and its methods, which make the requests, live in another (`ask.rs`: `impl Session { ..
//! self.client.elicit::<T>(..) .. }`). The first pass of a run, which reads every file anyway,
//! collects from each file of a crate that depends on the SDK and spells a peer type the fields
//! of its structs whose type is a peer ([`declared`]); the index of the crate ([`CratePeers`])
//! then tells the walk of every other file of the crate that `self.client` inside `impl Session`
//! is a peer.
//!
//! Scope: a field read through `self` in an `impl` of a struct declared in another file of the
//! same package (the package's `Cargo.toml`; the front-end does not follow `mod` items, so the
//! package's files stand for the crate). A struct name declared with different peer fields in
//! two files of the package is ambiguous and left out. A field read through another binding
//! (`session.client` with `session: &Session`) is not followed: bindings carry no type here.

use std::path::PathBuf;
use std::sync::Arc;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::imports::UseMap;
use super::CrateContext;

/// The structs of a crate that keep a peer in a field, and those fields.
#[derive(Debug, Default)]
pub struct CratePeers {
    fields: HashMap<String, HashSet<String>>,
}

impl CratePeers {
    /// The index of the declarations of every file of one crate (see [`declared`]).
    pub fn of(declarations: impl IntoIterator<Item = Declared>) -> Option<Arc<Self>> {
        let mut fields: HashMap<String, HashSet<String>> = HashMap::default();
        let mut ambiguous: HashSet<String> = HashSet::default();
        for declared in declarations {
            for (name, peers) in declared.structs {
                match fields.get(&name) {
                    Some(known) if *known != peers => {
                        ambiguous.insert(name);
                    }
                    Some(_) => {}
                    None => {
                        fields.insert(name, peers);
                    }
                }
            }
        }
        for name in &ambiguous {
            fields.remove(name);
        }
        fields.retain(|_, peers| !peers.is_empty());
        (!fields.is_empty()).then(|| Arc::new(CratePeers { fields }))
    }

    /// Whether the struct `name` keeps a peer in `field`.
    pub fn is_peer_field(&self, name: &str, field: &str) -> bool {
        self.fields
            .get(name)
            .is_some_and(|fields| fields.contains(field))
    }
}

/// The structs one file declares, each with its peer fields (none: a struct of that name
/// without one, which makes a same-named struct elsewhere ambiguous).
#[derive(Debug, Default)]
pub struct Declared {
    structs: Vec<(String, HashSet<String>)>,
}

impl Declared {
    pub fn is_empty(&self) -> bool {
        self.structs.is_empty()
    }
}

/// Whether `bytes` may declare a struct with a peer field: the words without which
/// [`declared`] finds nothing (checked on the first pass's buffer, before any parsing).
pub fn may_declare(bytes: &[u8]) -> bool {
    memchr::memmem::find(bytes, b"struct").is_some()
        && peer_types()
            .find_iter(bytes)
            .any(|found| bytes.get(found.end()) == Some(&b'<'))
}

/// Whether `bytes` spell one of the peer types' names anywhere (one search for all of them).
pub(super) fn names_a_peer_type(bytes: &[u8]) -> bool {
    peer_types().is_match(bytes)
}

/// One pass over a file for all the peer types' names (a SIMD search, as the file pre-filter's;
/// one `memmem` pass per name cost 3 % of a run on the MCP-heavy corpus). No name starts inside
/// another, so leftmost-first matches miss none.
fn peer_types() -> &'static aho_corasick::AhoCorasick {
    static AUTOMATON: std::sync::OnceLock<aho_corasick::AhoCorasick> = std::sync::OnceLock::new();
    AUTOMATON.get_or_init(|| {
        aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::LeftmostFirst)
            .kind(Some(aho_corasick::AhoCorasickKind::ContiguousNFA))
            .build(super::analyzer::PEER_TYPES)
            .expect("valid peer type names")
    })
}

/// The structs of `text` (a file of the crate of `context`) that keep a peer in a named field.
/// Only the file's `struct` items with a body and its `use` items are parsed, each alone: the
/// whole file is parsed by the walk, if at all.
pub fn declared(text: &str, context: &CrateContext) -> Declared {
    if !context.depends_on_sdk || !may_declare(text.as_bytes()) {
        return Declared::default();
    }
    // Only a struct whose body spells a peer type can have a peer field (`peer_type` matches the
    // type's written name); the others are only named, for `CratePeers::of`'s ambiguity check,
    // without parsing them (most structs of a large file are plain data).
    let mut out = Declared::default();
    let mut structs: Vec<syn::ItemStruct> = Vec::new();
    for span in struct_spans(text) {
        let source = &text[span];
        if spells_peer_type(source) {
            structs.extend(syn::parse_str::<syn::ItemStruct>(source).ok());
        } else if let Some(name) = struct_name(source) {
            out.structs.push((name.to_string(), HashSet::default()));
        }
    }
    if structs.is_empty() {
        return out;
    }
    let uses = syn::File {
        shebang: None,
        attrs: Vec::new(),
        items: use_spans(text)
            .filter_map(|span| syn::parse_str::<syn::ItemUse>(&text[span]).ok())
            .map(syn::Item::Use)
            .collect(),
    };
    let uses = UseMap::build(&uses, context.sdk_names.iter().map(String::as_str));
    for item in structs {
        let peers = item
            .fields
            .iter()
            .filter(|field| super::analyzer::peer_type(&uses, true, &field.ty))
            .filter_map(|field| field.ident.as_ref().map(ToString::to_string))
            .collect();
        out.structs.push((item.ident.to_string(), peers));
    }
    out
}

/// Whether `source` names one of the peer types as a whole word.
fn spells_peer_type(source: &str) -> bool {
    let bytes = source.as_bytes();
    super::analyzer::PEER_TYPES.iter().any(|ty| {
        memchr::memmem::find_iter(bytes, ty.as_bytes()).any(|at| {
            let word = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_';
            !at.checked_sub(1).is_some_and(|before| word(&bytes[before]))
                && !bytes.get(at + ty.len()).is_some_and(word)
        })
    })
}

/// The name of the struct whose span (`struct NAME .. { .. }`) is `source`.
fn struct_name(source: &str) -> Option<&str> {
    let rest = source.strip_prefix("struct")?.trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    (end > 0 && !rest.as_bytes()[0].is_ascii_digit()).then(|| &rest[..end])
}

/// The byte ranges `struct NAME .. { .. }` of `text` (from the keyword to the body's closing
/// brace); tuple and unit structs have no named fields and are left out.
fn struct_spans(text: &str) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
    let bytes = text.as_bytes();
    memchr::memmem::find_iter(bytes, b"struct").filter_map(move |start| {
        let before = start.checked_sub(1).map(|at| bytes[at]);
        let after = bytes.get(start + 6).copied();
        if before.is_some_and(|b| !b.is_ascii_whitespace())
            || !after.is_some_and(|b| b.is_ascii_whitespace())
        {
            return None;
        }
        let open = start + memchr::memchr3(b'{', b';', b'(', &bytes[start..])?;
        if bytes[open] != b'{' {
            return None;
        }
        // The braces only, by a SIMD search: a `struct` in a comment runs on to the next block,
        // possibly a whole `impl` or `mod`.
        let mut depth = 0usize;
        for offset in memchr::memchr2_iter(b'{', b'}', &bytes[open..]) {
            if bytes[open + offset] == b'{' {
                depth += 1;
            } else {
                depth -= 1;
                if depth == 0 {
                    return Some(start..open + offset + 1);
                }
            }
        }
        None
    })
}

/// The byte ranges of the `use` items of `text` that start a line (`use ..;`, `pub use ..;`,
/// `pub(crate) use ..;`). Found from each `use ` the file spells (one SIMD search), whose line
/// holds only blanks and the visibility before it: splitting and trimming every line of the file
/// was 2 % of a run's instructions on the MCP-heavy corpus.
fn use_spans(text: &str) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
    let bytes = text.as_bytes();
    memchr::memmem::find_iter(bytes, b"use ").filter_map(move |at| {
        let line_start = memchr::memrchr(b'\n', &bytes[..at]).map_or(0, |line| line + 1);
        let lead = text[line_start..at].trim_start();
        if !matches!(lead, "" | "pub " | "pub(crate) ") {
            return None;
        }
        let from = at - lead.len();
        let end = from + text[from..].find(';')? + 1;
        Some(from..end)
    })
}

/// `contexts` (one per Rust file), each crate's with the peer fields its files declare
/// (`declared`, in the same order); those indexes also go into `by_manifest`.
pub fn with_crate_peers(
    contexts: &[Arc<CrateContext>],
    declared: Vec<Declared>,
    by_manifest: &mut std::collections::HashMap<PathBuf, Arc<CratePeers>>,
) -> Vec<Arc<CrateContext>> {
    let mut by_crate: HashMap<*const CrateContext, Vec<Declared>> = HashMap::default();
    for (context, declared) in contexts.iter().zip(declared) {
        if !declared.is_empty() {
            by_crate
                .entry(Arc::as_ptr(context))
                .or_default()
                .push(declared);
        }
    }
    if by_crate.is_empty() {
        return contexts.to_vec();
    }
    let mut enriched: HashMap<*const CrateContext, Arc<CrateContext>> = HashMap::default();
    contexts
        .iter()
        .map(|context| {
            let key = Arc::as_ptr(context);
            if let Some(done) = enriched.get(&key) {
                return done.clone();
            }
            let Some(peers) = by_crate.remove(&key).and_then(CratePeers::of) else {
                return context.clone();
            };
            if let Some(manifest) = &context.manifest {
                by_manifest.insert(manifest.clone(), peers.clone());
            }
            let done = Arc::new(CrateContext {
                peers: Some(peers),
                ..(**context).clone()
            });
            enriched.insert(key, done.clone());
            done
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`use_spans`] as it was, line by line: what the search must find.
    fn use_spans_by_line(text: &str) -> Vec<std::ops::Range<usize>> {
        let mut offset = 0;
        text.split_inclusive('\n')
            .filter_map(|line| {
                let start = offset;
                offset += line.len();
                let trimmed = line.trim_start();
                let lead = line.len() - trimmed.len();
                let item = ["use ", "pub use ", "pub(crate) use "]
                    .iter()
                    .any(|prefix| trimmed.starts_with(prefix));
                if !item {
                    return None;
                }
                let from = start + lead;
                let end = from + text[from..].find(';')? + 1;
                Some(from..end)
            })
            .collect()
    }

    #[test]
    fn use_items_are_found_as_line_by_line() {
        let text = "use a;\n  pub use b::{c,\n use d};\n\tpub(crate) use e; use f;\n// use g;\n\
                    let reuse = h;\n\u{a0}use i;\npub  use j;\nuse k::{l, m}\r\nuse n\n";
        assert_eq!(use_spans(text).collect::<Vec<_>>(), use_spans_by_line(text));
        assert_eq!(use_spans(text).count(), 5);
        let root = mcp_migrate_workspace_bins::workspace_root(env!("CARGO_MANIFEST_DIR"));
        for source in ["lint/src/rust/crate_peers.rs", "lint/src/rust/imports.rs"] {
            let text = std::fs::read_to_string(root.join(source)).unwrap();
            assert_eq!(
                use_spans(&text).collect::<Vec<_>>(),
                use_spans_by_line(&text)
            );
        }
    }

    fn context() -> CrateContext {
        CrateContext {
            depends_on_sdk: true,
            ..CrateContext::default()
        }
    }

    #[test]
    fn peer_fields_of_the_crates_structs_are_indexed_and_clashing_names_dropped() {
        let state = "use rmcp::{Peer, RoleServer};\n\
                     pub struct Session { pub client: Peer<RoleServer>, pub name: String }\n\
                     pub struct Editor { pub client: LspClient }\n\
                     mod inner { pub struct Slot { pub peer_slot: std::sync::Arc<tokio::sync::Mutex<Option<rmcp::Peer<rmcp::RoleServer>>>> } }\n";
        let other =
            "pub struct Twice { pub client: rmcp::service::RequestContext<rmcp::RoleServer> }\n";
        let clash = "use rmcp::{Peer, RoleServer};\n\
                     pub struct Twice { pub client: String }\n\
                     pub struct Holder { pub held: Peer<RoleServer> }\n";
        let index = CratePeers::of([
            declared(state, &context()),
            declared(other, &context()),
            declared(clash, &context()),
        ])
        .unwrap();
        assert!(index.is_peer_field("Session", "client"));
        assert!(!index.is_peer_field("Session", "name"));
        assert!(!index.is_peer_field("Editor", "client"));
        assert!(index.is_peer_field("Slot", "peer_slot"));
        assert!(!index.is_peer_field("Twice", "client"), "ambiguous");
        assert!(index.is_peer_field("Holder", "held"));
        // Not an SDK crate, or no peer type spelt: nothing is parsed.
        assert!(declared(state, &CrateContext::default()).is_empty());
        assert!(declared("pub struct A { b: B }", &context()).is_empty());
    }
}
