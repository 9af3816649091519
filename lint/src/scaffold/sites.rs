//! The request sites of a handler: each awaited request becomes "the answer, or end the round";
//! the requests of one `join!` are asked together; a `select!` keeps its request's branch; a
//! request hidden in another macro, a closure or a helper is refused with its place named.

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::Span;
use quote::{format_ident, quote};
use syn::visit_mut::VisitMut;

use super::closures::Closures;
use super::concurrent::{self, Concurrency};
use super::exits::{Output, Returns};
use super::requests::{self, Asked, NotBuilt};
use super::rewrite::Unsupported;

/// Replaces each `peer.<request>(..).await` with "the answer, or end the round"; the requests
/// of one `join!` are asked together in one round; a `select!` keeps the branch of its request.
pub struct Sites {
    pub handler: String,
    /// The handler's closures that make a request, inlined where they are called.
    pub closures: Closures,
    pub output: Output,
    /// The file's functions that make a request themselves (see [`request_helpers`]).
    pub helpers: BTreeSet<String>,
    /// The helpers that have an MRTR form (they take `&mut mrtr::Rounds`): their calls are
    /// rewritten, not refused.
    pub rewritable: BTreeSet<String>,
    /// The rewritable helpers this handler calls.
    pub called: BTreeSet<String>,
    /// The code names `ServerRequest`: its `send_request(..)` calls send legacy requests.
    pub server_requests: bool,
    /// What the `let` bindings that build a `CustomRequest` are bound to, by name.
    pub custom_requests: BTreeMap<String, syn::Expr>,
    /// Rewriting a helper: a request that has no answer ends the helper with
    /// `Err(Interrupt)`, not the handler with `Ok(input_required)`.
    pub in_helper: bool,
    pub keys: Vec<String>,
    pub error: Option<Unsupported>,
    /// How many conditional or scoped constructs (blocks, arms, branches, loops, lazy
    /// operands) surround the current node within its top-level statement.
    pub depth: usize,
    /// Requests met at depth 0 of the current top-level statement: (binding, expression).
    pub hoisted: Vec<(syn::Ident, syn::Expr)>,
}

impl Sites {
    /// The input request of `call` (its key recorded), answered through `binding`.
    fn ask(&mut self, call: &syn::ExprMethodCall, binding: &syn::Ident) -> Option<Asked> {
        let index = self.keys.len() + 1;
        let handler = self.handler.clone();
        // `send_request(..)` is a legacy request only in code that builds a `ServerRequest`.
        if call.method == "send_request" && !self.server_requests {
            return None;
        }
        let bound = match call.args.first() {
            Some(syn::Expr::Path(path)) => path
                .path
                .get_ident()
                .and_then(|name| self.custom_requests.get(&name.to_string())),
            _ => None,
        };
        match requests::build(
            call,
            |kind| format!("{handler}.{kind}.{index}"),
            binding,
            bound,
        ) {
            Ok(asked) => {
                self.keys.push(asked.key.clone());
                Some(asked)
            }
            Err(NotBuilt::NotARequest) => None,
            Err(NotBuilt::Custom) => {
                self.error.get_or_insert(Unsupported::Hidden {
                    handler,
                    place: "a `ServerRequest::CustomRequest` whose method is not a string \
                            literal"
                        .into(),
                    advice: ": which request it stands for is known only when it runs; build \
                             the input request it stands for (`InputRequest::CreateMessage`, \
                             `Elicitation`, `ListRoots`) by hand",
                });
                None
            }
            Err(NotBuilt::Untyped) => {
                self.error
                    .get_or_insert(Unsupported::UntypedElicit { handler, index });
                None
            }
        }
    }

