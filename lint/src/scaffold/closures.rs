//! Requests made by closures and `async` blocks of a handler.
//!
//! A closure bound by `let NAME = |..| ..;` whose body makes a request, and that the handler
//! only ever calls (`NAME(args)`, `NAME(args).await`), is inlined at each call: `{ let PARAMS =
//! ARGS; BODY }`, its `async` body a plain block when the call is awaited. Its requests then
//! become input requests of the round like any other (each call its own key), and the call's
//! value is the closure's. An `async` block awaited on the spot (`async move { .. }.await`)
//! becomes a plain block the same way, and `join_all(ITER.map(|x| ..)).await` (or `try_join_all`) a `for`
//! loop that collects the closure's values. A body that leaves with `?` or `return` is inlined as a
//! labelled block they break out of (with the error, `From`-converted, or the value), so they
//! still leave only the closure. Refused, with the closure named: a closure that is stored or
//! handed on (it may run after the round or not at all), one handed to another combinator, and
//! an `async` closure that leaves with `?` and whose future is used as a value.

use std::collections::{BTreeMap, BTreeSet};

use quote::ToTokens;
use syn::visit::Visit;
use syn::visit_mut::VisitMut;

use super::requests;
use super::rewrite::Unsupported;
use super::sites::Sites;

/// The closures of a handler that make a request, by the name they are bound to.
#[derive(Default)]
pub struct Closures {
    pub by_name: BTreeMap<String, syn::ExprClosure>,
    /// How many bodies were inlined with a label (each its own: `'closure_N`).
    labels: usize,
}

/// Whether `tokens` make a request (a request method, or a `ServerRequest` sent by hand).
pub fn requests_in(tokens: proc_macro2::TokenStream) -> bool {
    requests::calls_a_request(tokens.clone()) || requests::sends_a_server_request(tokens)
}

impl Closures {
    /// The request closures `let`-bound in `block`; refused when one is used other than by
    /// calling it.
    pub fn of(block: &syn::Block, handler: &str) -> Result<Self, Unsupported> {
        let mut found = Bindings::default();
        found.visit_block(block);
        let mut closures = Closures::default();
        closures.by_name.extend(found.closures);
        let mut uses = Uses {
            names: closures.by_name.keys().cloned().collect(),
            handed_on: None,
        };
        uses.visit_block(block);
        if let Some(name) = uses.handed_on {
            return Err(Unsupported::ClosureHandedOn {
                handler: handler.to_owned(),
                closure: name,
            });
        }
        Ok(closures)
    }

    /// Whether `tokens` call one of the closures (`NAME(..)`).
    pub fn called_in(&self, tokens: proc_macro2::TokenStream) -> bool {
        let trees: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
        trees.iter().enumerate().any(|(index, tree)| match tree {
            proc_macro2::TokenTree::Ident(ident) => {
                self.by_name.contains_key(&ident.to_string())
                    && matches!(trees.get(index + 1), Some(proc_macro2::TokenTree::Group(group))
                        if group.delimiter() == proc_macro2::Delimiter::Parenthesis)
            }
            proc_macro2::TokenTree::Group(group) => self.called_in(group.stream()),
            _ => false,
        })
    }

    /// Whether `stmt` binds one of the closures (dropped: every call of it is inlined).
    pub fn binds(&self, stmt: &syn::Stmt) -> bool {
        let syn::Stmt::Local(local) = stmt else {
            return false;
        };
        binding(local).is_some_and(|(name, _)| self.by_name.contains_key(&name))
    }

