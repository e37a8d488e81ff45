//! An incremental parser for `text/event-stream` (server-sent events).

/// Longest SSE line accepted (a line is one JSON chunk; real ones are < 4 KiB).
const MAX_LINE_BYTES: usize = 8 << 20;

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field; empty for the default "message".
    pub(crate) event: String,
    /// The `data:` lines joined with newlines.
    pub(crate) data: String,
}

/// An incremental parser for `text/event-stream`: feed it bytes as they
/// arrive, split anywhere (mid-line, mid-CRLF, mid-UTF-8 character).
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    line: Vec<u8>,
    /// The previous byte was a CR, so an LF right after it ends nothing.
    after_cr: bool,
    event: String,
    data: String,
    has_data: bool,
    seen_any: bool,
}

impl SseParser {
    pub(crate) fn new() -> SseParser {
        SseParser::default()
    }

    /// Feed bytes; returns the events they completed.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, String> {
        let mut events = Vec::new();
        for &b in bytes {
            match b {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' => self.end_line(&mut events),
                b'\r' => {
                    self.end_line(&mut events);
                    self.after_cr = true;
                }
                _ => {
                    self.after_cr = false;
                    if self.line.len() >= MAX_LINE_BYTES {
                        return Err(format!(
                            "a line of the event stream is longer than {} MiB",
                            MAX_LINE_BYTES >> 20
                        ));
                    }
                    self.line.push(b);
                }
            }
        }
        Ok(events)
    }

    /// The stream ended: a last line without its newline, and an event
    /// without its blank line, still count (lenient, as curl is).
    pub(crate) fn finish(&mut self) -> Vec<SseEvent> {
        let mut events = Vec::new();
        if !self.line.is_empty() {
            self.end_line(&mut events);
        }
        self.dispatch(&mut events);
        events
    }

    fn end_line(&mut self, events: &mut Vec<SseEvent>) {
        let raw = std::mem::take(&mut self.line);
        let mut line = String::from_utf8_lossy(&raw).into_owned();
        if !self.seen_any {
            if let Some(rest) = line.strip_prefix('\u{feff}') {
                line = rest.to_string();
            }
            self.seen_any = true;
        }
        if line.is_empty() {
            self.dispatch(events);
            return;
        }
        if line.starts_with(':') {
            return; // a comment: keep-alive
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_str(), ""),
        };
        match field {
            "data" => self.add_data(value),
            "event" => self.event = value.to_string(),
            // llama.cpp's server reports a failure mid-stream as `error: {...}`.
            "error" => {
                self.event = "error".into();
                self.add_data(value);
            }
            _ => {} // id, retry, and unknown fields
        }
    }

    fn add_data(&mut self, value: &str) {
        if self.has_data {
            self.data.push('\n');
        }
        self.data.push_str(value);
        self.has_data = true;
    }

    fn dispatch(&mut self, events: &mut Vec<SseEvent>) {
        if self.has_data {
            events.push(SseEvent {
                event: std::mem::take(&mut self.event),
                data: std::mem::take(&mut self.data),
            });
        }
        self.event.clear();
        self.data.clear();
        self.has_data = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_pieces(input: &[u8], cuts: &[usize]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut events = Vec::new();
        let mut start = 0;
        for &cut in cuts.iter().chain(std::iter::once(&input.len())) {
            events.extend(parser.push(&input[start..cut]).unwrap());
            start = cut;
        }
        events.extend(parser.finish());
        events
    }

    #[test]
    fn any_single_split_gives_the_same_events() {
        let input = "\u{feff}: keep-alive\r\n\r\ndata: {\"a\":\"é→😀\"}\r\n\r\nevent: error\ndata: x\ndata: y\n\n\rdata:[DONE]\r\r".as_bytes();
        let whole = parse_in_pieces(input, &[]);
        assert_eq!(
            whole,
            vec![
                SseEvent {
                    event: String::new(),
                    data: "{\"a\":\"é→😀\"}".into()
                },
                SseEvent {
                    event: "error".into(),
                    data: "x\ny".into()
                },
                SseEvent {
                    event: String::new(),
                    data: "[DONE]".into()
                },
            ]
        );
        for cut in 0..=input.len() {
            assert_eq!(parse_in_pieces(input, &[cut]), whole, "split at byte {cut}");
        }
        let every_byte: Vec<usize> = (1..input.len()).collect();
        assert_eq!(parse_in_pieces(input, &every_byte), whole);
    }

    #[test]
    fn a_last_event_without_its_blank_line_still_counts() {
        assert_eq!(
            parse_in_pieces(b"data: [DONE]", &[]),
            vec![SseEvent {
                event: String::new(),
                data: "[DONE]".into()
            }]
        );
    }

    #[test]
    fn llama_cpp_error_lines_are_error_events() {
        let events = parse_in_pieces(b"error: {\"code\":500,\"message\":\"boom\"}\n\n", &[]);
        assert_eq!(events[0].event, "error");
        assert!(events[0].data.contains("boom"));
    }
}
