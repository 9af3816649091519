//! A small incremental parser for `text/event-stream` bodies (the WHATWG SSE format, as legacy
//! Streamable HTTP servers write it).
//!
//! Lines end with LF, CRLF or CR. `data:` lines are joined with `\n`; a blank line ends the event.
//! `id:` sets the last event id (kept across events, as the spec says), `retry:` the reconnection
//! delay; comments (`:`) and unknown fields are ignored. An event without data (for example the
//! 2025-11-25 priming event, which carries only an id) is not reported.

/// The most an empty line buffer keeps between chunks.
const IDLE_LINE_CAPACITY: usize = 256;

/// One complete SSE event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, `message` when absent.
    pub event: String,
    pub data: String,
}

/// Incremental SSE parser: feed it body chunks as they arrive.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of an unfinished line.
    line: Vec<u8>,
    /// The previous chunk ended with CR: a LF at the start of the next one belongs to it.
    after_cr: bool,
    data: String,
    has_data: bool,
    event: String,
    /// The last `id:` seen (the stream's "last event ID").
    last_event_id: Option<String>,
    /// The last valid `retry:` value, in milliseconds.
    retry_ms: Option<u64>,
}

impl SseParser {
    pub fn new() -> Self {
        SseParser::default()
    }

    /// The last event id the stream sent, for `Last-Event-ID` on reconnection.
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// The server's requested reconnection delay, if it sent one.
    pub fn retry_ms(&self) -> Option<u64> {
        self.retry_ms
    }

