//! Trigger words that keep an item only as a whole name. Five families of [`TRIGGERS`] are
//! prefixes of the names a rule reads (`SseServer` of `SseServerConfig`, `elicit` of
//! `elicit_with_timeout`, `notify_` of `notify_logging_message`), but an MCP gateway spells them
//! in names of its own everywhere: `SseServerHandler`, `run_sse_server`, `ElicitationAction`,
//! `peer.notify_tool_list_changed()`, `ServerCapabilities::builder()`. The front-end compares
//! names whole (`symbols::method`, `symbols::symbol_name`, `symbols::path`,
//! `symbols::capability_field`, `symbols::handler_method`, the typed-elicitation and schema
//! shapes), so such a word, where the name around it is none of [`READ_NAMES`], holds nothing to
//! report: an item (or statement) whose trigger words are all of that kind is blanked like one
//! without any.
//!
//! A dropped word must not hide another trigger word: when one starts at the same offset
//! (`elicitation/` under `elicit` in `"elicitation/create"`) or inside it, the word is kept.
//!
//! [`TRIGGERS`]: crate::prefilter::TRIGGERS

use crate::prefilter::TRIGGERS;

/// The trigger words that count only inside a name of [`READ_NAMES`].
const WHOLE_NAME_WORDS: &[&str] = &[
    "SseServer",
    "SseClient",
    "SseTransport",
    "sse_server",
    "sse_client",
    "elicit",
    "Elicitation",
    "notify_",
    "Capabilities",
];

/// Every name the front-end compares a whole identifier with that holds a word of
/// [`WHOLE_NAME_WORDS`], besides [`crate::rust::METHOD_NAMES`] and [`crate::rust::SYMBOLS`] (a
/// test checks that each of those counts).
const READ_NAMES: &[&str] = &[
    // `symbols::handler_method`, `symbols::path`, the generic request's argument scan.
    "on_url_elicitation_notification_complete",
    "url_elicitation_required",
    "URL_ELICITATION_REQUIRED",
    "CreateElicitationRequest",
    "CreateElicitationRequestParams",
    // `elicit_safe!(T)`, `ElicitationSchema::builder()`, `UrlElicitationParams { url, .. }`.
    "elicit_safe",
    "ElicitationSchema",
    "ElicitationSchemaBuilder",
    "UrlElicitationParams",
    // `InputRequest::Elicitation`.
    "Elicitation",
    // `symbols::capability_field`.
    "ServerCapabilities",
    "ClientCapabilities",
];

fn is_name_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte >= 0x80
}

/// Whether the trigger word found at `at` in `text` may hold something to report: any word but
/// those of [`WHOLE_NAME_WORDS`]; those when the name around them is read by a rule, or when
/// another trigger word starts within them.
pub(super) fn counts(text: &[u8], at: usize) -> bool {
    let rest = &text[at..];
    // The first bytes of [`WHOLE_NAME_WORDS`]: every other word counts without a look-up.
    if !matches!(rest.first(), Some(b'S' | b's' | b'e' | b'E' | b'n' | b'C')) {
        return true;
    }
    // Which of them the automaton found here does not matter: when another trigger word starts
    // at the same offset, the check at the end keeps it.
    let Some(word) = WHOLE_NAME_WORDS
        .iter()
        .find(|word| rest.starts_with(word.as_bytes()))
    else {
        return true;
    };
    let start = text[..at]
        .iter()
        .rposition(|&byte| !is_name_byte(byte))
        .map_or(0, |before| before + 1);
    let end = rest
        .iter()
        .position(|&byte| !is_name_byte(byte))
        .map_or(text.len(), |after| at + after);
    let name = &text[start..end];
    if is_read_name(name) && (!LITERAL_ONLY.contains(&name) || constructed_or_renamed(text, end)) {
        return true;
    }
    // Another trigger word at the same offset or inside this one, which the automaton skipped.
    let same_start = TRIGGERS.iter().any(|other| {
        other.as_bytes()[0] == rest[0] && other != word && rest.starts_with(other.as_bytes())
    });
    let inside = &text[at + 1..text.len().min(at + word.len() + LONGEST_TRIGGER)];
    same_start
        || crate::prefilter::trigger_starts(inside)
            .first()
            .is_some_and(|&found| found + 1 < word.len())
}

