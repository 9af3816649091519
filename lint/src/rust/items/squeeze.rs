//! What syn parses of a blanked file: the blanked text with the lines that blanking emptied
//! reduced to their line breaks. On an MCP-heavy file three quarters of the blanked text can be
//! spaces, and proc-macro2 pays for each of them twice (its source map counts every character,
//! its tokeniser skips them one by one).
//!
//! Lines and columns (what the findings are made of, see `ByteSpan::from_proc_macro`) are those
//! of the blanked text: only lines that blanking emptied lose their content (their line break
//! stays), and no token stands on such a line. A line that blanking did not touch is left alone
//! even when it is blank, so a kept string literal, whose lines are never blanked, keeps its
//! content. Byte offsets differ: the caller reads positions as lines and columns only.

/// `masked` (the blanked form of `original`, the same length, line breaks in the same places)
/// with the emptied lines squeezed.
pub fn squeeze(original: &str, masked: &str) -> String {
    let (original, masked) = (original.as_bytes(), masked.as_bytes());
    debug_assert_eq!(original.len(), masked.len());
    let mut out = Vec::with_capacity(masked.len() / 2);
    let mut start = 0;
    while start < masked.len() {
        let end = memchr::memchr(b'\n', &masked[start..]).map_or(masked.len(), |at| start + at);
        let line = &masked[start..end];
        let emptied = line != &original[start..end] && all_space(line);
        if !emptied {
            out.extend_from_slice(line);
        }
        if end < masked.len() {
            out.push(b'\n');
        }
        start = end + 1;
    }
    // Only whole lines of ASCII whitespace were removed.
    String::from_utf8(out).unwrap_or_else(|_| String::from_utf8_lossy(masked).into_owned())
}

/// Whether `line` holds only [`is_space`] bytes. Blanking writes runs of spaces, so 32 bytes at a
/// time are compared with spaces first (one vector compare), and only a chunk that differs is
/// looked at byte by byte (a tab of the indentation, the `\r` of a CRLF line). The byte loop
/// alone was 5 % of a run's instructions on the MCP-heavy corpus.
fn all_space(line: &[u8]) -> bool {
    const SPACES: [u8; 32] = [b' '; 32];
    let mut chunks = line.chunks_exact(SPACES.len());
    let chunks_blank = chunks
        .by_ref()
        .all(|chunk| chunk == SPACES || chunk.iter().all(|&b| is_space(b)));
    chunks_blank && chunks.remainder().iter().all(|&b| is_space(b))
}

fn is_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\r' | b'\t')
}

#[cfg(test)]
mod tests {
    use super::squeeze;

    /// Where each line break and each non-space character is, by (line, column).
    fn positions(text: &str) -> Vec<(usize, usize, char)> {
        let mut out = Vec::new();
        for (line, content) in text.split('\n').enumerate() {
            for (column, ch) in content.chars().enumerate() {
                if !ch.is_whitespace() {
                    out.push((line, column, ch));
                }
            }
        }
        out
    }

    #[test]
    fn emptied_lines_keep_only_their_breaks_and_tokens_keep_their_lines_and_columns() {
        let original = "use a;\nfn skipped() {\n    one();\n}\n    fn kept() { x }   // é\n";
        let masked = "use a;\n              \n          \n \n    fn kept() { x }   // é\n";
        let squeezed = squeeze(original, masked);
        assert_eq!(squeezed, "use a;\n\n\n\n    fn kept() { x }   // é\n");
        assert_eq!(positions(&squeezed), positions(masked));
    }

    #[test]
    fn blanks_within_a_line_stay_for_the_columns_after_them() {
        let original = "let a = 1; skipped(); kept();\n";
        let masked = "let a = 1;            kept();\n";
        assert_eq!(squeeze(original, masked), masked);
    }

    #[test]
    fn whitespace_that_was_not_blanked_is_left_alone() {
        // A kept multi-line string literal with trailing spaces and an empty line in it.
        let original = "fn f() {\n    let s = \"a   \n\n    b\";\n}\n";
        assert_eq!(squeeze(original, original), original);
        // The same literal beside a blanked statement.
        let original = "fn f() {\n    skipped();\n    let s = \"a   \n\n    b\";\n}\n";
        let masked = "fn f() {\n              \n    let s = \"a   \n\n    b\";\n}\n";
        let squeezed = squeeze(original, masked);
        assert!(squeezed.contains("\"a   \n\n    b\""), "{squeezed:?}");
        assert_eq!(positions(&squeezed), positions(masked));
    }

    #[test]
    fn long_lines_of_blanks_tabs_and_carriage_returns_are_emptied_only_when_all_blank() {
        let long = " ".repeat(70);
        // Chunks of spaces, a tab inside a chunk, a CR at the end: emptied.
        let masked = format!("{long}\n{long}\t{long}\r\nx{long}y\n");
        let original = format!(
            "{}\n{}\t{}\r\nx{long}y\n",
            "a".repeat(70),
            "b".repeat(70),
            "c".repeat(70)
        );
        assert_eq!(squeeze(&original, &masked), format!("\n\nx{long}y\n"));
        // A token after 64 blanks (in the remainder) and inside the second chunk keep the line.
        for kept in [
            format!("{}z", " ".repeat(64)),
            format!("{}z{}", " ".repeat(40), " ".repeat(40)),
        ] {
            let original = "q".repeat(kept.len());
            assert_eq!(squeeze(&original, &kept), kept);
        }
    }

    #[test]
    fn crlf_files_keep_their_line_count() {
        let original = "fn skipped() {}\r\nfn kept() {}\r\n";
        let masked = "               \r\nfn kept() {}\r\n";
        let squeezed = squeeze(original, masked);
        assert_eq!(squeezed, "\nfn kept() {}\r\n");
        assert_eq!(positions(&squeezed), positions(masked));
    }
}
