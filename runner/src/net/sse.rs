//! A capped server-sent-events reader (anchor 17: many small events, a slow drip, a line with
//! no newline). Accepts `\n`, `\r\n` and `\r` line ends and ignores comment lines.

use super::client::check_encoding;
use super::error::GuardError;
use reqwest::Response;
use std::time::Duration;
use tokio::time::Instant;

/// One dispatched event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, if any.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n` (may be empty, e.g. a priming event).
    pub data: String,
    /// The `id:` field, if any.
    pub id: Option<String>,
    /// The `retry:` field, if any.
    pub retry: Option<u64>,
}

/// Caps and timeouts for one event stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SseLimits {
    /// Cap on one event (all its lines, including a line still waiting for its newline).
    pub max_event_bytes: u64,
    /// Cap on the whole stream; `None` for long-lived streams.
    pub max_total_bytes: Option<u64>,
    /// Longest wait for the next bytes.
    pub idle_timeout: Option<Duration>,
    /// Longest time for the whole stream (a slow drip ends here).
    pub total_timeout: Option<Duration>,
}

/// Why the parser stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SseParseError {
    /// The event being built is over the cap.
    EventTooLarge,
    /// A line is not UTF-8.
    NotUtf8,
}

/// An incremental SSE parser: feed bytes, get events.
#[derive(Debug)]
pub struct SseParser {
    max_event_bytes: u64,
    line: Vec<u8>,
    after_cr: bool,
    event_bytes: u64,
    current: SseEvent,
    has_data: bool,
}

impl SseParser {
    /// A parser with a per-event cap.
    pub fn new(max_event_bytes: u64) -> Self {
        Self {
            max_event_bytes,
            line: Vec::new(),
            after_cr: false,
            event_bytes: 0,
            current: SseEvent::default(),
            has_data: false,
        }
    }

    /// Feeds bytes; returns the events completed by them.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, SseParseError> {
        let mut out = Vec::new();
        for &b in bytes {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' | b'\r' => {
                    self.after_cr = b == b'\r';
                    if let Some(event) = self.end_line()? {
                        out.push(event);
                    }
                }
                _ => {
                    self.line.push(b);
                    self.event_bytes += 1;
                    if self.event_bytes > self.max_event_bytes {
                        return Err(SseParseError::EventTooLarge);
                    }
                }
            }
        }
        Ok(out)
    }

    fn end_line(&mut self) -> Result<Option<SseEvent>, SseParseError> {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            let dispatch = self.has_data.then(|| std::mem::take(&mut self.current));
            self.current = SseEvent::default();
            self.has_data = false;
            self.event_bytes = 0;
            return Ok(dispatch);
        }
        let line = String::from_utf8(line).map_err(|_| SseParseError::NotUtf8)?;
        if line.starts_with(':') {
            return Ok(None);
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_str(), ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.current.data.push('\n');
                }
                self.current.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.current.event = Some(value.to_owned()),
            "id" if !value.contains('\0') => self.current.id = Some(value.to_owned()),
            "retry" => self.current.retry = value.parse().ok(),
            _ => {}
        }
        Ok(None)
    }
}

/// Reads events from a reply within [`SseLimits`]. Refuses compressed replies before reading.
#[derive(Debug)]
pub struct SseReader {
    response: Response,
    url: String,
    parser: SseParser,
    limits: SseLimits,
    total: u64,
    deadline: Option<Instant>,
    ready: std::collections::VecDeque<SseEvent>,
    done: bool,
}

impl SseReader {
    /// Starts reading `response` as an event stream.
    pub fn new(response: Response, limits: SseLimits) -> Result<Self, GuardError> {
        let url = response.url().to_string();
        check_encoding(&url, response.headers())?;
        Ok(Self {
            response,
            url,
            parser: SseParser::new(limits.max_event_bytes),
            limits,
            total: 0,
            deadline: limits.total_timeout.map(|t| Instant::now() + t),
            ready: Default::default(),
            done: false,
        })
    }

