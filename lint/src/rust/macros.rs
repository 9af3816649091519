//! Reading macro invocations. syn keeps a macro's body as tokens; the linter re-parses them as
//! Rust where they parse (`tokio::select!`, `tokio::join!`, `vec!`, `format!` arguments, a crate's
//! own helper macros), and reads `serde_json::json!` bodies as JSON with Rust expressions inside.

use proc_macro2::{Delimiter, Spacing, Span, TokenStream, TokenTree};
use syn::parse::Parser;
use syn::punctuated::Punctuated;

/// Rust code found in a macro body.
#[derive(Debug)]
pub enum Fragment {
    Expr(Box<syn::Expr>),
    Stmt(Box<syn::Stmt>),
}

/// Parses a macro body into the Rust fragments it contains. Tries, in order: comma-separated
/// expressions, a statement list, then chunks split at top-level `,` `;` `=>` and `=` (the shape
/// of `select!` arms), recursing into delimited groups of chunks that still do not parse.
pub fn fragments(tokens: TokenStream) -> Vec<Fragment> {
    let mut out = Vec::new();
    collect(tokens, &mut out, 0);
    out
}

const MAX_DEPTH: usize = 16;

fn collect(tokens: TokenStream, out: &mut Vec<Fragment>, depth: usize) {
    if depth > MAX_DEPTH || tokens.is_empty() {
        return;
    }
    if let Ok(exprs) =
        Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated.parse2(tokens.clone())
    {
        out.extend(exprs.into_iter().map(|expr| Fragment::Expr(Box::new(expr))));
        return;
    }
    if let Ok(stmts) = syn::Block::parse_within.parse2(tokens.clone()) {
        out.extend(stmts.into_iter().map(|stmt| Fragment::Stmt(Box::new(stmt))));
        return;
    }
    for chunk in split_top_level(tokens) {
        if chunk.is_empty() {
            continue;
        }
        if let Ok(expr) = syn::parse2::<syn::Expr>(chunk.clone()) {
            out.push(Fragment::Expr(Box::new(expr)));
            continue;
        }
        for tree in chunk {
            if let TokenTree::Group(group) = tree {
                collect(group.stream(), out, depth + 1);
            }
        }
    }
}

/// Splits at top-level `,`, `;`, `=>` and a lone `=` (not part of `==`, `<=`, `>=`, `!=`).
fn split_top_level(tokens: TokenStream) -> Vec<TokenStream> {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut chunks = Vec::new();
    let mut current = Vec::new();
    let mut index = 0;
    while index < trees.len() {
        let tree = &trees[index];
        if let TokenTree::Punct(punct) = tree {
            let previous_joint = matches!(
                index.checked_sub(1).map(|i| &trees[i]),
                Some(TokenTree::Punct(prev)) if prev.spacing() == Spacing::Joint
            );
            let next_is_gt = matches!(trees.get(index + 1), Some(TokenTree::Punct(next)) if next.as_char() == '>');
            let next_is_eq = matches!(trees.get(index + 1), Some(TokenTree::Punct(next)) if next.as_char() == '=');
            let split = match punct.as_char() {
                ',' | ';' => true,
                '=' if punct.spacing() == Spacing::Joint && next_is_gt => {
                    index += 1; // skip the `>` of `=>`
                    true
                }
                '=' => !previous_joint && !next_is_eq,
                _ => false,
            };
            if split {
                chunks.push(std::mem::take(&mut current).into_iter().collect());
                index += 1;
                continue;
            }
        }
        current.push(tree.clone());
        index += 1;
    }
    chunks.push(current.into_iter().collect());
    chunks
}

/// A `json!` value.
#[derive(Debug)]
pub enum Json {
    Object(Vec<JsonEntry>),
    Array(Vec<Json>),
    /// A string literal: its value and span.
    Str(String, Span),
    /// Anything else: a number, `null`, or an interpolated Rust expression.
    Other(TokenStream),
}

#[derive(Debug)]
pub struct JsonEntry {
    /// The key's text when it is a string literal or an identifier.
    pub key: Option<String>,
    pub key_span: Span,
    pub value: Json,
}

impl Json {
    /// Reads a `json!` body.
    pub fn parse(tokens: TokenStream) -> Json {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        Json::from_trees(trees)
    }

