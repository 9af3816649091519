//! Rust 2015 sources that syn 2 cannot read.
//!
//! syn parses the 2018+ grammar. Three things that are valid only in Rust 2015 make it fail, and
//! the linter would report the whole file as `unparsable-file`:
//!
//! - anonymous parameters of trait methods: `fn hash_word(&mut self, Self);`
//! - bare trait objects of the `Fn` family: `type Action = Fn(&siginfo_t) + Send + Sync;`
//!   (other bare trait objects, `Box<Error + Send>`, parse as paths and need nothing);
//! - `async`, `await` and `try` used as identifiers.
//!
//! When a file of a 2015-edition crate fails to parse, [`migrate`] applies the same rewrites as
//! rustc's edition-2018 migration lints (`anonymous_parameters`, `bare_trait_objects`,
//! `keyword_idents`; what `cargo fix --edition` does): `_: `, `dyn ` and `r#` are *inserted*,
//! nothing is removed, and [`Migrated::original_offset`] maps every offset of the rewritten text
//! back, so findings point into the file as it is. The rewrites work on rustc's tokens (comments
//! and strings are never touched) and only where the 2015 grammar puts these forms; a file that
//! still does not parse gets the original syntax error.
//!
//! Blind spots: other 2015-only syntax that syn rejects (none is known in the benchmark tree),
//! and 2015 files outside any crate (no manifest, so no edition) are still `unparsable-file`.

use ra_ap_rustc_lexer::{tokenize, FrontmatterAllowed, TokenKind};

/// A rewritten source and where its insertions went.
#[derive(Debug)]
pub struct Migrated {
    pub text: String,
    /// `(offset in the original text, inserted length)`, in order.
    insertions: Vec<(usize, usize)>,
}

impl Migrated {
    /// The offset in the original text of `offset` in the rewritten one (an offset inside an
    /// inserted piece maps to where it was inserted).
    pub fn original_offset(&self, offset: usize) -> usize {
        let mut shift = 0;
        for &(at, len) in &self.insertions {
            if offset < at + shift {
                break;
            }
            if offset < at + shift + len {
                return at;
            }
            shift += len;
        }
        offset - shift
    }
}

#[derive(Debug, Clone, Copy)]
struct Token<'s> {
    kind: TokenKind,
    start: usize,
    text: &'s str,
}

impl Token<'_> {
    fn is(&self, kind: TokenKind) -> bool {
        self.kind == kind
    }
    fn is_ident(&self, text: &str) -> bool {
        self.kind == TokenKind::Ident && self.text == text
    }
    fn end(&self) -> usize {
        self.start + self.text.len()
    }
}

/// The 2015 → 2018 rewrites of `text`, or `None` when there is nothing to rewrite.
pub fn migrate(text: &str) -> Option<Migrated> {
    let tokens = significant_tokens(text);
    let mut insertions: Vec<(usize, &'static str)> = Vec::new();
    keyword_idents(&tokens, &mut insertions);
    bare_fn_trait_objects(&tokens, &mut insertions);
    anonymous_parameters(&tokens, &mut insertions);
    if insertions.is_empty() {
        return None;
    }
    insertions.sort_by_key(|(at, _)| *at);
    let mut out = String::with_capacity(text.len() + insertions.len() * 4);
    let mut last = 0;
    for (at, piece) in &insertions {
        out.push_str(&text[last..*at]);
        out.push_str(piece);
        last = *at;
    }
    out.push_str(&text[last..]);
    Some(Migrated {
        text: out,
        insertions: insertions
            .iter()
            .map(|(at, piece)| (*at, piece.len()))
            .collect(),
    })
}

/// rustc's tokens without whitespace and comments.
fn significant_tokens(text: &str) -> Vec<Token<'_>> {
    let mut tokens = Vec::new();
    let mut offset = 0;
    for token in tokenize(text, FrontmatterAllowed::No) {
        let len = token.len as usize;
        if !matches!(
            token.kind,
            TokenKind::Whitespace | TokenKind::LineComment { .. } | TokenKind::BlockComment { .. }
        ) {
            tokens.push(Token {
                kind: token.kind,
                start: offset,
                text: &text[offset..offset + len],
            });
        }
        offset += len;
    }
    tokens
}