    /// The next event, or `None` when the stream ended (an unterminated last event is dropped,
    /// as the SSE rules say).
    pub async fn next_event(&mut self) -> Result<Option<SseEvent>, GuardError> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Ok(Some(event));
            }
            if self.done {
                return Ok(None);
            }
            let chunk = self.next_chunk().await?;
            let Some(chunk) = chunk else {
                self.done = true;
                continue;
            };
            self.total += chunk.len() as u64;
            if let Some(max) = self.limits.max_total_bytes
                && self.total > max
            {
                return Err(GuardError::TooLarge {
                    url: self.url.clone(),
                    what: "SSE stream",
                    limit: max,
                });
            }
            let events = self.parser.push(&chunk).map_err(|e| match e {
                SseParseError::EventTooLarge => GuardError::TooLarge {
                    url: self.url.clone(),
                    what: "SSE event",
                    limit: self.limits.max_event_bytes,
                },
                SseParseError::NotUtf8 => GuardError::Sse {
                    url: self.url.clone(),
                    message: "a line is not UTF-8".into(),
                },
            })?;
            self.ready.extend(events);
        }
    }

    async fn next_chunk(&mut self) -> Result<Option<bytes::Bytes>, GuardError> {
        let wait = match (self.limits.idle_timeout, self.deadline) {
            (Some(idle), Some(deadline)) => Some((Instant::now() + idle).min(deadline)),
            (Some(idle), None) => Some(Instant::now() + idle),
            (None, Some(deadline)) => Some(deadline),
            (None, None) => None,
        };
        let read = self.response.chunk();
        let result = match wait {
            Some(at) => match tokio::time::timeout_at(at, read).await {
                Ok(r) => r,
                Err(_) => {
                    return Err(GuardError::Timeout {
                        url: self.url.clone(),
                        what: "event stream idle or total timeout".into(),
                    });
                }
            },
            None => read.await,
        };
        result.map_err(|e| GuardError::from_reqwest(&self.url, e))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn parse_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut p = SseParser::new(1024);
        chunks.iter().flat_map(|c| p.push(c).unwrap()).collect()
    }

    #[test]
    fn events_are_split_on_any_line_end_and_comments_are_ignored() {
        let events = parse_all(&[
            b": ping - 2026\r\n",
            b"event: message\r\nid: 1\r\ndata: {\"a\":1}\r\n\r",
            b"\ndata: line1\ndata: line2\n\n",
            b"data:nospace\r\rretry: 5\n",
        ]);
        assert_eq!(events.len(), 3, "{events:?}");
        assert_eq!(events[0].event.as_deref(), Some("message"));
        assert_eq!(events[0].id.as_deref(), Some("1"));
        assert_eq!(events[0].data, "{\"a\":1}");
        assert_eq!(events[1].data, "line1\nline2");
        assert_eq!(events[2].data, "nospace");
    }

    #[test]
    fn a_priming_event_with_empty_data_is_dispatched_with_empty_data() {
        let events = parse_all(&[b"id: abc\ndata: \n\n", b"id: only-id\n\n"]);
        assert_eq!(
            events,
            vec![SseEvent {
                id: Some("abc".into()),
                ..Default::default()
            }]
        );
    }

    #[test]
    fn a_cr_split_across_chunks_is_one_line_end() {
        let events = parse_all(&[b"data: x\r", b"\n\r", b"\n"]);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data, "x");
    }

    #[test]
    fn an_event_over_the_cap_is_refused_even_without_a_newline() {
        let mut p = SseParser::new(16);
        assert_eq!(p.push(&[b'a'; 17]), Err(SseParseError::EventTooLarge));
        let mut p = SseParser::new(16);
        assert_eq!(
            p.push(b"data: 0123456\ndata: 0123456\n"),
            Err(SseParseError::EventTooLarge)
        );
        let mut p = SseParser::new(16);
        assert!(
            p.push(b"data: 0123456\n\ndata: 0123456\n\n").is_ok(),
            "the cap is per event"
        );
    }

    #[test]
    fn non_utf8_lines_are_refused() {
        let mut p = SseParser::new(64);
        assert_eq!(p.push(b"data: \xff\n"), Err(SseParseError::NotUtf8));
    }
}