    fn from_trees(trees: Vec<TokenTree>) -> Json {
        if let [single] = trees.as_slice() {
            match single {
                TokenTree::Group(group) if group.delimiter() == Delimiter::Brace => {
                    return Json::Object(
                        split_commas(group.stream())
                            .into_iter()
                            .filter_map(JsonEntry::parse)
                            .collect(),
                    );
                }
                TokenTree::Group(group) if group.delimiter() == Delimiter::Bracket => {
                    return Json::Array(
                        split_commas(group.stream())
                            .into_iter()
                            .filter(|item| !item.is_empty())
                            .map(Json::from_trees)
                            .collect(),
                    );
                }
                TokenTree::Literal(literal) => {
                    if let Ok(syn::Lit::Str(string)) =
                        syn::parse2::<syn::Lit>(single.clone().into())
                    {
                        return Json::Str(string.value(), literal.span());
                    }
                }
                _ => {}
            }
        }
        Json::Other(trees.into_iter().collect())
    }

    /// The entry `key` of an object.
    pub fn get(&self, key: &str) -> Option<&JsonEntry> {
        match self {
            Json::Object(entries) => entries
                .iter()
                .find(|entry| entry.key.as_deref() == Some(key)),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(value, _) => Some(value),
            _ => None,
        }
    }
}

impl JsonEntry {
    fn parse(trees: Vec<TokenTree>) -> Option<JsonEntry> {
        let colon = trees
            .iter()
            .position(|tree| matches!(tree, TokenTree::Punct(p) if p.as_char() == ':'))?;
        let (key_trees, rest) = trees.split_at(colon);
        let value_trees = rest[1..].to_vec();
        let key_span = key_trees
            .first()
            .map_or_else(Span::call_site, TokenTree::span);
        let key = match key_trees {
            [TokenTree::Literal(_)] => match syn::parse2::<syn::Lit>(key_trees[0].clone().into()) {
                Ok(syn::Lit::Str(string)) => Some(string.value()),
                _ => None,
            },
            [TokenTree::Ident(ident)] => Some(ident.to_string()),
            _ => None,
        };
        Some(JsonEntry {
            key,
            key_span,
            value: Json::from_trees(value_trees),
        })
    }
}

fn split_commas(tokens: TokenStream) -> Vec<Vec<TokenTree>> {
    let mut items = vec![Vec::new()];
    for tree in tokens {
        match &tree {
            TokenTree::Punct(punct) if punct.as_char() == ',' => items.push(Vec::new()),
            _ => items.last_mut().expect("never empty").push(tree),
        }
    }
    if items.last().is_some_and(Vec::is_empty) {
        items.pop();
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(source: &str) -> TokenStream {
        let mac: syn::Macro = syn::parse_str(source).unwrap();
        mac.tokens
    }

    #[test]
    fn select_arms_yield_their_expressions() {
        let fragments = fragments(body(
            "tokio::select! { r = peer.create_message(p) => r?, _ = tokio::time::sleep(d) => {} }",
        ));
        let text: Vec<String> = fragments
            .iter()
            .map(|f| match f {
                Fragment::Expr(e) => quote::quote!(#e).to_string(),
                Fragment::Stmt(s) => quote::quote!(#s).to_string(),
            })
            .collect();
        assert!(
            text.iter().any(|t| t.contains("create_message")),
            "{text:?}"
        );
    }

    #[test]
    fn statement_bodies_parse_as_statements() {
        let fragments = fragments(body("my_helper! { let x = 1; peer.list_roots().await }"));
        assert_eq!(fragments.len(), 2);
    }

    #[test]
    fn json_objects_expose_keys_and_string_values() {
        let json = Json::parse(body(
            r#"json!({"jsonrpc": "2.0", "id": 1, "method": "roots/list", "params": {"a": [1, x]}})"#,
        ));
        assert_eq!(
            json.get("method").unwrap().value.as_str(),
            Some("roots/list")
        );
        assert!(json.get("id").is_some());
        assert!(matches!(json.get("params").unwrap().value, Json::Object(_)));
        assert!(matches!(Json::parse(body("json!(null)")), Json::Other(_)));
    }
}
