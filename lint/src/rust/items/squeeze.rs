//! What syn parses of a blanked file: the blanked text with the lines that blanking emptied
//! reduced to their line breaks. On an MCP-heavy file three quarters of the blanked text can be
//! spaces, and proc-macro2 pays for each of them twice (its source map counts every character,
//! its tokeniser skips them one by one).
//!
//! Lines and columns (what the findings are made of, see `ByteSpan::from_proc_macro`) are those
//! of the blanked text: only lines that blanking touched lose their content when they hold only
//! blanks (their line break stays), and no token stands on such a line. A line that blanking did
//! not touch is left alone even when it is blank, so a kept string literal, whose lines are never
//! blanked, keeps its content. Byte offsets differ: the caller reads positions as lines and
//! columns only.
//!
//! The blanked ranges drive the pass: the text between them is copied as it is, the first and
//! last line of a range are looked at, and the lines wholly inside it (all blanks) become their
//! line breaks without being read byte by byte. Before, every line of the file was compared with
//! the original and looked at, 4 % of a run's instructions on the MCP-heavy corpus. The only
//! difference: a line that was blank before blanking and lies wholly inside a blanked range is
//! emptied too (it holds no token either way).

/// `masked` (a blanked file) with the lines that the ranges of `blanked` (byte ranges, in any
/// order, overlapping or not, each blanked to spaces with its line breaks kept) emptied squeezed.
pub fn squeeze(masked: &str, mut blanked: Vec<(usize, usize)>) -> String {
    let bytes = masked.as_bytes();
    let len = bytes.len();
    blanked.sort_unstable();
    let mut out = Vec::with_capacity(len / 2);
    // Everything before `done` (a line start) is in `out`.
    let mut done = 0;
    let mut next = 0;
    while next < blanked.len() {
        let (start, mut end) = blanked[next];
        next += 1;
        if end <= done {
            continue;
        }
        let start = start.max(done);
        // The lines before the one `start` is on are untouched.
        let mut at =
            memchr::memrchr(b'\n', &bytes[done..start]).map_or(done, |line| done + line + 1);
        out.extend_from_slice(&bytes[done..at]);
        loop {
            // A touched line: the ranges that start on it touch it too.
            let line_end = memchr::memchr(b'\n', &bytes[at..]).map_or(len, |line| at + line);
            while let Some(&(other_start, other_end)) = blanked.get(next) {
                if other_start >= line_end {
                    break;
                }
                end = end.max(other_end);
                next += 1;
            }
            let line = &bytes[at..line_end];
            if !all_space(line) {
                out.extend_from_slice(line);
            }
            if line_end == len {
                at = len;
                break;
            }
            out.push(b'\n');
            at = line_end + 1;
            if end <= at {
                break;
            }
            // The lines wholly inside the range hold only blanks: their line breaks stay.
            if let Some(last) = memchr::memrchr(b'\n', &bytes[at..end]) {
                let breaks = memchr::memchr_iter(b'\n', &bytes[at..=at + last]).count();
                out.resize(out.len() + breaks, b'\n');
                at += last + 1;
            }
        }
        done = at;
    }
    out.extend_from_slice(&bytes[done..]);
    // Only whole lines of ASCII whitespace were removed.
    String::from_utf8(out).unwrap_or_else(|_| masked.to_owned())
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
    /// [`super::squeeze`] with the runs of bytes where `masked` differs from `original` as the
    /// blanked ranges.
    fn squeeze(original: &str, masked: &str) -> String {
        let (original, bytes) = (original.as_bytes(), masked.as_bytes());
        assert_eq!(original.len(), bytes.len());
        let mut ranges = Vec::new();
        let mut run: Option<usize> = None;
        for at in 0..=bytes.len() {
            let differs = at < bytes.len() && original[at] != bytes[at];
            match (differs, run) {
                (true, None) => run = Some(at),
                (false, Some(start)) => {
                    ranges.push((start, at));
                    run = None;
                }
                _ => {}
            }
        }
        super::squeeze(masked, ranges)
    }

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

    #[test]
    fn lines_wholly_inside_a_range_keep_only_their_breaks() {
        // One range from `fn` to the last `}`: its inner lines (a blank one among them) are not
        // read; the lines it starts and ends on are, and what is outside the range stays.
        let original = "keep();\n  fn skipped() {\n\n    one();\r\n  } tail();\nlast();\n";
        let start = original.find("fn").unwrap();
        let end = original.find("} tail").unwrap() + 1;
        let mut masked = original.as_bytes().to_vec();
        for byte in &mut masked[start..end] {
            if !matches!(byte, b'\n' | b'\r') {
                *byte = b' ';
            }
        }
        let masked = String::from_utf8(masked).unwrap();
        let squeezed = super::squeeze(&masked, vec![(start, end), (start + 3, start + 5)]);
        assert_eq!(squeezed, "keep();\n\n\n\n    tail();\nlast();\n");
        assert_eq!(positions(&squeezed), positions(&masked));
        // Two ranges on one line, one of them running on: the line is looked at once.
        let squeezed = super::squeeze(&masked, vec![(start, start + 2), (start + 2, end)]);
        assert_eq!(squeezed, "keep();\n\n\n\n    tail();\nlast();\n");
    }
}
