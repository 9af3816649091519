//! One walk over a parsed TypeScript/JavaScript file, matching the legacy SDK surface
//! (`/work`-independent summary in `docs/lint/typescript.md`): calls on the SDK's server objects,
//! hand-built protocol messages (`method: "sampling/createMessage"` ...), `includeContext`
//! values, the `logging` capability of a `Server` / `McpServer`, the SSE transport, the URL
//! elicitation error, and the request handlers of removed flows.

use std::sync::Arc;

use mcp_migrate_rules::{FixAvailability, RuleId};
use oxc_ast::ast::{
    Argument, AssignmentExpression, BindingPattern, CallExpression, Expression, Function,
    MethodDefinition, NewExpression, ObjectExpression, ObjectProperty, ObjectPropertyKind, Program,
    PropertyDefinition, PropertyKey, StaticMemberExpression, SwitchCase, TSEnumMember,
    UnaryExpression, UnaryOperator, VariableDeclarator,
};
use oxc_ast_visit::{walk, Visit};
use oxc_span::{GetSpan, Span};
use oxc_syntax::scope::ScopeFlags;

use rustc_hash::FxHashSet;

use super::imports::{holder_key, Bindings};
use super::security;
use super::shapes::{byte_span, capabilities_arguments, property, property_extent, static_string};
use super::surface::{
    defines_handler, defines_sender, is_modern_callee, is_modern_receiver, is_send_callee,
    rule_help, HANDLER_SCHEMAS, METHODS, SERVER_NAMES,
};
use crate::diagnostic::{Diagnostic, SourceFile};
use crate::fix::{Edit, Fix};
use crate::rust::words;

mod security_rules;

/// Lints a parsed program.
pub(super) fn lint_program(file: &Arc<SourceFile>, program: &Program<'_>) -> Vec<Diagnostic> {
    let bindings = Bindings::collect(program);
    let mut analyzer = Analyzer {
        file,
        bindings: &bindings,
        diagnostics: Vec::new(),
        input_requests: 0,
        modern_call: 0,
        unsent: FxHashSet::default(),
        function: None,
        non_mrtr_handler: None,
        code_definitions: FxHashSet::default(),
    };
    analyzer.visit_program(program);
    let mut diagnostics = analyzer.diagnostics;
    // One finding per rule per position (a call reached twice, e.g. through an optional chain).
    diagnostics.sort_by_key(|d| (d.span.start, d.rule));
    diagnostics.dedup_by_key(|d| (d.span.start, d.rule));
    diagnostics
}

struct Analyzer<'f, 'b> {
    file: &'f Arc<SourceFile>,
    bindings: &'b Bindings,
    diagnostics: Vec<Diagnostic>,
    /// Inside an `inputRequests` value: requests there are MRTR input requests, not sent.
    input_requests: usize,
    /// Inside the arguments of a 2026-era call (`ctx.mcpReq.*`, `inputRequired.*`).
    modern_call: usize,
    /// The start of each object literal passed straight to a call that sends nothing
    /// (`seen.push({ method: "roots/list" })` records a method, it does not send one).
    unsent: FxHashSet<u32>,
    /// The name of the innermost named function, method or object method being walked.
    function: Option<String>,
    /// Inside the handler of a request other than `tools/call`, `resources/read` and
    /// `prompts/get` (`setRequestHandler(ListToolsRequestSchema, ..)`, `case "tools/list":`):
    /// how that method is written.
    non_mrtr_handler: Option<String>,
    /// The start of each `-32042` that defines the code under its name (`enum ErrorCode {
    /// UrlElicitationRequired = -32042 }`, compiled `E[E["UrlElicitationRequired"] = -32042]`,
    /// `{ UrlElicitationRequired: -32042 }`): the SDK's own definitions, bundled or not.
    code_definitions: FxHashSet<u32>,
}

impl Analyzer<'_, '_> {
    fn report(&mut self, rule: RuleId, span: Span, message: String, help: &str, fix: Option<Fix>) {
        self.diagnostics.push(Diagnostic {
            rule,
            severity: rule.rule().default_severity,
            file: self.file.clone(),
            span: byte_span(span),
            message,
            help: Some(help.to_owned()),
            label: Some(rule.rule().name.replace('-', " ")),
            fix,
        });
    }