/// Longer than any word of [`TRIGGERS`] (a test checks it).
const LONGEST_TRIGGER: usize = 32;

/// Names a rule reads only in a struct literal (`symbols::capability_field`:
/// `ServerCapabilities { logging: Some(..), .. }`): `ServerCapabilities::builder()`, every
/// `get_info`'s, holds nothing to report.
const LITERAL_ONLY: &[&[u8]] = &[b"ServerCapabilities", b"ClientCapabilities"];

/// Whether the name that ends at `end` opens a struct literal (`{`), is renamed (`as`, which
/// makes an alias that hides it, see `items.rs`), or is followed by a comment (conservatively).
fn constructed_or_renamed(text: &[u8], end: usize) -> bool {
    let after = &text[end..];
    let Some(next) = after.iter().position(|byte| !byte.is_ascii_whitespace()) else {
        return false;
    };
    match after[next] {
        b'{' | b'/' => true,
        b'a' => {
            after[next..].starts_with(b"as")
                && !after.get(next + 2).is_some_and(|&byte| is_name_byte(byte))
        }
        _ => false,
    }
}

fn is_read_name(name: &[u8]) -> bool {
    let Ok(name) = std::str::from_utf8(name) else {
        return true;
    };
    READ_NAMES.contains(&name)
        || crate::rust::METHOD_NAMES.contains(&name)
        || crate::rust::SYMBOLS
            .iter()
            .any(|(symbol, _)| *symbol == name)
        || crate::rust::symbols::SSE_TRANSPORT_TYPES.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words that count, each up to the end of its name.
    fn counted(text: &str) -> Vec<&str> {
        crate::prefilter::trigger_starts(text.as_bytes())
            .into_iter()
            .filter(|&at| counts(text.as_bytes(), at))
            .map(|at| &text[at..])
            .map(|rest| {
                rest.split(|c: char| !c.is_alphanumeric() && c != '_')
                    .next()
                    .unwrap()
            })
            .collect()
    }

    #[test]
    fn a_gateways_own_names_do_not_count() {
        let text = "SseServerHandler::new(); run_sse_server(); let a: ElicitationAction; \
                    peer.notify_tool_list_changed(); SseClientCapabilities::default(); \
                    elicitation_handler; 使用SseClientTransport";
        assert!(counted(text).is_empty(), "{:?}", counted(text));
    }

    #[test]
    fn every_name_a_rule_reads_counts() {
        for name in crate::rust::METHOD_NAMES
            .iter()
            .chain(crate::rust::SYMBOLS.iter().map(|(name, _)| name))
            .chain(READ_NAMES)
        {
            // Followed by `{`: the struct literal a `LITERAL_ONLY` name counts in.
            let text = format!("x.{name} {{}}; ");
            let found = crate::prefilter::trigger_starts(text.as_bytes());
            assert!(
                found.iter().any(|&at| counts(text.as_bytes(), at)),
                "{name}"
            );
        }
    }

    #[test]
    fn capabilities_count_in_a_struct_literal_or_a_renaming_import_only() {
        let text = "ServerCapabilities::builder().build(); ServerCapabilities { logging: None }; \
                    use rmcp::model::{ClientCapabilities as Caps}; ClientCapabilities\n  {}";
        // The struct literal, the renaming import, the struct literal over a line break.
        assert_eq!(counted(text), ["Capabilities"; 3]);
    }

    #[test]
    fn no_trigger_is_longer_than_the_overlap_window() {
        assert!(TRIGGERS.iter().all(|word| word.len() < LONGEST_TRIGGER));
    }

    #[test]
    fn a_dropped_word_does_not_hide_another() {
        // `elicit` is found at the start of `elicitation/`, which is a word of its own.
        assert_eq!(
            counted("json!({\"method\": \"elicitation/create\"})"),
            ["elicitation"]
        );
        // `SseClient` covers the start of `ClientNotification`.
        assert_eq!(counted("SseClientNotification"), ["SseClientNotification"]);
        assert_eq!(counted("x.list_roots()"), ["list_roots"]);
    }
}
