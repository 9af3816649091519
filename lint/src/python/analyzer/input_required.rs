//! The walk's checks of MRTR results (`mcp` 2.x): an `InputRequiredResult` or a hand-built
//! `input_required` dict where the request it answers allows none, and the `request_state` it
//! hands out (the knowledge behind them is `python/mrtr.rs`).

use ruff_python_ast::visitor::Visitor;
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::Ranged;

use super::Analyzer;
use crate::python::mrtr::{self, Answers};
use crate::python::symbols;

impl Analyzer<'_> {
    /// A router branch's body, answering `branch` when its test names a request.
    pub(super) fn visit_branch(&mut self, branch: Option<Answers>, body: &[Stmt]) {
        let narrowed = branch.is_some();
        if let Some(branch) = branch {
            self.answering.push(branch);
        }
        self.visit_body(body);
        if narrowed {
            self.answering.pop();
        }
    }

    /// The request the code being walked answers, when that is not an MRTR one.
    fn answering_other(&self) -> Option<&str> {
        match self.answering.last() {
            Some(Answers::Other(request)) => Some(request),
            _ => None,
        }
    }

    /// `InputRequiredResult(...)` where it may not be answered, its `request_state` when plain
    /// and unsealed, and short literal keys given to `RequestStateSecurity(keys=[...])`.
    pub(super) fn check_mrtr_call(&mut self, call: &ast::ExprCall) {
        let Some(name) = mrtr::mrtr_name(self.imports, &call.func) else {
            return;
        };
        match name.as_str() {
            "InputRequiredResult" => {
                if let Some(request) = self.answering_other() {
                    let finding = symbols::input_required_outside("`InputRequiredResult`", request);
                    self.report(finding, call.func.range());
                }
                let state = ["request_state", "requestState"]
                    .into_iter()
                    .find_map(|keyword| call.arguments.find_keyword(keyword));
                if let Some(state) = state {
                    self.check_state(&state.value);
                }
            }
            "RequestStateSecurity" => {
                for (length, range) in mrtr::short_keys(call) {
                    self.report(symbols::short_state_key(length), range);
                }
            }
            _ => {}
        }
    }

    /// A hand-built result dict: `{"resultType": "input_required", "requestState": ...}`.
    pub(super) fn check_mrtr_dict(&mut self, dict: &ast::ExprDict) {
        let value_of = |key: &str| {
            dict.items.iter().find_map(|item| match &item.key {
                Some(Expr::StringLiteral(literal)) if literal.value.to_str() == key => {
                    Some(&item.value)
                }
                _ => None,
            })
        };
        let Some(Expr::StringLiteral(result_type)) = value_of("resultType") else {
            return;
        };
        if result_type.value.to_str() != "input_required" {
            return;
        }
        if let Some(request) = self.answering_other() {
            let finding = symbols::input_required_outside("an `input_required` result", request);
            self.report(finding, result_type.range);
        }
        if let Some(state) = value_of("requestState") {
            self.check_state(state);
        }
    }

    fn check_state(&mut self, state: &Expr) {
        let scope = self.scopes.last().expect("the module scope");
        let sealed = self.scopes.iter().any(|scope| scope.sealed);
        if !sealed && mrtr::is_plain_state(state, &scope.plain_states) {
            self.report(symbols::unsigned_state(), state.range());
        }
    }
}