    /// Whether an expression is one of the SDK's server objects: a binding or `this` field
    /// holding a `Server` / `McpServer`, or, in a file that uses the SDK, `<anything>.server`
    /// (`McpServer.server`, `this.server`) and an untyped binding named `server` / `mcpServer`
    /// (JavaScript helpers that get the server as a parameter).
    fn is_server(&self, expression: &Expression<'_>) -> bool {
        match expression.get_inner_expression() {
            Expression::Identifier(identifier) => {
                let name = identifier.name.as_str();
                self.bindings.servers.contains(name)
                    || (self.bindings.uses_sdk && SERVER_NAMES.contains(&name))
            }
            Expression::StaticMemberExpression(member) => {
                self.is_server_field(&member.object, member.property.name.as_str())
            }
            // `this.#server` (a private field).
            Expression::PrivateFieldExpression(member) => {
                self.is_server_field(&member.object, member.field.name.as_str())
            }
            _ => false,
        }
    }

    /// Whether an expression is a binding or `this` field holding the SDK's `Client`.
    fn is_client(&self, expression: &Expression<'_>) -> bool {
        match expression.get_inner_expression() {
            Expression::Identifier(identifier) => {
                self.bindings.clients.contains(identifier.name.as_str())
            }
            Expression::StaticMemberExpression(member) => {
                matches!(member.object, Expression::ThisExpression(_))
                    && self
                        .bindings
                        .client_fields
                        .contains(member.property.name.as_str())
            }
            Expression::PrivateFieldExpression(member) => {
                matches!(member.object, Expression::ThisExpression(_))
                    && self
                        .bindings
                        .client_fields
                        .contains(member.field.name.as_str())
            }
            _ => false,
        }
    }

    fn is_server_field(&self, object: &Expression<'_>, field: &str) -> bool {
        (matches!(object, Expression::ThisExpression(_))
            && self.bindings.server_fields.contains(field))
            || (field == "server" && (self.bindings.uses_sdk || self.is_server(object)))
    }

    /// [`Self::is_server`], or, for the SDK's own method names (`elicitInput`,
    /// `sendLoggingMessage`, ...), a binding named `server` / `mcpServer` or `<anything>.server`
    /// in a file that does not import the SDK (a module that gets the server as a parameter).
    fn is_server_loosely(&self, expression: &Expression<'_>) -> bool {
        self.is_server(expression)
            || match expression.get_inner_expression() {
                Expression::Identifier(identifier) => {
                    SERVER_NAMES.contains(&identifier.name.as_str())
                }
                Expression::StaticMemberExpression(member) => member.property.name == "server",
                Expression::PrivateFieldExpression(member) => member.field.name == "server",
                _ => false,
            }
    }

