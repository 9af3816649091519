//! The Rust front-end: parse with syn, resolve names through the file's `use` map, walk once.

mod analyzer;
pub mod crate_peers;
pub mod edition2015;
pub mod imports;
mod items;
pub mod macros;
mod report;
mod shapes;
mod symbols;
pub mod words;

pub use items::Mask;
pub use symbols::{METHOD_NAMES, SYMBOLS};

use std::path::PathBuf;
use std::sync::Arc;

use mcp_migrate_rules::RuleId;

use crate::diagnostic::{ByteSpan, Diagnostic, SourceFile};
use analyzer::{Analyzer, FileContext};
use imports::UseMap;

/// What the linter knows about the crate a file belongs to.
#[derive(Debug, Clone, Default)]
pub struct CrateContext {
    /// The names under which the crate's code reaches rmcp (renamed dependencies included).
    pub sdk_names: Vec<String>,
    /// The crate's manifest declares an rmcp dependency.
    pub depends_on_sdk: bool,
    /// The crate's `Cargo.toml` (read again only when a file fails to parse, for its edition).
    pub manifest: Option<PathBuf>,
    /// The peer fields of the structs its files declare, once the run has read them all.
    pub peers: Option<Arc<crate_peers::CratePeers>>,
}

/// Deeper delimiter nesting than this is not parsed: syn and the walk recurse once per level, and
/// no hand-written code nests this deep (generated code that does is reported, not linted).
pub const MAX_NESTING: usize = 256;

/// Lints one Rust source file. A syntax error becomes an `unparsable-file` finding.
pub fn lint_file(file: &Arc<SourceFile>, crate_context: &CrateContext) -> Vec<Diagnostic> {
    lint_file_with(file, crate_context, true)
}

/// [`lint_file`]; `skip_items`: parse only the top-level items that may match (`items.rs`).
pub fn lint_file_with(
    file: &Arc<SourceFile>,
    crate_context: &CrateContext,
    skip_items: bool,
) -> Vec<Diagnostic> {
    let mask = if skip_items {
        Mask::WithoutTrigger(None)
    } else {
        Mask::Nothing
    };
    lint_file_parsed(file, crate_context, mask).0
}

/// [`lint_file_with`], and the syntax tree the findings came from, when its spans are the file's
/// (it may be of the file with skipped items blanked): the fixes reuse it.
pub fn lint_file_parsed(
    file: &Arc<SourceFile>,
    crate_context: &CrateContext,
    mask: Mask,
) -> (Vec<Diagnostic>, Option<syn::File>) {
    let states = checks_state(&file.text);
    let scan = items::scan(&file.text, MAX_NESTING, mask, states);
    if let Some(offset) = scan.too_deep {
        let diagnostic = Diagnostic {
            rule: RuleId::UnparsableFile,
            severity: RuleId::UnparsableFile.rule().default_severity,
            file: file.clone(),
            span: ByteSpan::new(offset, offset + 1),
            message: format!(
                "delimiters nest deeper than {MAX_NESTING} levels here; the file was not linted"
            ),
            help: Some("this is usually generated code: exclude it in the configuration".into()),
            label: Some("too deep".into()),
            fix: None,
        };
        return (vec![diagnostic], None);
    }
    if let Some(masked) = scan.masked {
        // The skipped items are blanks of the same length: offsets are the original file's.
        // syn parses it with the emptied lines squeezed, so that the tree's lines and columns
        // are the blanked file's (its byte offsets are not used).
        if let Ok(syntax) = syn::parse_file(&items::squeeze(&masked, scan.blanked)) {
            let blanked = file.with_same_lines(masked);
            let diagnostics = lint_syntax(&blanked, &file.text, &syntax, crate_context, states)
                .into_iter()
                .map(|mut diagnostic| {
                    diagnostic.file = file.clone();
                    diagnostic
                })
                .collect();
            return (diagnostics, Some(syntax));
        }
    }
    match syn::parse_file(&file.text) {
        Ok(syntax) => (
            lint_syntax(file, &file.text, &syntax, crate_context, states),
            Some(syntax),
        ),
        Err(error) => {
            let Some((migrated, rewritten, parsed)) = migrated_2015(file, crate_context) else {
                return (vec![syntax_error(file, &error)], None);
            };
            // Linted as the 2018 form of the file; the findings point into the file as it is.
            let diagnostics = match parsed {
                Ok(syntax) => lint_syntax(
                    &rewritten,
                    &rewritten.text,
                    &syntax,
                    crate_context,
                    checks_state(&rewritten.text),
                ),
                // Broken in 2015 too: its own error, not the 2015-only syntax syn stopped at.
                Err(error) => vec![syntax_error(&rewritten, &error)],
            };
            let diagnostics = diagnostics
                .into_iter()
                .map(|mut diagnostic| {
                    diagnostic.file = file.clone();
                    diagnostic.span = ByteSpan::new(
                        migrated.original_offset(diagnostic.span.start),
                        migrated.original_offset(diagnostic.span.end),
                    );
                    diagnostic
                })
                .collect();
            // The tree's spans are the rewritten file's: the fixes parse the file again.
            (diagnostics, None)
        }
    }
}

