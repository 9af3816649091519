//! The shared rule catalogue of mcp-migrate.
//!
//! `cargo mcp-lint` reports static findings and `mcp-mrtr-proxy` logs runtime warnings under the
//! **same** rule names. Every rule lives here once: a stable code (`MCP` + 3 digits, the hundreds
//! digit is the family), a kebab-case name that reads as "allow <name>", a default severity, a
//! one-line summary and its full documentation (a Markdown file under `rules/docs/`, pulled in with
//! `include_str!` so that `--explain`, the README table and the SARIF rule metadata all print the
//! same text).
//!
//! Families:
//! - `MCP1xx` deprecated features (SEP-2577, SEP-2596),
//! - `MCP2xx` protocol flows that 2026-07-28 removed or restricted (SEP-2322 MRTR),
//! - `MCP3xx` transports and SDK versions,
//! - `MCP4xx` security rules the spec states as MUST / MUST NOT,
//! - `MCP9xx` findings about the lint run itself (unparsable files, suppression comments).

#![forbid(unsafe_code)]

use std::fmt;
use std::str::FromStr;

/// How serious a finding is. Ordered: `Info < Warning < Error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The family a rule belongs to; the hundreds digit of its code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    Deprecated,
    ProtocolFlow,
    Transport,
    Security,
    /// Findings about the lint run itself: unparsable files and suppression comments.
    Linter,
}

impl Family {
    pub fn title(self) -> &'static str {
        match self {
            Family::Deprecated => "Deprecated features",
            Family::ProtocolFlow => "Removed protocol flows",
            Family::Transport => "Transports and SDK versions",
            Family::Security => "Security",
            Family::Linter => "Linter hygiene",
        }
    }
}

/// Whether an automatic fix exists for a rule, and how safe applying it is (ruff's applicability).
/// Ordered from least to most applicable: `None < DisplayOnly < Unsafe < Safe`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FixAvailability {
    /// No automatic fix: the change needs a human.
    None,
    /// A suggested rewrite that is shown (in the report, SARIF `fixes`, JSON `fix`, or as a
    /// scaffold) but never applied: its shape differs from the code it replaces (e.g. an MRTR
    /// handler for one that awaits a client request mid-call).
    DisplayOnly,
    /// A fix that may change behaviour: applied only with `--unsafe-fixes`.
    Unsafe,
    /// A fix that keeps behaviour: applied with `--fix`.
    Safe,
}

impl FixAvailability {
    pub fn as_str(self) -> &'static str {
        match self {
            FixAvailability::None => "none",
            FixAvailability::DisplayOnly => "display-only",
            FixAvailability::Unsafe => "unsafe",
            FixAvailability::Safe => "safe",
        }
    }
}

impl fmt::Display for FixAvailability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One entry of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Rule {
    /// Stable code, e.g. `MCP101`. Never reused, never renumbered.
    pub code: &'static str,
    /// Stable kebab-case name, e.g. `deprecated-sampling`.
    pub name: &'static str,
    pub family: Family,
    pub default_severity: Severity,
    /// One line, lowercase, no trailing period.
    pub summary: &'static str,
    /// Where the 2026-07-28 specification says so (document and SEP).
    pub spec_reference: &'static str,
    pub fix: FixAvailability,
    /// Full documentation in Markdown with the fixed headings
    /// `What it does`, `Why is this bad?`, `Example`, `Use instead`, `Fix safety`, `References`.
    #[serde(skip)]
    pub docs: &'static str,
}

/// Base address of the rule documentation; a rule's page is `DOCS_BASE_URL` + `name`.
pub const DOCS_BASE_URL: &str = "https://github.com/mcp-migrate/mcp-migrate/blob/main/rules/docs/";

impl Rule {
    /// The address of this rule's documentation page.
    pub fn url(&self) -> String {
        format!("{DOCS_BASE_URL}{}.md", self.name)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.name, self.code)
    }
}

macro_rules! catalogue {
    ($( $ident:ident = $code:literal, $name:literal, $family:ident, $sev:ident, $fix:ident,
        $summary:literal, $spec:literal; )*) => {
        /// Typed identifiers for the rules, so engine code cannot misspell a name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum RuleId { $( $ident, )* }

        /// Every rule, ordered by code.
        pub static RULES: &[Rule] = &[ $(
            Rule {
                code: $code,
                name: $name,
                family: Family::$family,
                default_severity: Severity::$sev,
                summary: $summary,
                spec_reference: $spec,
                fix: FixAvailability::$fix,
                docs: include_str!(concat!("../docs/", $name, ".md")),
            },
        )* ];

        impl RuleId {
            /// All identifiers, in catalogue order.
            pub const ALL: &'static [RuleId] = &[ $( RuleId::$ident, )* ];

            /// The catalogue entry of this rule.
            pub fn rule(self) -> &'static Rule {
                &RULES[self as usize]
            }
        }
    };
}