    fn method_call(&mut self, call: &CallExpression<'_>, member: &StaticMemberExpression<'_>) {
        let method = member.property.name.as_str();
        let span = member.property.span;
        let receiver = &member.object;
        let on_server = self.is_server(receiver) && !is_modern_receiver(receiver);
        let distinctive = self.is_server_loosely(receiver) && !is_modern_receiver(receiver);
        match method {
            "createMessage" if on_server => {
                self.report(
                    RuleId::DeprecatedSampling,
                    span,
                    "`createMessage` asks the client to sample: sampling is deprecated in MCP 2026-07-28".into(),
                    "call the model provider directly, or return `inputRequired({ inputRequests: { k: inputRequired.createMessage(params) } })` (SDK 2.x)",
                    None,
                );
                self.server_request(span, "createMessage");
            }
            "listRoots" if on_server => {
                self.report(
                    RuleId::DeprecatedRoots,
                    span,
                    "`listRoots` asks the client for its roots: roots are deprecated in MCP 2026-07-28".into(),
                    "take paths as tool arguments or resource URIs",
                    None,
                );
                self.server_request(span, "listRoots");
            }
            "elicitInput" if distinctive => self.server_request(span, "elicitInput"),
            "sendLoggingMessage" if distinctive => self.report(
                RuleId::DeprecatedLogging,
                span,
                "`sendLoggingMessage` sends `notifications/message`: protocol logging is deprecated in MCP 2026-07-28".into(),
                "log to stderr or through OpenTelemetry",
                None,
            ),
            "setLoggingLevel" if self.is_client(receiver) => self.report(
                RuleId::DeprecatedLogging,
                span,
                "`setLoggingLevel` sends `logging/setLevel`: protocol logging is deprecated in MCP 2026-07-28".into(),
                "drop the call; read the server's stderr or its OpenTelemetry signals",
                None,
            ),
            "createElicitationCompletionNotifier" if distinctive => self.report(
                RuleId::ElicitationCompleteNotification,
                span,
                "`createElicitationCompletionNotifier` sends `notifications/elicitation/complete`, removed in MCP 2026-07-28".into(),
                "the client learns the outcome by retrying; correlate through `requestState`",
                None,
            ),
            "setRequestHandler" | "setNotificationHandler" => {
                let Some(schema) = call.arguments.first().and_then(Argument::as_expression) else {
                    return;
                };
                // SDK 2.x registers handlers by method string.
                if let Some(method) = static_string(schema) {
                    let handled = METHODS.iter().find(|(m, _, request)| *m == method && !request);
                    // The SDK's own registration of the handler (a bundled SDK) is not a use.
                    let defined = self
                        .function
                        .as_deref()
                        .is_some_and(|function| defines_handler(function, method));
                    if let (Some((_, Some(rule), _)), false) = (handled, defined) {
                        self.report(
                            *rule,
                            schema.span(),
                            format!("a handler for `{method}` serves a flow that MCP 2026-07-28 deprecated or removed"),
                            rule_help(*rule),
                            None,
                        );
                    }
                    return;
                }
                let Some(name) = self.bindings.sdk_name(schema) else {
                    return;
                };
                if let Some((_, rule)) = HANDLER_SCHEMAS.iter().find(|(s, _)| *s == name) {
                    self.report(
                        *rule,
                        schema.span(),
                        format!("a handler for `{name}` serves a flow that MCP 2026-07-28 deprecated or removed"),
                        rule_help(*rule),
                        None,
                    );
                }
            }
            _ => {}
        }
    }

    fn server_request(&mut self, span: Span, what: &str) {
        self.report(
            RuleId::ServerInitiatedRequest,
            span,
            format!("`{what}` sends a request to the client and awaits the reply; MCP 2026-07-28 servers return `input_required` instead"),
            "return `inputRequired({ inputRequests, requestState })` (SDK 2.x) and read the answers when the client retries",
            None,
        );
    }

    fn new_expression(&mut self, new: &NewExpression<'_>) {
        let name = match self.bindings.sdk_name(&new.callee) {
            Some(name) => Some(name),
            // A bundle or namespace object the file did not import, or the SDK's class bundled
            // into the file itself: the transport's name alone (no other library uses it).
            None => match new.callee.get_inner_expression() {
                Expression::StaticMemberExpression(member) => Some(member.property.name.as_str()),
                Expression::Identifier(identifier) => Some(identifier.name.as_str()),
                _ => None,
            }
            .filter(|name| matches!(*name, "SSEServerTransport" | "SSEClientTransport")),
        };
        let Some(name) = name else { return };
        let span = new.callee.span();
        match name {
            "SSEServerTransport" | "SSEClientTransport" => self.report(
                RuleId::LegacySseTransport,
                span,
                format!("`{name}` is the HTTP+SSE transport of 2024-11-05, deprecated in MCP 2026-07-28"),
                "serve Streamable HTTP (`StreamableHTTPServerTransport`, or `createMcpHandler` in SDK 2.x)",
                None,
            ),
            "UrlElicitationRequiredError" => self.report(
                RuleId::ServerInitiatedRequest,
                span,
                "`UrlElicitationRequiredError` (-32042) asks the client for a URL elicitation out of band; MCP 2026-07-28 servers return `input_required`".into(),
                "return `inputRequired({ inputRequests: { k: inputRequired.elicitUrl({ message, url }) } })` (SDK 2.x)",
                None,
            ),
            "Server" | "McpServer" => self.logging_capability(new),
            _ => {}
        }
    }

