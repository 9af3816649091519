//! The tokens of a file as rustc's lexer (`ra_ap_rustc_lexer`) gives them, faster: the common
//! tokens (ASCII whitespace, identifiers, one-character punctuation, line comments, plain string
//! literals) are read here a byte at a time, and every other token (numbers, lifetimes and
//! characters, block comments, raw and prefixed strings, anything non-ASCII) by rustc's lexer
//! itself, started at that token. Its lexer keeps no state from one token to the next but the
//! position, so the stream is the same token for token (`same_tokens_as_rustc_lexer` checks it on
//! every Rust file of the repository and on generated text); rustc's lexer alone was 40 % of the
//! instructions of the scan (`items::scan`) on the MCP-heavy benchmark corpus.

use ra_ap_rustc_lexer::{Cursor, DocStyle, FrontmatterAllowed, LiteralKind, TokenKind};

/// Calls `each(kind, start, end)` for every token of `text`, in order: the tokens of
/// `ra_ap_rustc_lexer::tokenize(text, FrontmatterAllowed::No)`.
pub fn tokens(text: &str, mut each: impl FnMut(TokenKind, usize, usize)) {
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let (kind, end) = common(bytes, at).unwrap_or_else(|| {
            let token = Cursor::new(&text[at..], FrontmatterAllowed::No).advance_token();
            (token.kind, at + token.len as usize)
        });
        each(kind, at, end);
        at = end;
    }
}

/// Byte classes, looked up rather than compared: most of a file is identifiers and indentation.
const SPACE: u8 = 1;
const IDENT: u8 = 2;
static CLASS: [u8; 256] = {
    let mut class = [0u8; 256];
    let mut byte = 0;
    while byte < 256 {
        let b = byte as u8;
        if matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C) {
            class[byte] = SPACE;
        } else if b.is_ascii_alphanumeric() || b == b'_' {
            class[byte] = IDENT;
        }
        byte += 1;
    }
    class
};

fn is_ascii_space(byte: u8) -> bool {
    CLASS[usize::from(byte)] == SPACE
}

fn is_ascii_ident(byte: u8) -> bool {
    CLASS[usize::from(byte)] == IDENT
}

/// How many bytes at the start of `rest` are of `class` (its first byte is). Runs of spaces
/// (indentation) are skipped eight at a time.
fn run(rest: &[u8], class: u8) -> usize {
    let mut start = 0;
    if class == SPACE {
        // The first byte is whitespace, often the line break before the indentation.
        start = 1;
        while let Some(chunk) = rest.get(start..start + 8) {
            if chunk != b"        " {
                break;
            }
            start += 8;
        }
    }
    let tail = &rest[start.min(rest.len())..];
    start
        + tail
            .iter()
            .position(|&byte| CLASS[usize::from(byte)] != class)
            .unwrap_or(tail.len())
}

/// The token at `at` when it is a common one, and where it ends; `None` for rustc's lexer.
fn common(bytes: &[u8], at: usize) -> Option<(TokenKind, usize)> {
    let rest = &bytes[at..];
    let single = |kind| Some((kind, at + 1));
    match rest[0] {
        first if is_ascii_space(first) => {
            let end = at + run(rest, SPACE);
            // A non-ASCII character next may be whitespace too (U+0085, U+200E, U+2028, ...).
            match bytes.get(end) {
                Some(next) if !next.is_ascii() => None,
                _ => Some((TokenKind::Whitespace, end)),
            }
        }
        b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
            let end = at + run(rest, IDENT);
            // Followed by `#`, `"` or `'`: a raw identifier, a prefixed literal (`b'x'`,
            // `br"…"`, `c"…"`) or an unknown prefix; by a non-ASCII character: a longer
            // identifier, or an invalid one. Those are rustc's.
            match bytes.get(end) {
                Some(b'#' | b'"' | b'\'') => None,
                Some(next) if !next.is_ascii() => None,
                _ => Some((TokenKind::Ident, end)),
            }
        }
        b'/' => match rest.get(1) {
            Some(b'/') => {
                let doc_style = match rest.get(2) {
                    Some(b'!') => Some(DocStyle::Inner),
                    // `////` and more is not a doc comment.
                    Some(b'/') if rest.get(3) != Some(&b'/') => Some(DocStyle::Outer),
                    _ => None,
                };
                let end = memchr::memchr(b'\n', rest).map_or(bytes.len(), |line| at + line);
                Some((TokenKind::LineComment { doc_style }, end))
            }
            Some(b'*') => None,
            _ => single(TokenKind::Slash),
        },
        b'"' => string(bytes, at),
        b'#' => match rest.get(1) {
            // `#"` and `##`: a guarded string prefix.
            Some(b'"' | b'#') => None,
            _ => single(TokenKind::Pound),
        },
        b';' => single(TokenKind::Semi),
        b',' => single(TokenKind::Comma),
        b'.' => single(TokenKind::Dot),
        b'(' => single(TokenKind::OpenParen),
        b')' => single(TokenKind::CloseParen),
        b'{' => single(TokenKind::OpenBrace),
        b'}' => single(TokenKind::CloseBrace),
        b'[' => single(TokenKind::OpenBracket),
        b']' => single(TokenKind::CloseBracket),
        b'@' => single(TokenKind::At),
        b'~' => single(TokenKind::Tilde),
        b'?' => single(TokenKind::Question),
        b':' => single(TokenKind::Colon),
        b'$' => single(TokenKind::Dollar),
        b'=' => single(TokenKind::Eq),
        b'!' => single(TokenKind::Bang),
        b'<' => single(TokenKind::Lt),
        b'>' => single(TokenKind::Gt),
        b'-' => single(TokenKind::Minus),
        b'&' => single(TokenKind::And),
        b'|' => single(TokenKind::Or),
        b'+' => single(TokenKind::Plus),
        b'*' => single(TokenKind::Star),
        b'^' => single(TokenKind::Caret),
        b'%' => single(TokenKind::Percent),
        _ => None,
    }
}

