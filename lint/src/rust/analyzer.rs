//! The one AST walk over a Rust file. It keeps just enough context to tell an MCP peer from any
//! other receiver (typed bindings, struct fields, `if let` bindings), which trait impl and method
//! it is in, and which `match` arm method literal encloses it; and it dispatches each node kind to
//! the symbol tables in `symbols.rs`.
//!
//! There is no type inference: a call such as `something().create_message(..)` whose receiver is
//! not recognised is not reported (a documented blind spot), so that `create_message` on a mail
//! or LSP client never is.
//!
//! The walk is split by concern: [`walk`] is the syn `Visit` implementation, [`peers`] tells a
//! peer from any other receiver, [`state`] tells how a request state was made, [`checks`] turns
//! what the walk meets into findings, and [`macro_bodies`] re-parses the macro bodies that may
//! hold one. This file holds the walk's state, its scopes and the reporting around them.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::sync::Arc;

use mcp_migrate_rules::RuleId;
use proc_macro2::Span;
use syn::visit::Visit;

use super::crate_peers::CratePeers;
use super::imports::{Resolved, UseMap};
use super::report::Reporter;
use super::shapes::pattern_idents;
use super::symbols::{self, Finding};
use crate::diagnostic::{Diagnostic, SourceFile};

mod checks;
mod macro_bodies;
mod peers;
mod state;
mod walk;

pub(super) use peers::{peer_type, PEER_TYPES};
pub(crate) use state::STATE_MAKING_WORDS;

use peers::FieldCollector;
use state::StateKind;

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

    /// Whether `resolved` may name an SDK item: resolved into rmcp (through a `use`, or spelled
    /// from the SDK crate's name), or unresolved and not a local (`crate::`, `self::`) path in a
    /// file that glob-imports from the SDK (`use rmcp::model::*;`): `imports::UseMap` decides both.
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
}
