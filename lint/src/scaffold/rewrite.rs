//! Rewrites one legacy tool handler into its MRTR shape (see [`super`] for the shape).

use std::collections::{BTreeMap, BTreeSet};

use syn::visit_mut::VisitMut;

use super::closures::Closures;
use super::exits::{json_inner_type, keep_output_schema, result_error_type, Output, Returns};
use super::requests;
use super::sites::Sites;
use super::surface::{attributed, surface, takes_the_call, trait_response, Surface};

/// Whether the handler's body names one of the requests anywhere (in a macro, a closure, ...).
pub fn names_a_request(function: &syn::ImplItemFn) -> bool {
    fn walk(tokens: proc_macro2::TokenStream) -> bool {
        tokens.into_iter().any(|tree| match tree {
            proc_macro2::TokenTree::Ident(ident) => requests::kind(&ident.to_string()).is_some(),
            proc_macro2::TokenTree::Group(group) => walk(group.stream()),
            _ => false,
        })
    }
    walk(quote::ToTokens::to_token_stream(&function.block))
}

/// The functions and methods of `file` whose bodies call a request.
pub fn request_helpers(file: &syn::File) -> BTreeSet<String> {
    functions(file)
        .into_iter()
        .filter(|(_, body)| {
            let tokens = quote::ToTokens::to_token_stream(body);
            requests::calls_a_request(tokens.clone()) || requests::sends_a_server_request(tokens)
        })
        .map(|(name, _)| name.to_string())
        .collect()
}

/// Every function and method of `file` (inline modules included): its name and body.
fn functions(file: &syn::File) -> Vec<(&syn::Ident, &syn::Block)> {
    fn walk<'a>(items: &'a [syn::Item], out: &mut Vec<(&'a syn::Ident, &'a syn::Block)>) {
        for item in items {
            match item {
                syn::Item::Fn(function) => out.push((&function.sig.ident, &function.block)),
                syn::Item::Impl(block) => {
                    out.extend(block.items.iter().filter_map(|member| match member {
                        syn::ImplItem::Fn(function) => Some((&function.sig.ident, &function.block)),
                        _ => None,
                    }))
                }
                syn::Item::Mod(module) => {
                    if let Some((_, items)) = &module.content {
                        walk(items, out);
                    }
                }
                _ => {}
            }
        }
    }
    let mut functions = Vec::new();
    walk(&file.items, &mut functions);
    functions
}

fn callers_text(callers: &[String]) -> String {
    if callers.is_empty() {
        " (none in this file)".to_owned()
    } else {
        format!(
            " ({})",
            callers
                .iter()
                .map(|caller| format!("`{caller}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// The functions and methods of `file` whose bodies call `name(..)` (or `.name(..)`).
pub fn callers(file: &syn::File, name: &str) -> Vec<String> {
    fn calls(tokens: proc_macro2::TokenStream, name: &str) -> bool {
        let trees: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
        trees.iter().enumerate().any(|(index, tree)| match tree {
            proc_macro2::TokenTree::Ident(ident) => {
                ident == name
                    && matches!(trees.get(index + 1), Some(proc_macro2::TokenTree::Group(g))
                        if g.delimiter() == proc_macro2::Delimiter::Parenthesis)
            }
            proc_macro2::TokenTree::Group(group) => calls(group.stream(), name),
            _ => false,
        })
    }
    functions(file)
        .into_iter()
        .filter(|(caller, body)| {
            *caller != name && calls(quote::ToTokens::to_token_stream(body), name)
        })
        .map(|(caller, _)| caller.to_string())
        .collect()
}

/// Why a handler cannot be scaffolded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unsupported {
    #[error("`{0}` is not `async`")]
    NotAsync(String),
    #[error("`{0}` returns nothing: a tool's result is the value it returns")]
    NoOutput(String),
    #[error(
        "`{0}` awaits no `create_elicitation` / `elicit` / `elicit_url` / `create_message` / \
         `list_roots` call itself (a helper function that makes the request is not rewritten)"
    )]
    NoRequest(String),
    #[error("`{handler}`: the request inside {place} is not rewritten{advice}")]
    Hidden {
        handler: String,
        place: String,
        advice: &'static str,
    },
    #[error(
        "`{0}` answers no client request (its peer is stored or handed over, not taken from the \
         call): a request without an originating request has no MRTR round to ride on; ask for \
         the input in the next tool call's arguments instead, or drop the feature"
    )]
    NoOrigin(String),
    #[error(
        "`{handler}`: the request inside `{spawn}(..)` runs in a task of its own, which outlives \
         the call: it answers no client request and has no MRTR round to ride on; ask for the \
         input before the task starts (an input request of the handler itself), or drop the \
         feature"
    )]
    Spawned { handler: String, spawn: String },
    #[error(
        "`{0}` is not a `#[tool]` and returns no `Result`: only a tool's value becomes its \
         complete result"
    )]
    NotATool(String),
    #[error(
        "`{name}` is a helper function, not a handler: give it the round state (`&mut \
         mrtr::Rounds`) and make its request an input request, then scaffold its callers{}",
        callers_text(callers)
    )]
    Helper { name: String, callers: Vec<String> },
    #[error("`{handler}`: `elicit` without a type (`elicit::<T>(..)`) at request {index}")]
    UntypedElicit { handler: String, index: usize },
    #[error(
        "`{0}` is a `#[prompt]` method: rmcp 3's prompt router does not pass `inputResponses` \
         or `requestState` to it; ask from `ServerHandler::get_prompt` (which may return \
         `input_required`) instead"
    )]
    PromptMacro(String),
    #[error("`{0}`: its request parameters are not bound to a name (`request: {1}`)")]
    UnnamedParams(String, String),
    #[error(
        "`{handler}`: the closure `{closure}` that makes a request is stored or handed on, not \
         only called by the handler: it may run after the round or not at all; call it (or make \
         its request) in the handler itself"
    )]
    ClosureHandedOn { handler: String, closure: String },
    #[error(
        "`{handler}`: the closure {closure} that makes a request leaves its body with `?` or \
         `return`, and its future is used as a value rather than awaited where it is called: \
         await it there, or make its request in the handler itself"
    )]
    ClosureExits { handler: String, closure: String },
    #[error(
        "`{handler}`: the closure that makes a request is handed to `{callee}(..)`, which runs \
         it when it drives its iterator or future, not as a step of the handler; make the \
         request in a `for` loop of the handler (one round per request)"
    )]
    ClosureHandedTo { handler: String, callee: String },
}

