//! Macro bodies: whether a macro call may hold a finding at all, the re-parsing of its body into
//! expressions and statements the walk visits, and the `json!` objects checked as protocol
//! messages (method names, `includeContext`, `requestState`, URL elicitations, secret schema
//! properties).

use syn::spanned::Spanned;
use syn::visit::Visit;

use super::Analyzer;
use crate::rust::macros::{fragments, Fragment, Json};
use crate::rust::symbols;
use crate::rust::words;

impl Analyzer<'_> {
    pub(super) fn check_json(&mut self, json: &Json) {
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

    /// Whether a macro call (its name and body) may hold a finding: it spells a trigger word, or
    /// an import alias that hides one. Re-parsing the bodies that cannot (`tracing::info!(..)`,
    /// `anyhow!(..)`, a `json!` without a trigger word) was a tenth of the walk.
    pub(super) fn macro_may_match(&self, mac: &syn::Macro) -> bool {
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

    pub(super) fn visit_fragments(&mut self, tokens: proc_macro2::TokenStream) {
        for fragment in fragments(tokens) {
            match fragment {
                Fragment::Expr(expr) => self.visit_expr(&expr),
                Fragment::Stmt(stmt) => self.visit_stmt(&stmt),
            }
        }
    }
}
