//! The TypeScript/JavaScript front-end: parse with oxc, resolve the names the file takes from
//! `@modelcontextprotocol/sdk` ([`imports`]), walk the tree once ([`analyzer`]). npm manifests
//! are [`package_json`]. What is resolved and what is not: `docs/lint/typescript.md`.

mod analyzer;
mod imports;
pub mod package_json;
mod security;
mod shapes;
mod statements;
mod surface;

use std::path::Path;
use std::sync::Arc;

use mcp_migrate_rules::RuleId;
use oxc_allocator::Allocator;
use oxc_parser::Parser;
use oxc_span::SourceType;

use crate::diagnostic::{ByteSpan, Diagnostic, SourceFile};

/// The words without which a file has nothing to report: the SDK's package name, the names and
/// method strings the rules look for, and the suppression marker. A file that spells none of
/// them is not parsed (with the pre-filter on).
const TRIGGERS: &[&str] = &[
    "modelcontextprotocol",
    "elicitInput",
    "sendLoggingMessage",
    "createElicitationCompletionNotifier",
    "SSEServerTransport",
    "SSEClientTransport",
    "sampling/createMessage",
    "elicitation/",
    "roots/list",
    "notifications/message",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
    "includeContext",
    "requestedSchema",
    "requestState",
    "input_required",
    "32042",
    "mcp-lint:",
];

/// Whether a file may report anything (see [`TRIGGERS`]).
pub fn may_match(bytes: &[u8]) -> bool {
    static FINDER: std::sync::LazyLock<aho_corasick::AhoCorasick> =
        std::sync::LazyLock::new(|| {
            // Leftmost-first lets aho-corasick search with its SIMD searcher, and a contiguous
            // NFA behind it costs a fraction of a DFA's build, as `prefilter.rs` explains;
            // whether anything matches is the same.
            aho_corasick::AhoCorasick::builder()
                .match_kind(aho_corasick::MatchKind::LeftmostFirst)
                .kind(Some(aho_corasick::AhoCorasickKind::ContiguousNFA))
                .build(TRIGGERS)
                .expect("the trigger words build a searcher")
        });
    FINDER.is_match(bytes)
}

/// How oxc parses a file of this name: TypeScript or JavaScript, module or CommonJS, JSX or not.
pub fn source_type(path: &Path) -> SourceType {
    SourceType::from_path(path).unwrap_or_else(|_| SourceType::ts())
}

/// Lints one TypeScript or JavaScript file. A syntax error becomes an `unparsable-file` finding
/// with oxc's message and position. With `use_prefilter`, only the top-level statements that can
/// match are parsed ([`statements`]) when that is safe; the findings are those of the whole file.
pub fn lint_file(file: &Arc<SourceFile>, use_prefilter: bool) -> Vec<Diagnostic> {
    if let Some(offset) = too_deep(&file.text) {
        let mut diagnostic = syntax_error_at(file, offset, "");
        diagnostic.message = format!(
            "brackets nest deeper than {} levels, or member accesses chain longer than {MAX_CHAIN}, here; the file was not linted",
            crate::rust::MAX_NESTING
        );
        diagnostic.help =
            Some("this is usually generated code: exclude it in the configuration".into());
        diagnostic.label = Some("too deep".into());
        return vec![diagnostic];
    }
    let source_type = source_type(&file.path);
    if use_prefilter && !source_type.is_jsx() {
        if let Some(diagnostics) =
            statements::mask(&file.text).and_then(|masked| lint_masked(file, &masked, source_type))
        {
            return diagnostics;
        }
    }
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, &file.text, source_type).parse();
    if let Some(error) = parsed.diagnostics.first() {
        let offset = error
            .labels
            .first()
            .map_or(0, |label| label.offset() as usize);
        return vec![syntax_error_at(file, offset, &error.message)];
    }
    if parsed.panicked {
        return vec![syntax_error_at(file, 0, "the parser gave up on this file")];
    }
    analyzer::lint_program(file, &parsed.program).diagnostics
}

/// Lints the kept statements of a file; `None` when the whole file must be parsed instead: the
/// blanked text does not parse, or the walk relied on a name that a skipped statement spells
/// (it may bind it). A file whose module kind oxc infers from its contents is parsed as a module:
/// the `import`/`export` that made it one may have been blanked, and code that parses both ways
/// means the same in both (what parses only as a script falls back to the whole file).
fn lint_masked(
    file: &Arc<SourceFile>,
    masked: &statements::Masked,
    source_type: SourceType,
) -> Option<Vec<Diagnostic>> {
    let source_type = if source_type.is_unambiguous() {
        source_type.with_module(true)
    } else {
        source_type
    };
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, &masked.text, source_type).parse();
    if parsed.panicked || !parsed.diagnostics.is_empty() {
        return None;
    }
    let walked = analyzer::lint_program(file, &parsed.program);
    let unsure = walked.relied_on.iter().any(|name| {
        masked.sdk_names.binary_search(name).is_err() && masked.skipped_mention(&file.text, name)
    });
    (!unsure).then_some(walked.diagnostics)
}