/// A terminated `"…"` literal without a suffix (rustc's lexer takes the others). As in rustc's
/// lexer, a backslash escapes the character after it only when that is `\` or `"`; the bytes of
/// a multi-byte character are never either.
fn string(bytes: &[u8], at: usize) -> Option<(TokenKind, usize)> {
    let mut index = at + 1;
    loop {
        let found = index + memchr::memchr2(b'"', b'\\', &bytes[index..])?;
        index = found + 1;
        if bytes[found] == b'"' {
            break;
        }
        if matches!(bytes.get(index), Some(b'\\' | b'"')) {
            index += 1;
        }
    }
    match bytes.get(index) {
        Some(next) if is_ascii_ident(*next) || !next.is_ascii() => None,
        _ => {
            let kind = LiteralKind::Str { terminated: true };
            let suffix_start = u32::try_from(index - at).ok()?;
            Some((TokenKind::Literal { kind, suffix_start }, index))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::tokens;
    use proptest::prelude::*;
    use ra_ap_rustc_lexer::{tokenize, FrontmatterAllowed, TokenKind};

    fn ours(text: &str) -> Vec<(TokenKind, usize, usize)> {
        let mut out = Vec::new();
        tokens(text, |kind, start, end| out.push((kind, start, end)));
        out
    }

    fn rustcs(text: &str) -> Vec<(TokenKind, usize, usize)> {
        let mut offset = 0;
        tokenize(text, FrontmatterAllowed::No)
            .map(|token| {
                let start = offset;
                offset += token.len as usize;
                (token.kind, start, offset)
            })
            .collect()
    }

    fn assert_same(text: &str, what: &str) {
        let (ours, rustcs) = (ours(text), rustcs(text));
        if ours != rustcs {
            let at = ours.iter().zip(&rustcs).position(|(a, b)| a != b);
            panic!(
                "{what}: first difference at token {at:?}: ours {:?}, rustc's {:?}",
                at.and_then(|i| ours.get(i)),
                at.and_then(|i| rustcs.get(i))
            );
        }
    }

    #[test]
    fn same_tokens_as_rustc_lexer_on_tricky_text() {
        for text in [
            "",
            "fn main() { let s = \"a\\\"b\\\\\"; }",
            "r#type b'x' br\"raw\" br#\"x\"# c\"c\" cr\"c\" k#kw r\"r\" r#\"r\"# 'a 'a' '\\n'",
            "//! inner\n/// outer\n//// not doc\n// plain\n/** block */ /*! inner */ /* a /* b */ c */",
            "x\u{85}y\u{200E}z é ident_é \"é\" \"x\"suffix \"x\"é 1.0e5f32 0x1F_u8 1..2",
            "#\"guarded\"# ## # [attr] $x @ ~ ^ % ` \\ ? :: -> => <= >=",
            "\"unterminated",
            "/* unterminated",
            "'",
            "\u{feff}fn bom() {}",
            "a\r\n\tb\x0b\x0cc",
            "\"a\\\n  b\" \"\\u{1F600}\" b\"\\xff\"",
        ] {
            assert_same(text, &format!("{text:?}"));
        }
    }

    #[test]
    fn same_tokens_as_rustc_lexer_on_every_rust_file_of_the_repository() {
        // LEXER_ROOT=DIR checks another tree (e.g. the benchmark corpora under bench/work/).
        let root = std::env::var_os("LEXER_ROOT").map_or_else(
            || mcp_migrate_workspace_bins::workspace_root(env!("CARGO_MANIFEST_DIR")),
            std::path::PathBuf::from,
        );
        let mut checked = 0;
        for entry in ignore::Walk::new(&root).flatten() {
            let path = entry.path();
            if path
                .extension()
                .is_some_and(|ext| ext == "rs" || ext == "fixed")
            {
                if let Ok(text) = std::fs::read_to_string(path) {
                    assert_same(&text, &path.display().to_string());
                    checked += 1;
                }
            }
        }
        assert!(checked > 100, "only {checked} files");
    }

    proptest! {
        #[test]
        fn same_tokens_as_rustc_lexer_on_generated_text(
            pieces in proptest::collection::vec(
                prop_oneof![
                    Just("fn"), Just("r#"), Just("b"), Just("c"), Just("k#"), Just("br"),
                    Just("\""), Just("'"), Just("\\"), Just("/"), Just("*"), Just("//"),
                    Just("/*"), Just("*/"), Just("#"), Just("\n"), Just(" "), Just("\t"),
                    Just("é"), Just("\u{85}"), Just("x"), Just("_"), Just("1"), Just("0x"),
                    Just("."), Just("e"), Just("{"), Just("}"), Just(";"), Just("!"),
                    Just("'a"), Just("\\\""), Just("\r"), Just("🦀"),
                ],
                0..40,
            )
        ) {
            let text: String = pieces.concat();
            prop_assert_eq!(ours(&text), rustcs(&text), "{:?}", text);
        }
    }
}
