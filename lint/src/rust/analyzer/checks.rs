//! The checks the walk runs on what it meets (a pattern's path, a request state, an elicitation
//! URL, a method-name literal, an `input_required` result outside its handlers, the secret-looking
//! fields of elicited types), each reporting its findings.

use mcp_migrate_rules::RuleId;
use proc_macro2::Span;
use syn::spanned::Spanned;

use super::{Analyzer, StateKind};
use crate::rust::shapes::{strip_some, url_literal};
use crate::rust::symbols;
use crate::rust::words;

/// The `ServerHandler` methods whose results may be `input_required`.
const MRTR_HANDLERS: &[&str] = &["call_tool", "get_prompt", "read_resource"];
/// The JSON-RPC methods whose results may be `input_required`.
const MRTR_METHODS: &[&str] = &["tools/call", "prompts/get", "resources/read"];

impl Analyzer<'_> {
    /// Enum variants matched in patterns (`ContextInclusion::ThisServer => ..`).
    pub(super) fn check_pattern_path(&mut self, path: &syn::Path) {
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

    pub(super) fn check_state_argument(&mut self, state: &syn::Expr) {
        let state = strip_some(state);
        if self.state_kind(state) == StateKind::Unsigned {
            self.report(&symbols::unsigned_state(), state.span());
        }
    }

    pub(super) fn check_url_argument(&mut self, url: &syn::Expr) {
        if let Some((text, span)) = url_literal(url) {
            if let Some(problem) = words::url_problem(&text) {
                self.report(&symbols::insecure_url(&problem), span);
            }
        }
    }

    /// String-literal arguments of a call that sends something: `bridge.request("roots/list", ..)`.
    pub(super) fn check_literal_arguments(
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

    pub(super) fn check_method_literal(&mut self, lit: &syn::LitStr, in_jsonrpc_envelope: bool) {
        for finding in symbols::method_literal(&lit.value(), in_jsonrpc_envelope) {
            self.report(&finding, lit.span());
        }
    }

    pub(super) fn check_input_required_context(&mut self, span: Span, what: &str) {
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

    pub(super) fn finish_secret_fields(&mut self) {
        let fields = std::mem::take(&mut self.secret_fields);
        for (owner, field, span) in fields {
            if self.elicitation_types.contains(&owner) {
                self.report(&symbols::secret_field(&owner, &field), span);
            }
        }
    }
}