/// The MRTR form of `function` and the keys of its input requests, in order.
/// `helpers` names the file's functions that make a request themselves: a call to one is refused
/// (the request would stay a legacy one).
/// `in_trait`: `function` is a method of a `ServerHandler` impl (`get_prompt`, `read_resource`,
/// `call_tool` are rewritten there).
pub fn handler(
    function: &syn::ImplItemFn,
    helpers: &Helpers,
    in_trait: bool,
) -> Result<Rewritten<syn::ImplItemFn>, Unsupported> {
    let name = function.sig.ident.to_string();
    let is_tool = attributed(function, "tool");
    let in_server_handler = in_trait && trait_response(&name).is_some();
    if !is_tool && !in_server_handler && !takes_the_call(&function.sig) {
        return Err(Unsupported::NoOrigin(name));
    }
    if function.sig.asyncness.is_none() {
        return Err(Unsupported::NotAsync(name));
    }
    let surface = surface(function, in_trait)?;
    let mut output = Output::of(&function.sig.output).ok_or(Unsupported::NoOutput(name.clone()))?;
    if matches!(output, Output::Value(_)) && !is_tool {
        return Err(Unsupported::NotATool(name));
    }
    if let (Surface::Trait { .. }, Output::Result(ok_type)) = (&surface, &output) {
        output = Output::Respond(ok_type.clone());
    }
    let mut out = function.clone();
    // The tool keeps the output schema its `Json<T>` return type gave it.
    if let Some(structured) = json_inner_type(output.value_type()) {
        keep_output_schema(&mut out.attrs, structured);
    }
    let (keys, called) = body(&mut out.block, &name, &output, helpers, false)?;

    // 3. The signature: the round's inputs in, the MRTR response out.
    let error_type = result_error_type(&function.sig.output);
    let resume: syn::Stmt = match &surface {
        Surface::Tool => {
            // The extractors are imported by the scaffold file (`super::imports`).
            out.sig.inputs.push(syn::parse_quote!(
                InputResponses(input_responses): InputResponses
            ));
            out.sig
                .inputs
                .push(syn::parse_quote!(RequestState(request_state): RequestState));
            out.sig.output =
                syn::parse_quote!(-> Result<rmcp::model::CallToolResponse, #error_type>);
            syn::parse_quote! {
                let mut rounds = mrtr::Rounds::resume(#name, request_state, input_responses)?;
            }
        }
        Surface::Trait { params, response } => {
            out.sig.output = syn::parse_quote!(-> Result<rmcp::model::#response, #error_type>);
            syn::parse_quote! {
                let mut rounds = mrtr::Rounds::resume(
                    #name,
                    #params.request_state.clone(),
                    #params.input_responses.clone(),
                )?;
            }
        }
    };
    out.block.stmts.insert(0, resume);
    let mut asked: Vec<String> = keys.iter().map(|key| format!("`{key}`")).collect();
    asked.extend(called.iter().map(|helper| format!("those of `{helper}`")));
    let doc = format!(
        " MRTR (MCP 2026-07-28) shape of `{name}`, generated by `cargo mcp-lint`: each round runs \
         the handler from the top; input requests {} are answered through `inputResponses` and \
         the sealed `requestState`. Review before use: the code before each request runs again \
         on every round.",
        asked.join(", ")
    );
    prepend_doc(&mut out.attrs, &doc);
    Ok(Rewritten {
        function: out,
        keys,
        called,
    })
}

/// A rewritten function, the keys of its input requests and the helpers (with an MRTR form) it
/// calls.
pub struct Rewritten<F> {
    pub function: F,
    pub keys: Vec<String>,
    pub called: BTreeSet<String>,
}

/// The file's functions that make a request themselves, and those of them rewritten into their
/// MRTR form (with the helpers they call in turn).
#[derive(Default)]
pub struct Helpers {
    pub requesting: BTreeSet<String>,
    pub rewritten: BTreeMap<String, Rewritten<syn::ItemFn>>,
}

impl Helpers {
    /// The request helpers of `file`, each free `async fn` among them that takes the call
    /// rewritten (to a fixed point: a helper may call another).
    pub fn of(file: &syn::File, free_functions: &[&syn::ItemFn]) -> Self {
        let mut helpers = Helpers {
            requesting: request_helpers(file),
            rewritten: BTreeMap::new(),
        };
        loop {
            let mut grew = false;
            for function in free_functions {
                let name = function.sig.ident.to_string();
                if !helpers.requesting.contains(&name) || helpers.rewritten.contains_key(&name) {
                    continue;
                }
                if let Ok(rewritten) = helper(function, &helpers) {
                    helpers.rewritten.insert(name, rewritten);
                    grew = true;
                }
            }
            if !grew {
                return helpers;
            }
        }
    }

    /// `name` and every rewritten helper it reaches through the helpers it calls.
    pub fn closure<'a>(&'a self, called: &BTreeSet<String>) -> Vec<&'a syn::ItemFn> {
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        let mut pending: Vec<&str> = called.iter().map(String::as_str).collect();
        let mut out = Vec::new();
        while let Some(name) = pending.pop() {
            if !seen.insert(name) {
                continue;
            }
            if let Some(rewritten) = self.rewritten.get(name) {
                out.push(&rewritten.function);
                pending.extend(rewritten.called.iter().map(String::as_str));
            }
        }
        out
    }
}

/// The MRTR form of a free helper that makes a request itself: it takes the round state first
/// (`rounds: &mut mrtr::Rounds`) and returns `Result<T, mrtr::Interrupt>`, `Err` when a request
/// has no answer yet (the calling handler then ends the round) or a helper it calls failed.
pub fn helper(
    function: &syn::ItemFn,
    helpers: &Helpers,
) -> Result<Rewritten<syn::ItemFn>, Unsupported> {
    let name = function.sig.ident.to_string();
    if !takes_the_call(&function.sig) {
        return Err(Unsupported::NoOrigin(name));
    }
    if function.sig.asyncness.is_none() {
        return Err(Unsupported::NotAsync(name));
    }
    let value_type: syn::Type = match &function.sig.output {
        syn::ReturnType::Default => syn::parse_quote!(()),
        syn::ReturnType::Type(_, ty) => (**ty).clone(),
    };
    if matches!(value_type, syn::Type::ImplTrait(_)) {
        return Err(Unsupported::NoOutput(name));
    }
    let output = Output::Helper(value_type.clone());
    let mut out = function.clone();
    let (keys, called) = body(&mut out.block, &name, &output, helpers, true)?;
    if !matches!(out.block.stmts.last(), Some(syn::Stmt::Expr(_, None))) {
        out.block
            .stmts
            .push(syn::Stmt::Expr(syn::parse_quote!(Ok(())), None));
    }
    // A type parameter a typed elicitation decodes into needs what decoding needs.
    let original = quote::ToTokens::to_token_stream(&function.block).to_string();
    for param in out.sig.generics.type_params_mut() {
        let ident = &param.ident;
        if original.contains(&format!("elicit :: < {ident} >"))
            || original.contains(&format!("elicit_with_timeout :: < {ident} >"))
        {
            param
                .bounds
                .push(syn::parse_quote!(serde::de::DeserializeOwned));
            param
                .bounds
                .push(syn::parse_quote!(rmcp::schemars::JsonSchema));
        }
    }
    out.sig
        .inputs
        .insert(0, syn::parse_quote!(rounds: &mut mrtr::Rounds));
    out.sig.output = syn::parse_quote!(-> Result<#value_type, mrtr::Interrupt>);
    let doc = format!(
        " MRTR (MCP 2026-07-28) shape of the helper `{name}`, generated by `cargo mcp-lint`: it \
         takes the round state of the handler that calls it; a request without an answer yet \
         (or a failure of a helper it calls) ends the round with `Err(Interrupt)`. Review its \
         `?`s: an error they raise now ends the call."
    );
    prepend_doc(&mut out.attrs, &doc);
    Ok(Rewritten {
        function: out,
        keys,
        called,
    })
}

/// Rewrites `block` in place: its ways out through `output`, its requests as input requests
/// (keys `<name>.<kind>.<n>`), the rewritable helpers it awaits given the round state. The keys
/// and the helpers called; a request it cannot rewrite is an error, and so is none at all.
fn body(
    block: &mut syn::Block,
    name: &str,
    output: &Output,
    helpers: &Helpers,
    in_helper: bool,
) -> Result<(Vec<String>, BTreeSet<String>), Unsupported> {
    // A trailing `select! { .. }` is the value: an expression, like any other tail.
    if let Some(last) = block.stmts.last_mut() {
        if let syn::Stmt::Macro(stmt) = last {
            if stmt.semi_token.is_none() {
                let mac = syn::Expr::Macro(syn::ExprMacro {
                    attrs: stmt.attrs.clone(),
                    mac: stmt.mac.clone(),
                });
                *last = syn::Stmt::Expr(mac, None);
            }
        }
    }

    // 1. Every way out becomes a complete response (or the helper's `Ok`).
    Returns { output }.visit_block_mut(block);
    if let Some(syn::Stmt::Expr(tail, None)) = block.stmts.last_mut() {
        *tail = output.complete(tail);
    }

    // 2. Every awaited request either has its answer or ends the round. A request in an
    //    unconditional position of a top-level statement is hoisted into a `let` before it.
    let closures = Closures::of(block, name)?;
    let mut sites = Sites {
        handler: name.to_owned(),
        closures,
        output: output.clone(),
        helpers: helpers
            .requesting
            .iter()
            .filter(|helper| *helper != name)
            .cloned()
            .collect(),
        rewritable: helpers.rewritten.keys().cloned().collect(),
        server_requests: requests::sends_a_server_request(quote::ToTokens::to_token_stream(
            &*block,
        )),
        custom_requests: requests::custom::bindings(block),
        called: BTreeSet::new(),
        in_helper,
        keys: Vec::new(),
        error: None,
        depth: 0,
        hoisted: Vec::new(),
    };
    let mut statements = Vec::new();
    for mut stmt in std::mem::take(&mut block.stmts) {
        // A request closure's binding: each of its calls is inlined.
        if sites.closures.binds(&stmt) {
            continue;
        }
        sites.depth = 0;
        sites.visit_stmt_mut(&mut stmt);
        for (binding, expr) in sites.hoisted.drain(..) {
            statements.push(syn::parse_quote!(let #binding = #expr;));
        }
        statements.push(stmt);
    }
    block.stmts = statements;
    if let Some(error) = sites.error {
        return Err(error);
    }
    if sites.keys.is_empty() && sites.called.is_empty() {
        return Err(Unsupported::NoRequest(name.to_owned()));
    }
    Ok((sites.keys, sites.called))
}

/// Puts `doc` before a function's other attributes, as `///` lines.
fn prepend_doc(attrs: &mut Vec<syn::Attribute>, doc: &str) {
    for (index, line) in doc_lines(doc).iter().enumerate() {
        attrs.insert(index, syn::parse_quote!(#[doc = #line]));
    }
}

/// `text` as `///` lines of about 90 columns.
fn doc_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if line.len() + word.len() < 90 => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_owned()),
        }
    }
    lines.into_iter().map(|line| format!(" {line}")).collect()
}
