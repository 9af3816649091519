//! The MRTR rules in Python (`mcp` 2.x): where an `InputRequiredResult` may be answered
//! (`input-required-outside-mrtr`: only `tools/call`, `resources/read` and `prompts/get`) and
//! whether the `request_state` it hands out is sealed (`unsigned-request-state`).
//!
//! Which request a function answers comes from how it is registered: a decorator of a server
//! object (`@server.list_tools()`, `@mcp.tool()`), an `on_<request>=` argument of the low-level
//! `Server(...)`, or the branch of a hand-written router (`match method: case "tools/list":`,
//! `if method == "tools/list":`). Whether state is sealed follows `mcp` 2.x: `MCPServer` seals
//! `request_state` itself, the low-level `Server` seals nothing unless a `RequestStateBoundary`
//! is wired in (docs/lint/python.md).

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, Stmt};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::bindings::dotted;
use super::imports::{last, Imports};
use crate::rust::words::is_sealing_name;

/// The packages `InputRequiredResult` and friends come from (`mcp.types` is an alias of the
/// `mcp-types` distribution's `mcp_types` in `mcp` 2.x).
const MRTR_ROOTS: &[&str] = &["mcp", "mcp_types", "fastmcp"];

/// The requests that may answer `input_required`.
const MRTR_METHODS: &[&str] = &["tools/call", "resources/read", "prompts/get"];

/// The request a function answers, as far as its registration tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answers {
    /// `tools/call`, `resources/read` or `prompts/get` (MRTR is allowed).
    Mrtr,
    /// Another request (`tools/list`, `completion/complete`, ...).
    Other(String),
    /// Not known (a helper, a function registered nowhere this file shows).
    Unknown,
}

/// What the first pass learns: the functions registered with the low-level `Server(on_...=)`,
/// the names bound to each kind of server, and whether a `RequestStateBoundary` is in use.
#[derive(Debug, Default)]
pub struct Registrations {
    by_function: HashMap<String, &'static str>,
    low_level_servers: HashSet<String>,
    high_level_servers: HashSet<String>,
    boundary: bool,
}

/// The request a low-level `Server(on_<x>=...)` keyword registers a handler for.
fn keyword_method(keyword: &str) -> Option<&'static str> {
    Some(match keyword {
        "on_call_tool" => "tools/call",
        "on_read_resource" => "resources/read",
        "on_get_prompt" => "prompts/get",
        "on_list_tools" => "tools/list",
        "on_list_resources" => "resources/list",
        "on_list_resource_templates" => "resources/templates/list",
        "on_list_prompts" => "prompts/list",
        "on_complete" | "on_completion" => "completion/complete",
        "on_set_logging_level" => "logging/setLevel",
        "on_subscribe_resource" => "resources/subscribe",
        "on_unsubscribe_resource" => "resources/unsubscribe",
        "on_ping" => "ping",
        _ => return None,
    })
}

/// The request a server decorator registers a handler for (low-level `@server.list_tools()`,
/// high-level `@mcp.tool()`), and whether the server object is a high-level one.
fn decorator_method(decorator: &str) -> Option<&'static str> {
    Some(match decorator {
        "call_tool" | "tool" => "tools/call",
        "read_resource" | "resource" => "resources/read",
        "get_prompt" | "prompt" => "prompts/get",
        "list_tools" => "tools/list",
        "list_resources" => "resources/list",
        "list_resource_templates" => "resources/templates/list",
        "list_prompts" => "prompts/list",
        "completion" | "complete" => "completion/complete",
        "set_logging_level" => "logging/setLevel",
        "subscribe_resource" => "resources/subscribe",
        "unsubscribe_resource" => "resources/unsubscribe",
        _ => return None,
    })
}

/// A string with the shape of a JSON-RPC method: `initialize`, `ping`, or `segment/segment[/..]`
/// of letters and `_` (tool and prompt names cannot contain `/`).
pub fn method_shaped(text: &str) -> bool {
    matches!(text, "initialize" | "ping")
        || (text.contains('/')
            && text.split('/').all(|segment| {
                !segment.is_empty() && segment.chars().all(|c| c.is_ascii_alphabetic() || c == '_')
            }))
}

fn answers(method: &str) -> Answers {
    if MRTR_METHODS.contains(&method) {
        Answers::Mrtr
    } else {
        Answers::Other(method.to_owned())
    }
}

