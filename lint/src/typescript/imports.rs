//! What a TypeScript/JavaScript file takes from the MCP SDK, and which of its bindings hold the
//! SDK's server objects: a first walk over the whole file, before the rules' walk.
//!
//! Resolved: ES imports (named, aliased, default, namespace), `require(..)` and `await import(..)`
//! (destructured or bound whole), and the names bound to a `Server` / `McpServer`: `new`
//! expressions assigned to a variable, a class field or `this.x`, and variables, parameters and
//! fields typed with the SDK's class. Resolution is by name within the file, not by scope.

use rustc_hash::{FxHashMap, FxHashSet};

use oxc_ast::ast::TSType;
use oxc_ast::ast::{
    Argument, AssignmentExpression, AssignmentTarget, BindingPattern, Expression, FormalParameter,
    ImportDeclaration, ImportDeclarationSpecifier, NewExpression, PropertyDefinition,
    TSTypeAnnotation, TSTypeName, VariableDeclarator,
};
use oxc_ast_visit::{walk, Visit};

/// The scope of the SDK's packages: the 1.x `@modelcontextprotocol/sdk` (any deep import) and
/// the 2.x split packages (`server`, `client`, `core`, `server-legacy`, ...), which keep the
/// legacy push-style APIs as deprecated. Their 2026-era APIs (`ctx.mcpReq.*`,
/// `inputRequired.*`) are told apart where they are used.
const SDK_SCOPE: &str = "@modelcontextprotocol/";

/// The SDK's server classes (`McpServer.server` is the low-level `Server`).
const SERVER_CLASSES: &[&str] = &["Server", "McpServer"];

/// The SDK's client class.
const CLIENT_CLASSES: &[&str] = &["Client"];

/// Whether a module specifier is (a deep import of) the legacy SDK.
pub fn is_sdk_module(specifier: &str) -> bool {
    specifier
        .strip_prefix(SDK_SCOPE)
        .is_some_and(|rest| !rest.is_empty())
}

/// The SDK names and server bindings of one file.
#[derive(Debug, Default)]
pub struct Bindings {
    /// Local name → the SDK's exported name (`import { Server as S }` maps `S` to `Server`).
    pub names: FxHashMap<String, String>,
    /// Local names bound to a whole SDK module (`import * as sdk`, `const sdk = require(..)`).
    pub namespaces: FxHashSet<String>,
    /// The file imports or requires the SDK.
    pub uses_sdk: bool,
    /// Variables and parameters holding a `Server` / `McpServer`.
    pub servers: FxHashSet<String>,
    /// Class fields (`this.x`) holding a `Server` / `McpServer`.
    pub server_fields: FxHashSet<String>,
    /// Variables and parameters holding a `Client`, and class fields (`this.x`) holding one.
    pub clients: FxHashSet<String>,
    pub client_fields: FxHashSet<String>,
    /// The capabilities objects a `Server` / `McpServer` is given by name (`{ capabilities:
    /// caps }`, `{ capabilities: this.#capabilities }`), as [`holder_key`] writes them.
    pub capability_holders: FxHashSet<String>,
    /// Variables bound to plain serialised data (`const state = JSON.stringify(..)`), for
    /// `unsigned-request-state`.
    pub plain_values: FxHashSet<String>,
}

impl Bindings {
    /// Collects the bindings of a program.
    pub fn collect(program: &oxc_ast::ast::Program<'_>) -> Bindings {
        let mut bindings = Bindings::default();
        // Imports first (hoisted), so that every use below sees them.
        for statement in &program.body {
            if let oxc_ast::ast::Statement::ImportDeclaration(import) = statement {
                bindings.import(import);
            }
        }
        Collector {
            bindings: &mut bindings,
        }
        .visit_program(program);
        bindings
    }