catalogue! {
    DeprecatedSampling = "MCP101", "deprecated-sampling", Deprecated, Warning, None,
        "sampling (`sampling/createMessage`) is deprecated in MCP 2026-07-28",
        "2026-07-28 changelog, Deprecated 1 (SEP-2577); client/sampling";
    DeprecatedRoots = "MCP102", "deprecated-roots", Deprecated, Warning, None,
        "roots (`roots/list`, `notifications/roots/list_changed`) are deprecated in MCP 2026-07-28",
        "2026-07-28 changelog, Deprecated 1 (SEP-2577) and Major 5 (SEP-2575); client/roots";
    DeprecatedLogging = "MCP103", "deprecated-logging", Deprecated, Warning, Unsafe,
        "protocol logging (`notifications/message`, `logging/setLevel`) is deprecated in MCP 2026-07-28",
        "2026-07-28 changelog, Deprecated 1 (SEP-2577) and Major 5 (SEP-2575); server/utilities/logging";
    DeprecatedIncludeContext = "MCP104", "deprecated-include-context", Deprecated, Warning, Unsafe,
        "`includeContext` `thisServer` / `allServers` is deprecated in MCP 2026-07-28",
        "2026-07-28 changelog, Deprecated 3 (SEP-2596); client/sampling";
    ServerInitiatedRequest = "MCP201", "server-initiated-request", ProtocolFlow, Error, DisplayOnly,
        "a server sends a request to the client and awaits the reply instead of returning `input_required`",
        "2026-07-28 basic/patterns/mrtr and changelog, Major 7 (SEP-2322, SEP-2260)";
    ElicitationCompleteNotification = "MCP202", "elicitation-complete-notification", ProtocolFlow, Error, None,
        "`notifications/elicitation/complete` and URL-elicitation `elicitationId` are removed in MCP 2026-07-28",
        "2026-07-28 changelog, Minor 11; client/elicitation";
    InputRequiredOutsideMrtr = "MCP203", "input-required-outside-mrtr", ProtocolFlow, Error, None,
        "`input_required` results are only allowed for `tools/call`, `resources/read` and `prompts/get`",
        "2026-07-28 basic/patterns/mrtr (SEP-2322)";
    LegacyResourceSubscription = "MCP204", "legacy-resource-subscription", ProtocolFlow, Error, None,
        "`resources/subscribe` and `resources/unsubscribe` are removed in MCP 2026-07-28; resource updates go to `subscriptions/listen` streams",
        "2026-07-28 basic/patterns/subscriptions and changelog, Major 4 (SEP-2575)";
    LegacySseTransport = "MCP301", "legacy-sse-transport", Transport, Warning, None,
        "the HTTP+SSE transport (2024-11-05) is deprecated; use Streamable HTTP",
        "2026-07-28 changelog, Deprecated 2 (SEP-2596); basic/transports";
    LegacySdkVersion = "MCP302", "legacy-sdk-version", Transport, Warning, Unsafe,
        "the MCP SDK release in use predates MCP 2026-07-28 and cannot speak it",
        "2026-07-28 changelog; rmcp 3.0.0 release notes";
    FormElicitationSecret = "MCP401", "form-elicitation-secret", Security, Error, None,
        "a form-mode elicitation asks for a secret (password, API key, token, payment data)",
        "2026-07-28 client/elicitation, Security Considerations";
    InsecureElicitationUrl = "MCP402", "insecure-elicitation-url", Security, Error, None,
        "a URL-mode elicitation uses plain `http://` to a remote host or carries credentials in the URL",
        "2026-07-28 client/elicitation, URL mode Security Considerations";
    UnsignedRequestState = "MCP403", "unsigned-request-state", Security, Warning, None,
        "`requestState` is built from plain serialisation with no seal, signature or MAC",
        "2026-07-28 basic/patterns/mrtr, Security Considerations (SEP-2322)";
    UnparsableFile = "MCP901", "unparsable-file", Linter, Warning, None,
        "a file could not be read or parsed, so it was not linted",
        "not a protocol rule: reported by `cargo mcp-lint` itself";
    UnusedSuppression = "MCP902", "unused-suppression", Linter, Warning, Safe,
        "a suppression comment names a rule that reports nothing on its line",
        "not a protocol rule: reported by `cargo mcp-lint` itself";
    MalformedSuppression = "MCP903", "malformed-suppression", Linter, Warning, None,
        "a suppression comment names no known rule or gives no reason",
        "not a protocol rule: reported by `cargo mcp-lint` itself";
}

/// Error returned when a rule selector names no rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownRule(pub String);

impl fmt::Display for UnknownRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown rule `{}`", self.0)?;
        if let Some(suggestion) = suggest(&self.0) {
            write!(f, " (did you mean `{}`?)", suggestion.name)?;
        }
        Ok(())
    }
}

impl std::error::Error for UnknownRule {}

/// Looks a rule up by code (`MCP101`, case-insensitive) or name (`deprecated-sampling`).
pub fn lookup(selector: &str) -> Option<&'static Rule> {
    let selector = selector.trim();
    RULES
        .iter()
        .find(|rule| rule.name == selector || rule.code.eq_ignore_ascii_case(selector))
}

