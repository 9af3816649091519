//! Parse only what can match: rustc's lexer splits a file into its top-level items, and the items
//! that contain no trigger word (see [`crate::prefilter::item_may_match`]) are blanked out before
//! syn parses the file. On an MCP-heavy crate most files pass the file-level pre-filter, but most
//! of each file (tool bodies, helpers, tests) never names the legacy surface.
//!
//! Blanking replaces every byte of a skipped item except line breaks with a space, so lines,
//! columns and byte offsets of what is left are those of the original file and the findings need
//! no mapping. Kept whatever their words: `use` items (name resolution), `struct`, `static` and
//! `const` items (peer-typed fields and statics, secret-looking fields). The split is a lexer's
//! approximation of the grammar; when the blanked text does not parse, the caller parses the
//! original, so the approximation can cost time, never findings.

use ra_ap_rustc_lexer::{tokenize, FrontmatterAllowed, TokenKind};

/// What one lexer pass learns about a file.
pub struct Scan {
    /// The offset of the first delimiter that opens level `max_depth + 1`, if any.
    pub too_deep: Option<usize>,
    /// The file with the items that cannot match blanked out, when that blanks anything.
    pub masked: Option<String>,
}

/// Keywords that start an item kept whatever its words.
const ALWAYS_KEPT: &[&str] = &["use", "struct", "static", "const", "extern"];

/// Items whose body is itself a list of items, split again when they are kept: the methods of
/// an `impl ServerHandler` block, the functions of a `mod host_fns`.
const CONTAINERS: &[&str] = &["impl", "mod", "trait"];

/// One item: its byte range (attributes and doc comments included) and its first keyword.
struct Item<'t> {
    start: usize,
    end: usize,
    keyword: &'t str,
}

/// What [`split`] finds in a list of items.
struct Split<'t> {
    items: Vec<Item<'t>>,
    /// `use rmcp::model::ContextInclusion as Ctx;`: items that say `Ctx::AllServers` name the
    /// legacy item without its trigger word.
    aliases: Vec<&'t str>,
    /// The offset of the first delimiter deeper than the limit.
    too_deep: Option<usize>,
    /// The delimiters balance.
    balanced: bool,
}

/// Splits `text[from..to]`, a list of items, at its top-level `;` and `}`.
fn split(text: &str, from: usize, to: usize, max_depth: usize) -> Split<'_> {
    let mut out = Split {
        items: Vec::new(),
        aliases: Vec::new(),
        too_deep: None,
        balanced: true,
    };
    let mut depth = 0usize;
    let mut offset = from;
    let mut item_start: Option<usize> = None;
    let mut keyword: Option<&str> = None;
    // The last item ended at a `}`: a following `;` or `.`/`?` chain still belongs to it
    // (`const X: S = S { .. };`, `static F: Lazy<..> = Lazy::new(|| { .. }).into();`).
    let mut closed_by_brace = false;
    let mut after_as = false;
    for token in tokenize(&text[from..to], FrontmatterAllowed::No) {
        let start = offset;
        let end = offset + token.len as usize;
        offset = end;
        let trivia = matches!(
            token.kind,
            TokenKind::Whitespace
                | TokenKind::LineComment { doc_style: None }
                | TokenKind::BlockComment {
                    doc_style: None,
                    ..
                }
        );
        if trivia {
            continue;
        }
        if depth == 0 && closed_by_brace {
            closed_by_brace = false;
            if matches!(
                token.kind,
                TokenKind::Semi | TokenKind::Dot | TokenKind::Question
            ) {
                let last = out.items.pop().expect("closed_by_brace follows a push");
                if token.kind == TokenKind::Semi {
                    out.items.push(Item { end, ..last });
                } else {
                    item_start = Some(last.start);
                    keyword = Some(last.keyword);
                }
                continue;
            }
        }
        match token.kind {
            TokenKind::OpenParen | TokenKind::OpenBrace | TokenKind::OpenBracket => {
                if depth == 0 && item_start.is_none() {
                    item_start = Some(start);
                }
                depth += 1;
                if depth > max_depth {
                    out.too_deep = Some(start);
                    return out;
                }
                continue;
            }
            TokenKind::CloseParen | TokenKind::CloseBracket => {
                depth = depth.saturating_sub(1);
                continue;
            }
            TokenKind::CloseBrace => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    if let Some(item_begin) = item_start.take() {
                        out.items.push(Item {
                            start: item_begin,
                            end,
                            keyword: keyword.take().unwrap_or(""),
                        });
                        closed_by_brace = true;
                    }
                }
                continue;
            }
            _ => {}
        }
        if token.kind == TokenKind::Ident && keyword == Some("use") {
            let word = &text[start..end];
            if after_as && word != "_" {
                out.aliases.push(word);
            }
            after_as = word == "as";
        }
        if depth > 0 {
            continue;
        }
        if item_start.is_none() {
            item_start = Some(start);
        }
        if token.kind == TokenKind::Ident && keyword.is_none() {
            let word = &text[start..end];
            if !matches!(
                word,
                "pub" | "crate" | "in" | "self" | "super" | "unsafe" | "async" | "default"
            ) {
                keyword = Some(word);
            }
        }
        if token.kind == TokenKind::Semi {
            if let Some(item_begin) = item_start.take() {
                out.items.push(Item {
                    start: item_begin,
                    end,
                    keyword: keyword.take().unwrap_or(""),
                });
            }
        }
    }
    out.balanced = depth == 0;
    out
}