    /// Feeds a chunk; returns the events it completed.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        self.feed_with(chunk, |event, data| {
            events.push(SseEvent {
                event: event.to_owned(),
                data,
            })
        });
        events
    }

    /// [`SseParser::feed`] without building the list: `on_event(event type, data)` for each
    /// event the chunk completes, in order. The type is borrowed (`message` when the stream named
    /// none), the data moved out of the parser (one allocation per event, none for the type:
    /// callgrind, bench/proxy-vs-nginx.md).
    pub fn feed_with(&mut self, mut chunk: &[u8], mut on_event: impl FnMut(&str, String)) {
        if self.after_cr && !chunk.is_empty() {
            self.after_cr = false;
            if chunk[0] == b'\n' {
                chunk = &chunk[1..];
            }
        }
        while let Some(at) = memchr::memchr2(b'\n', b'\r', chunk) {
            if self.line.is_empty() {
                // A whole line in the chunk: processed where it is, not copied.
                self.process_raw(&chunk[..at], &mut on_event);
            } else {
                self.line.extend_from_slice(&chunk[..at]);
                self.end_line(&mut on_event);
            }
            let cr = chunk[at] == b'\r';
            chunk = &chunk[at + 1..];
            if cr {
                match chunk.first() {
                    Some(b'\n') => chunk = &chunk[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        self.line.extend_from_slice(chunk);
        if self.line.is_empty() && self.line.capacity() > IDLE_LINE_CAPACITY {
            // Between events (a paused call's stream waits here for minutes): keep no large
            // buffer from an earlier long line.
            self.line = Vec::new();
        }
    }

    /// The stream ended: an unterminated event is discarded (as the SSE spec requires).
    pub fn finish(&mut self) {
        self.line.clear();
        self.reset_event();
    }

    /// Processes the line in `self.line`, keeping the buffer (and its capacity) for the next one.
    fn end_line(&mut self, on_event: &mut impl FnMut(&str, String)) {
        let mut line = std::mem::take(&mut self.line);
        self.process_raw(&line, on_event);
        line.clear();
        self.line = line;
    }

    fn process_raw(&mut self, line: &[u8], on_event: &mut impl FnMut(&str, String)) {
        // `from_utf8` first: its fast path is much cheaper than the lossy scan on valid text.
        match std::str::from_utf8(line) {
            Ok(text) => self.process_line(text, on_event),
            Err(_) => self.process_line(&String::from_utf8_lossy(line), on_event),
        }
    }

    fn process_line(&mut self, line: &str, on_event: &mut impl FnMut(&str, String)) {
        if line.is_empty() {
            // As in the WHATWG algorithm, an event whose data is empty is not dispatched.
            if self.has_data && !self.data.is_empty() {
                let event = if self.event.is_empty() {
                    "message"
                } else {
                    self.event.as_str()
                };
                on_event(event, std::mem::take(&mut self.data));
            }
            self.reset_event();
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.find(':') {
            Some(at) => {
                let value = &line[at + 1..];
                (&line[..at], value.strip_prefix(' ').unwrap_or(value))
            }
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => {
                // Kept in the parser's own buffer; `message`, the default, as no type at all.
                self.event.clear();
                if value != "message" {
                    self.event.push_str(value);
                }
            }
            "id" if !value.contains('\0') => self.last_event_id = Some(value.to_owned()),
            "retry" => {
                if let Ok(ms) = value.parse::<u64>() {
                    self.retry_ms = Some(ms);
                }
            }
            _ => {}
        }
    }

    fn reset_event(&mut self) {
        self.data.clear();
        self.has_data = false;
        self.event.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(parser: &mut SseParser, chunks: &[&[u8]]) -> Vec<SseEvent> {
        chunks.iter().flat_map(|chunk| parser.feed(chunk)).collect()
    }

    #[test]
    fn rmcp_streams_parse_with_priming_events_skipped() {
        let mut parser = SseParser::new();
        let events = all(
            &mut parser,
            &[b"data: \nid: 0/0\nretry: 3000\n\ndata: {\"a\":1}\nid: 1/0\n\n"],
        );
        assert_eq!(
            events,
            vec![SseEvent {
                event: "message".into(),
                data: "{\"a\":1}".into()
            }]
        );
        assert_eq!(parser.last_event_id(), Some("1/0"));
        assert_eq!(parser.retry_ms(), Some(3000));
    }

    #[test]
    fn multi_line_data_comments_crlf_and_split_chunks() {
        let mut parser = SseParser::new();
        let events = all(
            &mut parser,
            &[
                b": keep-alive\r",
                b"\nevent: message\r\ndata:line1\r",
                b"\ndata: line2\r\n\r",
                b"\ndata",
                b": x\r\rdata: y\n",
            ],
        );
        assert_eq!(
            events,
            vec![
                SseEvent {
                    event: "message".into(),
                    data: "line1\nline2".into()
                },
                SseEvent {
                    event: "message".into(),
                    data: "x".into()
                },
            ]
        );
        // An unterminated event is dropped at the end of the stream.
        parser.finish();
        assert!(parser.feed(b"\n").is_empty());
    }

    #[test]
    fn other_event_types_and_bad_retry_are_kept_apart() {
        let mut parser = SseParser::new();
        let events = all(&mut parser, &[b"event: ping\ndata: 1\nretry: soon\n\n"]);
        assert_eq!(events[0].event, "ping");
        assert_eq!(parser.retry_ms(), None);
    }

    #[test]
    fn the_default_type_is_message_whether_named_or_not() {
        let mut parser = SseParser::new();
        let mut seen = Vec::new();
        parser.feed_with(
            b"event: message\ndata: 1\n\nevent:\ndata: 2\n\nevent: ping\ndata: 3\n\ndata: 4\n\n",
            |event, data| seen.push((event.to_owned(), data)),
        );
        let seen: Vec<(&str, &str)> = seen.iter().map(|(e, d)| (e.as_str(), d.as_str())).collect();
        assert_eq!(
            seen,
            [
                ("message", "1"),
                ("message", "2"),
                ("ping", "3"),
                ("message", "4")
            ]
        );
    }

    #[test]
    fn a_long_line_leaves_no_large_buffer_behind() {
        let mut parser = SseParser::new();
        let long = format!("data: {}\n", "x".repeat(10_000));
        assert!(parser.feed(&long.as_bytes()[..5000]).is_empty());
        assert!(parser.line.capacity() >= 5000);
        let events = parser.feed(format!("{}\n", &long[5000..]).as_bytes());
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data.len(), 10_000);
        assert!(parser.line.capacity() <= IDLE_LINE_CAPACITY);
    }

    proptest::proptest! {
        /// However the body is cut into chunks, the same events come out.
        #[test]
        fn chunking_does_not_change_the_events(
            parts in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::strategy::Just("data: {\"a\":1}".to_owned()),
                    proptest::strategy::Just("data:x".to_owned()),
                    proptest::strategy::Just("id: 7".to_owned()),
                    proptest::strategy::Just("event: other".to_owned()),
                    proptest::strategy::Just(": comment".to_owned()),
                    proptest::strategy::Just("retry: 30".to_owned()),
                    proptest::strategy::Just("".to_owned()),
                    "[a-z:é ]{0,6}",
                ],
                0..12,
            ),
            endings in proptest::collection::vec(0..3usize, 12),
            cuts in proptest::collection::vec(0..200usize, 0..6),
        ) {
            let mut body = Vec::new();
            for (i, part) in parts.iter().enumerate() {
                body.extend_from_slice(part.as_bytes());
                body.extend_from_slice([&b"\n"[..], b"\r\n", b"\r"][endings[i]]);
            }
            let mut whole = SseParser::new();
            let expected = whole.feed(&body);
            let mut cuts: Vec<usize> = cuts.into_iter().map(|cut| cut.min(body.len())).collect();
            cuts.sort_unstable();
            let mut parser = SseParser::new();
            let mut events = Vec::new();
            let mut start = 0;
            for cut in cuts.into_iter().chain([body.len()]) {
                events.extend(parser.feed(&body[start..cut]));
                start = cut;
            }
            proptest::prop_assert_eq!(events, expected);
            proptest::prop_assert_eq!(parser.last_event_id(), whole.last_event_id());
            proptest::prop_assert_eq!(parser.retry_ms(), whole.retry_ms());
        }
    }
}