/// The most member accesses (`.`) one statement may chain: the walk recurses once per access.
const MAX_CHAIN: usize = 4096;

/// The bytes [`too_deep`] reacts to.
const MEANINGFUL: [bool; 256] = {
    let mut table = [false; 256];
    let bytes = b".;()[]{}\\\"'`/";
    let mut i = 0;
    while i < bytes.len() {
        table[bytes[i] as usize] = true;
        i += 1;
    }
    table
};

/// Where brackets first nest deeper than [`crate::rust::MAX_NESTING`], or a statement first
/// chains more than [`MAX_CHAIN`] member accesses: the parser and the walk recurse once per
/// level, so such a file is reported instead of parsed. Strings, template literals and comments
/// are skipped; a backslash outside them (in a regular expression) hides the next byte.
fn too_deep(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut chain = 0usize;
    let mut index = 0;
    while index < bytes.len() {
        // Most bytes (identifiers, blanks, operators) change nothing: skip them in a tight loop.
        if !MEANINGFUL[usize::from(bytes[index])] {
            index += 1;
            continue;
        }
        match bytes[index] {
            b'.' => {
                chain += 1;
                if chain > MAX_CHAIN {
                    return Some(index);
                }
            }
            b';' => chain = 0,
            b'(' | b'[' | b'{' => {
                if bytes[index] == b'{' {
                    chain = 0;
                }
                depth += 1;
                if depth > crate::rust::MAX_NESTING {
                    return Some(index);
                }
            }
            b')' | b']' | b'}' => {
                if bytes[index] == b'}' {
                    chain = 0;
                }
                depth = depth.saturating_sub(1);
            }
            b'\\' => index += 1,
            quote @ (b'"' | b'\'' | b'`') => {
                index += 1;
                // A line ends a quoted string (unterminated), not a template literal.
                let line_end = if quote == b'`' { quote } else { b'\n' };
                loop {
                    let rest = bytes.get(index..).unwrap_or_default();
                    let Some(found) = memchr::memchr3(quote, b'\\', line_end, rest) else {
                        index = bytes.len();
                        break;
                    };
                    index += found;
                    if bytes[index] != b'\\' {
                        break;
                    }
                    index += 2;
                }
            }
            b'/' if bytes.get(index + 1) == Some(&b'/') => {
                index = memchr::memchr(b'\n', &bytes[index..]).map_or(bytes.len(), |n| index + n);
            }
            b'/' if bytes.get(index + 1) == Some(&b'*') => {
                index = memchr::memmem::find(&bytes[index + 2..], b"*/")
                    .map_or(bytes.len(), |n| index + 2 + n + 1);
            }
            _ => {}
        }
        index += 1;
    }
    None
}

/// Whether `text` parses without error (the check after fixing).
pub fn parses(text: &str, source_type: SourceType) -> bool {
    if too_deep(text).is_some() {
        return false;
    }
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, text, source_type).parse();
    !parsed.panicked && parsed.diagnostics.is_empty()
}

/// The comments of a file, as `(start, end)` byte ranges with their delimiters (for
/// suppressions): those the parser found, so `//` inside strings, template literals and regular
/// expressions never counts.
pub fn comments(path: &Path, text: &str) -> Vec<(usize, usize)> {
    if too_deep(text).is_some() {
        return Vec::new();
    }
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, text, source_type(path)).parse();
    parsed
        .program
        .comments
        .iter()
        .map(|comment| (comment.span.start as usize, comment.span.end as usize))
        .collect()
}

fn syntax_error_at(file: &Arc<SourceFile>, offset: usize, message: &str) -> Diagnostic {
    let offset = offset.min(file.text.len());
    let end = file.text[offset..]
        .chars()
        .next()
        .map_or(offset, |ch| offset + ch.len_utf8());
    Diagnostic {
        rule: RuleId::UnparsableFile,
        severity: RuleId::UnparsableFile.rule().default_severity,
        file: file.clone(),
        span: ByteSpan::new(offset, end),
        message: format!("could not parse this file as TypeScript/JavaScript: {message}"),
        help: Some(
            "`tsc --noEmit` (or `node --check`) shows the error; nothing else in this file was linted"
                .into(),
        ),
        label: Some("syntax error".into()),
        fix: None,
    }
}

#[cfg(test)]
mod tests;
