//! The walk over a parsed Python file: resolves each call's receiver to the SDK object it is (a
//! `Context`, a session, a request context, a server) and matches the legacy surface of
//! `symbols.rs`. Names only count when they resolve through the file's imports or bindings, so
//! comments, prose in strings, an unrelated `create_message` or `logger.info` stay silent.

use std::sync::Arc;

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Decorator, Expr, ExprContext, Number, Stmt, UnaryOp};
use ruff_text_size::{Ranged, TextRange};
use rustc_hash::FxHashSet as HashSet;

use super::bindings::{built_request, dotted, Bindings};
use super::imports::{is_sdk_path, last, Imports};
use super::mrtr::{self, Answers, Registrations};

mod input_required;
use super::report::Reporter;
use super::symbols::{self, Finding};
use crate::diagnostic::{Diagnostic, SourceFile};
use crate::rust::words;

/// Deeper expression nesting than this is not walked (generated code; the parser grows its own
/// stack, the walk does not).
pub(super) const MAX_DEPTH: usize = 200;

/// Import statements are numbered apart from the walk's statements.
const IMPORT_STATEMENTS: usize = usize::MAX / 2;

/// What an expression is, as far as the SDK is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A FastMCP / `fastmcp` `Context` (a parameter typed `Context`, `get_context()`).
    Context,
    /// A `ServerSession` / `ClientSession` (`ctx.session`, `request_context.session`).
    Session,
    /// A `RequestContext` (`ctx.request_context`, `server.request_context`).
    RequestContext,
    /// A server object (`FastMCP(...)`, `Server(...)`).
    Server,
}

/// The names bound in one function.
#[derive(Debug, Default)]
struct Scope {
    contexts: HashSet<String>,
    sessions: HashSet<String>,
    /// Names bound here to plain data (`state = json.dumps(...)`), for `request_state`.
    plain_states: HashSet<String>,
    /// The SDK seals the `request_state` handed out here (a high-level server's handler).
    sealed: bool,
}

pub struct Analyzer<'a> {
    source: &'a str,
    imports: &'a Imports,
    bindings: &'a Bindings,
    registrations: &'a Registrations,
    reporter: Reporter<'a>,
    /// The file imports the SDK: distinctive names (`send_log_message`, `sse_app`) count on any
    /// receiver, and `*.session` is a session.
    sdk_active: bool,
    scopes: Vec<Scope>,
    /// The request the code being walked answers: its function's registration, narrowed by a
    /// router branch (`case "tools/list":`).
    answering: Vec<Answers>,
    statement: usize,
    next_statement: usize,
    depth: usize,
}

pub fn run(file: &Arc<SourceFile>, body: &[Stmt]) -> Vec<Diagnostic> {
    let imports = Imports::build(body);
    let bindings = Bindings::collect(body, &imports);
    let registrations = Registrations::collect(body, &imports);
    let mut analyzer = Analyzer {
        source: &file.text,
        imports: &imports,
        bindings: &bindings,
        registrations: &registrations,
        reporter: Reporter::new(file),
        sdk_active: imports.imports_sdk(),
        scopes: vec![Scope {
            sealed: registrations.sealed_in_file(),
            ..Scope::default()
        }],
        answering: Vec::new(),
        statement: 0,
        next_statement: 1,
        depth: 0,
    };
    analyzer.check_imports();
    analyzer.visit_body(body);
    analyzer.reporter.finish()
}