/// Calls that turn data into a string or bytes without protecting it.
const PLAIN_CALLS: &[&str] = &[
    "dumps",
    "str",
    "repr",
    "format",
    "model_dump_json",
    "json",
    "to_json",
    "b64encode",
    "urlsafe_b64encode",
    "b32encode",
    "b16encode",
    "encodebytes",
    "hexlify",
    "urlencode",
    "quote",
    "encode",
    "decode",
];

impl Registrations {
    pub fn collect(body: &[Stmt], imports: &Imports) -> Self {
        let mut collector = Collector {
            imports,
            registrations: Registrations::default(),
            depth: 0,
        };
        collector.visit_body(body);
        collector.registrations
    }

    /// The request `function` answers, from its decorators and its `on_...=` registration.
    pub fn function_answers(&self, function: &ast::StmtFunctionDef) -> Answers {
        for decorator in &function.decorator_list {
            let callee = match &decorator.expression {
                Expr::Call(call) => &*call.func,
                expr => expr,
            };
            let Expr::Attribute(attribute) = callee else {
                continue;
            };
            let Some(server) = dotted(&attribute.value) else {
                continue;
            };
            if !self.is_server(&server) {
                continue;
            }
            if let Some(method) = decorator_method(attribute.attr.as_str()) {
                return answers(method);
            }
        }
        match self.by_function.get(function.name.as_str()) {
            Some(method) => answers(method),
            None => Answers::Unknown,
        }
    }

    /// Whether `function` is a handler of a high-level server (`@mcp.tool()` on `MCPServer`),
    /// whose `request_state` the SDK seals.
    pub fn sealed_by_server(&self, function: &ast::StmtFunctionDef) -> bool {
        function.decorator_list.iter().any(|decorator| {
            let callee = match &decorator.expression {
                Expr::Call(call) => &*call.func,
                expr => expr,
            };
            matches!(callee, Expr::Attribute(attribute)
                if dotted(&attribute.value).is_some_and(|server| self.high_level_servers.contains(&server)))
        })
    }

    /// Whether state handed out outside any known handler is sealed anyway: a
    /// `RequestStateBoundary` is in use, or the file's only servers are high-level ones.
    pub fn sealed_in_file(&self) -> bool {
        self.boundary || (!self.high_level_servers.is_empty() && self.low_level_servers.is_empty())
    }

    fn is_server(&self, name: &str) -> bool {
        self.low_level_servers.contains(name) || self.high_level_servers.contains(name)
    }
}

/// The MRTR name an expression resolves to (`InputRequiredResult`, `RequestStateSecurity`, ...).
pub fn mrtr_name(imports: &Imports, expr: &Expr) -> Option<String> {
    let path = imports.resolve(expr)?;
    let root = path.split('.').next().unwrap_or(&path);
    MRTR_ROOTS.contains(&root).then(|| last(&path).to_owned())
}

/// Whether `value`, handed out as `request_state`, is plain data: a literal, an f-string, a
/// `%`/`+` of a string, a serialising or encoding call, or a name bound to one of these in
/// `plain_names`. A sealing call (`codec.seal(..)`, `sign_state(..)`) is not plain.
pub fn is_plain_state(value: &Expr, plain_names: &HashSet<String>) -> bool {
    plain_within(value, plain_names, super::analyzer::MAX_DEPTH)
}

fn plain_within(value: &Expr, plain_names: &HashSet<String>, depth: usize) -> bool {
    let Some(depth) = depth.checked_sub(1) else {
        return false;
    };
    match value {
        Expr::StringLiteral(_) | Expr::BytesLiteral(_) | Expr::FString(_) => true,
        Expr::BinOp(binop) => {
            matches!(
                &*binop.left,
                Expr::StringLiteral(_) | Expr::BytesLiteral(_) | Expr::FString(_)
            ) || plain_within(&binop.left, plain_names, depth)
        }
        Expr::Name(name) => plain_names.contains(name.id.as_str()),
        Expr::Call(call) => {
            let name = match &*call.func {
                Expr::Name(name) => name.id.as_str(),
                Expr::Attribute(attribute) => attribute.attr.as_str(),
                _ => return false,
            };
            !is_sealing_name(name) && PLAIN_CALLS.contains(&name)
        }
        _ => false,
    }
}

