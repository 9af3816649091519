//! Parse only what can match: a lexer pass splits a TypeScript/JavaScript file into its
//! top-level statements, and the statements that hold no word a rule or a binding needs (see
//! [`keep`]) are blanked out before oxc parses the file. The largest files that pass the file
//! pre-filter are bundles (an SDK inlined into a CLI): a few statements of them name the legacy
//! surface, the rest (zod, an HTTP stack, the CLI's own code) never does.
//!
//! Blanking replaces every byte of a skipped statement except line breaks and its closing `;`
//! with a space, so the byte offsets, lines and columns of what is left are those of the original
//! file and the findings need no mapping. The split is a lexer's approximation of the grammar
//! (strings, template literals, comments, regular expressions told from division by the token
//! before the `/`); wherever the lexer is unsure (a `/` after `}`, a JSX file, a non-ASCII blank
//! in code, unbalanced brackets) it gives up and the whole file is parsed. When the blanked text
//! does not parse, or when a binding the rules looked up may live in a skipped statement, the
//! caller parses the whole file too (see `typescript::lint_file`): the approximation can cost
//! time, never findings.
//!
//! Where the split is made (at the top level only): after a `;`; at a line break between a token
//! that ends an expression and an identifier or literal that cannot continue it (automatic
//! semicolon insertion); after a `}` followed by such a token (a block statement ends there).
//! Anything else stays in one piece: two statements kept as one only keep more.

mod keep;
mod lexer;

pub use keep::Masked;
use lexer::{Lexer, Token};

/// The file with the top-level statements that cannot match blanked out; `None` when the lexer
/// is unsure or every statement is kept (the caller parses the file itself).
pub fn mask(text: &str) -> Option<Masked> {
    keep::mask(text, &split(text)?)
}

/// One top-level statement (or several kept together), as a byte range of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Statement {
    pub start: usize,
    pub end: usize,
    /// An `import` declaration (not `import(..)` or `import.meta`).
    pub import: bool,
    /// It ends with its own `;` (kept when the statement is blanked, so that the statements
    /// around it stay apart).
    pub semicolon: bool,
    /// It starts with a string literal (a directive such as `"use strict"`).
    pub directive: bool,
}

/// Words that, after a line break or a `}`, continue the statement before them.
const CONTINUING: &[&str] = &[
    "else",
    "catch",
    "finally",
    "while",
    "from",
    "as",
    "satisfies",
    "in",
    "instanceof",
    "of",
    "extends",
    "implements",
    "is",
    "keyof",
];

/// Words that do not end an expression: keywords and TypeScript's contextual keywords. A line
/// break after one of them never splits (`return`, `typeof`, `export default`, `type A =`).
const NOT_AN_END: &[&str] = &[
    "abstract",
    "accessor",
    "as",
    "assert",
    "asserts",
    "async",
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "constructor",
    "continue",
    "debugger",
    "declare",
    "default",
    "delete",
    "do",
    "else",
    "enum",
    "export",
    "extends",
    "finally",
    "for",
    "from",
    "function",
    "get",
    "global",
    "if",
    "implements",
    "import",
    "in",
    "infer",
    "instanceof",
    "interface",
    "is",
    "keyof",
    "let",
    "module",
    "namespace",
    "new",
    "of",
    "out",
    "override",
    "package",
    "private",
    "protected",
    "public",
    "readonly",
    "return",
    "satisfies",
    "set",
    "static",
    "switch",
    "throw",
    "try",
    "type",
    "typeof",
    "unique",
    "var",
    "void",
    "while",
    "with",
    "yield",
];

/// The top-level statements of `text`, in order, or `None` where the lexer is unsure (the
/// caller then parses the whole file). Whitespace and comments between statements belong to
/// none.
pub fn split(text: &str) -> Option<Vec<Statement>> {
    let mut lexer = Lexer::new(text)?;
    let mut statements: Vec<Statement> = Vec::new();
    // The statement being read: its start, and whether it started with `@` (a decorator: its
    // name and the class after it are one statement).
    let mut open: Option<(usize, bool)> = None;
    let mut previous: Option<Token> = None;
    while let Some(token) = lexer.next_top().ok()? {
        if let (Some((start, decorated)), Some(before)) = (open, previous) {
            if splits(text, &before, &token, decorated) {
                statements.push(statement(text, start, before.end, false));
                open = None;
            }
        }
        if open.is_none() {
            // `if (a) b; else c;` and `do a; while (b);` are one statement.
            let reopened = matches!(token.word(text), "else" | "while")
                && statements.last().is_some_and(|last| last.semicolon);
            open = match statements.pop() {
                Some(last) if reopened => Some((last.start, false)),
                last => {
                    statements.extend(last);
                    Some((token.start, text.as_bytes()[token.start] == b'@'))
                }
            };
        }
        if token.is_semicolon(text) {
            let (start, _) = open.take()?;
            statements.push(statement(text, start, token.end, true));
        }
        previous = Some(token);
    }
    if lexer.depth() != 0 {
        return None;
    }
    if let (Some((start, _)), Some(last)) = (open, previous) {
        statements.push(statement(text, start, last.end, false));
    }
    Some(statements)
}

fn statement(text: &str, start: usize, end: usize, semicolon: bool) -> Statement {
    Statement {
        start,
        end,
        import: is_import(text, start),
        semicolon,
        directive: matches!(text.as_bytes()[start], b'"' | b'\''),
    }
}

/// Whether the statement starting at `start` is an `import` declaration.
fn is_import(text: &str, start: usize) -> bool {
    let Some(rest) = text[start..].strip_prefix("import") else {
        return false;
    };
    let next = rest.trim_start().as_bytes().first().copied();
    // `import(..)`, `import.meta`, and an identifier that merely starts with `import`.
    !matches!(next, Some(b'(' | b'.'))
        && !rest
            .as_bytes()
            .first()
            .is_some_and(|b| lexer::is_word_byte(*b))
}

/// Whether a top-level statement ends between `before` and `token` (both at depth 0, `before`
/// the last token of the open statement).
fn splits(text: &str, before: &Token, token: &Token, decorated: bool) -> bool {
    // Only an identifier or a literal starts the next statement: `(`, `[`, a template literal,
    // `/`, an operator or `{` may continue the one before.
    if !token.starts_statement(text) || CONTINUING.contains(&token.word(text)) {
        return false;
    }
    if before.is_close_brace(text) {
        // A `}` followed by a word or a literal ends a statement: in valid code no expression
        // goes on that way.
        return true;
    }
    if !token.newline_before || decorated {
        return false;
    }
    // A line break after a token that ends an expression: automatic semicolon insertion.
    before.ends_expression(text) && !NOT_AN_END.contains(&before.word(text))
}

#[cfg(test)]
mod tests;