/// The typed identifier of a rule named by code or name.
pub fn lookup_id(selector: &str) -> Option<RuleId> {
    let rule = lookup(selector)?;
    RuleId::ALL
        .iter()
        .copied()
        .find(|id| id.rule().code == rule.code)
}

impl FromStr for RuleId {
    type Err = UnknownRule;

    fn from_str(selector: &str) -> Result<Self, Self::Err> {
        lookup_id(selector).ok_or_else(|| UnknownRule(selector.to_owned()))
    }
}

/// The closest rule name to a misspelt selector, if any is close enough to be a useful hint.
pub fn suggest(selector: &str) -> Option<&'static Rule> {
    RULES
        .iter()
        .map(|rule| (edit_distance(selector, rule.name), rule))
        .filter(|(distance, _)| *distance <= 3)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, rule)| rule)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

/// The README's rule table, generated from the catalogue (a test keeps the README current).
pub fn markdown_table() -> String {
    let mut out = String::from("| Code | Name | Default | Summary |\n|---|---|---|---|\n");
    for rule in RULES {
        out.push_str(&format!(
            "| {} | [`{}`](rules/docs/{}.md) | {} | {} |\n",
            rule.code, rule.name, rule.name, rule.default_severity, rule.summary
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_are_unique_and_well_formed() {
        let mut codes = std::collections::HashSet::new();
        let mut names = std::collections::HashSet::new();
        for rule in RULES {
            assert!(codes.insert(rule.code), "duplicate code {}", rule.code);
            assert!(names.insert(rule.name), "duplicate name {}", rule.name);
            assert!(rule.code.len() == 6 && rule.code.starts_with("MCP"));
            assert!(rule.code[3..].chars().all(|c| c.is_ascii_digit()));
            assert!(rule
                .name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '-'));
            let family_digit = match rule.family {
                Family::Deprecated => '1',
                Family::ProtocolFlow => '2',
                Family::Transport => '3',
                Family::Security => '4',
                Family::Linter => '9',
            };
            assert_eq!(rule.code.as_bytes()[3] as char, family_digit, "{rule}");
        }
    }

    #[test]
    fn rule_ids_index_their_own_entries() {
        for (index, id) in RuleId::ALL.iter().enumerate() {
            assert_eq!(id.rule().code, RULES[index].code);
            assert_eq!(lookup_id(id.rule().name), Some(*id));
            assert_eq!(lookup_id(&id.rule().code.to_lowercase()), Some(*id));
        }
        assert!(RULES.windows(2).all(|pair| pair[0].code < pair[1].code));
    }

    #[test]
    fn summaries_follow_the_message_convention() {
        for rule in RULES {
            let first = rule.summary.chars().next().unwrap();
            assert!(!first.is_uppercase(), "{rule}: summary starts uppercase");
            assert!(!rule.summary.ends_with('.'), "{rule}: trailing period");
        }
    }

    #[test]
    fn every_rule_has_docs_with_the_fixed_headings() {
        for rule in RULES {
            for heading in [
                "## What it does",
                "## Why is this bad?",
                "## Example",
                "## Use instead",
                "## Fix safety",
                "## References",
            ] {
                assert!(
                    rule.docs.contains(heading),
                    "{rule}: docs lack the heading `{heading}`"
                );
            }
            assert!(rule
                .docs
                .starts_with(&format!("# {} ({})", rule.name, rule.code)));
        }
    }

    #[test]
    fn every_fix_safety_section_states_the_catalogue_applicability() {
        for rule in RULES {
            let start = rule.docs.find("## Fix safety").unwrap();
            let end = rule.docs.find("## References").unwrap();
            let section = rule.docs[start..end].to_lowercase();
            let expected = match rule.fix {
                FixAvailability::None => "no automatic fix",
                other => other.as_str(),
            };
            assert!(
                section.contains(expected),
                "{rule}: `Fix safety` does not say `{expected}`"
            );
        }
        assert!(FixAvailability::Safe > FixAvailability::Unsafe);
        assert!(FixAvailability::Unsafe > FixAvailability::DisplayOnly);
    }

    #[test]
    fn unknown_selectors_get_a_suggestion() {
        let error = "deprecated-sampl".parse::<RuleId>().unwrap_err();
        assert_eq!(
            error.to_string(),
            "unknown rule `deprecated-sampl` (did you mean `deprecated-sampling`?)"
        );
        assert_eq!(
            "no-such-thing-at-all"
                .parse::<RuleId>()
                .unwrap_err()
                .to_string(),
            "unknown rule `no-such-thing-at-all`"
        );
    }
}

#[cfg(test)]
mod readme {
    /// The README's rule table is generated from the catalogue; regenerate it with
    /// `cargo run -p mcp-migrate-rules --example print_rule_table`.
    #[test]
    fn readme_rule_table_is_current() {
        let readme = include_str!("../../README.md");
        let start = readme.find("<!-- rules:start -->\n").expect("start marker") + 21;
        let end = readme.find("<!-- rules:end -->").expect("end marker");
        assert_eq!(
            &readme[start..end],
            super::markdown_table(),
            "README rule table is stale"
        );
    }
}