/// The request a router branch tests for: `case "tools/list":` or `if method == "tools/list":`.
pub fn case_answers(pattern: &ast::Pattern) -> Option<Answers> {
    let ast::Pattern::MatchValue(value) = pattern else {
        return None;
    };
    let Expr::StringLiteral(literal) = &*value.value else {
        return None;
    };
    let text = literal.value.to_str();
    method_shaped(text).then(|| answers(text))
}

pub fn test_answers(test: &Expr) -> Option<Answers> {
    let Expr::Compare(compare) = test else {
        return None;
    };
    if compare.ops.len() != 1 || compare.ops[0] != ast::CmpOp::Eq {
        return None;
    }
    [&*compare.left, &compare.comparators[0]]
        .into_iter()
        .find_map(|side| match side {
            Expr::StringLiteral(literal) if method_shaped(literal.value.to_str()) => {
                Some(answers(literal.value.to_str()))
            }
            _ => None,
        })
}

/// A `RequestStateSecurity(keys=[...])` literal key shorter than 32 bytes: its length.
pub fn short_keys(call: &ast::ExprCall) -> Vec<(usize, ruff_text_size::TextRange)> {
    use ruff_text_size::Ranged;
    let Some(keys) = call.arguments.find_keyword("keys") else {
        return Vec::new();
    };
    let items: Vec<&Expr> = match &keys.value {
        Expr::List(list) => list.elts.iter().collect(),
        Expr::Tuple(tuple) => tuple.elts.iter().collect(),
        single => vec![single],
    };
    items
        .into_iter()
        .filter_map(|item| {
            let length = match item {
                Expr::BytesLiteral(bytes) => bytes.value.bytes().count(),
                Expr::StringLiteral(string) => string.value.to_str().len(),
                _ => return None,
            };
            (length < 32).then(|| (length, item.range()))
        })
        .collect()
}

struct Collector<'i> {
    imports: &'i Imports,
    registrations: Registrations,
    depth: usize,
}

impl Collector<'_> {
    fn server_class(&self, value: &Expr) -> Option<bool> {
        let Expr::Call(call) = value else {
            return None;
        };
        match mrtr_name(self.imports, &call.func)?.as_str() {
            "Server" | "LowLevelServer" => Some(false),
            "MCPServer" | "FastMCP" => Some(true),
            _ => None,
        }
    }

    fn bind(&mut self, target: &Expr, value: &Expr) {
        let (Some(name), Some(high_level)) = (dotted(target), self.server_class(value)) else {
            return;
        };
        if high_level {
            self.registrations.high_level_servers.insert(name);
        } else {
            self.registrations.low_level_servers.insert(name);
        }
    }
}

impl<'a> Visitor<'a> for Collector<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::Assign(assign) => {
                for target in &assign.targets {
                    self.bind(target, &assign.value);
                }
            }
            Stmt::AnnAssign(assign) => {
                if let Some(value) = &assign.value {
                    self.bind(&assign.target, value);
                }
            }
            _ => {}
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if self.depth >= super::analyzer::MAX_DEPTH {
            return;
        }
        if let Some(name) = mrtr_name(self.imports, expr) {
            self.registrations.boundary |= name == "RequestStateBoundary";
        }
        if let Expr::Call(call) = expr {
            if self.server_class(expr) == Some(false) {
                for keyword in &call.arguments.keywords {
                    let (Some(arg), Expr::Name(function)) = (&keyword.arg, &keyword.value) else {
                        continue;
                    };
                    if let Some(method) = keyword_method(arg.as_str()) {
                        self.registrations
                            .by_function
                            .insert(function.id.to_string(), method);
                    }
                }
            }
        }
        self.depth += 1;
        visitor::walk_expr(self, expr);
        self.depth -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_shapes() {
        for method in [
            "tools/list",
            "resources/templates/list",
            "ping",
            "initialize",
        ] {
            assert!(method_shaped(method), "{method}");
        }
        for name in ["multi_request", "tools/", "a//b", "get-weather", "v1/tools"] {
            assert!(!method_shaped(name), "{name}");
        }
    }

    #[test]
    fn sealing_names() {
        for name in [
            "seal",
            "seal_json",
            "sign_state",
            "hmac_digest",
            "mint",
            "mac",
            "aead_seal",
        ] {
            assert!(is_sealing_name(name), "{name}");
        }
        for name in ["dumps", "design", "machine", "format"] {
            assert!(!is_sealing_name(name), "{name}");
        }
    }
}
