//! The syn `Visit` implementation: what each node kind does to the walk's context (scopes,
//! bindings, enclosing `impl`, handler method, `match` arm literal, task origin) and which checks
//! and symbol tables it is dispatched to.

use mcp_migrate_rules::RuleId;
use syn::spanned::Spanned;
use syn::visit::{self, Visit};

use super::peers::PEER_CLOSURE_METHODS;
use super::{Analyzer, Binding, HandlerTrait, StateKind};
use crate::rust::macros::Json;
use crate::rust::shapes::{
    arm_method_literal, builds_elicitation_schema, is_none, is_sending_name, is_some_call,
    last_ident, literal_key_length,
};
use crate::rust::symbols::{self, Receiver};
use crate::rust::words;

/// The methods of `ElicitationSchema::builder()` that take a property name first.
const SCHEMA_BUILDER_METHODS: &[&str] = &[
    "required_string",
    "optional_string",
    "string_property",
    "required_string_with",
    "optional_string_with",
    "required_property",
    "property",
    "required_email",
    "optional_email",
];

impl<'ast> Visit<'ast> for Analyzer<'_> {
    fn visit_stmt(&mut self, stmt: &'ast syn::Stmt) {
        self.out.enter_stmt();
        visit::visit_stmt(self, stmt);
        self.out.leave_stmt();
    }

    fn visit_item(&mut self, item: &'ast syn::Item) {
        self.out.enter_stmt();
        visit::visit_item(self, item);
        self.out.leave_stmt();
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        self.out.enter_stmt();
        visit::visit_impl_item(self, item);
        self.out.leave_stmt();
    }

    fn visit_trait_item(&mut self, item: &'ast syn::TraitItem) {
        self.out.enter_stmt();
        visit::visit_trait_item(self, item);
        self.out.leave_stmt();
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        // Imports are reported from the use map, which holds the span of each imported name.
        let _ = item;
    }

    fn visit_file(&mut self, file: &'ast syn::File) {
        let imports = self.cx.uses.imports.clone();
        for import in &imports {
            if import.path[0] != crate::rust::imports::SDK_ROOT {
                continue;
            }
            if let Some(finding) = symbols::imported_symbol(&import.path) {
                self.out.report_import(&finding, import.span, import.item);
            }
        }
        visit::visit_file(self, file);
    }

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        let kind = item
            .trait_
            .as_ref()
            .map_or(HandlerTrait::Other, |(_, path, _)| self.handler_trait(path));
        let self_type = match &*item.self_ty {
            syn::Type::Path(path) => path.path.segments.last().map(|s| s.ident.to_string()),
            _ => None,
        };
        self.impls.push(kind);
        self.self_types.push(self_type);
        visit::visit_item_impl(self, item);
        self.self_types.pop();
        self.impls.pop();
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        let kind = self.impls.last().copied().unwrap_or(HandlerTrait::Other);
        let name = item.sig.ident.to_string();
        if let Some(finding) = symbols::handler_method(
            kind == HandlerTrait::Server,
            kind == HandlerTrait::Client,
            &name,
        ) {
            self.report(&finding, item.sig.ident.span());
        }
        // A `ServerHandler` notification handler answers no request.
        let origin = if kind == HandlerTrait::Server && name.starts_with("on_") {
            Some(format!("the notification handler `{name}`"))
        } else {
            None
        };
        let previous_origin = std::mem::replace(&mut self.no_origin, origin);
        let previous = if kind == HandlerTrait::Server {
            self.server_method.replace(name)
        } else {
            self.server_method.take()
        };
        self.with_scope(|this| visit::visit_impl_item_fn(this, item));
        self.server_method = previous;
        self.no_origin = previous_origin;
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        let previous = self.server_method.take();
        let previous_origin = self.no_origin.take();
        let impls = std::mem::take(&mut self.impls);
        let self_types = std::mem::take(&mut self.self_types);
        self.with_scope(|this| visit::visit_item_fn(this, item));
        self.self_types = self_types;
        self.impls = impls;
        self.server_method = previous;
        self.no_origin = previous_origin;
    }

    fn visit_signature(&mut self, sig: &'ast syn::Signature) {
        for input in &sig.inputs {
            if let syn::FnArg::Typed(typed) = input {
                let binding = self.binding_for(Some(&typed.ty), None);
                self.bind_pattern(&typed.pat, binding);
            }
        }
        visit::visit_signature(self, sig);
    }

    fn visit_expr_closure(&mut self, closure: &'ast syn::ExprClosure) {
        let peer = std::mem::take(&mut self.closure_peer);
        self.with_scope(|this| {
            for input in &closure.inputs {
                match input {
                    syn::Pat::Type(typed) => {
                        let binding = this.binding_for(Some(&typed.ty), None);
                        this.bind_pattern(&typed.pat, binding);
                    }
                    other => this.bind_pattern(
                        other,
                        Binding {
                            peer,
                            state: StateKind::Unknown,
                        },
                    ),
                }
            }
            visit::visit_expr_closure(this, closure);
        });
    }

    fn visit_block(&mut self, block: &'ast syn::Block) {
        self.with_scope(|this| visit::visit_block(this, block));
    }

    fn visit_local(&mut self, local: &'ast syn::Local) {
        if let Some(init) = &local.init {
            self.visit_expr(&init.expr);
            if let Some((_, diverge)) = &init.diverge {
                self.visit_expr(diverge);
            }
        }
        let (pat, ty) = match &local.pat {
            syn::Pat::Type(typed) => (&*typed.pat, Some(&*typed.ty)),
            other => (other, None),
        };
        let binding = self.binding_for(ty, local.init.as_ref().map(|init| &*init.expr));
        self.bind_pattern(pat, binding);
    }

    fn visit_expr_let(&mut self, expr: &'ast syn::ExprLet) {
        self.visit_expr(&expr.expr);
        let binding = self.binding_for(None, Some(&expr.expr));
        self.bind_pattern(&expr.pat, binding);
    }

    fn visit_expr_for_loop(&mut self, expr: &'ast syn::ExprForLoop) {
        self.visit_expr(&expr.expr);
        self.with_scope(|this| {
            let binding = this.binding_for(None, Some(&expr.expr));
            this.bind_pattern(&expr.pat, binding);
            this.visit_block(&expr.body);
        });
    }

    fn visit_expr_match(&mut self, expr: &'ast syn::ExprMatch) {
        for attr in &expr.attrs {
            self.visit_attribute(attr);
        }
        self.visit_expr(&expr.expr);
        // `match self.peer.get() { Some(peer) => peer.list_roots(), .. }`
        self.match_peer.push(self.is_peer_expr(&expr.expr));
        for arm in &expr.arms {
            self.visit_arm(arm);
        }
        self.match_peer.pop();
    }

    fn visit_arm(&mut self, arm: &'ast syn::Arm) {
        self.out.enter_stmt();
        self.arm_literals.push(arm_method_literal(&arm.pat));
        let peer = self.match_peer.last().copied().unwrap_or(false);
        self.with_scope(|this| {
            let binding = Binding {
                peer,
                state: StateKind::Unknown,
            };
            this.bind_pattern(&arm.pat, binding);
            this.visit_pat(&arm.pat);
            if let Some((_, guard)) = &arm.guard {
                this.visit_expr(guard);
            }
            this.visit_expr(&arm.body);
        });
        self.arm_literals.pop();
        self.out.leave_stmt();
    }

    fn visit_item_struct(&mut self, item: &'ast syn::ItemStruct) {
        for field in &item.fields {
            if let Some(ident) = &field.ident {
                let name = ident.to_string();
                if words::is_secret_name(&name) {
                    self.secret_fields
                        .push((item.ident.to_string(), name, ident.span()));
                }
            }
        }
        visit::visit_item_struct(self, item);
    }

    fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
        let method = call.method.to_string();
        let mut findings = Vec::new();
        if let Some(entry) = symbols::method(&method) {
            let applies = match entry.receiver {
                Receiver::Peer => self.is_peer_expr(&call.receiver),
                Receiver::Any => self.cx.sdk_active,
            };
            if applies {
                findings = (entry.findings)();
                if entry.typed_elicitation {
                    if let Some(turbofish) = &call.turbofish {
                        for arg in &turbofish.args {
                            if let syn::GenericArgument::Type(syn::Type::Path(ty)) = arg {
                                if let Some(last) = ty.path.segments.last() {
                                    self.elicitation_types.insert(last.ident.to_string());
                                }
                            }
                        }
                    }
                }
                if let Some(index) = entry.url_argument {
                    if let Some(url) = call.args.iter().nth(index) {
                        self.check_url_argument(url);
                    }
                }
            }
        }
        if matches!(method.as_str(), "send_request" | "send_request_with_option")
            && self.is_peer_expr(&call.receiver)
        {
            if let Some(wire) = call.args.first().and_then(symbols::sent_request_method) {
                findings = symbols::generic_request(&method, wire);
            }
        }
        let findings = self.without_origin(findings);
        if self.cx.sdk_active
            && SCHEMA_BUILDER_METHODS.contains(&method.as_str())
            && builds_elicitation_schema(&call.receiver)
        {
            if let Some(syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(name),
                ..
            })) = call.args.first()
            {
                if words::is_secret_name(&name.value()) {
                    self.report(&symbols::secret_property(&name.value()), name.span());
                }
            }
        }
        if is_sending_name(&method) {
            self.check_literal_arguments(&call.args);
        }
        // Nested findings of the same rule are not repeated inside the arguments; the receiver
        // is a separate call (`builder().enable_roots().enable_roots_list_changed()`).
        for attr in &call.attrs {
            self.visit_attribute(attr);
        }
        self.visit_expr(&call.receiver);
        // `self.peer.get().map(|peer| peer.list_roots())`: the closure's parameter is the peer.
        let peer_closure =
            PEER_CLOSURE_METHODS.contains(&method.as_str()) && self.is_peer_expr(&call.receiver);
        self.report_around(&findings, call.method.span(), |this| {
            if let Some(turbofish) = &call.turbofish {
                this.visit_angle_bracketed_generic_arguments(turbofish);
            }
            // `handle.spawn(async move { .. })`, `join_set.spawn(..)`: a task of its own.
            this.in_task(Some(&call.method), |this| {
                for arg in &call.args {
                    this.closure_peer = peer_closure && matches!(arg, syn::Expr::Closure(_));
                    this.visit_expr(arg);
                    this.closure_peer = false;
                }
            });
        });
    }

    fn visit_expr_call(&mut self, call: &'ast syn::ExprCall) {
        if let syn::Expr::Path(func) = &*call.func {
            let resolved = self.cx.uses.resolve_path(&func.path);
            if self.may_be_sdk(&resolved) {
                let tail: Vec<&str> = resolved.tail(2).iter().map(String::as_str).collect();
                match tail.as_slice() {
                    ["InputRequiredResult", "new"] => {
                        if let Some(state) = call.args.iter().nth(1) {
                            self.check_state_argument(state);
                        }
                    }
                    ["InputRequiredResult", "from_request_state"] => {
                        if let Some(state) = call.args.first() {
                            self.check_state_argument(state);
                        }
                    }
                    ["RequestStateCodec", "try_new"] => {
                        if let Some(key) = call.args.first() {
                            if let Some((length, span)) = literal_key_length(key) {
                                if length < 32 {
                                    self.report(&symbols::short_state_key(length), span);
                                }
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        // `Request::new("roots/list")`: the type's name says it is a message. Free functions
        // (`server_request("create_message", "sampling/createMessage")`) are too often labels.
        if let syn::Expr::Path(func) = &*call.func {
            let segments = &func.path.segments;
            if segments.len() >= 2
                && is_sending_name(&segments[segments.len() - 2].ident.to_string())
            {
                self.check_literal_arguments(&call.args);
            }
        }
        // `tokio::spawn(async move { .. })`, `std::thread::spawn(..)`: a task of its own.
        let spawn = match &*call.func {
            syn::Expr::Path(func) => func.path.segments.last().map(|s| &s.ident),
            _ => None,
        };
        self.in_task(spawn, |this| visit::visit_expr_call(this, call));
    }

    fn visit_expr_path(&mut self, expr: &'ast syn::ExprPath) {
        let resolved = self.cx.uses.resolve_path(&expr.path);
        if self.may_be_sdk(&resolved) || self.reexported_sse(&resolved) {
            let findings = symbols::path(&resolved);
            let span = expr.path.span();
            for finding in &findings {
                if finding.rule == RuleId::InputRequiredOutsideMrtr {
                    self.check_input_required_context(
                        span,
                        &format!("`{}`", resolved.tail(2).join("::")),
                    );
                } else {
                    self.report(finding, span);
                }
            }
        }
        visit::visit_expr_path(self, expr);
    }

    fn visit_pat_tuple_struct(&mut self, pat: &'ast syn::PatTupleStruct) {
        self.check_pattern_path(&pat.path);
        visit::visit_pat_tuple_struct(self, pat);
    }

    fn visit_pat_struct(&mut self, pat: &'ast syn::PatStruct) {
        self.check_pattern_path(&pat.path);
        visit::visit_pat_struct(self, pat);
    }

    fn visit_type_path(&mut self, ty: &'ast syn::TypePath) {
        let resolved = self.cx.uses.resolve_path(&ty.path);
        if resolved.is_sdk && !resolved.through_import {
            if let Some(finding) = symbols::imported_symbol(&resolved.segments) {
                self.report(&finding, ty.path.span());
            }
        }
        visit::visit_type_path(self, ty);
    }

    fn visit_expr_struct(&mut self, expr: &'ast syn::ExprStruct) {
        let resolved = self.cx.uses.resolve_path(&expr.path);
        let struct_name = resolved.last().to_owned();
        for field in &expr.fields {
            let syn::Member::Named(name) = &field.member else {
                continue;
            };
            let name = name.to_string();
            match name.as_str() {
                "method" => {
                    if let syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(lit),
                        ..
                    }) = &field.expr
                    {
                        self.check_method_literal(lit, false);
                    }
                }
                "request_state" if self.cx.sdk_active && is_some_call(&field.expr) => {
                    self.check_state_argument(&field.expr);
                }
                "url" if struct_name == "UrlElicitationParams" && self.cx.sdk_active => {
                    self.check_url_argument(&field.expr);
                }
                _ => {}
            }
            if resolved.is_sdk && !is_none(&field.expr) {
                if let Some(finding) = symbols::capability_field(&struct_name, &name) {
                    self.report(&finding, field.member.span());
                }
            }
        }
        visit::visit_expr_struct(self, expr);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        match last_ident(&mac.path) {
            Some("macro_rules") => {}
            Some("json") => {
                if self.macro_may_match(mac) {
                    let json = Json::parse(mac.tokens.clone());
                    self.check_json(&json);
                }
            }
            Some("matches") => {
                // `matches!(request, ClientRequest::SubscribeRequest(_) | ..)`: an expression
                // and a pattern, not two expressions.
                let parsed = mac.parse_body_with(|input: syn::parse::ParseStream| {
                    let expr: syn::Expr = input.parse()?;
                    let _: syn::Token![,] = input.parse()?;
                    let pat = syn::Pat::parse_multi_with_leading_vert(input)?;
                    let _rest: proc_macro2::TokenStream = input.parse()?;
                    Ok((expr, pat))
                });
                match parsed {
                    Ok((expr, pat)) => {
                        self.visit_expr(&expr);
                        self.visit_pat(&pat);
                    }
                    Err(_) => self.visit_fragments(mac.tokens.clone()),
                }
            }
            Some("elicit_safe") => {
                for tree in mac.tokens.clone() {
                    if let proc_macro2::TokenTree::Ident(ident) = tree {
                        self.elicitation_types.insert(ident.to_string());
                    }
                }
            }
            _ => {
                if self.macro_may_match(mac) {
                    self.visit_fragments(mac.tokens.clone());
                }
            }
        }
        visit::visit_macro(self, mac);
    }
}