/// For a file of a Rust 2015 crate that syn cannot parse: the file with the 2015 → 2018
/// rewrites of [`edition2015`] (when there is anything to rewrite), and what syn makes of it.
fn migrated_2015(
    file: &Arc<SourceFile>,
    crate_context: &CrateContext,
) -> Option<(
    edition2015::Migrated,
    Arc<SourceFile>,
    Result<syn::File, syn::Error>,
)> {
    if !crate_context
        .manifest
        .as_deref()
        .is_some_and(is_edition_2015)
    {
        return None;
    }
    let migrated = edition2015::migrate(&file.text)?;
    let parsed = syn::parse_file(&migrated.text);
    let rewritten = SourceFile::new(file.path.clone(), migrated.text.clone());
    Some((migrated, rewritten, parsed))
}

/// Whether the package of this manifest is Rust 2015: `edition = "2015"`, or no `edition` at all
/// (cargo's default). An inherited edition (`edition.workspace = true`) is not.
pub fn is_edition_2015(manifest: &std::path::Path) -> bool {
    let Ok(text) = std::fs::read_to_string(manifest) else {
        return false;
    };
    let Ok(table) = text.parse::<toml::Table>() else {
        return false;
    };
    let Some(package) = table.get("package").and_then(toml::Value::as_table) else {
        return false;
    };
    match package.get("edition") {
        None => true,
        Some(edition) => edition.as_str() == Some("2015"),
    }
}

/// The words without which no request state is checked (`InputRequiredResult::new`,
/// `from_request_state`, a `request_state` field, a `"requestState"` key).
const STATE_CHECKS: &[&str] = &["InputRequired", "request_state", "requestState"];

/// Whether `text` may check a request state: in a file that spells none of [`STATE_CHECKS`], a
/// binding's state is never read (so neither `items.rs` nor the walk work it out).
pub(crate) fn checks_state(text: &str) -> bool {
    STATE_CHECKS
        .iter()
        .any(|word| memchr::memmem::find(text.as_bytes(), word.as_bytes()).is_some())
}

/// Walks `syntax`, parsed from `file` (spans); `text` is the whole file as written, where naming
/// the SDK makes the name-only rules apply; `states`: [`checks_state`] of `text`.
fn lint_syntax(
    file: &Arc<SourceFile>,
    text: &str,
    syntax: &syn::File,
    crate_context: &CrateContext,
    states: bool,
) -> Vec<Diagnostic> {
    let uses = UseMap::build(syntax, crate_context.sdk_names.iter().map(String::as_str));
    let sdk_active = crate_context.depends_on_sdk
        || uses.imports_sdk()
        || crate_context
            .sdk_names
            .iter()
            .chain(std::iter::once(&imports::SDK_ROOT.to_owned()))
            .any(|name| text.contains(&format!("{name}::")));
    Analyzer::new(FileContext {
        file,
        uses: &uses,
        sdk_active,
        states,
        crate_peers: crate_context.peers.as_deref(),
    })
    .run(syntax)
}