    /// `new Server(info, { capabilities: { logging: {} } })`: the capability makes the SDK
    /// install a `logging/setLevel` handler.
    fn logging_capability(&mut self, new: &NewExpression<'_>) {
        for capabilities in capabilities_arguments(new) {
            if let Expression::ObjectExpression(capabilities) =
                capabilities.value.get_inner_expression()
            {
                self.logging_in(capabilities);
            }
        }
    }

    /// The `logging` key of a capabilities object literal.
    fn logging_in(&mut self, capabilities: &ObjectExpression<'_>) {
        let Some(logging) = property(capabilities, "logging") else {
            return;
        };
        let fix = Fix::new(
            FixAvailability::Unsafe,
            "remove the `logging` capability",
            vec![Edit::delete(property_extent(
                &self.file.text,
                capabilities,
                logging,
            ))],
        );
        self.report(
            RuleId::DeprecatedLogging,
            logging.key.span(),
            "the `logging` capability makes the server accept `logging/setLevel` and send `notifications/message`, deprecated in MCP 2026-07-28".into(),
            "drop the capability and log to stderr or through OpenTelemetry",
            Some(fix),
        );
    }

    /// `caps.logging = {}` / `this.#capabilities.logging = {}` on a capabilities object given
    /// to a `Server` / `McpServer` in this file (fastmcp fills it in before `new Server(..)`).
    fn logging_assigned(&mut self, assignment: &AssignmentExpression<'_>) {
        let Some(member) = assignment.left.as_member_expression() else {
            return;
        };
        let Some((span, "logging")) = member.static_property_info() else {
            return;
        };
        if holder_key(member.object())
            .is_some_and(|key| self.bindings.capability_holders.contains(&key))
        {
            self.report(
                RuleId::DeprecatedLogging,
                span,
                "the `logging` capability makes the server accept `logging/setLevel` and send `notifications/message`, deprecated in MCP 2026-07-28".into(),
                "drop the capability and log to stderr or through OpenTelemetry",
                None,
            );
        }
    }

    /// `const caps = { logging: {} }` / `#capabilities = { logging: {} }` of a capabilities
    /// object given to a `Server` / `McpServer` by name.
    fn holder_initialized(&mut self, key: &str, init: Option<&Expression<'_>>) {
        if let Some(Expression::ObjectExpression(capabilities)) =
            init.map(Expression::get_inner_expression)
        {
            if self.bindings.capability_holders.contains(key) {
                self.logging_in(capabilities);
            }
        }
    }

    fn object(&mut self, object: &ObjectExpression<'_>) {
        self.security(object);
        let unsent = self.unsent.contains(&object.span.start);
        for kind in &object.properties {
            let ObjectPropertyKind::ObjectProperty(property) = kind else {
                continue;
            };
            match property.key.static_name().as_deref() {
                Some("method") if !property.computed && self.modern_call == 0 && !unsent => {
                    self.method_property(property);
                }
                Some("includeContext") if !property.computed => self.include_context(property),
                _ => {}
            }
        }
    }

    fn method_property(&mut self, property: &ObjectProperty<'_>) {
        let Some(method) = static_string(&property.value) else {
            return;
        };
        let Some((method, rule, request)) = METHODS.iter().find(|(m, _, _)| *m == method) else {
            return;
        };
        // The definition of the API that sends this message (an SDK bundled into a package's
        // `dist/`, or a framework's own client) is not a use of it: its callers are reported.
        if self
            .function
            .as_deref()
            .is_some_and(|function| defines_sender(function, method))
        {
            return;
        }
        let span = property.value.span();
        if let Some(rule) = rule {
            self.report(
                *rule,
                span,
                format!("a hand-built `{method}` message: MCP 2026-07-28 deprecated or removed it"),
                rule_help(*rule),
                None,
            );
        }
        if *request && self.input_requests == 0 {
            self.server_request(span, method);
        }
    }

