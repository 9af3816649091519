//! Peer resolution without type inference: which types stand for an rmcp peer, which receivers
//! are one (typed bindings, `.peer`, peer-typed fields and statics, functions returning a peer,
//! calls that hand their receiver back), and the pass that collects this file's peer fields.

use syn::visit::Visit;

use super::{Analyzer, Binding, StateKind};
use crate::rust::imports::UseMap;

/// Type names that stand for an rmcp peer (or something that derefs to one).
pub(crate) const PEER_TYPES: &[&str] = &[
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
pub(super) const PEER_CLOSURE_METHODS: &[&str] = &[
    "map",
    "and_then",
    "inspect",
    "for_each",
    "then",
    "map_or",
    "map_or_else",
    "is_some_and",
];

impl Analyzer<'_> {
    pub(super) fn is_peer_type(&self, ty: &syn::Type) -> bool {
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

    pub(super) fn is_peer_expr(&self, expr: &syn::Expr) -> bool {
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
}

/// Whether `ty` is (or holds) an rmcp peer, its names resolved through `uses`; `sdk_active`:
/// the file may name the SDK's types without importing them.
pub(crate) fn peer_type(uses: &UseMap, sdk_active: bool, ty: &syn::Type) -> bool {
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
pub(super) struct FieldCollector<'x, 'a> {
    pub(super) analyzer: &'x mut Analyzer<'a>,
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
