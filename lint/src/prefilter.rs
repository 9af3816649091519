//! A byte-level pre-filter: a Rust file that contains none of the trigger words cannot match any
//! rule, so syn never parses it. One Aho-Corasick automaton scans each file once.
//!
//! Two trigger sets, chosen by the file's crate: in a crate that depends on rmcp every rule can
//! fire, so [`TRIGGERS`] holds the words of every rule. In any other crate the rules that need the
//! SDK (method names, capability builders, rmcp paths) can only fire if the file itself names
//! `rmcp`; what remains is hand-written JSON-RPC, so [`STANDALONE_TRIGGERS`] is much tighter and
//! most files of a large non-MCP tree are never parsed.

use std::sync::OnceLock;

use aho_corasick::AhoCorasick;

/// Every rule's Rust trigger contains one of these (tests check the method-name and symbol-name
/// tables).
pub const TRIGGERS: &[&str] = &[
    "create_message",
    "list_roots",
    "elicit",
    "set_level",
    "notify_",
    "enable_logging",
    "enable_sampling",
    "enable_roots",
    "on_roots_list_changed",
    "on_logging_message",
    "ubscribe",
    "ContextInclusion",
    "includeContext",
    "InputRequest",
    "ServerRequest",
    "ServerNotification",
    "ClientNotification",
    "URL_ELICITATION",
    "ElicitationResponse",
    "ElicitationComplet",
    "input_required",
    // The legacy transports' names (`symbols::symbol_name`), not `Sse` alone: `SseEvent`,
    // `sse_keep_alive` and the `Sse` variants of an MCP gateway's own enums are everywhere in
    // the crates that serve SSE streams over Streamable HTTP.
    "SseServer",
    "SseClient",
    "SseTransport",
    "sse_server",
    "sse_client",
    "sampling/",
    "roots/",
    "notifications/",
    "logging/",
    "elicitation/",
    "requestState",
    "request_state",
    "RequestStateCodec",
    "ServerResult",
    "Capabilities",
    "SamplingCapability",
    "InputRequired",
    "Elicitation",
    "requestedSchema",
    "\"mode\"",
    "mcp-lint:",
];

/// Triggers for files of crates that do not depend on rmcp: the SDK's name (any SDK rule needs a
/// path rooted at it) and the JSON-RPC strings and keys that hand-written MCP code contains.
pub const STANDALONE_TRIGGERS: &[&str] = &[
    "rmcp",
    "sampling/",
    "roots/",
    "notifications/",
    "logging/",
    "elicitation/",
    "includeContext",
    "input_required",
    "requestState",
    "requestedSchema",
    "resources/subscribe",
    "resources/unsubscribe",
    "mcp-lint:",
];

/// Leftmost-first matching: it lets aho-corasick use its SIMD "Teddy" searcher (as ripgrep does)
/// for these small literal sets; with standard semantics it falls back to a scalar automaton.
/// Teddy finds the candidates, so the automaton behind it only confirms them: a contiguous NFA,
/// whose build is a fraction of the DFA's that aho-corasick picks for so few patterns (the
/// build was 2.6 % of a run's instructions on the MCP-heavy corpus, searching no faster).
fn build(patterns: &[&str]) -> AhoCorasick {
    AhoCorasick::builder()
        .match_kind(aho_corasick::MatchKind::LeftmostFirst)
        .kind(Some(aho_corasick::AhoCorasickKind::ContiguousNFA))
        .build(patterns)
        .expect("valid trigger patterns")
}

fn automaton(depends_on_sdk: bool) -> &'static AhoCorasick {
    static FULL: OnceLock<AhoCorasick> = OnceLock::new();
    static STANDALONE: OnceLock<AhoCorasick> = OnceLock::new();
    if depends_on_sdk {
        FULL.get_or_init(|| build(TRIGGERS))
    } else {
        STANDALONE.get_or_init(|| build(STANDALONE_TRIGGERS))
    }
}

/// The words an item (or a macro body) must spell to hold something to report, in a file that
/// passed [`may_match`]: [`TRIGGERS`], whatever the crate. `rmcp`, which lets a file of a crate
/// without the SDK pass, is not one of them: every rule's trigger contains a word of
/// [`TRIGGERS`] (the tests below check the method-name and symbol-name tables and the SDK-free
/// strings), so an item that names `rmcp` and nothing else (a doc comment that names the SDK, an
/// `rmcp::Error` conversion) holds nothing to report.
fn any_trigger() -> &'static AhoCorasick {
    automaton(true)
}

/// Where `automaton`'s words are found in `source`, in order, without the matches that are not
/// the word: `ubscribe` followed by `r` is `tracing_subscriber` or `SubscriberExt` (which every
/// binary's `main` imports), not `subscribe`, `SubscribeRequest` or `resources/subscribe`. No
/// trigger word starts inside `ubscriber`, so skipping it hides none.
fn triggers_in<'s>(
    automaton: &'static AhoCorasick,
    source: &'s [u8],
) -> impl Iterator<Item = aho_corasick::Match> + 's {
    automaton.find_iter(source).filter(|found| {
        !(source.get(found.end()) == Some(&b'r') && &source[found.range()] == b"ubscribe")
    })
}

