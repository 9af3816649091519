//! The names a Python file binds by `import` and `from … import … as …`, and how an expression's
//! dotted name resolves through them (`types.SubscribeRequest` → `mcp.types.SubscribeRequest`).
//!
//! The map is built once for the whole file, flow-insensitively: an import inside a function
//! counts everywhere, which is what a linter wants (code rarely rebinds an imported SDK name).

use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::TextRange;
use rustc_hash::FxHashMap as HashMap;

/// The packages of the SDK: `mcp` (1.x and 2.x) and the standalone `fastmcp`.
pub const SDK_ROOTS: &[&str] = &["mcp", "fastmcp"];

/// One imported name: the local name, the dotted path it stands for, and where it is written.
#[derive(Debug, Clone)]
pub struct Import {
    pub qualified: String,
    /// The imported name as written (`SseServerTransport` in `from mcp.server.sse import
    /// SseServerTransport as T`).
    pub range: TextRange,
    /// The index of the import statement (findings at imports are one per statement).
    pub statement: usize,
}

#[derive(Debug, Default)]
pub struct Imports {
    names: HashMap<String, String>,
    /// Every import of an SDK module or name, in source order.
    pub sdk_imports: Vec<Import>,
}

impl Imports {
    pub fn build(body: &[Stmt]) -> Self {
        let mut imports = Imports::default();
        let mut statement = 0;
        imports.collect(body, &mut statement);
        imports
    }

    fn collect(&mut self, body: &[Stmt], statement: &mut usize) {
        for stmt in body {
            match stmt {
                Stmt::Import(import) => {
                    *statement += 1;
                    for alias in &import.names {
                        let module = alias.name.as_str();
                        match &alias.asname {
                            Some(asname) => {
                                self.bind(asname.as_str(), module);
                            }
                            None => {
                                // `import mcp.server.sse` binds `mcp`, and the dotted path
                                // resolves attribute by attribute.
                                let first = module.split('.').next().unwrap_or(module);
                                self.bind(first, first);
                            }
                        }
                        if is_sdk_path(module) {
                            self.sdk_imports.push(Import {
                                qualified: module.to_owned(),
                                range: alias.name.range,
                                statement: *statement,
                            });
                        }
                    }
                }
                Stmt::ImportFrom(import) => {
                    *statement += 1;
                    // Relative imports name the project's own modules.
                    let (Some(module), 0) = (&import.module, import.level) else {
                        continue;
                    };
                    let module = module.as_str();
                    for alias in &import.names {
                        let name = alias.name.as_str();
                        if name == "*" {
                            continue;
                        }
                        let qualified = format!("{module}.{name}");
                        let local = alias.asname.as_ref().unwrap_or(&alias.name);
                        self.bind(local.as_str(), &qualified);
                        if is_sdk_path(module) {
                            self.sdk_imports.push(Import {
                                qualified,
                                range: alias.name.range,
                                statement: *statement,
                            });
                        }
                    }
                }
                Stmt::FunctionDef(function) => self.collect(&function.body, statement),
                Stmt::ClassDef(class) => self.collect(&class.body, statement),
                Stmt::If(stmt_if) => {
                    self.collect(&stmt_if.body, statement);
                    for clause in &stmt_if.elif_else_clauses {
                        self.collect(&clause.body, statement);
                    }
                }
                Stmt::Try(stmt_try) => {
                    self.collect(&stmt_try.body, statement);
                    for handler in &stmt_try.handlers {
                        let ast::ExceptHandler::ExceptHandler(handler) = handler;
                        self.collect(&handler.body, statement);
                    }
                    self.collect(&stmt_try.orelse, statement);
                    self.collect(&stmt_try.finalbody, statement);
                }
                Stmt::With(with) => self.collect(&with.body, statement),
                _ => {}
            }
        }
    }

    fn bind(&mut self, local: &str, qualified: &str) {
        self.names.insert(local.to_owned(), qualified.to_owned());
    }

    /// Whether the file imports anything from the SDK.
    pub fn imports_sdk(&self) -> bool {
        !self.sdk_imports.is_empty()
    }

    /// The dotted name `expr` stands for, if its first name is imported: `types.X` →
    /// `mcp.types.X`. A name that is not imported resolves to nothing.
    pub fn resolve(&self, expr: &Expr) -> Option<String> {
        // Most chains are rooted at no import: find the root before collecting the attributes.
        let mut root = expr;
        while let Expr::Attribute(attribute) = root {
            root = &attribute.value;
        }
        let Expr::Name(name) = root else {
            return None;
        };
        let mut out = self.names.get(name.id.as_str())?.clone();
        let (_, attributes) = super::bindings::split_chain(expr)?;
        for attribute in attributes.iter().rev() {
            out.push('.');
            out.push_str(attribute);
        }
        Some(out)
    }

    /// The SDK name `expr` stands for (`None` when it resolves outside the SDK).
    pub fn resolve_sdk(&self, expr: &Expr) -> Option<String> {
        self.resolve(expr).filter(|path| is_sdk_path(path))
    }
}

/// Whether a dotted path is in the SDK's packages.
pub fn is_sdk_path(path: &str) -> bool {
    let root = path.split('.').next().unwrap_or(path);
    SDK_ROOTS.contains(&root)
}

/// The last segment of a dotted path.
pub fn last(path: &str) -> &str {
    path.rsplit('.').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(source: &str, expr: &str) -> Option<String> {
        let module = ruff_python_parser::parse_module(source).unwrap();
        let imports = Imports::build(module.suite());
        let expr = ruff_python_parser::parse_expression(expr).unwrap();
        imports.resolve(expr.expr())
    }

    #[test]
    fn imports_and_aliases_resolve() {
        let source = "import mcp\nimport mcp.types as t\nfrom mcp.server.fastmcp import FastMCP, Context as Ctx\nfrom . import local\ndef f():\n    from fastmcp import Context\n";
        assert_eq!(
            resolve(source, "mcp.types.X").as_deref(),
            Some("mcp.types.X")
        );
        assert_eq!(
            resolve(source, "t.SubscribeRequest").as_deref(),
            Some("mcp.types.SubscribeRequest")
        );
        assert_eq!(
            resolve(source, "Ctx").as_deref(),
            Some("mcp.server.fastmcp.Context")
        );
        assert_eq!(
            resolve(source, "Context").as_deref(),
            Some("fastmcp.Context")
        );
        assert_eq!(resolve(source, "local.x"), None);
        assert_eq!(resolve(source, "other.Context"), None);
    }
}