    /// The SDK export an expression names: an imported name (`Server`, `S` for `Server as S`)
    /// or a member of an SDK namespace (`sdk.SSEServerTransport`), also as compiled CommonJS
    /// writes it (`new (0, _indexjs.Server)(..)`: a sequence's last expression).
    pub fn sdk_name<'e>(&'e self, expression: &'e Expression<'_>) -> Option<&'e str> {
        match expression.get_inner_expression() {
            Expression::SequenceExpression(sequence) => self.sdk_name(sequence.expressions.last()?),
            Expression::Identifier(identifier) => {
                self.names.get(identifier.name.as_str()).map(String::as_str)
            }
            Expression::StaticMemberExpression(member) => {
                match member.object.get_inner_expression() {
                    Expression::Identifier(object)
                        if self.namespaces.contains(object.name.as_str()) =>
                    {
                        Some(member.property.name.as_str())
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// Whether an expression creates an SDK server (`new McpServer(..)`).
    fn is_new_server(&self, expression: &Expression<'_>) -> bool {
        self.is_new_of(expression, SERVER_CLASSES)
    }

    /// Whether an expression creates one of the SDK's `classes`.
    fn is_new_of(&self, expression: &Expression<'_>, classes: &[&str]) -> bool {
        match expression.get_inner_expression() {
            Expression::NewExpression(new) => self
                .sdk_name(&new.callee)
                .is_some_and(|name| classes.contains(&name)),
            _ => false,
        }
    }

    /// Whether a type annotation names an SDK server class.
    fn is_server_type(&self, annotation: Option<&TSTypeAnnotation<'_>>) -> bool {
        self.is_type_of(annotation, SERVER_CLASSES)
    }

    /// Whether a binding's initial value or type is the SDK's `Client`.
    fn is_client(
        &self,
        init: Option<&Expression<'_>>,
        annotation: Option<&TSTypeAnnotation<'_>>,
    ) -> bool {
        init.is_some_and(|init| self.is_new_of(init, CLIENT_CLASSES))
            || self.is_type_of(annotation, CLIENT_CLASSES)
    }

    /// Whether a type annotation names one of the SDK's `classes`.
    fn is_type_of(&self, annotation: Option<&TSTypeAnnotation<'_>>, classes: &[&str]) -> bool {
        let Some(TSType::TSTypeReference(reference)) =
            annotation.map(|annotation| &annotation.type_annotation)
        else {
            return false;
        };
        let name = match &reference.type_name {
            TSTypeName::IdentifierReference(identifier) => {
                self.names.get(identifier.name.as_str()).map(String::as_str)
            }
            TSTypeName::QualifiedName(qualified) => match &qualified.left {
                TSTypeName::IdentifierReference(left)
                    if self.namespaces.contains(left.name.as_str()) =>
                {
                    Some(qualified.right.name.as_str())
                }
                _ => None,
            },
            TSTypeName::ThisExpression(_) => None,
        };
        name.is_some_and(|name| classes.contains(&name))
    }

    /// `new Server(info, { capabilities: caps })`: remembers `caps` when it is a name.
    fn capabilities_given(&mut self, new: &NewExpression<'_>) {
        if !self
            .sdk_name(&new.callee)
            .is_some_and(|name| SERVER_CLASSES.contains(&name))
        {
            return;
        }
        for capabilities in super::shapes::capabilities_arguments(new) {
            if let Some(key) = holder_key(&capabilities.value) {
                self.capability_holders.insert(key);
            }
        }
    }

    fn import(&mut self, import: &ImportDeclaration<'_>) {
        if !is_sdk_module(import.source.value.as_str()) {
            return;
        }
        self.uses_sdk = true;
        for specifier in import.specifiers.iter().flatten() {
            match specifier {
                ImportDeclarationSpecifier::ImportSpecifier(named) => {
                    self.names.insert(
                        named.local.name.to_string(),
                        named.imported.name().to_string(),
                    );
                }
                ImportDeclarationSpecifier::ImportDefaultSpecifier(default) => {
                    self.namespaces.insert(default.local.name.to_string());
                }
                ImportDeclarationSpecifier::ImportNamespaceSpecifier(namespace) => {
                    self.namespaces.insert(namespace.local.name.to_string());
                }
            }
        }
    }

    /// `require("@modelcontextprotocol/sdk/..")` or `await import(..)`, bound to `id`.
    fn require(&mut self, id: &BindingPattern<'_>, init: &Expression<'_>) {
        let (module, member) = match required_module(init) {
            Some(found) => found,
            None => return,
        };
        if !is_sdk_module(module) {
            return;
        }
        self.uses_sdk = true;
        match (id, member) {
            // `const { Server, SSEServerTransport: T } = require(..)`
            (BindingPattern::ObjectPattern(pattern), None) => {
                for property in &pattern.properties {
                    let (Some(imported), BindingPattern::BindingIdentifier(local)) =
                        (property.key.static_name(), &property.value)
                    else {
                        continue;
                    };
                    self.names
                        .insert(local.name.to_string(), imported.into_owned());
                }
            }
            // `const sdk = require(..)`
            (BindingPattern::BindingIdentifier(local), None) => {
                self.namespaces.insert(local.name.to_string());
            }
            // `const Server = require(..).Server`
            (BindingPattern::BindingIdentifier(local), Some(member)) => {
                self.names.insert(local.name.to_string(), member.to_owned());
            }
            _ => {}
        }
    }
}

/// How [`Bindings::capability_holders`] names a holder: a variable as itself, a field of
/// `this` as `this.name` / `this.#name`.
pub fn holder_key(expression: &Expression<'_>) -> Option<String> {
    match expression.get_inner_expression() {
        Expression::Identifier(identifier) => Some(identifier.name.to_string()),
        Expression::StaticMemberExpression(member)
            if matches!(member.object, Expression::ThisExpression(_)) =>
        {
            Some(format!("this.{}", member.property.name))
        }
        Expression::PrivateFieldExpression(member)
            if matches!(member.object, Expression::ThisExpression(_)) =>
        {
            Some(format!("this.#{}", member.field.name))
        }
        _ => None,
    }
}

/// The module of `require("m")`, `await import("m")`, and of those followed by `.member`.
fn required_module<'e>(init: &'e Expression<'_>) -> Option<(&'e str, Option<&'e str>)> {
    match init.get_inner_expression() {
        Expression::CallExpression(call) if matches!(call.callee.get_inner_expression(), Expression::Identifier(id) if id.name == "require") => {
            match call.arguments.first() {
                Some(Argument::StringLiteral(module)) => Some((module.value.as_str(), None)),
                _ => None,
            }
        }
        Expression::AwaitExpression(awaited) => match awaited.argument.get_inner_expression() {
            Expression::ImportExpression(import) => match &import.source {
                Expression::StringLiteral(module) => Some((module.value.as_str(), None)),
                _ => None,
            },
            _ => None,
        },
        Expression::StaticMemberExpression(member) => {
            let (module, None) = required_module(&member.object)? else {
                return None;
            };
            Some((module, Some(member.property.name.as_str())))
        }
        _ => None,
    }
}

struct Collector<'b> {
    bindings: &'b mut Bindings,
}

impl<'a> Visit<'a> for Collector<'_> {
    fn visit_variable_declarator(&mut self, it: &VariableDeclarator<'a>) {
        if let Some(init) = &it.init {
            self.bindings.require(&it.id, init);
            if let BindingPattern::BindingIdentifier(local) = &it.id {
                if self.bindings.is_new_server(init)
                    || self.bindings.is_server_type(it.type_annotation.as_deref())
                {
                    self.bindings.servers.insert(local.name.to_string());
                }
                if self
                    .bindings
                    .is_client(Some(init), it.type_annotation.as_deref())
                {
                    self.bindings.clients.insert(local.name.to_string());
                }
                if super::security::is_plain_state(init, &|_| false) {
                    self.bindings.plain_values.insert(local.name.to_string());
                }
            }
        } else if let BindingPattern::BindingIdentifier(local) = &it.id {
            if self.bindings.is_server_type(it.type_annotation.as_deref()) {
                self.bindings.servers.insert(local.name.to_string());
            }
            if self.bindings.is_client(None, it.type_annotation.as_deref()) {
                self.bindings.clients.insert(local.name.to_string());
            }
        }
        walk::walk_variable_declarator(self, it);
    }

    fn visit_formal_parameter(&mut self, it: &FormalParameter<'a>) {
        if let BindingPattern::BindingIdentifier(local) = &it.pattern {
            if self.bindings.is_server_type(it.type_annotation.as_deref()) {
                self.bindings.servers.insert(local.name.to_string());
                // `constructor(private server: McpServer)` is also a field.
                if it.accessibility.is_some() || it.readonly {
                    self.bindings.server_fields.insert(local.name.to_string());
                }
            }
            if self.bindings.is_client(None, it.type_annotation.as_deref()) {
                self.bindings.clients.insert(local.name.to_string());
                if it.accessibility.is_some() || it.readonly {
                    self.bindings.client_fields.insert(local.name.to_string());
                }
            }
        }
        walk::walk_formal_parameter(self, it);
    }

    fn visit_property_definition(&mut self, it: &PropertyDefinition<'a>) {
        let is_server = it
            .value
            .as_ref()
            .is_some_and(|value| self.bindings.is_new_server(value))
            || self.bindings.is_server_type(it.type_annotation.as_deref());
        if is_server {
            if let Some(name) = it.key.static_name() {
                self.bindings.server_fields.insert(name.into_owned());
            }
        }
        if self
            .bindings
            .is_client(it.value.as_ref(), it.type_annotation.as_deref())
        {
            if let Some(name) = it.key.static_name() {
                self.bindings.client_fields.insert(name.into_owned());
            }
        }
        walk::walk_property_definition(self, it);
    }

    fn visit_assignment_expression(&mut self, it: &AssignmentExpression<'a>) {
        if self.bindings.is_new_server(&it.right) {
            match &it.left {
                AssignmentTarget::AssignmentTargetIdentifier(local) => {
                    self.bindings.servers.insert(local.name.to_string());
                }
                AssignmentTarget::StaticMemberExpression(member)
                    if matches!(member.object, Expression::ThisExpression(_)) =>
                {
                    self.bindings
                        .server_fields
                        .insert(member.property.name.to_string());
                }
                _ => {}
            }
        }
        if self.bindings.is_new_of(&it.right, CLIENT_CLASSES) {
            match &it.left {
                AssignmentTarget::AssignmentTargetIdentifier(local) => {
                    self.bindings.clients.insert(local.name.to_string());
                }
                AssignmentTarget::StaticMemberExpression(member)
                    if matches!(member.object, Expression::ThisExpression(_)) =>
                {
                    self.bindings
                        .client_fields
                        .insert(member.property.name.to_string());
                }
                AssignmentTarget::PrivateFieldExpression(member)
                    if matches!(member.object, Expression::ThisExpression(_)) =>
                {
                    self.bindings
                        .client_fields
                        .insert(member.field.name.to_string());
                }
                _ => {}
            }
        }
        walk::walk_assignment_expression(self, it);
    }

    fn visit_new_expression(&mut self, it: &NewExpression<'a>) {
        self.bindings.capabilities_given(it);
        walk::walk_new_expression(self, it);
    }
}