    fn include_context(&mut self, property: &ObjectProperty<'_>) {
        let Expression::StringLiteral(value) = property.value.get_inner_expression() else {
            return;
        };
        let found = value.value.as_str();
        if !matches!(found, "thisServer" | "allServers") {
            return;
        }
        let raw = &self.file.text[byte_span(value.span).start..byte_span(value.span).end];
        let quote = raw.chars().next().unwrap_or('"');
        let fix = Fix::new(
            FixAvailability::Unsafe,
            format!("replace `\"{found}\"` with `\"none\"`"),
            vec![Edit::replace(
                byte_span(value.span),
                format!("{quote}none{quote}"),
            )],
        );
        self.report(
            RuleId::DeprecatedIncludeContext,
            value.span,
            format!("`includeContext: \"{found}\"` is deprecated in MCP 2026-07-28"),
            "omit `includeContext` (or use `\"none\"`) and put the context the model needs into the request",
            Some(fix),
        );
    }
}

/// The start of `value` when it is `-32042` bound to a name that says so
/// (`UrlElicitationRequired`, `URL_ELICITATION_REQUIRED`).
fn code_definition(name: Option<&str>, value: &Expression<'_>) -> Option<u32> {
    let Expression::UnaryExpression(unary) = value.get_inner_expression() else {
        return None;
    };
    let is_code = unary.operator == UnaryOperator::UnaryNegation
        && matches!(&unary.argument, Expression::NumericLiteral(number) if number.value == 32042.0);
    (is_code && words::words(name?) == ["url", "elicitation", "required"])
        .then_some(unary.span.start)
}

impl<'a> Visit<'a> for Analyzer<'_, '_> {
    fn visit_assignment_expression(&mut self, it: &AssignmentExpression<'a>) {
        self.logging_assigned(it);
        let name = it
            .left
            .as_member_expression()
            .and_then(|member| member.static_property_name());
        self.code_definitions
            .extend(code_definition(name, &it.right));
        walk::walk_assignment_expression(self, it);
    }

    fn visit_ts_enum_member(&mut self, it: &TSEnumMember<'a>) {
        if let Some(initializer) = &it.initializer {
            let name = it.id.static_name();
            self.code_definitions
                .extend(code_definition(Some(name.as_str()), initializer));
        }
        walk::walk_ts_enum_member(self, it);
    }

    fn visit_variable_declarator(&mut self, it: &VariableDeclarator<'a>) {
        if let BindingPattern::BindingIdentifier(local) = &it.id {
            self.holder_initialized(local.name.as_str(), it.init.as_ref());
        }
        walk::walk_variable_declarator(self, it);
    }

    fn visit_property_definition(&mut self, it: &PropertyDefinition<'a>) {
        if !self.bindings.capability_holders.is_empty() {
            let key = match &it.key {
                PropertyKey::PrivateIdentifier(private) => Some(format!("this.#{}", private.name)),
                key => key.static_name().map(|name| format!("this.{name}")),
            };
            if let Some(key) = key {
                self.holder_initialized(&key, it.value.as_ref());
            }
        }
        walk::walk_property_definition(self, it);
    }

    fn visit_switch_case(&mut self, it: &SwitchCase<'a>) {
        // `case "tools/list":` in a hand-rolled router: its statements answer that method.
        let method = it
            .test
            .as_ref()
            .and_then(static_string)
            .filter(|text| security::is_method_string(text));
        match method {
            Some(method) => {
                let handled = (!security::is_mrtr_method(method)).then(|| method.to_owned());
                let outer = std::mem::replace(&mut self.non_mrtr_handler, handled);
                walk::walk_switch_case(self, it);
                self.non_mrtr_handler = outer;
            }
            None => walk::walk_switch_case(self, it),
        }
    }

