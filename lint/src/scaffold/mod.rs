//! MRTR migration scaffolds (display-only): the rmcp 3.x shape of a legacy tool handler that
//! awaits `create_elicitation` / `elicit` / `elicit_url` / `create_message` / `list_roots` in the
//! middle of its call, generated with `quote` and formatted with `prettyplease`.
//!
//! The shape ([`rewrite`]): the handler takes rmcp 3's `InputResponses` and `RequestState`
//! extractors and returns `CallToolResponse`. It runs from the top on every round. Each awaited
//! request becomes `match rounds.answer(KEY) { Some(answer) => <the legacy call's own result
//! type, decoded from the answer>, None => return <input_required with the request under KEY> }`,
//! where KEY is `<handler>.<kind>.<n>` and the request is built from the handler's own
//! arguments (its message, its schema, its sampling parameters). The answers of earlier rounds
//! and the key asked last travel in `requestState`, sealed with rmcp's `RequestStateCodec`
//! ([`support`]). The code after each request is the handler's own, unchanged.

pub mod closures;
pub mod concurrent;
pub mod exits;
pub mod requests;
pub mod rewrite;
pub mod sites;
pub mod standalone;
pub mod support;
pub mod surface;

use std::path::Path;

use quote::quote;

use crate::diagnostic::SourceFile;

/// One handler's scaffold.
#[derive(Debug, Clone)]
pub struct Scaffold {
    /// The handler's name and the 1-based line of its `fn`.
    pub handler: String,
    pub line: usize,
    /// The keys of its input requests, in order.
    pub keys: Vec<String>,
    /// The rewritten handler, inside `impl <its type>` (with the impl's own attributes); none
    /// for the scaffold of a helper alone.
    pub item: Option<syn::ItemImpl>,
    /// The MRTR forms of the helpers it calls (and of the helpers they call), or of the helper.
    pub helpers: Vec<syn::ItemFn>,
}

impl Scaffold {
    fn of_handler(
        block: &syn::ItemImpl,
        function: &syn::ImplItemFn,
        rewritten: rewrite::Rewritten<syn::ImplItemFn>,
        helpers: &rewrite::Helpers,
    ) -> Self {
        let mut item = block.clone();
        item.items = vec![syn::ImplItem::Fn(rewritten.function)];
        Scaffold {
            handler: function.sig.ident.to_string(),
            line: function.sig.ident.span().start().line,
            keys: rewritten.keys,
            item: Some(item),
            helpers: helpers
                .closure(&rewritten.called)
                .into_iter()
                .cloned()
                .collect(),
        }
    }
}

/// A handler that could not be scaffolded, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub handler: String,
    pub line: usize,
    pub reason: String,
}

/// The scaffolds of every handler of `file` that awaits a client request (methods of `impl`
/// blocks), and the handlers that await one but could not be rewritten.
pub fn file_scaffolds(file: &SourceFile) -> Result<(Vec<Scaffold>, Vec<Skipped>), String> {
    let syntax = syn::parse_file(&file.text).map_err(|error| {
        let start = error.span().start();
        format!(
            "{}:{}: does not parse: {error}",
            file.path.display(),
            start.line
        )
    })?;
    let (_, functions) = items_of(&syntax.items);
    let helpers = rewrite::Helpers::of(&syntax, &functions);
    let mut scaffolds = Vec::new();
    let mut skipped = Vec::new();
    for item in &syntax.items {
        let syn::Item::Impl(block) = item else {
            continue;
        };
        let in_trait = server_handler(block);
        if block.trait_.is_some() && !in_trait {
            continue;
        }
        for member in &block.items {
            let syn::ImplItem::Fn(function) = member else {
                continue;
            };
            let line = function.sig.ident.span().start().line;
            let handler = function.sig.ident.to_string();
            // Of a `ServerHandler`, only the methods that may answer `input_required`.
            if in_trait && surface::trait_response(&handler).is_none() {
                continue;
            }
            match rewrite::handler(function, &helpers, in_trait) {
                Ok(rewritten) => {
                    scaffolds.push(Scaffold::of_handler(block, function, rewritten, &helpers));
                }
                // Handlers that never name a request are not migration candidates.
                Err(
                    rewrite::Unsupported::NoRequest(_)
                    | rewrite::Unsupported::NotAsync(_)
                    | rewrite::Unsupported::NoOrigin(_),
                ) if !rewrite::names_a_request(function) => {}
                Err(reason) => skipped.push(Skipped {
                    handler,
                    line,
                    reason: reason.to_string(),
                }),
            }
        }
    }
    Ok((scaffolds, skipped))
}

/// The `impl` blocks and the free functions of `items`, those of inline modules included.
fn items_of(items: &[syn::Item]) -> (Vec<&syn::ItemImpl>, Vec<&syn::ItemFn>) {
    let (mut impls, mut functions) = (Vec::new(), Vec::new());
    for item in items {
        match item {
            syn::Item::Impl(block) => impls.push(block),
            syn::Item::Fn(function) => functions.push(function),
            syn::Item::Mod(module) => {
                if let Some((_, inner)) = &module.content {
                    let (more_impls, more_functions) = items_of(inner);
                    impls.extend(more_impls);
                    functions.extend(more_functions);
                }
            }
            _ => {}
        }
    }
    (impls, functions)
}