/// `async`, `await` and `try` are plain identifiers in 2015: `r#async` (not after `$`: a macro
/// metavariable such as `$try` stays as it is).
fn keyword_idents(tokens: &[Token], out: &mut Vec<(usize, &'static str)>) {
    for (index, token) in tokens.iter().enumerate() {
        if token.kind == TokenKind::Ident
            && matches!(token.text, "async" | "await" | "try")
            && !(index > 0 && tokens[index - 1].is(TokenKind::Dollar))
        {
            out.push((token.start, "r#"));
        }
    }
}

/// `Fn(..)`, `FnMut(..)`, `FnOnce(..)` in type position without `dyn`: after `<` (a generic
/// argument), `&`, `&'a`, `&mut`, `*const`/`*mut` (a reference or pointer), or the `=` of a
/// `type` alias or a type parameter default. Bounds (`F: Fn()`, `+ Fn()`) and `impl Fn()` are
/// left alone: there the trait is not a type.
fn bare_fn_trait_objects(tokens: &[Token], out: &mut Vec<(usize, &'static str)>) {
    for index in 1..tokens.len().saturating_sub(1) {
        let token = tokens[index];
        let fn_trait = token.kind == TokenKind::Ident
            && matches!(token.text, "Fn" | "FnMut" | "FnOnce")
            && tokens[index + 1].is(TokenKind::OpenParen);
        if !fn_trait {
            continue;
        }
        let previous = |back: usize| index.checked_sub(back).map(|i| tokens[i]);
        let before = previous(1).expect("index >= 1");
        let type_position = match before.kind {
            TokenKind::Lt | TokenKind::And => true,
            TokenKind::Lifetime { .. } => previous(2).is_some_and(|t| t.is(TokenKind::And)),
            TokenKind::Ident if matches!(before.text, "mut" | "const") => {
                previous(2).is_some_and(|t| t.is(TokenKind::And) || t.is(TokenKind::Star))
                    || (previous(2).is_some_and(|t| matches!(t.kind, TokenKind::Lifetime { .. }))
                        && previous(3).is_some_and(|t| t.is(TokenKind::And)))
            }
            // `type A = Fn()`, `<F = Fn()>`; not `==`, `<=`, `>=`, `!=`, `+=`, ...
            TokenKind::Eq => previous(2).is_some_and(|t| {
                !matches!(
                    t.kind,
                    TokenKind::Eq
                        | TokenKind::Lt
                        | TokenKind::Gt
                        | TokenKind::Bang
                        | TokenKind::Plus
                        | TokenKind::Minus
                        | TokenKind::Star
                        | TokenKind::Slash
                        | TokenKind::Percent
                        | TokenKind::Caret
                        | TokenKind::And
                        | TokenKind::Or
                ) || t.end() != before.start
            }),
            _ => false,
        };
        if type_position {
            out.push((token.start, "dyn "));
        }
    }
}

/// Anonymous parameters of methods declared directly in a `trait` body: `fn f(&self, u8)`
/// becomes `fn f(&self, _: u8)`.
fn anonymous_parameters(tokens: &[Token], out: &mut Vec<(usize, &'static str)>) {
    // For each open `{`: whether it is a trait body.
    let mut braces: Vec<bool> = Vec::new();
    let mut trait_pending = false;
    let mut index = 0;
    while index < tokens.len() {
        let token = tokens[index];
        match token.kind {
            TokenKind::OpenBrace => {
                braces.push(std::mem::take(&mut trait_pending));
            }
            TokenKind::CloseBrace => {
                braces.pop();
            }
            TokenKind::Semi => trait_pending = false,
            TokenKind::Ident if token.text == "trait" => trait_pending = true,
            TokenKind::Ident if token.text == "fn" && braces.last() == Some(&true) => {
                if let Some(open) = parameter_list(tokens, index + 1) {
                    index = parameters(tokens, open, out);
                    continue;
                }
            }
            _ => {}
        }
        index += 1;
    }
}

/// After `fn`: the name, optional generics; the index of the `(` of the parameter list.
fn parameter_list(tokens: &[Token], mut index: usize) -> Option<usize> {
    if !tokens.get(index)?.is(TokenKind::Ident) {
        return None;
    }
    index += 1;
    if tokens.get(index)?.is(TokenKind::Lt) {
        let mut depth = 0usize;
        while index < tokens.len() {
            match tokens[index].kind {
                TokenKind::Lt => depth += 1,
                TokenKind::Gt if !is_arrow(tokens, index) => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        index += 1;
                        break;
                    }
                }
                TokenKind::OpenBrace | TokenKind::Semi => return None,
                _ => {}
            }
            index += 1;
        }
    }
    tokens
        .get(index)
        .filter(|t| t.is(TokenKind::OpenParen))
        .map(|_| index)
}

/// `>` that ends `->`.
fn is_arrow(tokens: &[Token], index: usize) -> bool {
    index > 0
        && tokens[index - 1].is(TokenKind::Minus)
        && tokens[index - 1].end() == tokens[index].start
}

/// Walks the parameters from the `(` at `open`; inserts `_: ` before each anonymous one. Returns
/// the index after the closing `)`.
fn parameters(tokens: &[Token], open: usize, out: &mut Vec<(usize, &'static str)>) -> usize {
    let mut depth = 0usize; // (), [], {}
    let mut angle = 0usize; // <>
    let mut start = open + 1;
    let mut index = open + 1;
    while index < tokens.len() {
        let token = tokens[index];
        match token.kind {
            TokenKind::OpenParen | TokenKind::OpenBracket | TokenKind::OpenBrace => depth += 1,
            TokenKind::CloseParen | TokenKind::CloseBracket | TokenKind::CloseBrace => {
                if depth == 0 {
                    check_parameter(&tokens[start..index], out);
                    return index + 1;
                }
                depth -= 1;
            }
            TokenKind::Lt if depth == 0 => angle += 1,
            TokenKind::Gt if depth == 0 && !is_arrow(tokens, index) => {
                angle = angle.saturating_sub(1)
            }
            TokenKind::Comma if depth == 0 && angle == 0 => {
                check_parameter(&tokens[start..index], out);
                start = index + 1;
            }
            _ => {}
        }
        index += 1;
    }
    index
}

/// One parameter's tokens: named (`pat: Type`), `self` in any form, or anonymous.
fn check_parameter(param: &[Token], out: &mut Vec<(usize, &'static str)>) {
    // Outer attributes (`#[cfg(..)] u8`) come before the `_: `.
    let mut first = 0;
    while param.get(first).is_some_and(|t| t.is(TokenKind::Pound)) {
        let mut depth = 0usize;
        first += 1;
        while let Some(token) = param.get(first) {
            first += 1;
            match token.kind {
                TokenKind::OpenBracket => depth += 1,
                TokenKind::CloseBracket => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    let param = &param[first.min(param.len())..];
    let Some(head) = param.first() else {
        return;
    };
    // `self`, `mut self`, `&self`, `&mut self`, `&'a self`, `&'a mut self` (and `self: T`).
    let is_self = param.iter().take(4).any(|t| t.is_ident("self"))
        && param.iter().take_while(|t| !t.is_ident("self")).all(|t| {
            t.is(TokenKind::And)
                || t.is_ident("mut")
                || matches!(t.kind, TokenKind::Lifetime { .. })
        });
    if is_self {
        return;
    }
    // A named parameter has a `:` outside any group that is not half of a `::`.
    let mut depth = 0usize;
    let mut angle = 0usize;
    for (i, token) in param.iter().enumerate() {
        match token.kind {
            TokenKind::OpenParen | TokenKind::OpenBracket | TokenKind::OpenBrace => depth += 1,
            TokenKind::CloseParen | TokenKind::CloseBracket | TokenKind::CloseBrace => {
                depth = depth.saturating_sub(1)
            }
            TokenKind::Lt => angle += 1,
            TokenKind::Gt => angle = angle.saturating_sub(1),
            TokenKind::Colon if depth == 0 && angle == 0 => {
                let joined_before =
                    i > 0 && param[i - 1].is(TokenKind::Colon) && param[i - 1].end() == token.start;
                let joined_after = param
                    .get(i + 1)
                    .is_some_and(|next| next.is(TokenKind::Colon) && token.end() == next.start);
                if !joined_before && !joined_after {
                    return;
                }
            }
            _ => {}
        }
    }
    out.push((head.start, "_: "));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(text: &str) -> String {
        migrate(text).map_or_else(|| text.to_owned(), |m| m.text)
    }

    #[test]
    fn anonymous_trait_method_parameters_get_a_wildcard() {
        assert_eq!(
            rewritten("trait HashWord { fn hash_word(&mut self, Self); }"),
            "trait HashWord { fn hash_word(&mut self, _: Self); }"
        );
        assert_eq!(
            rewritten("pub trait T<A> where A: Copy { fn f<B: Into<(u8, A)>>(u8, &'a [B], HashMap<K, V>, Fn(u8) -> u8) -> u8 { 0 } }"),
            "pub trait T<A> where A: Copy { fn f<B: Into<(u8, A)>>(_: u8, _: &'a [B], _: HashMap<K, V>, _: Fn(u8) -> u8) -> u8 { 0 } }"
        );
        assert_eq!(
            rewritten("trait T { fn g(#[cfg(x)] ::std::string::String); }"),
            "trait T { fn g(#[cfg(x)] _: ::std::string::String); }"
        );
    }

    #[test]
    fn named_and_self_parameters_and_other_functions_stay() {
        for text in [
            "trait T { fn f(self, &self, &mut self, &'a mut self, mut self, self: Box<Self>); }",
            "trait T { fn f(x: u8, (a, b): (u8, u8), mut y: std::vec::Vec<u8>, Point { x, y }: P); }",
            "trait T { fn f(&self) { fn inner(u8) {} } }",
            "fn free(u8) {}",
            "impl T for X { fn f(u8) {} }",
            "trait A = B; fn f(u8) {}",
            "fn f() { let s = \"trait T { fn f(u8); }\"; } // trait T { fn f(u8); }",
        ] {
            assert!(migrate(text).is_none(), "{text}");
        }
    }

    #[test]
    fn bare_fn_trait_objects_in_type_position_get_dyn() {
        assert_eq!(
            rewritten("type Action = Fn(&siginfo_t) + Send + Sync;"),
            "type Action = dyn Fn(&siginfo_t) + Send + Sync;"
        );
        assert_eq!(
            rewritten("struct S<F = FnOnce()> { a: Box<FnMut(u8) -> u8 + Send>, b: &'a Fn(), c: &mut FnOnce(), d: *const Fn(), e: &'a mut Fn() }"),
            "struct S<F = dyn FnOnce()> { a: Box<dyn FnMut(u8) -> u8 + Send>, b: &'a dyn Fn(), c: &mut dyn FnOnce(), d: *const dyn Fn(), e: &'a mut dyn Fn() }"
        );
        for text in [
            "fn f<F: Fn(u8) + Send>(f: F) where G: Clone + FnMut() {}",
            "fn f(x: impl Fn(u8), y: Box<dyn Fn()>) {}",
            "fn f() { if a == Fn(1) {} }",
        ] {
            assert!(migrate(text).is_none(), "{text}");
        }
    }

    #[test]
    fn keywords_of_later_editions_become_raw_identifiers() {
        assert_eq!(
            rewritten("fn f() { let async = try!(g()); } macro_rules! m { ($try:expr) => {} }"),
            "fn f() { let r#async = r#try!(g()); } macro_rules! m { ($try:expr) => {} }"
        );
    }

    #[test]
    fn offsets_map_back_to_the_original_text() {
        let text = "trait T { fn f(u8, u16); }";
        let migrated = migrate(text).unwrap();
        assert_eq!(migrated.text, "trait T { fn f(_: u8, _: u16); }");
        for (original, needle) in [("u8", "u8"), ("u16", "u16"), ("}", "}")] {
            let at = migrated.text.find(needle).unwrap();
            assert_eq!(migrated.original_offset(at), text.find(original).unwrap());
        }
        // Inside an inserted piece: where it was inserted.
        assert_eq!(
            migrated.original_offset(text.find("u8").unwrap() + 1),
            text.find("u8").unwrap()
        );
        assert_eq!(migrated.original_offset(0), 0);
    }
}