/// Scans `text`: nesting depth, and (unless `mask` is false) the blanked form.
pub fn scan(text: &str, max_depth: usize, mask: bool) -> Scan {
    let top = split(text, 0, text.len(), max_depth);
    if top.too_deep.is_some() || !mask || !top.balanced {
        return Scan {
            too_deep: top.too_deep,
            masked: None,
        };
    }
    let mut masked: Option<Vec<u8>> = None;
    blank(text, &top.items, &top.aliases, &mut masked);
    Scan {
        too_deep: None,
        // Only ASCII bytes of whole items were replaced by ASCII spaces: still UTF-8, unless an
        // item boundary fell inside a multi-byte character, which the lexer never produces.
        masked: masked.and_then(|bytes| String::from_utf8(bytes).ok()),
    }
}

/// Blanks the items that cannot match; splits the kept containers and blanks inside them.
fn blank(text: &str, items: &[Item<'_>], aliases: &[&str], masked: &mut Option<Vec<u8>>) {
    for item in items {
        if ALWAYS_KEPT.contains(&item.keyword) {
            continue;
        }
        let bytes = &text.as_bytes()[item.start..item.end];
        let may_match = crate::prefilter::item_may_match(bytes)
            || aliases
                .iter()
                .any(|alias| memchr::memmem::find(bytes, alias.as_bytes()).is_some());
        if !may_match {
            let out = masked.get_or_insert_with(|| text.as_bytes().to_vec());
            for byte in &mut out[item.start..item.end] {
                if *byte != b'\n' && *byte != b'\r' {
                    *byte = b' ';
                }
            }
            continue;
        }
        if CONTAINERS.contains(&item.keyword) && bytes.last() == Some(&b'}') {
            if let Some(open) = body_start(text, item) {
                let inner = split(text, open + 1, item.end - 1, usize::MAX);
                if inner.balanced {
                    let mut all_aliases = aliases.to_vec();
                    all_aliases.extend(inner.aliases.iter().copied());
                    blank(text, &inner.items, &all_aliases, masked);
                }
            }
        }
    }
}

/// The offset of the `{` that opens a container item's body: the first top-level brace after
/// its attributes (`#[..]` uses brackets; `impl<const N: usize>` has no braces).
fn body_start(text: &str, item: &Item<'_>) -> Option<usize> {
    let mut depth = 0usize;
    let mut offset = item.start;
    for token in tokenize(&text[item.start..item.end], FrontmatterAllowed::No) {
        let start = offset;
        offset += token.len as usize;
        match token.kind {
            TokenKind::OpenBrace if depth == 0 => return Some(start),
            TokenKind::OpenParen | TokenKind::OpenBracket | TokenKind::OpenBrace => depth += 1,
            TokenKind::CloseParen | TokenKind::CloseBracket | TokenKind::CloseBrace => {
                depth = depth.saturating_sub(1)
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masked(text: &str) -> String {
        scan(text, 256, true)
            .masked
            .unwrap_or_else(|| text.to_owned())
    }

    #[test]
    fn items_without_trigger_words_are_blanked_in_place() {
        let text = "use std::fmt;\n\n/// Adds.\n#[inline]\nfn add(a: u8) -> u8 {\n    a + 1\n}\n\nasync fn ask(peer: Peer) {\n    peer.create_message(p).await;\n}\n";
        let out = masked(text);
        assert_eq!(out.len(), text.len());
        assert_eq!(out.lines().count(), text.lines().count());
        assert!(out.starts_with("use std::fmt;"));
        assert!(!out.contains("fn add"));
        assert!(!out.contains("Adds"));
        assert!(out.contains("peer.create_message(p).await;"));
        syn::parse_file(&out).unwrap();
    }

    #[test]
    fn structs_statics_and_brace_initialised_items_stay_whole() {
        let text = "struct Gateway { peer: Option<Peer<RoleServer>> }\nstatic P: OnceLock<Peer<RoleServer>> = OnceLock::new();\nconst C: S = S { a: 1 };\nstatic L: Lazy<u8> = Lazy::new(|| { 1 }).clone();\nimpl Gateway { fn quiet(&self) {} }\n";
        let out = masked(text);
        assert!(out.contains("struct Gateway"));
        assert!(out.contains("static P"));
        assert!(out.contains("const C: S = S { a: 1 };"));
        assert!(out.contains("Lazy::new(|| { 1 }).clone();"));
        assert!(!out.contains("impl Gateway"));
        syn::parse_file(&out).unwrap();
    }

    #[test]
    fn items_naming_an_import_alias_stay() {
        let text = "use rmcp::model::{ContextInclusion as Ctx, Role};\nuse std::io::Write as _;\nfn broad() -> Ctx { Ctx::AllServers }\nfn plain() -> u8 { 1 }\n";
        let out = masked(text);
        assert!(out.contains("Ctx::AllServers"));
        assert!(!out.contains("fn plain"));
    }

    #[test]
    fn methods_of_a_kept_impl_are_split_too() {
        let text = "impl ServerHandler for S {\n    fn get_info(&self) -> Info { Info::default() }\n    async fn on_roots_list_changed(&self) {}\n}\nmod host { fn quiet() {} fn loud(p: Peer) { p.list_roots(); } }\n";
        let out = masked(text);
        assert!(out.contains("impl ServerHandler for S {"));
        assert!(!out.contains("get_info"));
        assert!(out.contains("async fn on_roots_list_changed(&self) {}"));
        assert!(!out.contains("quiet"));
        assert!(out.contains("fn loud(p: Peer) { p.list_roots(); }"));
        syn::parse_file(&out).unwrap();
    }

    #[test]
    fn nothing_to_blank_gives_no_copy() {
        assert!(scan("fn f() { peer.list_roots(); }", 256, true)
            .masked
            .is_none());
        assert!(scan("fn f() { 1 }", 256, false).masked.is_none());
    }

    #[test]
    fn depth_counts_real_delimiters_only() {
        let deep = format!("fn f() {{ {}1{} }}", "(".repeat(300), ")".repeat(300));
        assert!(scan(&deep, 256, true).too_deep.is_some());
        let shallow = format!("fn f() {{ let s = \"{}\"; }}", "(".repeat(1000));
        assert_eq!(scan(&shallow, 256, true).too_deep, None);
    }
}
