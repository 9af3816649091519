//! Parse only what can match: a lexer pass (rustc's tokens, see [`lexer`]) splits a file into
//! its top-level items, and the items that contain no trigger word (see
//! [`crate::prefilter::item_may_match`]; a word that is only part of a name no rule reads, such
//! as `SseServer` in `SseServerHandler`, does not count: see [`names`]) are blanked out before
//! syn parses the file. On an
//! MCP-heavy crate most files pass the file-level pre-filter, but most of each file (tool bodies,
//! helpers, tests) never names the legacy surface.
//!
//! The same split goes one level down in the items that are kept: the methods of `impl`, `mod`
//! and `trait` blocks, the statements of `fn` bodies (a handler with one legacy call among
//! forty statements keeps that one, its `let` bindings and its last expression).
//!
//! Blanking replaces every byte of a skipped item except line breaks with a space, so lines,
//! columns and byte offsets of what is left are those of the original file and the findings need
//! no mapping; syn is handed the blanked text with its emptied lines squeezed ([`squeeze`]),
//! which keeps lines and columns. Kept whatever their words: `use` items (name resolution,
//! decided last, see [`uses`]), `static` and `const` items (peer-typed statics), and `struct`
//! items that name a peer type or a secret-looking word (peer-typed and secret-looking fields).
//! The `let` statements are decided last ([`lets`]): blanked, cut down to `let PATTERN;` (the name
//! stays bound, for shadowing) or kept whole (it may bind a peer or a request state). The file is
//! lexed once and the trigger words found in one automaton pass; every level works on those. The
//! split is a lexer's approximation of the grammar; when the blanked text does not parse, the
//! caller parses the original, so the approximation can cost time, never findings.
//!
//! The splitter (the tokens, the split at `;` and `}`) is [`split`]; what is blanked, [`blank`].

use ra_ap_rustc_lexer::TokenKind;

mod blank;
mod lets;
mod lexer;
mod names;
mod split;
mod squeeze;
mod uses;

pub use squeeze::squeeze;

use blank::{blank, blank_range, Blanking};
use lets::prune_lets;
use split::{split, Tokens};
use uses::prune_uses;

/// What one lexer pass learns about a file.
pub struct Scan {
    /// The offset of the first delimiter that opens level `max_depth + 1`, if any.
    pub too_deep: Option<usize>,
    /// The file with the items that cannot match blanked out, when that blanks anything.
    pub masked: Option<String>,
    /// The byte ranges blanked in it (see [`squeeze`]).
    pub blanked: Vec<(usize, usize)>,
}

/// What [`scan`] blanks.
pub enum Mask {
    /// Nothing: syn parses every item.
    Nothing,
    /// The items (and statements) without a trigger word. With the offsets where the trigger
    /// words start ([`crate::prefilter::trigger_starts`]) when the caller has them already: the
    /// pre-filter of a file of a crate that depends on the SDK looks for the same words.
    WithoutTrigger(Option<Vec<usize>>),
}