    /// `match (answers..) { (Some(..)..) => RESULT, _ => return input_required(requests) }`,
    /// hoisted into a `let` when it stands unconditionally in a top-level statement.
    fn round(&mut self, asked: &[Asked], result: proc_macro2::TokenStream) -> syn::Expr {
        let keys: Vec<&str> = asked.iter().map(|a| a.key.as_str()).collect();
        let requests = asked.iter().map(|a| &a.request);
        let bindings = (1..=asked.len()).map(|n| answer_binding(asked.len(), n));
        let end = if self.in_helper {
            quote!(Err)
        } else {
            quote!(Ok)
        };
        let expr: syn::Expr = if asked.len() == 1 {
            let binding = answer_binding(1, 1);
            let (key, request) = (keys[0], &asked[0].request);
            syn::parse_quote! {
                match rounds.answer(#key) {
                    Some(#binding) => #result,
                    None => return #end(rounds.ask([(#key, #request)])?.into()),
                }
            }
        } else {
            syn::parse_quote! {
                match (#(rounds.answer(#keys),)*) {
                    (#(Some(#bindings),)*) => #result,
                    _ => return #end(rounds.ask([#((#keys, #requests)),*])?.into()),
                }
            }
        };
        if self.depth == 0 {
            let binding = format_ident!("{}_{}", asked[0].kind, self.keys.len() + 1 - asked.len());
            self.hoisted.push((binding.clone(), expr));
            return syn::parse_quote!(#binding);
        }
        expr
    }

    /// `peer.<request>(..).await`.
    fn awaited(&mut self, call: &syn::ExprMethodCall) -> Option<syn::Expr> {
        let asked = self.ask(call, &answer_binding(1, 1))?;
        let answer = asked.answer.clone();
        Some(self.round(&[asked], answer))
    }

    /// `join!(futures..)`: the requests among them asked in one round, the other futures
    /// awaited once every answer is in.
    fn joined(&mut self, mac: &syn::Macro) -> Option<syn::Expr> {
        let futures = concurrent::join_futures(mac)?;
        let count = futures
            .iter()
            .filter(|f| matches!(f, syn::Expr::MethodCall(c) if requests::kind(&c.method.to_string()).is_some()))
            .count();
        let mut asked = Vec::new();
        let mut results = Vec::new();
        for future in futures {
            if let syn::Expr::MethodCall(call) = &future {
                if let Some(request) = self.ask(call, &answer_binding(count, asked.len() + 1)) {
                    results.push(request.answer.clone());
                    asked.push(request);
                    continue;
                }
            }
            let mut awaited: syn::Expr = syn::parse_quote!(#future.await);
            self.nested(|this| this.visit_expr_mut(&mut awaited));
            results.push(quote!(#awaited));
        }
        if asked.is_empty() {
            return None;
        }
        Some(self.round(&asked, quote!((#(#results,)*))))
    }

    /// `select! { PATTERN = peer.<request>(..) => HANDLER, .. }`: the request's branch alone
    /// (the client answers or the call ends; the other branches, timers mostly, have nothing
    /// left to race).
    fn selected(&mut self, mac: &syn::Macro) -> Option<syn::Expr> {
        let select = concurrent::select_branches(mac)?;
        let mut requests = select.branches.into_iter().filter(|branch| {
            matches!(&branch.future, syn::Expr::MethodCall(c) if requests::kind(&c.method.to_string()).is_some())
        });
        let branch = requests.next()?;
        if requests.next().is_some() {
            self.error.get_or_insert(Unsupported::Hidden {
                handler: self.handler.clone(),
                place: "a `select!` racing several requests".into(),
                advice: "; MRTR asks them all in one round and gets every answer, as `join!` does",
            });
            return None;
        }
        let refutable = !matches!(
            branch.pattern,
            syn::Pat::Ident(_) | syn::Pat::Wild(_) | syn::Pat::Tuple(_)
        );
        if refutable {
            self.error.get_or_insert(Unsupported::Hidden {
                handler: self.handler.clone(),
                place: "a `select!` branch whose pattern may not match".into(),
                advice: "",
            });
            return None;
        }
        let syn::Expr::MethodCall(call) = &branch.future else {
            return None;
        };
        let answer = self.awaited(call)?;
        let pattern = branch.pattern;
        let mut handler = branch.handler;
        Returns {
            output: &self.output,
        }
        .visit_expr_mut(&mut handler);
        self.nested(|this| this.visit_expr_mut(&mut handler));
        Some(syn::parse_quote!({
            let #pattern = #answer;
            #handler
        }))
    }

    /// A `join!` or `select!` of requests, rewritten; so is a macro whose arguments are
    /// expressions (`format!`, `vec!`, `matches!`, a crate's own `macro_rules!`); another macro
    /// that calls a request is refused with the place named.
    fn macro_call(&mut self, mac: &syn::Macro) -> Option<syn::Expr> {
        let rewritten = match concurrent::concurrency(mac) {
            Some(Concurrency::Join) => self.joined(mac),
            Some(Concurrency::Select) => self.selected(mac),
            None => self.macro_arguments(mac),
        };
        if rewritten.is_none() && requests::calls_a_request(mac.tokens.clone()) {
            let name = mac
                .path
                .segments
                .last()
                .map_or_else(String::new, |s| s.ident.to_string());
            self.error.get_or_insert(Unsupported::Hidden {
                handler: self.handler.clone(),
                place: format!("the macro `{name}!`"),
                advice: "; move the request out of the macro",
            });
        }
        rewritten
    }

    /// A macro whose arguments parse as expressions, its requests rewritten in them (those of
    /// the macros that evaluate each argument once, in order, hoisted like any other); `None`
    /// when it holds no request this rewrites.
    fn macro_arguments(&mut self, mac: &syn::Macro) -> Option<syn::Expr> {
        let name = mac.path.segments.last()?.ident.to_string();
        // `matches!(EXPR, PATTERN)`: the expression alone, the pattern kept as written.
        let (mut args, rest) = if matches!(name.as_str(), "matches" | "assert_matches") {
            mac.parse_body_with(|input: syn::parse::ParseStream| {
                let first: syn::Expr = input.parse()?;
                let rest: proc_macro2::TokenStream = input.parse()?;
                Ok((vec![first], rest))
            })
            .ok()?
        } else {
            let args = mac
                .parse_body_with(
                    syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated,
                )
                .ok()?;
            (args.into_iter().collect(), proc_macro2::TokenStream::new())
        };
        let before = (self.keys.len(), self.called.len());
        let eager = EAGER_MACROS.contains(&name.as_str());
        for arg in &mut args {
            if eager {
                self.visit_expr_mut(arg);
            } else {
                self.nested(|this| this.visit_expr_mut(arg));
            }
        }
        if (self.keys.len(), self.called.len()) == before {
            return None;
        }
        let mut rewritten = mac.clone();
        rewritten.tokens = quote!(#(#args),* #rest);
        Some(syn::Expr::Macro(syn::ExprMacro {
            attrs: Vec::new(),
            mac: rewritten,
        }))
    }

    /// A request in a spawned task (`tokio::spawn(async move { .. })`, `handle.spawn(..)`,
    /// `std::thread::spawn(..)`): it runs after the call may have returned, so no round carries
    /// it. Refused, named.
    fn spawned(&mut self, callee: Option<&syn::Ident>, tokens: proc_macro2::TokenStream) -> bool {
        let Some(callee) = callee.map(ToString::to_string) else {
            return false;
        };
        // A request there, or a call of a request closure (inlined only where the handler runs).
        let requests = requests::calls_a_request(tokens.clone()) || self.closures.called_in(tokens);
        if !SPAWNS.contains(&callee.as_str()) || !requests {
            return false;
        }
        self.error.get_or_insert(Unsupported::Spawned {
            handler: self.handler.clone(),
            spawn: callee,
        });
        true
    }

    /// A call of a function of the file that makes a request itself: refused, named.
    fn helper_call(&mut self, callee: Option<&syn::Ident>) {
        let Some(callee) = callee.map(ToString::to_string) else {
            return;
        };
        if self.helpers.contains(&callee) && !self.rewritable.contains(&callee) {
            self.error.get_or_insert(Unsupported::Hidden {
                handler: self.handler.clone(),
                place: format!("the helper `{callee}`"),
                advice: "; give the helper the round state, or inline its request into the \
                         handler",
            });
        }
    }

    /// `helper(args).await` of a helper with an MRTR form: `match helper(&mut rounds, args).await
    /// { Ok(value) => value, Err(interrupt) => <end the round, or fail> }`.
    fn helper_awaited(&mut self, call: &syn::ExprCall) -> Option<syn::Expr> {
        let syn::Expr::Path(path) = &*call.func else {
            return None;
        };
        let name = path.path.get_ident()?.to_string();
        if !self.rewritable.contains(&name) {
            return None;
        }
        self.called.insert(name);
        let mut args: Vec<syn::Expr> = call.args.iter().cloned().collect();
        for arg in &mut args {
            self.nested(|this| this.visit_expr_mut(arg));
        }
        let func = &call.func;
        let (rounds, end): (syn::Expr, syn::Expr) = if self.in_helper {
            (
                syn::parse_quote!(&mut *rounds),
                syn::parse_quote!(Err(interrupt)),
            )
        } else {
            (
                syn::parse_quote!(&mut rounds),
                syn::parse_quote!(interrupt.end()),
            )
        };
        Some(syn::parse_quote! {
            match #func(#rounds, #(#args),*).await {
                Ok(value) => value,
                Err(interrupt) => return #end,
            }
        })
    }

    fn nested(&mut self, visit: impl FnOnce(&mut Self)) {
        self.depth += 1;
        visit(self);
        self.depth -= 1;
    }
}

/// The macros that evaluate each argument once, in order: a request in their arguments is
/// hoisted before the statement like one outside any macro.
const EAGER_MACROS: &[&str] = &[
    "format",
    "format_args",
    "vec",
    "matches",
    "assert_matches",
    "print",
    "println",
    "eprint",
    "eprintln",
    "write",
    "writeln",
    "panic",
    "dbg",
];

/// The functions and methods that run their argument as a task of its own.
const SPAWNS: &[&str] = &["spawn", "spawn_local", "spawn_blocking"];

/// `answer`, or `answer_N` of several answered together.
fn answer_binding(count: usize, n: usize) -> syn::Ident {
    if count == 1 {
        format_ident!("answer", span = Span::call_site())
    } else {
        format_ident!("answer_{n}", span = Span::call_site())
    }
}

impl Sites {
    /// `return Err(ErrorData::url_elicitation_required(message, data));` (the legacy -32042
    /// error, its URL in `data`): the round ends with a URL-mode elicitation instead, and once
    /// the client has answered it the handler goes on past the statement (the user has been to
    /// the URL). `None` when the statement is not that, or its URL is not found.
    fn url_required(&mut self, stmt: &syn::Stmt) -> Option<syn::Stmt> {
        let syn::Stmt::Expr(syn::Expr::Return(ret), Some(_)) = stmt else {
            return None;
        };
        let call = url_error(ret.expr.as_deref()?)?;
        let message = call.args.first()?;
        let data = call.args.iter().nth(1)?;
        let url = crate::fix::value_after_key(quote!(#data), "url")?;
        let key = format!("{}.elicitation.{}", self.handler, self.keys.len() + 1);
        self.keys.push(key.clone());
        let end = if self.in_helper {
            quote!(Err)
        } else {
            quote!(Ok)
        };
        Some(syn::parse_quote! {
            if rounds.answer(#key).is_none() {
                return #end(rounds.ask([(
                    #key,
                    rmcp::model::InputRequest::Elicitation(rmcp::model::ElicitRequest::new(
                        rmcp::model::ElicitRequestParams::UrlElicitationParams {
                            meta: None,
                            message: String::from(#message),
                            url: (#url).to_string(),
                            elicitation_id: #key.to_owned(),
                        },
                    )),
                )])?.into());
            }
        })
    }
}

/// The `ErrorData::url_elicitation_required(..)` call of `Err(..)`, also once wrapped into the
/// handler's response (`mrtr::complete(Err(..))`).
fn url_error(expr: &syn::Expr) -> Option<&syn::ExprCall> {
    let syn::Expr::Call(call) = expr else {
        return None;
    };
    let syn::Expr::Path(func) = &*call.func else {
        return None;
    };
    let (first, last) = (func.path.segments.first()?, func.path.segments.last()?);
    match (call.args.len(), call.args.first()?) {
        (1, syn::Expr::Call(inner)) if last.ident == "Err" => {
            let syn::Expr::Path(path) = &*inner.func else {
                return None;
            };
            let name = &path.path.segments.last()?.ident;
            (name == "url_elicitation_required").then_some(inner)
        }
        (1, wrapped) if first.ident == "mrtr" => url_error(wrapped),
        _ => None,
    }
}

impl VisitMut for Sites {
    fn visit_stmt_mut(&mut self, node: &mut syn::Stmt) {
        if let Some(rewritten) = self.url_required(node) {
            *node = rewritten;
            return;
        }
        if let syn::Stmt::Macro(stmt) = node {
            if let Some(expr) = self.macro_call(&stmt.mac) {
                *node = syn::Stmt::Expr(expr, stmt.semi_token);
            }
            return;
        }
        syn::visit_mut::visit_stmt_mut(self, node);
    }

    fn visit_expr_mut(&mut self, node: &mut syn::Expr) {
        match node {
            syn::Expr::Await(awaited) => {
                let replacement = match &*awaited.base {
                    syn::Expr::MethodCall(call) => self.awaited(call),
                    syn::Expr::Call(call) => self
                        .inlined(call, true)
                        .or_else(|| self.joined_map(call))
                        .or_else(|| self.helper_awaited(call)),
                    syn::Expr::Async(block) => self.awaited_block(block),
                    _ => None,
                };
                if let Some(replacement) = replacement {
                    *node = replacement;
                    return;
                }
            }
            syn::Expr::Macro(mac) => {
                if let Some(replacement) = self.macro_call(&mac.mac) {
                    *node = replacement;
                }
                return;
            }
            syn::Expr::Call(call) => {
                if let Some(inlined) = self.inlined(call, false) {
                    *node = inlined;
                    return;
                }
                let callee = match &*call.func {
                    syn::Expr::Path(path) => path.path.segments.last().map(|s| s.ident.clone()),
                    _ => None,
                };
                if callee.is_some_and(|callee| self.handed_to(&callee, &call.args)) {
                    return;
                }
                if let syn::Expr::Path(path) = &*call.func {
                    let callee = path.path.segments.last().map(|s| &s.ident);
                    let args = &call.args;
                    if self.spawned(callee, quote!(#args)) {
                        return;
                    }
                    self.helper_call(callee);
                }
            }
            syn::Expr::MethodCall(call) => {
                let args = &call.args;
                if self.spawned(Some(&call.method), quote!(#args)) {
                    return;
                }
                if self.handed_to(&call.method, &call.args) {
                    return;
                }
                if matches!(&*call.receiver, syn::Expr::Path(p) if p.path.is_ident("self")) {
                    self.helper_call(Some(&call.method));
                }
                // A request's future used as a value (handed to `timeout`, `join_all`, a
                // macro that awaits it): a future that is ready with the answer.
                let method = call.method.to_string();
                if requests::kind(&method).is_some() || method == "send_request" {
                    if let Some(answer) = self.awaited(call) {
                        *node = syn::parse_quote!(std::future::ready(#answer));
                        return;
                    }
                }
            }
            syn::Expr::Closure(_) | syn::Expr::Async(_) => {
                if requests::calls_a_request(quote::ToTokens::to_token_stream(&*node)) {
                    let place = if matches!(node, syn::Expr::Closure(_)) {
                        "a closure"
                    } else {
                        "an `async` block"
                    };
                    self.error.get_or_insert(Unsupported::Hidden {
                        handler: self.handler.clone(),
                        place: place.into(),
                        advice: "; await the request in the handler itself",
                    });
                }
                return;
            }
            _ => {}
        }
        syn::visit_mut::visit_expr_mut(self, node);
    }

    fn visit_block_mut(&mut self, node: &mut syn::Block) {
        node.stmts.retain(|stmt| !self.closures.binds(stmt));
        self.nested(|this| syn::visit_mut::visit_block_mut(this, node));
    }

    fn visit_arm_mut(&mut self, node: &mut syn::Arm) {
        self.nested(|this| syn::visit_mut::visit_arm_mut(this, node));
    }

    fn visit_expr_if_mut(&mut self, node: &mut syn::ExprIf) {
        self.visit_expr_mut(&mut node.cond);
        self.nested(|this| {
            this.visit_block_mut(&mut node.then_branch);
            if let Some((_, otherwise)) = &mut node.else_branch {
                this.visit_expr_mut(otherwise);
            }
        });
    }

    fn visit_expr_while_mut(&mut self, node: &mut syn::ExprWhile) {
        self.nested(|this| syn::visit_mut::visit_expr_while_mut(this, node));
    }

    fn visit_expr_for_loop_mut(&mut self, node: &mut syn::ExprForLoop) {
        self.visit_expr_mut(&mut node.expr);
        self.nested(|this| this.visit_block_mut(&mut node.body));
    }

    fn visit_expr_loop_mut(&mut self, node: &mut syn::ExprLoop) {
        self.nested(|this| syn::visit_mut::visit_expr_loop_mut(this, node));
    }

    fn visit_expr_binary_mut(&mut self, node: &mut syn::ExprBinary) {
        self.visit_expr_mut(&mut node.left);
        if matches!(node.op, syn::BinOp::And(_) | syn::BinOp::Or(_)) {
            self.nested(|this| this.visit_expr_mut(&mut node.right));
        } else {
            self.visit_expr_mut(&mut node.right);
        }
    }

    fn visit_local_mut(&mut self, node: &mut syn::Local) {
        if let Some(init) = &mut node.init {
            self.visit_expr_mut(&mut init.expr);
            if let Some((_, diverge)) = &mut init.diverge {
                self.nested(|this| this.visit_expr_mut(diverge));
            }
        }
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}