    /// `NAME(args)` of a closure, inlined: `{ let PARAMS = ARGS; BODY }`. `awaited`: the call
    /// is awaited, so an `async` body is the block itself; otherwise the block's value is the
    /// closure's (a future when its body is `async`: then ready with the block's value).
    pub fn inline(
        &mut self,
        call: &syn::ExprCall,
        awaited: bool,
    ) -> Option<Result<syn::Expr, String>> {
        let syn::Expr::Path(path) = &*call.func else {
            return None;
        };
        let name = path.path.get_ident()?.to_string();
        let closure = self.by_name.get(&name)?;
        if closure.inputs.len() != call.args.len() {
            return None;
        }
        let async_body = matches!(unparenthesised(&closure.body), syn::Expr::Async(_));
        if exits(&closure.body) && async_body && !awaited {
            // Its future is used as a value: `?` inside it cannot leave a block of the handler.
            return Some(Err(format!("`{name}`")));
        }
        let mut stmts: Vec<syn::Stmt> = Vec::new();
        if !closure.inputs.is_empty() {
            let (patterns, types): (Vec<syn::Pat>, Vec<syn::Type>) = closure
                .inputs
                .iter()
                .map(|input| match input {
                    syn::Pat::Type(typed) => ((*typed.pat).clone(), (*typed.ty).clone()),
                    other => (other.clone(), syn::parse_quote!(_)),
                })
                .unzip();
            let args = call.args.iter();
            stmts.push(if patterns.len() == 1 {
                let (pattern, ty, arg) = (&patterns[0], &types[0], &call.args[0]);
                syn::parse_quote!(let #pattern: #ty = #arg;)
            } else {
                syn::parse_quote!(let (#(#patterns),*): (#(#types),*) = (#(#args),*);)
            });
        }
        let body = inlined_body(&closure.body, awaited);
        let output = match &closure.output {
            syn::ReturnType::Type(_, ty) => Some((**ty).clone()),
            syn::ReturnType::Default => None,
        };
        self.labels += 1;
        let label = syn::Lifetime::new(
            &format!("'closure_{}", self.labels),
            proc_macro2::Span::call_site(),
        );
        Some(Ok(exiting_by_label(stmts, body, &label, output)))
    }
}

/// The statements of a closure's `body` inlined, the last one its value; `awaited`: the value
/// awaited (an `async` block's statements themselves, also as the tail of a block).
fn inlined_body(body: &syn::Expr, awaited: bool) -> Vec<syn::Stmt> {
    match unparenthesised(body) {
        syn::Expr::Async(block) if awaited => block.block.stmts.clone(),
        syn::Expr::Async(block) => {
            let inner = &block.block;
            vec![syn::Stmt::Expr(
                syn::parse_quote!(std::future::ready(#inner)),
                None,
            )]
        }
        syn::Expr::Block(block) if block.label.is_none() && block.attrs.is_empty() => {
            let mut stmts = block.block.stmts.clone();
            match stmts.pop() {
                Some(syn::Stmt::Expr(tail, None)) => stmts.extend(inlined_body(&tail, awaited)),
                Some(other) => stmts.push(other),
                None => {}
            }
            stmts
        }
        body @ (syn::Expr::MethodCall(_) | syn::Expr::Call(_) | syn::Expr::Path(_)) if awaited => {
            vec![syn::Stmt::Expr(syn::parse_quote!(#body.await), None)]
        }
        body if awaited => vec![syn::Stmt::Expr(syn::parse_quote!((#body).await), None)],
        body => vec![syn::Stmt::Expr(body.clone(), None)],
    }
}

/// `lets` then `body` as one block; when `body` leaves with `?` or `return`, a block labelled
/// `label` whose `?` and `return` break out of it with the error or the value (what they did
/// in the closure or `async` block), typed `output` when the closure declared it.
fn exiting_by_label(
    lets: Vec<syn::Stmt>,
    mut body: Vec<syn::Stmt>,
    label: &syn::Lifetime,
    output: Option<syn::Type>,
) -> syn::Expr {
    let block: syn::Block = syn::parse_quote!({ #(#body)* });
    let plain = syn::Expr::Block(syn::ExprBlock {
        attrs: Vec::new(),
        label: None,
        block,
    });
    if !exits_from(&plain, false) {
        return syn::parse_quote!({ #(#lets)* #(#body)* });
    }
    let mut breaks = Breaks { label };
    for stmt in &mut body {
        breaks.visit_stmt_mut(stmt);
    }
    let labelled: syn::Expr = syn::parse_quote!(#label: { #(#lets)* #(#body)* });
    match output {
        Some(ty) => syn::parse_quote!({ let value: #ty = #labelled; value }),
        None => labelled,
    }
}

/// `?` and `return` of an inlined body as breaks out of its labelled block.
struct Breaks<'a> {
    label: &'a syn::Lifetime,
}

impl VisitMut for Breaks<'_> {
    fn visit_expr_mut(&mut self, node: &mut syn::Expr) {
        syn::visit_mut::visit_expr_mut(self, node);
        let label = self.label;
        match node {
            syn::Expr::Try(tried) => {
                let inner = &tried.expr;
                *node = syn::parse_quote!(match #inner {
                    Ok(value) => value,
                    Err(error) => break #label Err(From::from(error)),
                });
            }
            syn::Expr::Return(returned) => {
                let value = returned
                    .expr
                    .as_deref()
                    .map_or_else(|| quote::quote!(()), ToTokens::to_token_stream);
                *node = syn::parse_quote!(break #label #value);
            }
            _ => {}
        }
    }

    fn visit_expr_closure_mut(&mut self, _: &mut syn::ExprClosure) {}

    fn visit_expr_async_mut(&mut self, _: &mut syn::ExprAsync) {}

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

fn unparenthesised(expr: &syn::Expr) -> &syn::Expr {
    match expr {
        syn::Expr::Paren(paren) => unparenthesised(&paren.expr),
        other => other,
    }
}

/// `let NAME = |..| ..;` (also `let mut NAME`): the name and the closure.
fn binding(local: &syn::Local) -> Option<(String, &syn::ExprClosure)> {
    let syn::Pat::Ident(ident) = &local.pat else {
        return None;
    };
    let init = local.init.as_ref().filter(|init| init.diverge.is_none())?;
    let syn::Expr::Closure(closure) = unparenthesised(&init.expr) else {
        return None;
    };
    Some((ident.ident.to_string(), closure))
}

/// The `let`-bound closures whose body makes a request.
#[derive(Default)]
struct Bindings {
    closures: Vec<(String, syn::ExprClosure)>,
}

impl<'ast> Visit<'ast> for Bindings {
    fn visit_local(&mut self, node: &'ast syn::Local) {
        if let Some((name, closure)) = binding(node) {
            if requests_in(closure.body.to_token_stream()) {
                self.closures.push((name, closure.clone()));
            }
        }
        syn::visit::visit_local(self, node);
    }

    fn visit_item(&mut self, _: &'ast syn::Item) {}
}

/// The first closure among `names` used other than by a call `NAME(..)` (macro arguments
/// included: `NAME` followed by parentheses is a call there too).
struct Uses {
    names: BTreeSet<String>,
    handed_on: Option<String>,
}

impl<'ast> Visit<'ast> for Uses {
    fn visit_expr_call(&mut self, node: &'ast syn::ExprCall) {
        let called = matches!(&*node.func, syn::Expr::Path(path)
            if path.path.get_ident().is_some_and(|ident| self.names.contains(&ident.to_string())));
        if !called {
            self.visit_expr(&node.func);
        }
        for arg in &node.args {
            self.visit_expr(arg);
        }
    }

    fn visit_expr_path(&mut self, node: &'ast syn::ExprPath) {
        if let Some(ident) = node.path.get_ident() {
            let name = ident.to_string();
            if self.names.contains(&name) {
                self.handed_on.get_or_insert(name);
            }
        }
    }

    fn visit_macro(&mut self, node: &'ast syn::Macro) {
        self.macro_tokens(node.tokens.clone());
    }

    /// A `let` that binds a closure's name to something else shadows it for the rest of the
    /// block (the closure's own `let` brings it back).
    fn visit_local(&mut self, node: &'ast syn::Local) {
        if let Some(init) = &node.init {
            self.visit_expr(&init.expr);
            if let Some((_, diverge)) = &init.diverge {
                self.visit_expr(diverge);
            }
        }
        match binding(node) {
            Some((name, closure)) if requests_in(closure.body.to_token_stream()) => {
                self.names.insert(name);
            }
            _ => {
                let mut bound = Bound::default();
                bound.visit_pat(&node.pat);
                for name in bound.names {
                    self.names.remove(&name);
                }
            }
        }
    }

    fn visit_block(&mut self, node: &'ast syn::Block) {
        let names = self.names.clone();
        syn::visit::visit_block(self, node);
        self.names = names;
    }

    fn visit_item(&mut self, _: &'ast syn::Item) {}
}

/// The names a pattern binds.
#[derive(Default)]
struct Bound {
    names: Vec<String>,
}

impl<'ast> Visit<'ast> for Bound {
    fn visit_pat_ident(&mut self, node: &'ast syn::PatIdent) {
        self.names.push(node.ident.to_string());
        syn::visit::visit_pat_ident(self, node);
    }
}

impl Uses {
    fn macro_tokens(&mut self, tokens: proc_macro2::TokenStream) {
        let trees: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
        for (index, tree) in trees.iter().enumerate() {
            match tree {
                proc_macro2::TokenTree::Ident(ident) if self.names.contains(&ident.to_string()) => {
                    let called = matches!(trees.get(index + 1),
                        Some(proc_macro2::TokenTree::Group(group))
                            if group.delimiter() == proc_macro2::Delimiter::Parenthesis);
                    let bound = index > 0
                        && matches!(&trees[index - 1], proc_macro2::TokenTree::Ident(word)
                            if word == "let" || word == "mut");
                    if !called && !bound {
                        self.handed_on.get_or_insert(ident.to_string());
                    }
                }
                proc_macro2::TokenTree::Group(group) => self.macro_tokens(group.stream()),
                _ => {}
            }
        }
    }
}

/// Whether `body` leaves with `?` or `return` outside the closures, `async` blocks and items
/// nested in it (the top-level `async` block of a closure's body is the body's own).
fn exits(body: &syn::Expr) -> bool {
    exits_from(body, true)
}

/// [`exits`]; `top`: the first `async` block met is the body's own.
fn exits_from(body: &syn::Expr, top: bool) -> bool {
    struct Exits {
        found: bool,
        top: bool,
    }
    impl<'ast> Visit<'ast> for Exits {
        fn visit_expr_try(&mut self, _: &'ast syn::ExprTry) {
            self.found = true;
        }
        fn visit_expr_return(&mut self, _: &'ast syn::ExprReturn) {
            self.found = true;
        }
        fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
        fn visit_expr_async(&mut self, node: &'ast syn::ExprAsync) {
            if std::mem::take(&mut self.top) {
                syn::visit::visit_expr_async(self, node);
            }
        }
        fn visit_item(&mut self, _: &'ast syn::Item) {}
    }
    let mut exits = Exits { found: false, top };
    exits.visit_expr(unparenthesised(body));
    exits.found
}

impl Sites {
    /// `NAME(args)` (`awaited`: `NAME(args).await`) of a request closure: inlined, its requests
    /// rewritten.
    pub(super) fn inlined(&mut self, call: &syn::ExprCall, awaited: bool) -> Option<syn::Expr> {
        match self.closures.inline(call, awaited)? {
            Ok(mut inlined) => {
                self.visit_expr_mut(&mut inlined);
                Some(inlined)
            }
            Err(closure) => {
                self.error.get_or_insert(Unsupported::ClosureExits {
                    handler: self.handler.clone(),
                    closure,
                });
                None
            }
        }
    }

    /// `async { .. }.await` that makes a request: the block (labelled when it leaves with `?`
    /// or `return`), its requests rewritten.
    pub(super) fn awaited_block(&mut self, block: &syn::ExprAsync) -> Option<syn::Expr> {
        if !requests_in(block.block.to_token_stream()) {
            return None;
        }
        self.closures.labels += 1;
        let label = syn::Lifetime::new(
            &format!("'closure_{}", self.closures.labels),
            proc_macro2::Span::call_site(),
        );
        let mut plain = exiting_by_label(Vec::new(), block.block.stmts.clone(), &label, None);
        self.visit_expr_mut(&mut plain);
        Some(plain)
    }

    /// `join_all(ITER.map(|x| ..)).await` of a closure that makes a request: a `for` loop over
    /// `ITER` that collects the closure's values, its body inlined (its request asked once per
    /// item, one round each: `KEY`, `KEY#2`, ..); `try_join_all`: the first `Err` ends the loop
    /// and is the value. `None` when the call is not that.
    pub(super) fn joined_map(&mut self, call: &syn::ExprCall) -> Option<syn::Expr> {
        let syn::Expr::Path(path) = &*call.func else {
            return None;
        };
        let joiner = path.path.segments.last()?.ident.to_string();
        if !matches!(joiner.as_str(), "join_all" | "try_join_all") || call.args.len() != 1 {
            return None;
        }
        let syn::Expr::MethodCall(map) = unparenthesised(&call.args[0]) else {
            return None;
        };
        let Some(syn::Expr::Closure(closure)) = map.args.first().map(unparenthesised) else {
            return None;
        };
        if map.method != "map" || map.args.len() != 1 || closure.inputs.len() != 1 {
            return None;
        }
        if !requests_in(closure.body.to_token_stream()) {
            return None;
        }
        let iter = &map.receiver;
        let pattern = &closure.inputs[0];
        self.closures.labels += 1;
        let label = syn::Lifetime::new(
            &format!("'closure_{}", self.closures.labels),
            proc_macro2::Span::call_site(),
        );
        let body = exiting_by_label(Vec::new(), inlined_body(&closure.body, true), &label, None);
        let mut looped: syn::Expr = if joiner == "join_all" {
            syn::parse_quote!({
                let mut values = Vec::new();
                for #pattern in #iter {
                    values.push(#body);
                }
                values
            })
        } else {
            // `try_join_all`: the first error is the value, as it was.
            self.closures.labels += 1;
            let joined = syn::Lifetime::new(
                &format!("'closure_{}", self.closures.labels),
                proc_macro2::Span::call_site(),
            );
            syn::parse_quote!(#joined: {
                let mut values = Vec::new();
                for #pattern in #iter {
                    match #body {
                        Ok(value) => values.push(value),
                        Err(error) => break #joined Err(error),
                    }
                }
                Ok(values)
            })
        };
        self.visit_expr_mut(&mut looped);
        Some(looped)
    }

    /// A closure that makes a request among `args` of `callee(..)` (`iter.map(|x| ..)`,
    /// `join_all(..)`): refused, the callee named.
    pub(super) fn handed_to(
        &mut self,
        callee: &syn::Ident,
        args: &syn::punctuated::Punctuated<syn::Expr, syn::Token![,]>,
    ) -> bool {
        let handed = args.iter().any(|arg| {
            matches!(unparenthesised(arg), syn::Expr::Closure(closure)
                if requests_in(closure.body.to_token_stream()))
        });
        if handed {
            self.error.get_or_insert(Unsupported::ClosureHandedTo {
                handler: self.handler.clone(),
                callee: callee.to_string(),
            });
        }
        handed
    }
}
