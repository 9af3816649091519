//! The one AST walk over a Rust file. It keeps just enough context to tell an MCP peer from any
//! other receiver (typed bindings, struct fields, `if let` bindings), which trait impl and method
//! it is in, and which `match` arm method literal encloses it; and it dispatches each node kind to
//! the symbol tables in `symbols.rs`.
//!
//! There is no type inference: a call such as `something().create_message(..)` whose receiver is
//! not recognised is not reported (a documented blind spot), so that `create_message` on a mail
//! or LSP client never is.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::sync::Arc;

use mcp_migrate_rules::RuleId;
use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::visit::{self, Visit};

use super::crate_peers::CratePeers;
use super::imports::{Resolved, UseMap};
use super::macros::{fragments, Fragment, Json};
use super::report::Reporter;
use super::shapes::{
    arm_method_literal, builds_elicitation_schema, is_none, is_sealing_name, is_sending_name,
    is_some_call, last_ident, literal_key_length, pattern_idents, strip_some, url_literal,
};
use super::symbols::{self, Finding, Receiver};
use super::words;
use crate::diagnostic::{Diagnostic, SourceFile};

/// The `ServerHandler` methods whose results may be `input_required`.
const MRTR_HANDLERS: &[&str] = &["call_tool", "get_prompt", "read_resource"];
/// The JSON-RPC methods whose results may be `input_required`.
const MRTR_METHODS: &[&str] = &["tools/call", "prompts/get", "resources/read"];

/// Type names that stand for an rmcp peer (or something that derefs to one).
pub(super) const PEER_TYPES: &[&str] = &[
    "Peer",
    "RequestContext",
    "NotificationContext",
    "RunningService",
    "ServerSink",
    "ClientSink",
];

/// Calls that hand back (a view of) their receiver: a peer stays a peer through them.
const TRANSPARENT_METHODS: &[&str] = &[
    "clone",
    "as_ref",
    "as_mut",
    "as_deref",
    "unwrap",
    "expect",
    "lock",
    "read",
    "write",
    "borrow",
    "borrow_mut",
    "get",
    "to_owned",
    "cloned",
    "iter",
    "into_iter",
    "values",
    "first",
    "last",
];

/// Methods whose closure argument receives the receiver's value: on an `Option<Peer>` (or a
/// guard of one) the closure's parameter is a peer.
const PEER_CLOSURE_METHODS: &[&str] = &[
    "map",
    "and_then",
    "inspect",
    "for_each",
    "then",
    "map_or",
    "map_or_else",
    "is_some_and",
];

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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StateKind {
    /// Built by plain serialisation, a literal or string formatting.
    Unsigned,
    /// Passed through a call that seals, signs or MACs it.
    Sealed,
    Unknown,
}

#[derive(Debug, Clone, Copy)]
struct Binding {
    peer: bool,
    state: StateKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HandlerTrait {
    Server,
    Client,
    Other,
}

/// Everything the walk needs to know about the file before it starts.
pub struct FileContext<'a> {
    pub file: &'a Arc<SourceFile>,
    pub uses: &'a UseMap,
    /// The crate depends on the SDK, or the file names it: name-only rules may fire.
    pub sdk_active: bool,
    /// The file may check a request state (`super::checks_state`): bindings' states matter.
    pub states: bool,
    /// The peer fields of the structs the crate's other files declare (`crate_peers.rs`).
    pub crate_peers: Option<&'a CratePeers>,
}

pub struct Analyzer<'a> {
    cx: FileContext<'a>,
    out: Reporter<'a>,
    scopes: Vec<HashMap<String, Binding>>,
    /// Fields of this file's structs whose type is a peer.
    peer_fields: HashSet<String>,
    /// Functions and methods of this file that return a peer (`fn peer(&self) -> Peer<..>`).
    peer_functions: HashSet<String>,
    /// For each enclosing `match`, whether its scrutinee is a peer (its arms bind peers).
    match_peer: Vec<bool>,
    /// The closure about to be walked is the argument of `map`/`and_then`/.. on a peer.
    closure_peer: bool,
    /// The trait of each enclosing `impl`, innermost last.
    impls: Vec<HandlerTrait>,
    /// The type of each enclosing `impl` (its last path segment), innermost last.
    self_types: Vec<Option<String>>,
    /// The enclosing `impl ServerHandler` method, if any.
    server_method: Option<String>,
    /// Where a request made here comes from when no client request is being answered: a
    /// notification handler (`on_initialized`) or a spawned task (`tokio::spawn(..)`).
    no_origin: Option<String>,
    /// The string-literal patterns of enclosing `match` arms, innermost last.
    arm_literals: Vec<Option<String>>,
    /// Types used for typed elicitation (`elicit::<T>`, `elicit_safe!(T)`).
    elicitation_types: HashSet<String>,
    /// Secret-looking fields of this file's structs: (struct, field, span).
    secret_fields: Vec<(String, String, Span)>,
}