    fn visit_call_expression(&mut self, it: &CallExpression<'a>) {
        if let Expression::StaticMemberExpression(member) = it.callee.get_inner_expression() {
            self.method_call(it, member);
        }
        // The callee's name is only read for a call given an object literal.
        let mut objects = it.arguments.iter().filter_map(|argument| {
            match argument
                .as_expression()
                .map(Expression::get_inner_expression)
            {
                Some(Expression::ObjectExpression(object)) => Some(object.span.start),
                _ => None,
            }
        });
        if let Some(first) = objects.next() {
            if !is_send_callee(&it.callee) {
                self.unsent.insert(first);
                self.unsent.extend(objects);
            }
        }
        self.input_required_call(it);
        let modern = is_modern_callee(&it.callee);
        self.modern_call += usize::from(modern);
        match self.handled_method(it) {
            Some(handled) => {
                let outer = std::mem::replace(&mut self.non_mrtr_handler, handled);
                walk::walk_call_expression(self, it);
                self.non_mrtr_handler = outer;
            }
            None => walk::walk_call_expression(self, it),
        }
        self.modern_call -= usize::from(modern);
    }

    fn visit_new_expression(&mut self, it: &NewExpression<'a>) {
        self.new_expression(it);
        walk::walk_new_expression(self, it);
    }

    fn visit_object_expression(&mut self, it: &ObjectExpression<'a>) {
        self.object(it);
        walk::walk_object_expression(self, it);
    }

    fn visit_object_property(&mut self, it: &ObjectProperty<'a>) {
        if !it.computed && matches!(it.value, Expression::UnaryExpression(_)) {
            let name = it.key.static_name();
            self.code_definitions
                .extend(code_definition(name.as_deref(), &it.value));
        }
        let inputs = !it.computed && it.key.static_name().as_deref() == Some("inputRequests");
        self.input_requests += usize::from(inputs);
        let is_function = matches!(
            it.value,
            Expression::FunctionExpression(_) | Expression::ArrowFunctionExpression(_)
        );
        let outer = if is_function {
            let name = it.key.static_name().map(|name| name.into_owned());
            std::mem::replace(&mut self.function, name)
        } else {
            self.function.clone()
        };
        walk::walk_object_property(self, it);
        self.function = outer;
        self.input_requests -= usize::from(inputs);
    }

    fn visit_method_definition(&mut self, it: &MethodDefinition<'a>) {
        let name = it.key.static_name().map(|name| name.into_owned());
        let outer = std::mem::replace(&mut self.function, name);
        walk::walk_method_definition(self, it);
        self.function = outer;
    }

    fn visit_function(&mut self, it: &Function<'a>, flags: ScopeFlags) {
        let outer = match &it.id {
            Some(id) => self.function.replace(id.name.to_string()),
            None => self.function.clone(),
        };
        walk::walk_function(self, it, flags);
        self.function = outer;
    }

    fn visit_static_member_expression(&mut self, it: &StaticMemberExpression<'a>) {
        // `ErrorCode.UrlElicitationRequired` (-32042).
        if it.property.name == "UrlElicitationRequired"
            && self.bindings.sdk_name(&it.object) == Some("ErrorCode")
        {
            self.report(
                RuleId::ServerInitiatedRequest,
                it.property.span,
                "`ErrorCode.UrlElicitationRequired` (-32042) is the out-of-band URL elicitation of 2025-11-25; MCP 2026-07-28 servers return `input_required`".into(),
                "return an `input_required` result with a URL elicitation request",
                None,
            );
        }
        walk::walk_static_member_expression(self, it);
    }

    fn visit_unary_expression(&mut self, it: &UnaryExpression<'a>) {
        if it.operator == UnaryOperator::UnaryNegation
            && self.bindings.uses_sdk
            && !self.code_definitions.contains(&it.span.start)
        {
            if let Expression::NumericLiteral(number) = &it.argument {
                if number.value == 32042.0 {
                    self.report(
                        RuleId::ServerInitiatedRequest,
                        it.span,
                        "-32042 is the URL-elicitation-required error of 2025-11-25; MCP 2026-07-28 servers return `input_required`".into(),
                        "return an `input_required` result with a URL elicitation request",
                        None,
                    );
                }
            }
        }
        walk::walk_unary_expression(self, it);
    }
}
