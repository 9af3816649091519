//! A byte-level pre-filter: a Rust file that contains none of the trigger words cannot match any
//! rule, so syn never parses it. One Aho-Corasick automaton scans each file once.

use std::sync::OnceLock;

use aho_corasick::AhoCorasick;

/// Every rule's Rust trigger contains one of these (a test checks the method-name table).
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
    "Sse",
    "sse_",
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

fn automaton() -> &'static AhoCorasick {
    static AUTOMATON: OnceLock<AhoCorasick> = OnceLock::new();
    AUTOMATON.get_or_init(|| AhoCorasick::new(TRIGGERS).expect("valid trigger patterns"))
}

/// Whether a Rust source may contain something a rule looks for.
pub fn may_match(source: &[u8]) -> bool {
    automaton().is_match(source)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_without_trigger_words_are_skipped() {
        assert!(!may_match(b"fn main() { println!(\"hello\"); }"));
        assert!(may_match(b"ctx.peer.create_message(p)"));
        assert!(may_match(b"json!({\"method\": \"roots/list\"})"));
        assert!(may_match(b"use rmcp::transport::SseServer;"));
    }

    #[test]
    fn every_method_name_rule_passes_the_filter() {
        for name in crate::rust::METHOD_NAMES {
            assert!(may_match(name.as_bytes()), "{name}");
        }
    }
}