impl Analyzer<'_> {
    fn report(&mut self, finding: Finding, range: TextRange) {
        self.reporter.report(finding, range, self.statement, None);
    }

    fn report_all(&mut self, findings: Vec<Finding>, range: TextRange) {
        for finding in findings {
            self.report(finding, range);
        }
    }

    /// Imports of legacy names and of the SSE modules (kept only if the file has no use).
    fn check_imports(&mut self) {
        for import in &self.imports.sdk_imports {
            let finding = symbols::symbol(&import.qualified).or_else(|| {
                symbols::SSE_MODULES
                    .iter()
                    .any(|module| {
                        import.qualified == *module
                            || import.qualified.starts_with(&format!("{module}."))
                    })
                    .then(|| symbols::sse(&import.qualified))
            });
            if let Some(finding) = finding {
                self.reporter.report_import(
                    finding,
                    import.range,
                    IMPORT_STATEMENTS + import.statement,
                );
            }
        }
    }

    /// Whether an annotation names an SDK class whose last segment is one of `classes`
    /// (`Context`, `Context[ServerSession, None]`, `Context | None`, `Optional[Context]`, `"Context"`).
    fn annotation_is(&self, annotation: &Expr, classes: &[&str]) -> bool {
        self.annotation_within(annotation, classes, MAX_DEPTH)
    }

    fn annotation_within(&self, annotation: &Expr, classes: &[&str], depth: usize) -> bool {
        let Some(depth) = depth.checked_sub(1) else {
            return false;
        };
        match annotation {
            Expr::Name(_) | Expr::Attribute(_) => self
                .imports
                .resolve_sdk(annotation)
                .is_some_and(|path| classes.contains(&last(&path))),
            Expr::Subscript(subscript) => {
                self.annotation_within(&subscript.value, classes, depth)
                    || (matches!(&*subscript.value, Expr::Name(name) if name.id.as_str() == "Optional")
                        && self.annotation_within(&subscript.slice, classes, depth))
            }
            Expr::BinOp(binop) => {
                self.annotation_within(&binop.left, classes, depth)
                    || self.annotation_within(&binop.right, classes, depth)
            }
            Expr::StringLiteral(literal) => {
                let text = literal.value.to_str();
                let head = text.split(['[', ' ', '|']).next().unwrap_or(text);
                ruff_python_parser::parse_expression(head)
                    .is_ok_and(|parsed| self.annotation_within(parsed.expr(), classes, depth))
            }
            _ => false,
        }
    }

    fn kind(&self, expr: &Expr) -> Option<Kind> {
        self.kind_within(expr, MAX_DEPTH)
    }

    /// [`Analyzer::kind`], looking at most `depth` attributes or calls deep.
    fn kind_within(&self, expr: &Expr, depth: usize) -> Option<Kind> {
        let depth = depth.checked_sub(1)?;
        match expr {
            Expr::Name(name) => {
                let id = name.id.as_str();
                for scope in self.scopes.iter().rev() {
                    if scope.contexts.contains(id) {
                        return Some(Kind::Context);
                    }
                    if scope.sessions.contains(id) {
                        return Some(Kind::Session);
                    }
                }
                self.is_server(expr).then_some(Kind::Server)
            }
            Expr::Attribute(attribute) => {
                let inner = self.kind_within(&attribute.value, depth);
                match attribute.attr.as_str() {
                    "session"
                        if self.sdk_active
                            || matches!(inner, Some(Kind::Context | Kind::RequestContext)) =>
                    {
                        Some(Kind::Session)
                    }
                    "request_context"
                        if self.sdk_active
                            || matches!(inner, Some(Kind::Context | Kind::Server)) =>
                    {
                        Some(Kind::RequestContext)
                    }
                    _ => self.is_server(expr).then_some(Kind::Server),
                }
            }
            Expr::Call(call) => {
                let getter = match &*call.func {
                    Expr::Attribute(attribute) => {
                        attribute.attr.as_str() == "get_context"
                            && self.kind_within(&attribute.value, depth) == Some(Kind::Server)
                    }
                    func => self
                        .imports
                        .resolve_sdk(func)
                        .is_some_and(|path| last(&path) == "get_context"),
                };
                getter.then_some(Kind::Context)
            }
            Expr::Await(await_expr) => self.kind_within(&await_expr.value, depth),
            _ => None,
        }
    }

    fn is_server(&self, expr: &Expr) -> bool {
        dotted(expr).is_some_and(|name| self.bindings.servers.contains(&name))
    }

    /// Whether `expr` is `"sse"`, or a name every binding of which is a string and one is "sse".
    fn is_sse(&self, expr: &Expr) -> bool {
        match expr {
            Expr::StringLiteral(literal) => literal.value.to_str() == "sse",
            Expr::Name(name) => self
                .bindings
                .constant_values(name.id.as_str())
                .is_some_and(|values| values.iter().any(|value| value == "sse")),
            Expr::If(if_expr) => self.is_sse(&if_expr.body) || self.is_sse(&if_expr.orelse),
            _ => false,
        }
    }

    /// A string known statically: a literal, an f-string (its fields as `{}`), or a name bound
    /// to one string only.
    fn static_string(&self, expr: &Expr) -> Option<String> {
        match expr {
            Expr::StringLiteral(literal) => Some(literal.value.to_str().to_owned()),
            Expr::FString(fstring) => {
                let mut out = String::new();
                for part in fstring.value.iter() {
                    match part {
                        ast::FStringPart::Literal(literal) => out.push_str(literal.as_str()),
                        ast::FStringPart::FString(fstring) => {
                            for element in fstring.elements.iter() {
                                match element {
                                    ast::InterpolatedStringElement::Literal(literal) => {
                                        out.push_str(&literal.value);
                                    }
                                    ast::InterpolatedStringElement::Interpolation(_) => {
                                        out.push_str("{}");
                                    }
                                }
                            }
                        }
                    }
                }
                Some(out)
            }
            Expr::Name(name) => match self.bindings.constant_values(name.id.as_str()) {
                Some([value]) => Some(value.clone()),
                _ => None,
            },
            _ => None,
        }
    }

    fn check_call(&mut self, call: &ast::ExprCall) {
        let arguments = &call.arguments;
        for keyword in &arguments.keywords {
            self.check_keyword(keyword);
        }
        for arg in &*arguments.args {
            if let Expr::StringLiteral(literal) = arg {
                let findings = symbols::method_literal(literal.value.to_str(), false);
                self.report_all(findings, literal.range);
            }
        }
        self.check_mrtr_call(call);
        match &*call.func {
            Expr::Attribute(attribute) => self.check_method_call(attribute, arguments),
            func => {
                let Some(path) = self.imports.resolve_sdk(func) else {
                    return;
                };
                if last(&path) == "elicit_with_validation" {
                    self.report(
                        symbols::server_request("elicit_with_validation", "elicitation/create"),
                        func.range(),
                    );
                    if let Some(schema) = arguments.find_argument_value("schema", 2) {
                        self.check_form_schema(schema);
                    }
                }
            }
        }
    }

    fn check_keyword(&mut self, keyword: &ast::Keyword) {
        let Some(name) = &keyword.arg else {
            return;
        };
        match name.as_str() {
            "include_context" | "includeContext" => self.check_include_context(&keyword.value),
            "method" => {
                if let Expr::StringLiteral(literal) = &keyword.value {
                    let findings = symbols::method_literal(literal.value.to_str(), false);
                    self.report_all(findings, literal.range);
                }
            }
            registration if self.sdk_active => {
                if let Some(finding) = symbols::handler(registration).filter(|_| {
                    registration.starts_with("on_") || registration == "logging_callback"
                }) {
                    self.report(finding, name.range);
                }
            }
            _ => {}
        }
    }

    fn check_include_context(&mut self, value: &Expr) {
        let Expr::StringLiteral(literal) = value else {
            return;
        };
        let Some(finding) = symbols::include_context_literal(literal.value.to_str()) else {
            return;
        };
        let fix = crate::fix::python::include_context_none(self.source, literal);
        self.reporter
            .report(finding, literal.range, self.statement, fix);
    }

    fn check_method_call(&mut self, attribute: &ast::ExprAttribute, arguments: &ast::Arguments) {
        let method = attribute.attr.as_str();
        let at = attribute.attr.range;
        let receiver = self.kind(&attribute.value);
        match (receiver, method) {
            (Some(Kind::Context), "elicit") => {
                self.report(symbols::server_request("elicit", "elicitation/create"), at);
                let schema = arguments
                    .find_keyword("schema")
                    .or_else(|| arguments.find_keyword("response_type"))
                    .map(|keyword| &keyword.value)
                    .or_else(|| arguments.find_positional(1));
                if let Some(schema) = schema {
                    self.check_form_schema(schema);
                }
            }
            (Some(Kind::Session), "elicit" | "elicit_form") => {
                self.report(symbols::server_request(method, "elicitation/create"), at);
                let schema = arguments
                    .find_keyword("requestedSchema")
                    .or_else(|| arguments.find_keyword("requested_schema"))
                    .map(|keyword| &keyword.value)
                    .or_else(|| arguments.find_positional(1));
                if let Some(schema) = schema {
                    self.check_form_schema(schema);
                }
            }
            (Some(Kind::Context | Kind::Session), "elicit_url") => {
                self.report(
                    symbols::server_request("elicit_url", "elicitation/create"),
                    at,
                );
                if let Some(url) = arguments.find_argument_value("url", 1) {
                    let problem = self
                        .static_string(url)
                        .and_then(|url| words::url_problem(&url));
                    if let Some(problem) = problem {
                        self.report(symbols::insecure_url(&problem), url.range());
                    }
                }
            }
            (Some(Kind::Context), "sample") | (Some(Kind::Session), "create_message") => {
                self.report_all(
                    vec![
                        symbols::sampling_call(method),
                        symbols::server_request(method, "sampling/createMessage"),
                    ],
                    at,
                );
            }
            (Some(Kind::Context | Kind::Session), "list_roots") => {
                self.report_all(
                    vec![
                        symbols::roots_call(method),
                        symbols::server_request(method, "roots/list"),
                    ],
                    at,
                );
            }
            (Some(Kind::Context), "log" | "debug" | "info" | "warning" | "error") => {
                self.report(symbols::context_log(method), at);
            }
            (Some(Kind::Session), "set_logging_level") => {
                self.report(symbols::set_logging_level_call(), at);
            }
            (Some(Kind::Session), "subscribe_resource" | "unsubscribe_resource") => {
                self.report(symbols::subscription_call(method), at);
            }
            (_, "send_request") if receiver.is_some() || self.sdk_active => {
                let request = arguments.find_argument_value("request", 0);
                let wire = request.and_then(|request| match request {
                    Expr::Name(name) => self.bindings.requests.get(name.id.as_str()).copied(),
                    request => built_request(self.imports, request),
                });
                if let Some(wire) = wire {
                    self.report_all(symbols::generic_request(method, wire), at);
                }
            }
            (_, "send_log_message") if receiver.is_some() || self.sdk_active => {
                self.report(symbols::send_log_message(), at);
            }
            (_, "send_elicit_complete") if receiver.is_some() || self.sdk_active => {
                self.report(symbols::send_elicit_complete(), at);
            }
            (_, "send_roots_list_changed") if receiver.is_some() || self.sdk_active => {
                self.report(symbols::roots_list_changed_call(), at);
            }
            (_, "sse_app" | "run_sse_async") if receiver.is_some() || self.sdk_active => {
                self.report(symbols::sse(method), at);
            }
            (_, "run" | "run_async" | "http_app") => {
                let keyword = arguments.find_keyword("transport").map(|k| &k.value);
                let transport = match receiver {
                    Some(Kind::Server) => keyword.or_else(|| arguments.find_positional(0)),
                    _ if self.sdk_active => keyword,
                    _ => None,
                };
                if transport.is_some_and(|transport| self.is_sse(transport)) {
                    self.report(symbols::sse_argument(method), at);
                }
            }
            _ => {}
        }
    }

    /// The form of an elicitation: a class of this file (its annotated fields), or a JSON
    /// schema dict (its `properties`).
    fn check_form_schema(&mut self, schema: &Expr) {
        match schema {
            Expr::Name(name) => {
                let Some(fields) = self.bindings.classes.get(name.id.as_str()) else {
                    return;
                };
                for (field, range) in fields {
                    if words::is_secret_name(field) {
                        let finding = symbols::secret_field(name.id.as_str(), field);
                        self.report(finding, *range);
                    }
                }
            }
            Expr::Dict(dict) => {
                for item in &dict.items {
                    let Some(Expr::StringLiteral(key)) = &item.key else {
                        continue;
                    };
                    if key.value.to_str() != "properties" {
                        continue;
                    }
                    let Expr::Dict(properties) = &item.value else {
                        continue;
                    };
                    for property in &properties.items {
                        if let Some(Expr::StringLiteral(name)) = &property.key {
                            if words::is_secret_name(name.value.to_str()) {
                                let finding = symbols::secret_property(name.value.to_str());
                                self.report(finding, name.range);
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }

    fn check_dict(&mut self, dict: &ast::ExprDict) {
        let key_of = |item: &ast::DictItem| match &item.key {
            Some(Expr::StringLiteral(key)) => Some(key.value.to_str().to_owned()),
            _ => None,
        };
        let envelope = dict
            .items
            .iter()
            .any(|item| matches!(key_of(item).as_deref(), Some("jsonrpc" | "id")));
        for item in &dict.items {
            match key_of(item).as_deref() {
                Some("method") => {
                    if let Expr::StringLiteral(literal) = &item.value {
                        let findings = symbols::method_literal(literal.value.to_str(), envelope);
                        self.report_all(findings, literal.range);
                    }
                }
                Some("includeContext" | "include_context") => {
                    self.check_include_context(&item.value);
                }
                _ => {}
            }
        }
        self.check_mrtr_dict(dict);
    }

    /// A handler registered by decorator: `@server.set_logging_level()`.
    fn check_decorator(&mut self, decorator: &Decorator) -> bool {
        let Expr::Call(call) = &decorator.expression else {
            return false;
        };
        let Expr::Attribute(attribute) = &*call.func else {
            return false;
        };
        let name = attribute.attr.as_str();
        let registers = matches!(
            name,
            "set_logging_level" | "subscribe_resource" | "unsubscribe_resource"
        );
        if !registers || !(self.sdk_active || self.kind(&attribute.value).is_some()) {
            return false;
        }
        if let Some(finding) = symbols::handler(name) {
            self.report(finding, attribute.attr.range);
        }
        true
    }

    fn enter_function(&mut self, function: &ast::StmtFunctionDef) {
        let mut scope = Scope {
            sealed: self.registrations.sealed_by_server(function),
            ..Scope::default()
        };
        self.answering
            .push(self.registrations.function_answers(function));
        for parameter in function.parameters.iter() {
            let Some(annotation) = parameter.annotation() else {
                continue;
            };
            let name = parameter.name().to_string();
            if self.annotation_is(annotation, &["Context"]) {
                scope.contexts.insert(name);
            } else if self.annotation_is(annotation, &["ServerSession", "ClientSession"]) {
                scope.sessions.insert(name);
            }
        }
        self.scopes.push(scope);
    }

    /// `ctx = get_context()`, `session = ctx.session`: the name holds that object from here on.
    fn bind(&mut self, targets: &[Expr], value: &Expr) {
        let kind = self.kind(value);
        let plain = mrtr::is_plain_state(
            value,
            &self.scopes.last().expect("the module scope").plain_states,
        );
        for target in targets {
            let Expr::Name(name) = target else {
                continue;
            };
            let scope = self.scopes.last_mut().expect("the module scope");
            if plain {
                scope.plain_states.insert(name.id.to_string());
            } else {
                scope.plain_states.remove(name.id.as_str());
            }
            match kind {
                Some(Kind::Context) => {
                    scope.contexts.insert(name.id.to_string());
                }
                Some(Kind::Session) => {
                    scope.sessions.insert(name.id.to_string());
                }
                _ => {}
            }
        }
    }
}

impl<'a> Visitor<'a> for Analyzer<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        let outer = self.statement;
        self.statement = self.next_statement;
        self.next_statement += 1;
        match stmt {
            Stmt::FunctionDef(function) => {
                for decorator in &function.decorator_list {
                    if !self.check_decorator(decorator) {
                        self.visit_decorator(decorator);
                    }
                }
                self.enter_function(function);
                self.visit_parameters(&function.parameters);
                if let Some(returns) = &function.returns {
                    self.visit_annotation(returns);
                }
                self.visit_body(&function.body);
                self.scopes.pop();
                self.answering.pop();
            }
            Stmt::Match(match_stmt) => {
                self.visit_expr(&match_stmt.subject);
                for case in &match_stmt.cases {
                    let branch = mrtr::case_answers(&case.pattern);
                    self.visit_pattern(&case.pattern);
                    if let Some(guard) = &case.guard {
                        self.visit_expr(guard);
                    }
                    self.visit_branch(branch, &case.body);
                }
            }
            Stmt::If(if_stmt) => {
                self.visit_expr(&if_stmt.test);
                self.visit_branch(mrtr::test_answers(&if_stmt.test), &if_stmt.body);
                for clause in &if_stmt.elif_else_clauses {
                    let branch = clause.test.as_ref().and_then(mrtr::test_answers);
                    if let Some(test) = &clause.test {
                        self.visit_expr(test);
                    }
                    self.visit_branch(branch, &clause.body);
                }
            }
            Stmt::Assign(assign) => {
                visitor::walk_stmt(self, stmt);
                self.bind(&assign.targets, &assign.value);
            }
            Stmt::AnnAssign(assign) => {
                visitor::walk_stmt(self, stmt);
                if let Some(value) = &assign.value {
                    self.bind(std::slice::from_ref(&*assign.target), value);
                }
            }
            // Imports were checked as a whole (`check_imports`).
            Stmt::Import(_) | Stmt::ImportFrom(_) => {}
            _ => visitor::walk_stmt(self, stmt),
        }
        self.statement = outer;
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if self.depth >= MAX_DEPTH {
            return;
        }
        self.depth += 1;
        match expr {
            Expr::Call(call) => self.check_call(call),
            Expr::Dict(dict) => self.check_dict(dict),
            Expr::Name(ast::ExprName {
                ctx: ExprContext::Load,
                ..
            })
            | Expr::Attribute(ast::ExprAttribute {
                ctx: ExprContext::Load,
                ..
            }) => {
                if let Some(path) = self.imports.resolve(expr).filter(|p| is_sdk_path(p)) {
                    if let Some(finding) = symbols::symbol(&path) {
                        self.report(finding, expr.range());
                        // `types.SubscribeRequest`: the inner `types` is no second finding.
                        self.depth -= 1;
                        return;
                    }
                }
            }
            Expr::UnaryOp(unary) if self.sdk_active && unary.op == UnaryOp::USub => {
                if let Expr::NumberLiteral(ast::ExprNumberLiteral {
                    value: Number::Int(int),
                    ..
                }) = &*unary.operand
                {
                    if int.as_i64() == Some(32042) {
                        self.report(symbols::url_elicitation_error("-32042"), unary.range);
                    }
                }
            }
            _ => {}
        }
        visitor::walk_expr(self, expr);
        self.depth -= 1;
    }
}
