//! A run's trace from the sidecar: `kubectl orrery logs RUN [-f] [-o json]`.
//!
//! Without `-f`, the stored events page by page (`GET …/events?after=N`, JSON). With `-f`, the
//! run followed live as Server-Sent Events: each frame's `id` is the event's `seq`; when the
//! stream drops (a sidecar restart, a proxy cutting long connections) it is opened again with
//! `Last-Event-ID` set to the last `seq` printed, so every event is printed once, in order, until
//! `run.end` (or until the run's status says it ended without one). The events are printed by
//! the same [`TerminalPrinter`] as `orrery run`, or as JSON, one event a line.

use crate::PluginError;
use crate::sidecar::{Sidecar, body_chunks};
use futures::StreamExt as _;
use kube::{Api, Client};
use orrery_crds::StudioRun;
use orrery_crds::events::{EventBody, PrinterOptions, TerminalPrinter, TraceEvent};
use std::io::Write;
use std::time::{Duration, Instant};

/// How long to keep trying while the sidecar does not answer (a restart takes seconds).
pub const GIVE_UP: Duration = Duration::from_secs(120);
/// The wait between two tries.
const RETRY: Duration = Duration::from_millis(500);

/// How events are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Output {
    /// As `orrery run` prints them.
    #[default]
    Text,
    /// One event's JSON a line.
    Json,
}

/// Where events go.
pub struct Printer {
    output: Output,
    terminal: TerminalPrinter,
    out: Box<dyn Write + Send>,
}

impl std::fmt::Debug for Printer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Printer")
            .field("output", &self.output)
            .finish_non_exhaustive()
    }
}

impl Printer {
    /// To standard output.
    pub fn stdout(output: Output) -> Printer {
        Printer {
            output,
            terminal: TerminalPrinter::stdout(PrinterOptions::detect()),
            out: Box::new(std::io::stdout()),
        }
    }

    /// To `out` (text without colour).
    pub fn to(
        output: Output,
        out: Box<dyn Write + Send>,
        text_out: Box<dyn Write + Send>,
    ) -> Printer {
        Printer {
            output,
            terminal: TerminalPrinter::new(text_out, PrinterOptions::default()),
            out,
        }
    }

    /// Prints one event.
    pub fn print(&mut self, event: &TraceEvent) {
        match self.output {
            Output::Text => self.terminal.print(event),
            Output::Json => {
                if let Ok(line) = serde_json::to_string(event) {
                    // A closed pipe (`| head`) ends nothing but the output.
                    let _ = writeln!(self.out, "{line}");
                    let _ = self.out.flush();
                }
            }
        }
    }
}

/// One Server-Sent Events frame's fields that matter here.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Frame {
    /// `id:` (the event's `seq`).
    pub id: Option<u64>,
    /// `data:` lines, joined with newlines.
    pub data: String,
}

/// Splits `buf` into complete frames (each ended by a blank line), leaving the rest in `buf`;
/// comment lines (`: keep-alive`) and frames without data are skipped.
pub fn frames(buf: &mut String) -> Vec<Frame> {
    let mut out = Vec::new();
    while let Some(end) = buf.find("\n\n") {
        let raw: String = buf.drain(..end + 2).collect();
        let mut frame = Frame::default();
        for line in raw.lines() {
            if let Some(v) = line.strip_prefix("data:") {
                if !frame.data.is_empty() {
                    frame.data.push('\n');
                }
                frame.data.push_str(v.strip_prefix(' ').unwrap_or(v));
            } else if let Some(v) = line.strip_prefix("id:") {
                frame.id = v.trim().parse().ok();
            }
        }
        if !frame.data.is_empty() {
            out.push(frame);
        }
    }
    out
}

/// The most text a frame not ended yet may hold: an event is at most what one ingest batch may
/// carry (1 MiB), so a stream that sends more without a blank line is not the sidecar's.
pub const MAX_FRAME_BYTES: usize = 4 * 1024 * 1024;

/// A stream sent more than [`MAX_FRAME_BYTES`] without ending a frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the stream sent more than {limit} bytes without ending a frame (a blank line)")]
pub struct FrameTooLarge {
    /// [`MAX_FRAME_BYTES`].
    pub limit: usize,
}