impl<'a> Analyzer<'a> {
    pub fn new(cx: FileContext<'a>) -> Self {
        Analyzer {
            out: Reporter::new(cx.file),
            cx,
            scopes: vec![HashMap::default()],
            peer_fields: HashSet::default(),
            peer_functions: HashSet::default(),
            match_peer: Vec::new(),
            closure_peer: false,
            impls: Vec::new(),
            self_types: Vec::new(),
            server_method: None,
            no_origin: None,
            arm_literals: Vec::new(),
            elicitation_types: HashSet::default(),
            secret_fields: Vec::new(),
        }
    }

    /// Walks the file and returns its findings at their default severity.
    pub fn run(mut self, file: &syn::File) -> Vec<Diagnostic> {
        let mut fields = FieldCollector {
            analyzer: &mut self,
        };
        fields.visit_file(file);
        self.visit_file(file);
        self.finish_secret_fields();
        self.out.finish()
    }

    // ----- reporting -------------------------------------------------------------------------

    fn report(&mut self, finding: &Finding, span: Span) -> bool {
        self.out.report(finding, span)
    }

    /// Reports each finding at `span`, then walks `inner` with those rules marked as reported.
    fn report_around(&mut self, findings: &[Finding], span: Span, inner: impl FnOnce(&mut Self)) {
        let mut reported = Vec::new();
        for finding in findings {
            if self.report(finding, span) {
                reported.push(finding.rule);
            }
        }
        self.out.mark(&reported);
        inner(self);
        self.out.unmark(&reported);
    }

    /// Walks `inner` as the body of a spawned task when `spawn` names one.
    fn in_task(&mut self, spawn: Option<&syn::Ident>, inner: impl FnOnce(&mut Self)) {
        let spawned = spawn.is_some_and(|ident| {
            matches!(
                ident.to_string().as_str(),
                "spawn" | "spawn_local" | "spawn_blocking"
            )
        });
        if !spawned {
            return inner(self);
        }
        let previous = self.no_origin.replace("a spawned task".to_owned());
        inner(self);
        self.no_origin = previous;
    }

    /// The findings of a request made where no client request is being answered, saying so.
    fn without_origin(&self, mut findings: Vec<Finding>) -> Vec<Finding> {
        let Some(place) = &self.no_origin else {
            return findings;
        };
        for finding in &mut findings {
            if !matches!(
                finding.rule,
                RuleId::ServerInitiatedRequest
                    | RuleId::DeprecatedSampling
                    | RuleId::DeprecatedRoots
            ) {
                continue;
            }
            finding.message = format!(
                "{} (from {place}, which answers no client request: it has no originating \
                 request)",
                finding
                    .message
                    .replace(" mid-call and awaits the reply", " and awaits the reply")
            );
            if finding.rule == RuleId::ServerInitiatedRequest {
                finding.help = Some(symbols::NO_ORIGIN_HELP.to_owned());
            }
        }
        findings
    }

    // ----- scopes ----------------------------------------------------------------------------

    fn lookup(&self, name: &str) -> Option<Binding> {
        self.scopes
            .iter()
            .rev()
            .find_map(|scope| scope.get(name).copied())
    }

    fn bind_pattern(&mut self, pat: &syn::Pat, binding: Binding) {
        let mut names = Vec::new();
        pattern_idents(pat, &mut names);
        let scope = self.scopes.last_mut().expect("a scope is always open");
        for name in names {
            scope.insert(name, binding);
        }
    }

    fn with_scope(&mut self, inner: impl FnOnce(&mut Self)) {
        self.scopes.push(HashMap::default());
        inner(self);
        self.scopes.pop();
    }

    // ----- classification --------------------------------------------------------------------