/// Whether `block` implements `ServerHandler` (whose `get_prompt`, `read_resource` and
/// `call_tool` may answer `input_required`).
fn server_handler(block: &syn::ItemImpl) -> bool {
    block.trait_.as_ref().is_some_and(|(_, path, _)| {
        path.segments
            .last()
            .is_some_and(|segment| segment.ident == "ServerHandler")
    })
}

/// The scaffold of the handler whose `fn` (or body) holds `line`.
pub fn scaffold_at(file: &SourceFile, line: usize) -> Result<Scaffold, String> {
    let syntax = syn::parse_file(&file.text).map_err(|error| format!("does not parse: {error}"))?;
    let (impls, functions) = items_of(&syntax.items);
    let helpers = rewrite::Helpers::of(&syntax, &functions);
    for block in impls {
        for member in &block.items {
            let syn::ImplItem::Fn(function) = member else {
                continue;
            };
            let start = function.sig.fn_token.span.start().line;
            let end = function.block.brace_token.span.close().end().line;
            let first = function
                .attrs
                .first()
                .map_or(start, |attr| attr.pound_token.span.start().line);
            if !(first..=end).contains(&line) {
                continue;
            }
            let rewritten = rewrite::handler(function, &helpers, server_handler(block))
                .map_err(|e| e.to_string())?;
            return Ok(Scaffold::of_handler(block, function, rewritten, &helpers));
        }
    }
    // A free function: a helper the handlers call, or code no client request reaches.
    for function in functions {
        let start = function.sig.fn_token.span.start().line;
        let end = function.block.brace_token.span.close().end().line;
        if !(start..=end).contains(&line) {
            continue;
        }
        let name = function.sig.ident.to_string();
        if let Some(rewritten) = helpers.rewritten.get(&name) {
            let mut all = vec![rewritten.function.clone()];
            all.extend(helpers.closure(&rewritten.called).into_iter().cloned());
            return Ok(Scaffold {
                handler: name,
                line: function.sig.ident.span().start().line,
                keys: rewritten.keys.clone(),
                item: None,
                helpers: all,
            });
        }
        // Why it has no MRTR form.
        let reason = rewrite::helper(function, &helpers)
            .err()
            .unwrap_or(rewrite::Unsupported::NoRequest(name.clone()));
        return Err(match reason {
            rewrite::Unsupported::NoRequest(_) => {
                let callers = rewrite::callers(&syntax, &name);
                rewrite::Unsupported::Helper { name, callers }
            }
            other => other,
        }
        .to_string());
    }
    Err(format!("no method of an `impl` block holds line {line}"))
}

/// The scaffolds' `impl` blocks, those of one original `impl` merged into one (its attributes,
/// such as `#[tool_router]`, may appear once per type).
/// Then the rewritten helpers, each once.
fn merged(scaffolds: &[Scaffold]) -> Vec<syn::Item> {
    let mut blocks: Vec<syn::ItemImpl> = Vec::new();
    let mut helpers: Vec<&syn::ItemFn> = Vec::new();
    for scaffold in scaffolds {
        for helper in &scaffold.helpers {
            if !helpers.iter().any(|h| h.sig.ident == helper.sig.ident) {
                helpers.push(helper);
            }
        }
        let Some(item) = &scaffold.item else {
            continue;
        };
        let header = |block: &syn::ItemImpl| {
            let mut empty = block.clone();
            empty.items.clear();
            quote!(#empty).to_string()
        };
        match blocks
            .iter_mut()
            .find(|block| header(block) == header(item))
        {
            Some(block) => block.items.extend(item.items.iter().cloned()),
            None => blocks.push(item.clone()),
        }
    }
    blocks
        .into_iter()
        .map(syn::Item::Impl)
        .chain(helpers.into_iter().cloned().map(syn::Item::Fn))
        .collect()
}

/// The names of the helpers the scaffolds rewrite (their legacy forms are replaced).
pub fn rewritten_helpers(scaffolds: &[Scaffold]) -> Vec<String> {
    scaffolds
        .iter()
        .flat_map(|scaffold| &scaffold.helpers)
        .map(|helper| helper.sig.ident.to_string())
        .collect()
}

/// The imports a scaffold needs besides the handler file's own.
pub fn imports() -> proc_macro2::TokenStream {
    quote!(
        use rmcp::handler::server::tool::{InputResponses, RequestState};
    )
}

/// The text of a scaffold file: a header, the scaffolded handlers and the `mrtr` module.
pub fn render(source: &Path, scaffolds: &[Scaffold]) -> String {
    let items = merged(scaffolds);
    let support = support::module();
    let imports = imports();
    let file: syn::File = syn::parse_quote! {
        #imports
        #(#items)*
        #support
    };
    let handlers: Vec<String> = scaffolds
        .iter()
        .map(|s| format!("`{}` (line {})", s.handler, s.line))
        .collect();
    format!(
        "// MRTR scaffold generated by `cargo mcp-lint` from {} for {}.\n\
         // Display-only: review it, then move each handler into its `impl` (replacing the legacy\n\
         // one) and the `mrtr` module into the crate. Needs rmcp 3 with the features\n\
         // `request-state` and `elicitation`, and a 32-byte key in {}.\n\
         // Comments of the original handler are not carried over.\n\n{}",
        source.display(),
        handlers.join(", "),
        support::KEY_VARIABLE,
        prettyplease::unparse(&file)
    )
}

/// Tokens of the scaffolded items alone (no support module), for embedding.
pub fn items(scaffolds: &[Scaffold]) -> proc_macro2::TokenStream {
    let items = merged(scaffolds);
    quote!(#(#items)*)
}

#[cfg(test)]
mod tests;
