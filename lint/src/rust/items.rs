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

/// Scans `text`: nesting depth, and (unless `mask` is false) the blanked form.
pub fn scan(text: &str, max_depth: usize, mask: bool) -> Scan {
    let mut depth = 0usize;
    let mut offset = 0usize;
    // The current top-level item: its start, its first keyword, whether it ended at a `}` (a
    // following `;` or `.`/`?` chain still belongs to it).
    let mut item_start: Option<usize> = None;
    let mut keyword: Option<&str> = None;
    let mut closed_by_brace = false;
    let mut items: Vec<(usize, usize, bool)> = Vec::new();
    // `use rmcp::model::ContextInclusion as Ctx;`: items that say `Ctx::AllServers` name the
    // legacy item without its trigger word.
    let mut aliases: Vec<&str> = Vec::new();
    let mut after_as = false;
    for token in tokenize(text, FrontmatterAllowed::No) {
        let start = offset;
        let end = offset + token.len as usize;
        offset = end;
        let trivia = matches!(
            token.kind,
            TokenKind::Whitespace | TokenKind::LineComment { doc_style: None }
        ) || matches!(
            token.kind,
            TokenKind::BlockComment {
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
                // `const X: S = S { .. };`, `static F: Lazy<..> = Lazy::new(|| { .. });`
                if let Some((_, item_end, _)) = items.last_mut() {
                    *item_end = end;
                }
                if token.kind != TokenKind::Semi {
                    // A chain goes on: reopen the item up to its `;`.
                    let (item_begin, _, kept) = items.pop().expect("just pushed");
                    item_start = Some(item_begin);
                    keyword = kept.then_some("use");
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
                    return Scan {
                        too_deep: Some(start),
                        masked: None,
                    };
                }
                continue;
            }
            TokenKind::CloseParen | TokenKind::CloseBracket => {
                depth = depth.saturating_sub(1);
                continue;
            }
            TokenKind::CloseBrace => {
                depth = depth.saturating_sub(1);
                // A `}` back at the top closes an item with a body (`fn`, `impl`, `mod`, ..),
                // unless it is a brace inside the item's head (`#[attr]` uses brackets).
                if depth == 0 {
                    if let Some(item_begin) = item_start.take() {
                        let kept = keyword.is_some_and(|k| ALWAYS_KEPT.contains(&k));
                        items.push((item_begin, end, kept));
                        keyword = None;
                        closed_by_brace = true;
                    }
                }
                continue;
            }
            _ => {}
        }
        if token.kind == TokenKind::Ident && keyword == Some("use") {
            let word = &text[start..end];
            if after_as {
                aliases.push(word);
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
                "pub" | "crate" | "in" | "self" | "super" | "unsafe" | "async"
            ) {
                keyword = Some(
                    ALWAYS_KEPT
                        .iter()
                        .find(|k| **k == word)
                        .copied()
                        .unwrap_or(""),
                );
            }
        }
        if token.kind == TokenKind::Semi {
            if let Some(item_begin) = item_start.take() {
                let kept = keyword.is_some_and(|k| ALWAYS_KEPT.contains(&k));
                items.push((item_begin, end, kept));
                keyword = None;
            }
        }
    }
    if !mask || depth != 0 {
        return Scan {
            too_deep: None,
            masked: None,
        };
    }
    let mut masked: Option<Vec<u8>> = None;
    for (start, end, kept) in items {
        let item = &text.as_bytes()[start..end];
        if kept
            || crate::prefilter::item_may_match(item)
            || aliases
                .iter()
                .any(|alias| memchr::memmem::find(item, alias.as_bytes()).is_some())
        {
            continue;
        }
        let bytes = masked.get_or_insert_with(|| text.as_bytes().to_vec());
        for byte in &mut bytes[start..end] {
            if *byte != b'\n' && *byte != b'\r' {
                *byte = b' ';
            }
        }
    }
    Scan {
        too_deep: None,
        // Only ASCII bytes of whole items were replaced by ASCII spaces: still UTF-8, unless an
        // item boundary fell inside a multi-byte character, which the lexer never produces.
        masked: masked.and_then(|bytes| String::from_utf8(bytes).ok()),
    }
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