/// Reads Server-Sent Events frames from a stream's chunks, which may end anywhere: inside a
/// frame, a line, a line break or a UTF-8 character. Lines end with CRLF, LF or a lone CR (as
/// the SSE format has it); a byte that is not UTF-8 reads as U+FFFD and the stream goes on; a
/// frame not ended within [`MAX_FRAME_BYTES`] is refused. Each byte is looked at a bounded
/// number of times however the stream is cut.
#[derive(Debug, Default)]
pub struct FrameReader {
    /// Bytes of a character not whole yet (at most three).
    pending: Vec<u8>,
    /// Text of a frame not ended yet, its line ends made `\n`.
    buf: String,
    /// The last text ended with a CR: a LF first in the next is the same line end.
    after_cr: bool,
    /// How much of `buf` holds no blank line.
    scanned: usize,
}

impl FrameReader {
    /// The frames `chunk` completes.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<Frame>, FrameTooLarge> {
        self.pending.extend_from_slice(chunk);
        let mut text = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(whole) => {
                    text.push_str(whole);
                    self.pending.clear();
                    break;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    text.push_str(&String::from_utf8_lossy(&self.pending[..valid]));
                    match e.error_len() {
                        // Not UTF-8: one replacement character, and on.
                        Some(bad) => {
                            text.push(char::REPLACEMENT_CHARACTER);
                            self.pending.drain(..valid + bad);
                        }
                        // A character cut at the chunk's end: the rest comes next.
                        None => {
                            self.pending.drain(..valid);
                            break;
                        }
                    }
                }
            }
        }
        self.append(&text);
        // A blank line can only end in what was not scanned yet (or join its first byte).
        let from = self.scanned.saturating_sub(1);
        let found = self
            .buf
            .as_bytes()
            .get(from..)
            .is_some_and(|rest| rest.windows(2).any(|w| w == b"\n\n"));
        let out = if found {
            frames(&mut self.buf)
        } else {
            Vec::new()
        };
        self.scanned = self.buf.len();
        if self.buf.len() > MAX_FRAME_BYTES {
            self.buf.clear();
            self.scanned = 0;
            return Err(FrameTooLarge {
                limit: MAX_FRAME_BYTES,
            });
        }
        Ok(out)
    }

    /// Appends `text` with its line ends (CRLF, CR, LF) made `\n`, a CRLF cut between two
    /// chunks included.
    fn append(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let mut chars = text.chars().peekable();
        if self.after_cr && chars.peek() == Some(&'\n') {
            chars.next();
        }
        self.after_cr = false;
        while let Some(c) = chars.next() {
            if c != '\r' {
                self.buf.push(c);
                continue;
            }
            self.buf.push('\n');
            match chars.peek() {
                Some('\n') => {
                    chars.next();
                }
                None => self.after_cr = true,
                Some(_) => {}
            }
        }
    }
}

/// How a followed trace ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// With `run.end` and this outcome (`Succeeded`, …).
    RunEnd(String),
    /// The run ended (this phase) without a `run.end` (cancelled before its runner started,
    /// refused).
    Phase(String),
    /// Not followed: the stored events were printed.
    Stored,
}

/// One JSON page of stored events.
#[derive(Debug, serde::Deserialize)]
struct Page {
    events: Vec<TraceEvent>,
    next: u64,
    complete: bool,
}

fn events_path(namespace: &str, name: &str) -> String {
    format!("/api/v1/runs/{namespace}/{name}/events")
}

/// Prints the stored events of run `name` (page by page).
pub async fn stored(
    sidecar: &Sidecar,
    namespace: &str,
    name: &str,
    printer: &mut Printer,
) -> Result<Ending, PluginError> {
    let mut after = 0u64;
    let what = format!("reading the trace of studiorun {name} in {namespace}");
    loop {
        let page: Page = sidecar
            .get_json(
                &what,
                &format!("{}?after={after}", events_path(namespace, name)),
            )
            .await?;
        for event in &page.events {
            printer.print(event);
        }
        if page.complete || page.events.is_empty() || page.next <= after {
            return Ok(Ending::Stored);
        }
        after = page.next;
    }
}