    fn is_peer_type(&self, ty: &syn::Type) -> bool {
        peer_type(self.cx.uses, self.cx.sdk_active, ty)
    }

    /// `self.FIELD` in an `impl` of a struct that keeps a peer in `FIELD`, declared in
    /// another file of the crate.
    fn crate_peer_field(&self, base: &syn::Expr, field: &str) -> bool {
        let Some(crate_peers) = self.cx.crate_peers else {
            return false;
        };
        let is_self = matches!(base, syn::Expr::Path(path) if path.path.is_ident("self"));
        is_self
            && self
                .self_types
                .last()
                .and_then(Option::as_deref)
                .is_some_and(|ty| crate_peers.is_peer_field(ty, field))
    }

    fn is_peer_expr(&self, expr: &syn::Expr) -> bool {
        if !self.cx.sdk_active {
            return false;
        }
        match expr {
            syn::Expr::Field(field) => match &field.member {
                syn::Member::Named(name) if name == "peer" => true,
                // `self.client_peer`, `this.client_peer`, `inner.client_peer`: a field that this
                // file declares with a peer type; `self.client` in an `impl` of a struct another
                // file of the crate declares with a peer in that field.
                syn::Member::Named(name) => {
                    let name = name.to_string();
                    self.peer_fields.contains(&name) || self.crate_peer_field(&field.base, &name)
                }
                syn::Member::Unnamed(_) => false,
            },
            syn::Expr::MethodCall(call) => {
                let method = call.method.to_string();
                call.method == "peer"
                    || self.peer_functions.contains(&method)
                    || (TRANSPARENT_METHODS.contains(&method.as_str())
                        && self.is_peer_expr(&call.receiver))
            }
            syn::Expr::Await(inner) => self.is_peer_expr(&inner.base),
            syn::Expr::Try(inner) => self.is_peer_expr(&inner.expr),
            syn::Expr::Paren(inner) => self.is_peer_expr(&inner.expr),
            syn::Expr::Group(inner) => self.is_peer_expr(&inner.expr),
            syn::Expr::Reference(inner) => self.is_peer_expr(&inner.expr),
            syn::Expr::Unary(unary) if matches!(unary.op, syn::UnOp::Deref(_)) => {
                self.is_peer_expr(&unary.expr)
            }
            syn::Expr::Path(path) => path
                .path
                .get_ident()
                .and_then(|ident| self.lookup(&ident.to_string()))
                .is_some_and(|binding| binding.peer),
            syn::Expr::Call(call) => {
                // `Arc::clone(&peer)`, `Some(peer)`
                let callee_is_clone = matches!(&*call.func, syn::Expr::Path(p)
                    if p.path.segments.last().is_some_and(|s| s.ident == "clone" || s.ident == "Some"));
                // `peer_of(&state)`, `Self::peer(..)`: a function of this file returning a peer.
                let returns_a_peer = matches!(&*call.func, syn::Expr::Path(p)
                    if p.path.segments.last().is_some_and(|s| self.peer_functions.contains(&s.ident.to_string())));
                returns_a_peer
                    || (callee_is_clone
                        && call.args.first().is_some_and(|arg| self.is_peer_expr(arg)))
            }
            _ => false,
        }
    }

