//! Which top-level statements are kept, and the blanked text oxc parses instead of the file.
//!
//! Kept whatever their words: `import` declarations (name resolution) and the directives that
//! open the file (`"use strict"`). Any other statement is kept when it holds one of [`WORDS`]
//! (every rule's finding needs one of them in the statement that is reported, see the tests) or,
//! as a whole word, a name the file binds to the SDK (`import { Server as S }` makes `new
//! S(..)` a server, `import * as sdk` makes `sdk.X` the SDK's `X`): the statements that can
//! bind a server, a client or a capabilities object name one of those. What no word can show (a
//! binding to plain data, read by `unsigned-request-state`, or an SDK name bound in a way the
//! lexical reading below misses) is checked after the walk (`typescript::lint_file`).

use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

use super::lexer::is_word_byte;
use super::Statement;

/// The words a statement must hold to be reported in: the file pre-filter's trigger words and
/// the names the rules match on an SDK object or a capabilities literal.
const EXTRA_WORDS: &[&str] = &[
    "createMessage",
    "listRoots",
    "setLoggingLevel",
    "logging",
    "setRequestHandler",
    "setNotificationHandler",
    "UrlElicitationRequired",
    "inputRequired",
    "elicitUrl",
    "\"url\"",
    "'url'",
    "`url`",
];

/// [`super::super::TRIGGERS`] and [`EXTRA_WORDS`].
pub fn words() -> impl Iterator<Item = &'static str> {
    super::super::TRIGGERS.iter().chain(EXTRA_WORDS).copied()
}

/// Built once per run: a contiguous NFA behind the SIMD searcher (see `prefilter.rs`), not the
/// DFA aho-corasick picks by default for this many words, whose build costs more than its
/// searches save on a run's files.
static WORDS: LazyLock<AhoCorasick> = LazyLock::new(|| {
    AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostFirst)
        .kind(Some(AhoCorasickKind::ContiguousNFA))
        .build(words())
        .expect("the statement words build a searcher")
});

/// Words of an SDK import that bind no name.
const IMPORT_SYNTAX: &[&str] = &["import", "from", "as", "type", "typeof", "default"];

/// The SDK's package scope as it appears in a module specifier.
const SDK_WORD: &str = "modelcontextprotocol";

/// A file with the statements that cannot match blanked out.
#[derive(Debug)]
pub struct Masked {
    /// The file's text with the skipped statements blanked (line breaks and closing `;` kept),
    /// cut after the last kept statement.
    pub text: String,
    /// The byte ranges of the skipped statements.
    pub skipped: Vec<(usize, usize)>,
    /// The names read from the SDK's imports and requires (kept wherever they appear).
    pub sdk_names: Vec<String>,
}

impl Masked {
    /// Whether a skipped statement spells `name` as a whole word.
    pub fn skipped_mention(&self, original: &str, name: &str) -> bool {
        let finder = memchr::memmem::Finder::new(name.as_bytes());
        self.skipped.iter().any(|&(start, end)| {
            let bytes = original.as_bytes();
            finder
                .find_iter(&bytes[start..end])
                .any(|at| whole_word(bytes, start + at, start + at + name.len()))
        })
    }
}

/// Appends `code` with every byte but line breaks turned into a space.
fn blank(out: &mut Vec<u8>, code: &[u8]) {
    let mut from = 0;
    for line_break in memchr::memchr2_iter(b'\n', b'\r', code) {
        out.resize(out.len() + line_break - from, b' ');
        out.push(code[line_break]);
        from = line_break + 1;
    }
    out.resize(out.len() + code.len() - from, b' ');
}

fn whole_word(bytes: &[u8], start: usize, end: usize) -> bool {
    let before = start.checked_sub(1).map(|index| bytes[index]);
    !before.is_some_and(is_word_byte) && !bytes.get(end).copied().is_some_and(is_word_byte)
}