/// Follows run `name` live from after `seq` `after`, printing each event once, until
/// `run.end`, resuming with `Last-Event-ID` when the stream drops.
pub async fn follow(
    sidecar: &Sidecar,
    api: &Client,
    namespace: &str,
    name: &str,
    mut after: u64,
    printer: &mut Printer,
) -> Result<Ending, PluginError> {
    let what = format!("following studiorun {name} in {namespace}");
    let runs: Api<StudioRun> = Api::namespaced(api.clone(), namespace);
    let mut waiting_since = Instant::now();
    loop {
        let response = match sidecar
            .get(
                &what,
                &events_path(namespace, name),
                "text/event-stream",
                Some(after),
            )
            .await
        {
            Ok(response) => response,
            // The sidecar is restarting, or the run's first events are not stored yet.
            Err(PluginError::SidecarUnreachable { .. }) if waiting_since.elapsed() < GIVE_UP => {
                tokio::time::sleep(RETRY).await;
                continue;
            }
            Err(PluginError::SidecarRefused { status, .. })
                if (status == 404 || status == 429 || status >= 500)
                    && waiting_since.elapsed() < GIVE_UP =>
            {
                tokio::time::sleep(RETRY).await;
                continue;
            }
            Err(e) => return Err(e),
        };
        waiting_since = Instant::now();
        let mut chunks = body_chunks(response.into_body());
        let mut reader = FrameReader::default();
        while let Some(Ok(chunk)) = chunks.next().await {
            let frames = reader
                .push(&chunk)
                .map_err(|e| PluginError::SidecarAnswer {
                    what: what.clone(),
                    detail: e.to_string(),
                })?;
            for frame in frames {
                let event: TraceEvent =
                    serde_json::from_str(&frame.data).map_err(|e| PluginError::SidecarAnswer {
                        what: what.clone(),
                        detail: format!("an event that is not one: {e}"),
                    })?;
                let seq = frame.id.unwrap_or(event.seq);
                if seq <= after {
                    continue;
                }
                after = seq;
                printer.print(&event);
                if let EventBody::RunEnd { outcome, .. } = &event.body {
                    return Ok(Ending::RunEnd(format!("{outcome:?}")));
                }
            }
        }
        // The stream ended without run.end: the sidecar went away, or the run ended without one.
        if let Ok(run) = runs.get(name).await
            && let Some(phase) = run.status.as_ref().and_then(|s| s.phase)
            && phase.is_terminal()
        {
            // One more read from where we are catches a run.end stored just before the end.
            return Ok(Ending::Phase(format!("{phase:?}")));
        }
        tokio::time::sleep(RETRY).await;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use orrery_crds::events::Outcome;
    use std::sync::{Arc, Mutex};

    #[test]
    fn frames_are_cut_at_blank_lines_and_comments_are_skipped() {
        let mut buf = String::from(
            ": keep-alive\n\nid: 3\nevent: node.enter\ndata: {\"a\":1}\n\nid: 4\ndata: {\"b\"",
        );
        assert_eq!(
            frames(&mut buf),
            vec![Frame {
                id: Some(3),
                data: "{\"a\":1}".into()
            }]
        );
        assert_eq!(buf, "id: 4\ndata: {\"b\"");
        buf.push_str(":2}\n\n");
        assert_eq!(
            frames(&mut buf),
            vec![Frame {
                id: Some(4),
                data: "{\"b\":2}".into()
            }]
        );
        assert!(buf.is_empty());
    }

    #[test]
    fn chunks_cut_inside_a_character_a_line_break_or_a_frame_still_make_whole_frames() {
        let stream = "id: 7\r\ndata: {\"t\":\"é→\"}\r\n\r\nid: 8\ndata: {}\n\n";
        let bytes = stream.as_bytes();
        // Every way of cutting the stream in two gives the same two frames.
        for cut in 0..=bytes.len() {
            let mut reader = FrameReader::default();
            let mut got = reader.push(&bytes[..cut]).unwrap();
            got.extend(reader.push(&bytes[cut..]).unwrap());
            assert_eq!(
                got,
                vec![
                    Frame {
                        id: Some(7),
                        data: "{\"t\":\"é→\"}".into()
                    },
                    Frame {
                        id: Some(8),
                        data: "{}".into()
                    }
                ],
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn lines_ended_by_a_lone_cr_make_the_same_frames_however_the_stream_is_cut() {
        let stream = "id: 1\rdata: a\r\rid: 2\r\ndata: b\r\n\r\nid: 3\ndata: c\n\n";
        let bytes = stream.as_bytes();
        let want: Vec<Frame> = [(1, "a"), (2, "b"), (3, "c")]
            .into_iter()
            .map(|(id, data)| Frame {
                id: Some(id),
                data: data.into(),
            })
            .collect();
        for cut in 0..=bytes.len() {
            for second in cut..=bytes.len() {
                let mut reader = FrameReader::default();
                let mut got = reader.push(&bytes[..cut]).unwrap();
                got.extend(reader.push(&bytes[cut..second]).unwrap());
                got.extend(reader.push(&bytes[second..]).unwrap());
                assert_eq!(got, want, "cut at {cut} and {second}");
            }
        }
    }

    #[test]
    fn a_byte_that_is_not_utf8_reads_as_a_replacement_and_the_stream_goes_on() {
        let mut reader = FrameReader::default();
        let got = reader.push(b"data: a\xffb\n\n").unwrap();
        assert_eq!(got[0].data, "a\u{FFFD}b");
        // A lone continuation byte and a cut lead byte later on change nothing after them.
        let got = reader.push(b"data: \x80c\n\ndata: \xc3").unwrap();
        assert_eq!(got[0].data, "\u{FFFD}c");
        let got = reader.push(b"\xa9\n\n").unwrap();
        assert_eq!(got[0].data, "\u{e9}");
    }

    #[test]
    fn a_frame_never_ended_is_refused_past_the_limit() {
        let mut reader = FrameReader::default();
        let line = format!("data: {}\n", "x".repeat(64 * 1024));
        let mut refused = None;
        for _ in 0..(MAX_FRAME_BYTES / line.len() + 2) {
            if let Err(e) = reader.push(line.as_bytes()) {
                refused = Some(e);
                break;
            }
        }
        assert_eq!(
            refused,
            Some(FrameTooLarge {
                limit: MAX_FRAME_BYTES
            })
        );
        // The reader starts afresh after it.
        assert_eq!(reader.push(b"data: y\n\n").unwrap()[0].data, "y");
    }

    #[test]
    fn a_data_field_over_several_lines_is_joined_with_newlines() {
        let mut buf = String::from("data: one\ndata: two\n\n");
        assert_eq!(frames(&mut buf)[0].data, "one\ntwo");
    }

    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);
    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn end(seq: u64) -> TraceEvent {
        TraceEvent {
            seq,
            run_id: "uid-1".into(),
            ts: "2026-12-06T10:00:00.000Z".into(),
            body: EventBody::RunEnd {
                outcome: Outcome::Failed,
                error: Some(orrery_crds::run::RunError {
                    message: "model said \u{1b}[31mno".into(),
                    ..orrery_crds::run::RunError::default()
                }),
                totals: orrery_crds::run::RunTotals::default(),
                dropped: 0,
                output_size: 0,
                output: None,
            },
        }
    }

    #[test]
    fn json_output_is_one_event_a_line_and_reads_back_as_the_event() {
        let (json, text) = (Buf::default(), Buf::default());
        let mut printer = Printer::to(Output::Json, Box::new(json.clone()), Box::new(text.clone()));
        printer.print(&end(7));
        printer.print(&end(8));
        let written = String::from_utf8(json.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = written.lines().collect();
        assert_eq!(lines.len(), 2, "{written}");
        let back: TraceEvent = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(back, end(7));
        assert!(text.0.lock().unwrap().is_empty());
    }

    #[test]
    fn text_output_is_the_terminal_printers_with_escapes_shown_never_sent() {
        let (json, text) = (Buf::default(), Buf::default());
        let mut printer = Printer::to(Output::Text, Box::new(json.clone()), Box::new(text.clone()));
        printer.print(&end(7));
        let written = String::from_utf8(text.0.lock().unwrap().clone()).unwrap();
        assert!(written.contains("Failed"), "{written}");
        assert!(written.contains("\\x1b"), "{written}");
        assert!(!written.contains('\u{1b}'), "{written}");
        assert!(json.0.lock().unwrap().is_empty());
    }
}
