//! How a request state was made: sealed (passed through a sealing, signing or MAC call),
//! unsigned (plain serialisation, encoding, a literal or formatting) or unknown.

use syn::visit::{self, Visit};

use super::Analyzer;
use crate::rust::shapes::is_sealing_name;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StateKind {
    /// Built by plain serialisation, a literal or string formatting.
    Unsigned,
    /// Passed through a call that seals, signs or MACs it.
    Sealed,
    Unknown,
}

impl Analyzer<'_> {
    pub(super) fn state_kind(&self, expr: &syn::Expr) -> StateKind {
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
}

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

/// Looks through a `requestState` expression for what made it: a sealing call or a binding that
/// holds sealed state wins; otherwise plain serialisation, encoding or formatting makes it unsigned.
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