/// Whether one item of a file that passed [`may_match`] may hold something to report.
pub fn item_may_match(item: &[u8]) -> bool {
    triggers_in(any_trigger(), item).next().is_some()
}

/// Where the words of [`item_may_match`] start in `source`, in order: one pass over a file
/// answers for each of its items.
pub fn trigger_starts(source: &[u8]) -> Vec<usize> {
    triggers_in(any_trigger(), source)
        .map(|found| found.start())
        .collect()
}

/// Whether a `Cargo.toml` may hold something to report: an rmcp dependency or a suppression.
pub fn manifest_may_match(manifest: &[u8]) -> bool {
    memchr::memmem::find(manifest, b"rmcp").is_some()
        || memchr::memmem::find(manifest, b"mcp-lint:").is_some()
}

/// Whether a Rust source may contain something a rule looks for, given whether its crate
/// depends on rmcp.
pub fn may_match(source: &[u8], depends_on_sdk: bool) -> bool {
    triggers_in(automaton(depends_on_sdk), source)
        .next()
        .is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_without_trigger_words_are_skipped() {
        for sdk in [true, false] {
            assert!(!may_match(b"fn main() { println!(\"hello\"); }", sdk));
            assert!(may_match(b"json!({\"method\": \"roots/list\"})", sdk));
            assert!(may_match(b"use rmcp::transport::SseServer;", sdk));
        }
        assert!(may_match(b"ctx.peer.create_message(p)", true));
        // Outside an rmcp crate, a method name alone cannot be an MCP call.
        assert!(!may_match(
            b"mailer.create_message(p); notify_all(); let mode = Capabilities::x;",
            false
        ));
    }

    #[test]
    fn every_method_name_rule_passes_the_filter() {
        for name in crate::rust::METHOD_NAMES {
            assert!(may_match(name.as_bytes(), true), "{name}");
        }
    }

    #[test]
    fn every_symbol_name_rule_passes_the_filter() {
        for (name, _) in crate::rust::SYMBOLS {
            assert!(may_match(name.as_bytes(), true), "{name}");
            assert!(item_may_match(name.as_bytes()), "{name}");
        }
        // What streams SSE over Streamable HTTP, or an axum endpoint, is not the legacy transport.
        for text in [
            "SseEvent",
            "enum Protocol { Sse }",
            "sse_keep_alive: None",
            "Sse::new(s)",
        ] {
            assert!(!may_match(text.as_bytes(), true), "{text}");
        }
    }

    #[test]
    fn a_tracing_subscriber_is_not_a_resource_subscription() {
        for text in [
            "tracing_subscriber::fmt().init();",
            "use tracing_subscriber::{layer::SubscriberExt, util::SubscriberInitExt};",
        ] {
            assert!(!may_match(text.as_bytes(), true), "{text}");
            assert!(!item_may_match(text.as_bytes()), "{text}");
            assert!(trigger_starts(text.as_bytes()).is_empty(), "{text}");
        }
        for text in [
            "peer.subscribe(params)",
            "fn unsubscribe(&self)",
            "SubscribeRequestParams",
            ".enable_resources_subscribe()",
            "\"resources/subscribe\"",
            // A subscriber and a subscription in one text: the second still counts.
            "tracing_subscriber::fmt(); peer.subscribe(p)",
        ] {
            assert!(may_match(text.as_bytes(), true), "{text}");
            assert!(item_may_match(text.as_bytes()), "{text}");
        }
        assert!(may_match(b"\"resources/subscribe\"", false));
        assert_eq!(trigger_starts(b"tracing_subscriber; x.subscribe()"), [23]);
    }

    #[test]
    fn items_need_a_rule_word_not_the_sdk_name() {
        // `rmcp` lets a file of a crate without the SDK through; an item needs a rule's word.
        assert!(may_match(b"use rmcp::model::Tool;", false));
        assert!(!item_may_match(
            b"/// Wraps an `rmcp` error.\nfn wrap(e: rmcp::ErrorData) {}"
        ));
        for text in STANDALONE_TRIGGERS.iter().filter(|word| **word != "rmcp") {
            assert!(item_may_match(text.as_bytes()), "{text}");
        }
    }

    #[test]
    fn standalone_triggers_cover_every_sdk_free_rule() {
        // What `symbols::method_literal` and the `json!` checks look for without the SDK.
        for text in [
            "sampling/createMessage",
            "roots/list",
            "notifications/roots/list_changed",
            "notifications/message",
            "logging/setLevel",
            "notifications/elicitation/complete",
            "elicitation/create",
            "includeContext",
            "input_required",
            "requestState",
            "requestedSchema",
            "resources/subscribe",
            "resources/unsubscribe",
        ] {
            assert!(may_match(text.as_bytes(), false), "{text}");
            assert!(may_match(text.as_bytes(), true), "{text}");
        }
    }
}