/// The statements of `text` to keep, blanked text and all; `None` when every statement is
/// kept.
pub fn mask(text: &str, statements: &[Statement]) -> Option<Masked> {
    let bytes = text.as_bytes();
    let mut keep = vec![false; statements.len()];
    let index_of = |at: usize| {
        let index = statements.partition_point(|statement| statement.end <= at);
        (index < statements.len() && statements[index].start <= at).then_some(index)
    };
    let mut sdk_names: Vec<String> = Vec::new();
    for found in WORDS.find_iter(bytes) {
        let Some(index) = index_of(found.start()) else {
            continue;
        };
        keep[index] = true;
        if &bytes[found.range()] == SDK_WORD.as_bytes() {
            let statement = &statements[index];
            if statement.import {
                sdk_names.extend(
                    words_in(&text[statement.start..statement.end])
                        .filter(|word| !IMPORT_SYNTAX.contains(word))
                        .map(str::to_owned),
                );
            } else {
                sdk_names.extend(required_names(text, found.start()).map(str::to_owned));
            }
        }
    }
    for (index, statement) in statements.iter().enumerate() {
        keep[index] |= statement.import;
    }
    for (index, statement) in statements.iter().enumerate() {
        if !statement.directive {
            break;
        }
        keep[index] = true;
    }
    sdk_names.sort_unstable();
    sdk_names.dedup();
    if !sdk_names.is_empty() {
        // The names are words: a match that is part of a longer word cannot hide a whole-word
        // match (it would have to start inside it), so a non-overlapping search finds them all.
        // A contiguous NFA: built per file, and a DFA's build costs more than the search.
        let names = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .kind(Some(AhoCorasickKind::ContiguousNFA))
            .build(&sdk_names)
            .expect("names build a searcher");
        for found in names.find_iter(bytes) {
            if whole_word(bytes, found.start(), found.end()) {
                if let Some(index) = index_of(found.start()) {
                    keep[index] = true;
                }
            }
        }
    }
    let last_kept = keep.iter().rposition(|kept| *kept)?;
    if keep.iter().all(|kept| *kept) {
        return None;
    }
    let cut = statements[last_kept].end;
    let mut masked = Vec::with_capacity(cut);
    let mut skipped = Vec::new();
    let mut copied = 0;
    for (statement, _) in statements[..last_kept]
        .iter()
        .zip(&keep)
        .filter(|(_, kept)| !**kept)
    {
        masked.extend_from_slice(&bytes[copied..statement.start]);
        let body_end = statement.end - usize::from(statement.semicolon);
        blank(&mut masked, &bytes[statement.start..body_end]);
        masked.extend_from_slice(&bytes[body_end..statement.end]);
        copied = statement.end;
        skipped.push((statement.start, statement.end));
    }
    masked.extend_from_slice(&bytes[copied..cut]);
    skipped.extend(
        statements[last_kept + 1..]
            .iter()
            .map(|statement| (statement.start, statement.end)),
    );
    // Only whole characters were replaced (a statement starts and ends on a token's boundary),
    // each by ASCII.
    let masked = String::from_utf8(masked).ok()?;
    Some(Masked {
        text: masked,
        skipped,
        sdk_names,
    })
}

/// The words (names and keywords) of a piece of code, outside its string literals (comments
/// are not skipped, which only adds words).
fn words_in(code: &str) -> impl Iterator<Item = &str> {
    let mut quote = None;
    code.split(move |ch: char| {
        match quote {
            Some(open) if ch == open => quote = None,
            Some(_) => {}
            None if matches!(ch, '"' | '\'' | '`') => quote = Some(ch),
            None => return !(ch.is_alphanumeric() || ch == '_' || ch == '$'),
        }
        true
    })
    .filter(|word| word.as_bytes().first().is_some_and(|b| !b.is_ascii_digit()))
}

/// The names bound by `NAME = require("…")`, `{ A, B: C } = require("…")` or `… = await
/// import("…")` around an SDK module specifier whose `modelcontextprotocol` starts at `at`.
/// Nothing when the text around does not read that way (the check after the walk covers it).
fn required_names(text: &str, at: usize) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut index = at;
    // Back to the specifier's opening quote, then `(`, then `require` / `import`.
    while index > 0 && !matches!(bytes[index - 1], b'"' | b'\'' | b'`' | b'\n') {
        index -= 1;
    }
    let found = (|| {
        let mut index = skip_blanks_back(bytes, index.checked_sub(1)?);
        (bytes.get(index.checked_sub(1)?) == Some(&b'(')).then_some(())?;
        index = skip_blanks_back(bytes, index - 1);
        let word_start = word_start_back(bytes, index);
        if !matches!(&text[word_start..index], "require" | "import") {
            return None;
        }
        index = word_start;
        // `await`, parentheses, then `=`.
        loop {
            index = skip_blanks_back(bytes, index);
            match bytes.get(index.checked_sub(1)?)? {
                b'(' => index -= 1,
                b'=' => break,
                _ if text[..index].ends_with("await") => index -= "await".len(),
                _ => return None,
            }
        }
        let end = skip_blanks_back(bytes, index - 1);
        if bytes.get(end.checked_sub(1)?) == Some(&b'}') {
            let open = text[..end].rfind('{')?;
            Some(&text[open..end])
        } else {
            Some(&text[word_start_back(bytes, end)..end])
        }
    })();
    found.into_iter().flat_map(words_in)
}

fn skip_blanks_back(bytes: &[u8], mut index: usize) -> usize {
    while index > 0 && bytes[index - 1].is_ascii_whitespace() {
        index -= 1;
    }
    index
}

fn word_start_back(bytes: &[u8], mut index: usize) -> usize {
    while index > 0 && is_word_byte(bytes[index - 1]) {
        index -= 1;
    }
    index
}
