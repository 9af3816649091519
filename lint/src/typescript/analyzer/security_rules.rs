//! The security and MRTR-shape rules of the walk: secrets in a form elicitation's
//! `requestedSchema`, URL-mode URLs, plain `requestState`, and `input_required` answered to a
//! method other than `tools/call`, `resources/read` and `prompts/get`. The syntax tests are in
//! `typescript/security.rs`; this part decides where they apply.

use mcp_migrate_rules::RuleId;
use oxc_ast::ast::{Argument, CallExpression, Expression, ObjectExpression};
use oxc_span::{GetSpan, Span};

use super::super::security;
use super::super::shapes::{property, static_string};
use super::Analyzer;
/// The security and MRTR-shape rules (tests in [`security`]).
impl Analyzer<'_, '_> {
    pub(super) fn security(&mut self, object: &ObjectExpression<'_>) {
        // Every test below starts from one of these keys: most objects have none.
        if !security::has_key(object, &["requestedSchema", "mode", "resultType"]) {
            return;
        }
        for (span, name) in security::secret_properties(object) {
            self.report(
                RuleId::FormElicitationSecret,
                span,
                format!("form-mode elicitation asks for `{name}`; MCP forbids requesting secrets in form mode"),
                "collect secrets out of band: a URL-mode elicitation (`mode: \"url\"`) to your own HTTPS page, or OAuth",
                None,
            );
        }
        self.url(object, false);
        let input_required = property(object, "resultType")
            .filter(|result| static_string(&result.value) == Some("input_required"));
        if let Some(result) = input_required {
            self.outside_mrtr(result.value.span(), "a hand-built `input_required` result");
            self.request_state(object);
        }
    }

    fn url(&mut self, object: &ObjectExpression<'_>, url_mode: bool) {
        if let Some((span, problem)) = security::url_problem(object, url_mode) {
            self.report(
                RuleId::InsecureElicitationUrl,
                span,
                format!("insecure URL-mode elicitation: {problem}"),
                "use `https://` and keep credentials, tokens and session ids out of the URL (bind them server-side)",
                None,
            );
        }
    }

    /// The `requestState` of an `inputRequired({..})` spec or a hand-built result.
    fn request_state(&mut self, object: &ObjectExpression<'_>) {
        let Some(state) = property(object, "requestState") else {
            return;
        };
        let plain = |name: &str| self.bindings.plain_values.contains(name);
        if security::is_plain_state(&state.value, &plain) {
            self.report(
                RuleId::UnsignedRequestState,
                state.value.span(),
                "`requestState` is built from plain data with no seal or MAC; clients can forge it".into(),
                "seal it: `createRequestStateCodec({ key })` (SDK 2.x), `codec.mint(payload)`, and `requestState: { verify: codec.verify }` in the server's options",
                None,
            );
        }
    }

    fn outside_mrtr(&mut self, span: Span, what: &str) {
        let Some(method) = self.non_mrtr_handler.clone() else {
            return;
        };
        self.report(
            RuleId::InputRequiredOutsideMrtr,
            span,
            format!("{what} in the handler of `{method}`: only `tools/call`, `resources/read` and `prompts/get` may answer `input_required`"),
            "return a complete result here, or move the input request into the tool, prompt or resource handler",
            None,
        );
    }

    /// The method a `setRequestHandler(schema, ..)` call handles, for the MRTR rule: `Some(None)`
    /// for `tools/call`, `resources/read`, `prompts/get`, `Some(Some(method))` for another
    /// request, `None` when the call registers nothing the rule knows.
    pub(super) fn handled_method(&self, call: &CallExpression<'_>) -> Option<Option<String>> {
        let Expression::StaticMemberExpression(member) = call.callee.get_inner_expression() else {
            return None;
        };
        if member.property.name != "setRequestHandler" {
            return None;
        }
        let schema = call.arguments.first()?.as_expression()?;
        let method = match static_string(schema) {
            Some(method) => method,
            None => security::schema_method(self.bindings.sdk_name(schema)?)?,
        };
        Some((!security::is_mrtr_method(method)).then(|| method.to_owned()))
    }

    /// `inputRequired(..)` and `inputRequired.elicitUrl(..)` (SDK 2.x).
    pub(super) fn input_required_call(&mut self, call: &CallExpression<'_>) {
        let is_builder = |callee: &Expression<'_>| {
            matches!(callee.get_inner_expression(), Expression::Identifier(id) if id.name == "inputRequired")
                || self.bindings.sdk_name(callee) == Some("inputRequired")
        };
        let first_object = match call.arguments.first().and_then(Argument::as_expression) {
            Some(Expression::ObjectExpression(object)) => Some(&**object),
            _ => None,
        };
        if is_builder(&call.callee) {
            self.outside_mrtr(call.callee.span(), "`inputRequired(..)`");
            if let Some(spec) = first_object {
                self.request_state(spec);
            }
        } else if let Expression::StaticMemberExpression(member) =
            call.callee.get_inner_expression()
        {
            if member.property.name == "elicitUrl" && is_builder(&member.object) {
                if let Some(params) = first_object {
                    self.url(params, true);
                }
            }
        }
    }
}