fn syntax_error(file: &Arc<SourceFile>, error: &syn::Error) -> Diagnostic {
    let span = ByteSpan::from_proc_macro(file, error.span());
    Diagnostic {
        rule: RuleId::UnparsableFile,
        severity: RuleId::UnparsableFile.rule().default_severity,
        file: file.clone(),
        span,
        message: format!("could not parse this file as Rust: {error}"),
        help: Some(
            "`cargo check` shows the same error; nothing else in this file was linted".into(),
        ),
        label: Some("syntax error".into()),
        fix: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(line, column, rule)` of each finding of `text` in a crate whose manifest is `manifest`.
    fn findings_in_crate(manifest: &str, text: &str) -> Vec<(usize, usize, RuleId)> {
        let dir = tempfile::tempdir().unwrap();
        let manifest_path = dir.path().join("Cargo.toml");
        std::fs::write(&manifest_path, manifest).unwrap();
        let context = CrateContext {
            manifest: Some(manifest_path),
            ..CrateContext::default()
        };
        let file = SourceFile::new("lib.rs".into(), text.to_owned());
        // Every item parsed: these tests are about the 2015 fallback of a file that fails.
        lint_file_with(&file, &context, false)
            .iter()
            .map(|d| {
                let (line, column) = file.line_column(d.span.start);
                (line, column, d.rule)
            })
            .collect()
    }

    const RUST_2015: &str = "\
trait Router { fn route(&self, &str) -> Value; }
type Handler = Fn(&str) -> Value;
fn route(method: &str) -> Value {
    match method { \"tools/list\" => json!({ \"resultType\": \"input_required\" }), _ => json!({}) }
}
";

    #[test]
    fn rust_2015_syntax_is_linted_in_2015_crates_only() {
        let finding = (4, 58, RuleId::InputRequiredOutsideMrtr);
        for manifest in [
            "[package]\nname = \"x\"\nversion = \"0.1.0\"\n",
            "[package]\nname = \"x\"\nversion = \"0.1.0\"\nedition = \"2015\"\n",
        ] {
            assert_eq!(
                findings_in_crate(manifest, RUST_2015),
                vec![finding],
                "{manifest}"
            );
        }
        // Anonymous parameters are an error since 2018: the file stays unparsable there.
        for manifest in [
            "[package]\nname = \"x\"\nversion = \"0.1.0\"\nedition = \"2018\"\n",
            "[package]\nname = \"x\"\nversion = \"0.1.0\"\nedition.workspace = true\n",
            "[workspace]\n",
            "not toml",
        ] {
            assert_eq!(
                findings_in_crate(manifest, RUST_2015),
                vec![(1, 36, RuleId::UnparsableFile)],
                "{manifest}"
            );
        }
    }

    #[test]
    fn a_syntax_error_in_an_item_that_cannot_match_hides_nothing() {
        let text =
            "fn broken() { let x = 1 +; }\nfn ask(peer: Peer<RoleServer>) { peer.list_roots(); }\n";
        let file = SourceFile::new("lib.rs".into(), text.to_owned());
        let context = CrateContext {
            depends_on_sdk: true,
            ..CrateContext::default()
        };
        let rules = |skip_items: bool| -> Vec<(usize, RuleId)> {
            lint_file_with(&file, &context, skip_items)
                .iter()
                .map(|d| (file.line_column(d.span.start).0, d.rule))
                .collect()
        };
        // Blanked, the broken item cannot stop the rest from being linted.
        assert_eq!(
            rules(true),
            [
                (2, RuleId::DeprecatedRoots),
                (2, RuleId::ServerInitiatedRequest)
            ]
        );
        assert_eq!(rules(false), [(1, RuleId::UnparsableFile)]);
    }

    /// A request from a notification handler or a spawned task is reported under its rules
    /// with a message that says it has no originating request; one made while answering a
    /// tool call is not.
    #[test]
    fn requests_with_no_originating_request_say_so() {
        let text = "\
impl ServerHandler for S {
    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let _ = context.peer.list_roots().await;
    }
}
impl S {
    #[tool]
    async fn tool(&self, peer: Peer<RoleServer>) -> String {
        let p = peer.clone();
        tokio::spawn(async move { p.create_message(params()).await });
        let _ = peer.list_roots().await;
        String::new()
    }
}
";
        let file = SourceFile::new("lib.rs".into(), text.to_owned());
        let context = CrateContext {
            depends_on_sdk: true,
            ..CrateContext::default()
        };
        let found: Vec<(usize, RuleId, bool)> = lint_file_with(&file, &context, false)
            .iter()
            .map(|d| {
                let no_origin = d.message.contains("it has no originating request");
                if no_origin && d.rule == RuleId::ServerInitiatedRequest {
                    assert!(d
                        .help
                        .as_deref()
                        .is_some_and(|h| h.contains("no MRTR round")));
                }
                (file.line_column(d.span.start).0, d.rule, no_origin)
            })
            .collect();
        assert_eq!(
            found,
            [
                (3, RuleId::DeprecatedRoots, true),
                (3, RuleId::ServerInitiatedRequest, true),
                (10, RuleId::DeprecatedSampling, true),
                (10, RuleId::ServerInitiatedRequest, true),
                (11, RuleId::DeprecatedRoots, false),
                (11, RuleId::ServerInitiatedRequest, false),
            ]
        );
        let spawned = lint_file_with(&file, &context, false)
            .into_iter()
            .find(|d| {
                d.rule == RuleId::ServerInitiatedRequest && file.line_column(d.span.start).0 == 10
            })
            .unwrap();
        assert!(
            spawned.message.contains("from a spawned task"),
            "{}",
            spawned.message
        );
    }

    #[test]
    fn a_2015_file_broken_in_2015_too_reports_its_own_error() {
        let manifest = "[package]\nname = \"x\"\nversion = \"0.1.0\"\n";
        let text = "trait Sink { fn push(&mut self, u8); }\nfn f() { let async = 1 +; }\n";
        assert_eq!(
            findings_in_crate(manifest, text),
            vec![(2, 25, RuleId::UnparsableFile)]
        );
    }
}
