//! What a first pass over a Python file learns before the rules run: which names hold the SDK's
//! server objects, which hold string constants (a `transport` chosen once), which hold a legacy
//! request built first and sent later, and the fields of each class (a form elicited by type).

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, Parameters, Stmt};
use ruff_text_size::TextRange;
use rustc_hash::FxHashMap as HashMap;

use super::analyzer::MAX_DEPTH;
use super::imports::{last, Imports};
use super::symbols;

/// The SDK classes whose instances are servers (`FastMCP("x")`, the low-level `Server("x")`,
/// `mcp` 2.x `MCPServer`).
const SERVER_CLASSES: &[&str] = &["FastMCP", "MCPServer", "Server", "LowLevelServer"];

#[derive(Debug, Default)]
pub struct Bindings {
    /// Names (`mcp`, `self.server`) bound to an SDK server object.
    pub servers: Vec<String>,
    /// Every string a name is bound to; `None` once any binding is not a string constant.
    constants: HashMap<String, Option<Vec<String>>>,
    /// Names bound to a legacy server-to-client request, with its method.
    pub requests: HashMap<String, &'static str>,
    /// Each class's annotated fields: name and where it is written.
    pub classes: HashMap<String, Vec<(String, TextRange)>>,
}

impl Bindings {
    pub fn collect(body: &[Stmt], imports: &Imports) -> Self {
        let mut collector = Collector {
            imports,
            bindings: Bindings::default(),
        };
        collector.visit_body(body);
        collector.bindings
    }

    /// The strings `name` may hold, when every binding of it in the file is a string constant.
    pub fn constant_values(&self, name: &str) -> Option<&[String]> {
        self.constants.get(name)?.as_deref()
    }
}

/// `self.server`, `mcp`: the dotted text of a name or attribute chain.
pub fn dotted(expr: &Expr) -> Option<String> {
    let (root, attributes) = split_chain(expr)?;
    let mut out = root.to_owned();
    for attribute in attributes.iter().rev() {
        out.push('.');
        out.push_str(attribute);
    }
    Some(out)
}

/// The root name of `a.b.c` and its attributes, last first (walked in a loop: a chain may be
/// as long as generated code makes it).
pub fn split_chain(mut expr: &Expr) -> Option<(&str, Vec<&str>)> {
    let mut attributes = Vec::new();
    loop {
        match expr {
            Expr::Name(name) => return Some((name.id.as_str(), attributes)),
            Expr::Attribute(attribute) => {
                attributes.push(attribute.attr.as_str());
                expr = &attribute.value;
            }
            _ => return None,
        }
    }
}

/// The legacy request method an expression builds, if it names a legacy request type anywhere
/// (`types.ServerRequest(types.CreateMessageRequest(...))`) or has a `method="sampling/..."`.
pub fn built_request(imports: &Imports, expr: &Expr) -> Option<&'static str> {
    struct Finder<'i> {
        imports: &'i Imports,
        found: Option<&'static str>,
        depth: usize,
    }
    impl<'a> Visitor<'a> for Finder<'_> {
        fn visit_expr(&mut self, expr: &'a Expr) {
            if self.found.is_some() || self.depth >= MAX_DEPTH {
                return;
            }
            if let Some(path) = self.imports.resolve_sdk(expr) {
                self.found = symbols::request_type_method(last(&path));
                if self.found.is_some() {
                    return;
                }
            }
            if let Expr::StringLiteral(literal) = expr {
                let value = literal.value.to_str();
                self.found = ["sampling/createMessage", "roots/list", "elicitation/create"]
                    .into_iter()
                    .find(|method| *method == value);
            }
            self.depth += 1;
            visitor::walk_expr(self, expr);
            self.depth -= 1;
        }
    }
    let mut finder = Finder {
        imports,
        found: None,
        depth: 0,
    };
    finder.visit_expr(expr);
    finder.found
}

struct Collector<'i> {
    imports: &'i Imports,
    bindings: Bindings,
}

impl Collector<'_> {
    fn bind(&mut self, target: &Expr, value: Option<&Expr>, annotation: Option<&Expr>) {
        let Some(name) = dotted(target) else {
            return;
        };
        if let Some(Expr::Call(call)) = value {
            let class = self.imports.resolve_sdk(&call.func);
            if class.is_some_and(|class| SERVER_CLASSES.contains(&last(&class))) {
                self.bindings.servers.push(name.clone());
            }
        }
        let request = annotation
            .and_then(|annotation| built_request(self.imports, annotation))
            .or_else(|| value.and_then(|value| built_request(self.imports, value)));
        if let Some(method) = request {
            self.bindings.requests.insert(name.clone(), method);
        }
        if let Some(value) = value {
            self.constant(name, value);
        }
    }

    fn constant(&mut self, name: String, value: &Expr) {
        let entry = self
            .bindings
            .constants
            .entry(name)
            .or_insert_with(|| Some(Vec::new()));
        match (entry.as_mut(), value) {
            (Some(values), Expr::StringLiteral(literal)) => {
                values.push(literal.value.to_str().to_owned());
            }
            _ => *entry = None,
        }
    }

    fn parameters(&mut self, parameters: &Parameters) {
        for parameter in parameters.iter_non_variadic_params() {
            if let Some(default) = parameter.default() {
                self.constant(parameter.parameter.name.to_string(), default);
            }
        }
    }
}

impl<'a> Visitor<'a> for Collector<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::Assign(assign) => {
                for target in &assign.targets {
                    self.bind(target, Some(&assign.value), None);
                }
            }
            Stmt::AnnAssign(assign) => {
                self.bind(
                    &assign.target,
                    assign.value.as_deref(),
                    Some(&assign.annotation),
                );
            }
            Stmt::FunctionDef(function) => self.parameters(&function.parameters),
            Stmt::ClassDef(class) => {
                let fields = class
                    .body
                    .iter()
                    .filter_map(|stmt| match stmt {
                        Stmt::AnnAssign(assign) => match &*assign.target {
                            Expr::Name(name) => Some((name.id.to_string(), name.range)),
                            _ => None,
                        },
                        _ => None,
                    })
                    .collect();
                self.bindings.classes.insert(class.name.to_string(), fields);
            }
            _ => {}
        }
        visitor::walk_stmt(self, stmt);
    }

    // Expressions hold no bindings this pass needs (a walrus is not worth following).
    fn visit_expr(&mut self, _expr: &'a Expr) {}
}