/// Scans `text`: nesting depth, and (unless `mask` is [`Mask::Nothing`]) the blanked form. Doc
/// comments are blanked in what is kept too: syn turns each line into an attribute, and no rule
/// reads them. `states`: the file may check a request state (`super::checks_state`), so `let`s
/// that may make one are kept.
pub fn scan(text: &str, max_depth: usize, mask: Mask, states: bool) -> Scan {
    let mut tokens = Tokens::new(text, max_depth);
    let masks = match mask {
        Mask::Nothing => false,
        Mask::WithoutTrigger(triggers) => {
            let mut triggers =
                triggers.unwrap_or_else(|| crate::prefilter::trigger_starts(text.as_bytes()));
            triggers.retain(|&at| names::counts(text.as_bytes(), at));
            tokens.triggers = triggers;
            true
        }
    };
    let top = split(&tokens, 0, tokens.list.len(), max_depth, false);
    if top.too_deep.is_some() || !masks || !top.balanced {
        return Scan {
            too_deep: top.too_deep,
            masked: None,
            blanked: Vec::new(),
        };
    }
    let mut blanking = Blanking::default();
    blank(&tokens, &top.items, &top.aliases, &mut blanking);
    let needed = prune_lets(&tokens, &mut blanking, states);
    prune_uses(&tokens, &mut blanking, &needed);
    let mut masked = blanking.blanked;
    for token in &tokens.list {
        let doc = matches!(
            token.kind,
            TokenKind::LineComment { doc_style: Some(_) }
                | TokenKind::BlockComment {
                    doc_style: Some(_),
                    ..
                }
        );
        if doc {
            blank_range(text, token.start, token.end, &mut masked);
        }
    }
    Scan {
        too_deep: None,
        // Only ASCII bytes of whole items were replaced by ASCII spaces: still UTF-8, unless an
        // item boundary fell inside a multi-byte character, which the lexer never produces.
        masked: masked.bytes.and_then(|bytes| String::from_utf8(bytes).ok()),
        blanked: masked.ranges,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` with each run of spaces made one.
    fn squeeze(text: &str) -> String {
        text.split(' ')
            .filter(|part| !part.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Asserts that each of `kept` is in `out` and none of `gone`.
    fn assert_kept_and_gone(out: &str, kept: &[&str], gone: &[&str]) {
        for piece in kept {
            assert!(out.contains(piece), "kept: {piece}\n{out}");
        }
        for piece in gone {
            assert!(!out.contains(piece), "gone: {piece}\n{out}");
        }
    }

    fn masked(text: &str) -> String {
        scan(
            text,
            256,
            Mask::WithoutTrigger(None),
            crate::rust::checks_state(text),
        )
        .masked
        .unwrap_or_else(|| text.to_owned())
    }

    #[test]
    fn items_without_trigger_words_are_blanked_in_place() {
        let text = "use rmcp::Peer;\n\n/// Adds.\n#[inline]\nfn add(a: u8) -> u8 {\n    a + 1\n}\n\nasync fn ask(peer: Peer) {\n    peer.create_message(p).await;\n}\n";
        let out = masked(text);
        assert_eq!(out.len(), text.len());
        assert_eq!(out.lines().count(), text.lines().count());
        assert!(out.starts_with("use rmcp::Peer;"));
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
    fn structs_stay_only_with_a_peer_typed_or_secret_looking_field() {
        let text = "#[derive(Serialize)]\nstruct Config { name: String, retries: u8 }\nstruct Login { apiKey: String }\nstruct Card { card_number: String }\nstruct Holder(Arc<RequestContext<RoleServer>>);\nstruct Unit;\nfn quiet() {}\n";
        let out = masked(text);
        assert!(!out.contains("struct Config"), "{out}");
        assert!(!out.contains("Serialize"), "{out}");
        assert!(!out.contains("struct Unit"), "{out}");
        assert!(out.contains("struct Login { apiKey: String }"), "{out}");
        assert!(out.contains("struct Card"), "{out}");
        assert!(out.contains("struct Holder"), "{out}");
        syn::parse_file(&out).unwrap();
    }

    #[test]
    fn items_naming_an_import_alias_stay() {
        let text = "use rmcp::model::{ContextInclusion as Ctx, Role};\nuse std::io::Write as _;\nuse rmcp::ErrorData as McpError;\nfn broad() -> Ctx { Ctx::AllServers }\nfn plain() -> u8 { 1 }\nfn fail() -> McpError { McpError::internal() }\n";
        let out = masked(text);
        assert!(out.contains("Ctx::AllServers"));
        assert!(!out.contains("fn plain"));
        // `ErrorData` holds no trigger word: naming it under another name keeps nothing.
        assert!(!out.contains("fn fail"));
    }

    #[test]
    fn statements_of_kept_blocks_are_split() {
        let text = "async fn call(ctx: Ctx) -> R {\n    /// A doc comment.\n    let peer = ctx.peer.clone();\n    log(1);\n    if ready { prepare(); } else { wait(); }\n    let r = match x { A => { tally(); peer.list_roots().await } B => 2 };\n    tokio::spawn(async move { quiet(); peer.create_message(p).await; });\n    S { a: 1 }.finish();\n    done(r)\n}\n";
        let out = masked(text);
        assert_eq!(out.len(), text.len());
        assert_kept_and_gone(
            &out,
            &[
                "let peer = ctx.peer.clone();",
                "let r = match x { A => {",
                "peer.list_roots().await } B => 2 };",
                "tokio::spawn(async move {",
                "peer.create_message(p).await; });",
                "done(r)",
            ],
            &[],
        );
        assert_kept_and_gone(
            &out,
            &[],
            &[
                "doc comment",
                "log(1)",
                "if ready",
                "else",
                "tally",
                "quiet",
                "S { a: 1 }",
            ],
        );
        syn::parse_file(&out).unwrap();
    }

    #[test]
    fn lets_stay_when_a_kept_token_names_what_they_bind() {
        let text = "fn f(ctx: Ctx) {\n    let p = ctx.peer.clone();\n    let q = p;\n    let r#ref = 1;\n    let unused = compute(2);\n    let p = other();\n    q.list_roots();\n    let noisy = x.create_message(m);\n    r#ref\n}\n";
        let out = masked(text);
        assert_kept_and_gone(
            &out,
            &[
                "let p = ctx.peer.clone();",
                "let q = p;",
                "let noisy = x.create_message(m);",
            ],
            &[],
        );
        // Read, but bound to nothing that can be a peer: the name stays bound, shadowing as
        // before, and nothing else of the statement is parsed.
        let squeezed = squeeze(&out);
        assert!(squeezed.contains("let r#ref ;"), "{out}");
        assert!(squeezed.contains("let p ;"), "{out}");
        assert!(!out.contains("unused"), "{out}");
        syn::parse_file(&out).unwrap();
    }

    #[test]
    fn lets_keep_their_initialiser_when_it_may_bind_a_peer_or_a_state() {
        let text = "struct S { client_peer: Arc<Mutex<Option<Peer<RoleServer>>>> }\nfn f(s: S, ctx: RequestContext<RoleServer>, opt: Option<u8>) {\n    let c = ctx;\n    let f = s.client_peer.lock();\n    let typed: Peer<RoleServer> = make();\n    let label = name.to_string();\n    let Some(x) = opt else { return };\n    let arm = match opt { Some(found) => 1, None => 2 };\n    let via_arm = found;\n    items.iter().for_each(|item| { let from_closure = item; from_closure.list_roots(); });\n    c.list_roots(); f.list_roots(); typed.list_roots(); x.list_roots(); via_arm.list_roots();\n    label.list_roots(); arm.list_roots();\n}\n";
        let out = masked(text);
        assert_kept_and_gone(
            &out,
            &[
                "let c = ctx;",
                "let f = s.client_peer.lock();",
                "let typed: Peer<RoleServer> = make();",
                "let via_arm = found;",
                "let from_closure = item;",
            ],
            &[],
        );
        // No request state is checked in this file: `to_string` makes nothing here.
        let squeezed = squeeze(&out);
        for cut in ["let label ;", "let Some(x) ;"] {
            assert!(squeezed.contains(cut), "{cut}\n{out}");
        }
        syn::parse_file(&out).unwrap();
        // Where a request state is checked, a state-making call keeps its `let`.
        let text = "fn g() -> R {\n    let label = name.to_string();\n    let lit = \"abc\";\n    InputRequiredResult::new(requests, label).with(lit)\n}\n";
        let out = masked(text);
        assert!(out.contains("let label = name.to_string();"), "{out}");
        assert!(out.contains("let lit = \"abc\";"), "{out}");
    }

    #[test]
    fn a_brace_ended_expression_statement_runs_to_its_semicolon() {
        // Blanking `+ peer.list_roots()` alone, or keeping it alone, would not parse.
        let text = "fn f() {\n    let a = S { b: 1 } + peer.list_roots();\n    m! { quiet }\n    noisy();\n    T { c: 2 }.peer.list_roots();\n}\n";
        let out = masked(text);
        assert!(out.contains("let a = S { b: 1 } + peer.list_roots();"));
        assert!(out.contains("T { c: 2 }.peer.list_roots();"));
        syn::parse_file(&out).unwrap();
    }

    #[test]
    fn a_method_that_returns_a_peer_keeps_its_signature() {
        let text = "impl Hub {\n    fn upstream(&self) -> Peer<RoleServer> { todo!() }\n    fn quiet(&self) {}\n}\nasync fn f(h: Hub) { h.upstream().list_roots().await; }\n";
        let out = masked(text);
        assert_kept_and_gone(
            &out,
            &["impl Hub {", "fn upstream(&self) -> Peer<RoleServer>"],
            &["quiet"],
        );
        syn::parse_file(&out).unwrap();
    }

    #[test]
    fn a_struct_pattern_does_not_end_an_if_let() {
        let text = "fn f(r: R) {\n    if let R::Form { message, .. } = &r\n        && message == \"x\"\n    {\n        peer.list_roots();\n    }\n    for S { a } in list { a.list_roots(); }\n}\n";
        let out = masked(text);
        assert!(out.contains("if let R::Form { message, .. } = &r"), "{out}");
        assert!(out.contains("for S { a } in list {"), "{out}");
        syn::parse_file(&out).unwrap();
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
    fn imports_stay_when_what_is_kept_names_them() {
        let text = "use std::fmt;\nuse std::sync::{Arc, Mutex};\nuse std::io::Write as _;\nuse rmcp as mcp;\nuse rmcp::model::*;\nuse crate::hub::{self, Hub};\nuse rmcp::service::{Peer as P, RoleServer};\nuse rmcp::transport::SseServer;\nfn quiet() { fmt::write(); }\nfn ask(peer: P) -> Arc<u8> {\n    use std::time::Duration;\n    use std::collections::HashMap;\n    hub::go(1).list_roots();\n    quiet();\n    peer.list_roots(Duration::ZERO)\n}\n";
        let out = masked(text);
        assert_kept_and_gone(
            &out,
            &[
                "use std::sync::{Arc, Mutex};",
                "use rmcp as mcp;",
                "use rmcp::model::*;",
                "use crate::hub::{self, Hub};",
                "fn ask(peer: P) -> Arc<u8> {",
                "use rmcp::service::{Peer as P, RoleServer};",
                // A trigger word: reported at the import.
                "use rmcp::transport::SseServer;",
                "use std::time::Duration;",
            ],
            &[],
        );
        // `fmt` is named only in what is blanked; `_` and `HashMap` nowhere.
        assert_kept_and_gone(
            &out,
            &[],
            &["use std::fmt;", "Write as _", "HashMap", "quiet()"],
        );
        syn::parse_file(&out).unwrap();
    }

    #[test]
    fn a_parameter_typed_with_a_leading_path_colon_binds_a_peer() {
        // `p: ::rmcp::Peer<..>`: the colon after `p` stands alone, so `p` may be a peer and the
        // `let` that moves it stays whole (cut to `let c;`, the walk lost `c.list_roots()`).
        let text = "fn unrelated() -> u8 {\n    1\n}\n\nasync fn ask(p: ::rmcp::Peer<RoleServer>) {\n    let c = p;\n    let _ = c.list_roots().await;\n}\n";
        assert_kept_and_gone(&squeeze(&masked(text)), &["let c = p;"], &["fn unrelated"]);
    }

    #[test]
    fn nothing_to_blank_gives_no_copy() {
        assert!(scan(
            "fn f() { peer.list_roots(); }",
            256,
            Mask::WithoutTrigger(None),
            false
        )
        .masked
        .is_none());
        assert!(scan("fn f() { 1 }", 256, Mask::Nothing, false)
            .masked
            .is_none());
    }

    #[test]
    fn depth_counts_real_delimiters_only() {
        let deep = format!("fn f() {{ {}1{} }}", "(".repeat(300), ")".repeat(300));
        assert!(scan(&deep, 256, Mask::WithoutTrigger(None), false)
            .too_deep
            .is_some());
        let shallow = format!("fn f() {{ let s = \"{}\"; }}", "(".repeat(1000));
        assert_eq!(
            scan(&shallow, 256, Mask::WithoutTrigger(None), false).too_deep,
            None
        );
    }
}