    fn state_kind(&self, expr: &syn::Expr) -> StateKind {
        if let syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(_),
            ..
        }) = expr
        {
            return StateKind::Unsigned;
        }
        let mut finder = StateFinder {
            analyzer: self,
            sealed: false,
            unsigned: false,
        };
        finder.visit_expr(expr);
        if finder.sealed {
            StateKind::Sealed
        } else if finder.unsigned {
            StateKind::Unsigned
        } else {
            StateKind::Unknown
        }
    }

    fn binding_for(&self, ty: Option<&syn::Type>, init: Option<&syn::Expr>) -> Binding {
        Binding {
            peer: ty.is_some_and(|ty| self.is_peer_type(ty))
                || init.is_some_and(|init| self.is_peer_expr(init)),
            state: match init {
                Some(init) if self.cx.states => self.state_kind(init),
                _ => StateKind::Unknown,
            },
        }
    }

    fn handler_trait(&self, path: &syn::Path) -> HandlerTrait {
        let resolved = self.cx.uses.resolve_path(path);
        let is_sdk = resolved.is_sdk || (self.cx.sdk_active && !resolved.through_import);
        match resolved.last() {
            "ServerHandler" if is_sdk => HandlerTrait::Server,
            "ClientHandler" if is_sdk => HandlerTrait::Client,
            _ => HandlerTrait::Other,
        }
    }

    /// Whether `resolved` may name an SDK item: resolved into rmcp, or unresolved in a file whose
    /// crate uses the SDK and whose name is not a local (`crate::`, `self::`) path.
    fn may_be_sdk(&self, resolved: &Resolved) -> bool {
        resolved.is_sdk
    }

    /// `SseClientTransport::start(..)` imported from a wrapper crate that re-exports rmcp's
    /// transports (`use mcp_sse_proxy::SseClientTransport`), in a crate that uses the SDK: the
    /// transport types' names are distinctive enough to follow through one re-export.
    fn reexported_sse(&self, resolved: &Resolved) -> bool {
        self.cx.sdk_active
            && resolved.through_import
            && !matches!(resolved.segments[0].as_str(), "crate" | "self" | "super")
            && resolved
                .segments
                .iter()
                .any(|segment| symbols::SSE_TRANSPORT_TYPES.contains(&segment.as_str()))
    }

    // ----- checks ----------------------------------------------------------------------------

    /// Enum variants matched in patterns (`ContextInclusion::ThisServer => ..`).
    fn check_pattern_path(&mut self, path: &syn::Path) {
        let resolved = self.cx.uses.resolve_path(path);
        // A pattern that names a request or notification variant labels, routes or refuses a
        // message (a gateway's log label, an authorization check): not a use of the feature.
        let message_enum = resolved.segments.len() >= 2
            && symbols::MESSAGE_ENUMS
                .contains(&resolved.segments[resolved.segments.len() - 2].as_str());
        if resolved.is_sdk && !message_enum {
            for finding in symbols::path(&resolved) {
                if finding.rule != RuleId::InputRequiredOutsideMrtr {
                    self.report(&finding, path.span());
                }
            }
        }
    }

    fn check_state_argument(&mut self, state: &syn::Expr) {
        let state = strip_some(state);
        if self.state_kind(state) == StateKind::Unsigned {
            self.report(&symbols::unsigned_state(), state.span());
        }
    }

    fn check_url_argument(&mut self, url: &syn::Expr) {
        if let Some((text, span)) = url_literal(url) {
            if let Some(problem) = words::url_problem(&text) {
                self.report(&symbols::insecure_url(&problem), span);
            }
        }
    }

    /// String-literal arguments of a call that sends something: `bridge.request("roots/list", ..)`.
    fn check_literal_arguments(
        &mut self,
        args: &syn::punctuated::Punctuated<syn::Expr, syn::Token![,]>,
    ) {
        for arg in args {
            if let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(lit),
                ..
            }) = arg
            {
                self.check_method_literal(lit, false);
            }
        }
    }

    fn check_method_literal(&mut self, lit: &syn::LitStr, in_jsonrpc_envelope: bool) {
        for finding in symbols::method_literal(&lit.value(), in_jsonrpc_envelope) {
            self.report(&finding, lit.span());
        }
    }

    fn check_input_required_context(&mut self, span: Span, what: &str) {
        let outside_handler = matches!(&self.server_method, Some(method) if !MRTR_HANDLERS.contains(&method.as_str()));
        let outside_arm = matches!(self.arm_literals.iter().rev().flatten().next(),
            Some(method) if !MRTR_METHODS.contains(&method.as_str()));
        if outside_handler || outside_arm {
            let place = match (
                &self.server_method,
                self.arm_literals.iter().rev().flatten().next(),
            ) {
                (_, Some(method)) if outside_arm => format!("a `{method}` response"),
                (Some(method), _) => format!("`ServerHandler::{method}`"),
                _ => "this handler".to_owned(),
            };
            self.report(&symbols::input_required_outside(what, &place), span);
        }
    }

    fn check_json(&mut self, json: &Json) {
        match json {
            Json::Object(entries) => {
                let envelope = json.get("jsonrpc").is_some() || json.get("id").is_some();
                for entry in entries {
                    match (entry.key.as_deref(), &entry.value) {
                        (Some("method"), Json::Str(method, span)) => {
                            for finding in symbols::method_literal(method, envelope) {
                                self.report(&finding, *span);
                            }
                        }
                        (Some("includeContext"), Json::Str(value, span)) => {
                            if let Some(finding) = symbols::include_context_literal(value) {
                                self.report(&finding, *span);
                            }
                        }
                        (Some("resultType"), Json::Str(value, span))
                            if value == "input_required" =>
                        {
                            self.check_input_required_context(
                                *span,
                                "`\"resultType\": \"input_required\"`",
                            );
                        }
                        (Some("requestState"), Json::Other(tokens)) => {
                            if let Ok(expr) = syn::parse2::<syn::Expr>(tokens.clone()) {
                                self.check_state_argument(&expr);
                            }
                        }
                        (Some("requestState"), Json::Str(_, span)) => {
                            self.report(&symbols::unsigned_state(), *span);
                        }
                        (Some("requestedSchema"), schema) => self.check_json_schema(schema),
                        _ => {}
                    }
                }
                if json.get("mode").and_then(|mode| mode.value.as_str()) == Some("url") {
                    match json.get("url").map(|entry| &entry.value) {
                        Some(Json::Str(url, span)) => {
                            if let Some(problem) = words::url_problem(url) {
                                self.report(&symbols::insecure_url(&problem), *span);
                            }
                        }
                        Some(Json::Other(tokens)) => {
                            if let Ok(expr) = syn::parse2::<syn::Expr>(tokens.clone()) {
                                self.check_url_argument(&expr);
                            }
                        }
                        _ => {}
                    }
                }
                for entry in entries {
                    self.check_json(&entry.value);
                }
            }
            Json::Array(items) => {
                for item in items {
                    self.check_json(item);
                }
            }
            Json::Str(..) => {}
            Json::Other(tokens) => {
                if let Ok(expr) = syn::parse2::<syn::Expr>(tokens.clone()) {
                    self.visit_expr(&expr);
                }
            }
        }
    }

    fn check_json_schema(&mut self, schema: &Json) {
        if let Some(entry) = schema.get("properties") {
            if let Json::Object(properties) = &entry.value {
                for property in properties {
                    if let Some(name) = property.key.as_deref().filter(|n| words::is_secret_name(n))
                    {
                        self.report(&symbols::secret_property(name), property.key_span);
                    }
                }
            }
        }
    }

    fn finish_secret_fields(&mut self) {
        let fields = std::mem::take(&mut self.secret_fields);
        for (owner, field, span) in fields {
            if self.elicitation_types.contains(&owner) {
                self.report(&symbols::secret_field(&owner, &field), span);
            }
        }
    }

    /// Whether a macro call (its name and body) may hold a finding: it spells a trigger word, or
    /// an import alias that hides one. Re-parsing the bodies that cannot (`tracing::info!(..)`,
    /// `anyhow!(..)`, a `json!` without a trigger word) was a tenth of the walk.
    fn macro_may_match(&self, mac: &syn::Macro) -> bool {
        let span = crate::diagnostic::ByteSpan::from_proc_macro(self.cx.file, mac.span());
        let Some(text) = self.cx.file.text.get(span.start..span.end) else {
            return true;
        };
        crate::prefilter::item_may_match(text.as_bytes())
            || self
                .cx
                .uses
                .trigger_aliases
                .iter()
                .any(|alias| text.contains(alias.as_str()))
    }

    fn visit_fragments(&mut self, tokens: proc_macro2::TokenStream) {
        for fragment in fragments(tokens) {
            match fragment {
                Fragment::Expr(expr) => self.visit_expr(&expr),
                Fragment::Stmt(stmt) => self.visit_stmt(&stmt),
            }
        }
    }
}

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
            if import.path[0] != super::imports::SDK_ROOT {
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

/// Whether `ty` is (or holds) an rmcp peer, its names resolved through `uses`; `sdk_active`:
/// the file may name the SDK's types without importing them.
pub(super) fn peer_type(uses: &UseMap, sdk_active: bool, ty: &syn::Type) -> bool {
    match ty {
        syn::Type::Path(type_path) => {
            let path = &type_path.path;
            if let Some(last) = path.segments.last() {
                if PEER_TYPES.contains(&last.ident.to_string().as_str()) {
                    let resolved = uses.resolve_path(path);
                    if resolved.is_sdk || (sdk_active && !resolved.through_import) {
                        return true;
                    }
                }
            }
            path.segments.iter().any(|segment| match &segment.arguments {
                syn::PathArguments::AngleBracketed(args) => args.args.iter().any(|arg| {
                    matches!(arg, syn::GenericArgument::Type(inner) if peer_type(uses, sdk_active, inner))
                }),
                _ => false,
            })
        }
        syn::Type::Reference(reference) => peer_type(uses, sdk_active, &reference.elem),
        syn::Type::Paren(paren) => peer_type(uses, sdk_active, &paren.elem),
        syn::Type::Group(group) => peer_type(uses, sdk_active, &group.elem),
        _ => false,
    }
}

/// Collects, before the main walk, which struct fields hold a peer.
struct FieldCollector<'x, 'a> {
    analyzer: &'x mut Analyzer<'a>,
}

impl<'ast> Visit<'ast> for FieldCollector<'_, '_> {
    /// `static PEER: OnceCell<Peer<RoleServer>>`: a peer for the whole file.
    fn visit_item_static(&mut self, item: &'ast syn::ItemStatic) {
        if self.analyzer.is_peer_type(&item.ty) {
            let binding = Binding {
                peer: true,
                state: StateKind::Unknown,
            };
            self.analyzer.scopes[0].insert(item.ident.to_string(), binding);
        }
    }

    fn visit_field(&mut self, field: &'ast syn::Field) {
        if let Some(ident) = &field.ident {
            if self.analyzer.is_peer_type(&field.ty) {
                self.analyzer.peer_fields.insert(ident.to_string());
            }
        }
    }

    /// `fn peer(&self) -> Peer<RoleServer>` (or `Option<Peer<..>>`, ..): its calls are peers.
    fn visit_signature(&mut self, sig: &'ast syn::Signature) {
        if let syn::ReturnType::Type(_, ty) = &sig.output {
            if self.analyzer.is_peer_type(ty) {
                self.analyzer.peer_functions.insert(sig.ident.to_string());
            }
        }
    }
}

/// Looks through a `requestState` expression for what made it: a sealing call or a binding that
/// holds sealed state wins; otherwise plain serialisation, encoding or formatting makes it unsigned.
/// Every word [`StateFinder`] takes for a state-making call besides sealing names (`encode`,
/// `serde_json::to_string`, `String::from`, `format!`, ...): `items/lets.rs` keeps a `let` whose
/// initialiser spells one, so a word added to the finder belongs here too.
pub(crate) const STATE_MAKING_WORDS: &[&str] = &[
    "to_string",
    "to_vec",
    "to_string_pretty",
    "encode",
    "encode_string",
    "format",
    "from",
];

struct StateFinder<'x, 'a> {
    analyzer: &'x Analyzer<'a>,
    sealed: bool,
    unsigned: bool,
}

impl<'ast> Visit<'ast> for StateFinder<'_, '_> {
    fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
        let method = call.method.to_string();
        self.sealed |= is_sealing_name(&method);
        self.unsigned |= matches!(method.as_str(), "encode" | "encode_string" | "to_string");
        visit::visit_expr_method_call(self, call);
    }

    fn visit_expr_call(&mut self, call: &'ast syn::ExprCall) {
        if let syn::Expr::Path(path) = &*call.func {
            let segments = crate::rust::imports::segment_names(&path.path);
            self.sealed |= segments.iter().any(|segment| is_sealing_name(segment));
            let last = segments.last().map_or("", String::as_str);
            let first = segments.first().map_or("", String::as_str);
            self.unsigned |= matches!(last, "encode" | "encode_string")
                || (first == "serde_json"
                    && matches!(last, "to_string" | "to_vec" | "to_string_pretty"))
                || (first == "String" && last == "from");
        }
        visit::visit_expr_call(self, call);
    }

    fn visit_expr_macro(&mut self, mac: &'ast syn::ExprMacro) {
        self.unsigned |= mac.mac.path.is_ident("format");
    }

    fn visit_expr_path(&mut self, path: &'ast syn::ExprPath) {
        if let Some(binding) = path
            .path
            .get_ident()
            .and_then(|ident| self.analyzer.lookup(&ident.to_string()))
        {
            self.sealed |= binding.state == StateKind::Sealed;
            self.unsigned |= binding.state == StateKind::Unsigned;
        }
    }

    fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {
        // `map_err(|e| e.to_string())` says nothing about the state itself.
    }
}
