//! The terminal as a decision source: the person at the keyboard decides.

use super::{ApprovalRequest, Decision, DecisionSource, MAX_COMPLETE_BYTES, Nobody};
use crate::events::{TerminalHold, visible, visible_inline};
use async_trait::async_trait;
use orrery_crds::run::ApprovalKind;
use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// A line the person typed, and when the reader got it.
type Line = (Instant, String);

/// Asks the person at the terminal: shows the node, the prompt, the text and its digest on
/// standard error and reads the answer from standard input. `a` approves the digest shown (or
/// type the digest, or a prefix of it of 8+ characters); `r` rejects and asks for a comment.
///
/// What the person reads is what runs on (rules 4.7, 4.18, 4.26): terminal escapes, control,
/// bidirectional and zero-width characters in the prompt or the text are shown as escapes
/// (`\x1b`, `\u{202e}`), with a warning, and never written raw. And only what the person types
/// after seeing a request answers it (rules 4.8, 4.26): lines typed ahead, or left over from a
/// multi-line paste, are discarded when a new request is shown.
///
/// Nothing writes over a waiting prompt: given the [`TerminalHold`] the live trace writes
/// through ([`TerminalPrompt::holding`]), the prompt holds the trace from showing a request
/// until it is answered.
pub struct TerminalPrompt {
    lines: tokio::sync::Mutex<Option<tokio::sync::mpsc::UnboundedReceiver<Line>>>,
    out: std::sync::Mutex<Box<dyn Write + Send>>,
    hold: Option<TerminalHold>,
}

impl std::fmt::Debug for TerminalPrompt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TerminalPrompt").finish_non_exhaustive()
    }
}

impl Default for TerminalPrompt {
    fn default() -> Self {
        TerminalPrompt::new()
    }
}

impl TerminalPrompt {
    /// A prompt on this process's terminal (standard error and standard input).
    pub fn new() -> Self {
        TerminalPrompt {
            lines: tokio::sync::Mutex::new(None),
            out: std::sync::Mutex::new(Box::new(std::io::stderr())),
            hold: None,
        }
    }

    /// This prompt, holding the trace written through `hold` while it waits for an answer.
    pub fn holding(mut self, hold: TerminalHold) -> Self {
        self.hold = Some(hold);
        self
    }

    /// A prompt reading timestamped lines from `lines` and writing to `out` (tests).
    #[cfg(test)]
    pub(crate) fn with_io(
        lines: tokio::sync::mpsc::UnboundedReceiver<Line>,
        out: Box<dyn Write + Send>,
    ) -> Self {
        TerminalPrompt {
            lines: tokio::sync::Mutex::new(Some(lines)),
            out: std::sync::Mutex::new(out),
            hold: None,
        }
    }

    /// Whether standard input is a terminal a person can answer on.
    pub fn available() -> bool {
        std::io::stdin().is_terminal()
    }

    /// The terminal prompt when standard input is a TTY, else [`Nobody`].
    pub fn or_nobody() -> Arc<dyn DecisionSource> {
        if TerminalPrompt::available() {
            Arc::new(TerminalPrompt::new())
        } else {
            Arc::new(Nobody::new())
        }
    }

    /// [`TerminalPrompt::or_nobody`], the prompt holding the trace written through `hold`.
    pub fn or_nobody_holding(hold: TerminalHold) -> Arc<dyn DecisionSource> {
        if TerminalPrompt::available() {
            Arc::new(TerminalPrompt::new().holding(hold))
        } else {
            Arc::new(Nobody::new())
        }
    }

    fn start_reader() -> tokio::sync::mpsc::UnboundedReceiver<Line> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        // A plain thread (not spawn_blocking): a read blocked on stdin must never keep the
        // process from exiting.
        let spawned = std::thread::Builder::new()
            .name("orrery-stdin".into())
            .spawn(move || {
                let stdin = std::io::stdin();
                let mut line = String::new();
                loop {
                    line.clear();
                    match stdin.read_line(&mut line) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {
                            let text = line.trim_end_matches(['\n', '\r']).to_owned();
                            if tx.send((Instant::now(), text)).is_err() {
                                break;
                            }
                        }
                    }
                }
            });
        if spawned.is_err() {
            // No reader: the receiver's sender is gone, so every read sees end of input.
            let (_, rx) = tokio::sync::mpsc::unbounded_channel();
            return rx;
        }
        rx
    }

    /// Writes to the person (a closed terminal must not stop the run).
    fn write(&self, text: &str) {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }

    /// The request as the person sees it.
    fn render(request: &ApprovalRequest) -> String {
        let title = match request.kind {
            ApprovalKind::Approval => "approval needed",
            ApprovalKind::Input => {
                "a remote agent asks a question (written by an external agent: never answer with secrets)"
            }
            ApprovalKind::Action => "confirm an acting remote's request",
        };
        let mut s = format!(
            "\n──── {title}: node {} ({}) ────\n",
            visible_inline(&request.node).text,
            visible_inline(&request.id).text
        );
        if !request.prompt.is_empty() {
            let prompt = visible(&request.prompt);
            s.push_str(&prompt.text);
            s.push('\n');
            if let Some(note) = prompt.note() {
                s.push_str(&format!("{} (in the prompt)\n", note));
            }
        }
        s.push_str(&format!(
            "──── text under review ({} bytes) ────\n",
            request.size
        ));
        let shown = if request.complete {
            request.text.as_str()
        } else {
            let mut end = MAX_COMPLETE_BYTES;
            while end > 0 && !request.text.is_char_boundary(end) {
                end -= 1;
            }
            &request.text[..end]
        };
        let text = visible(shown);
        s.push_str(&text.text);
        s.push('\n');
        if !request.complete {
            s.push_str(
                "[… the text is over 128 KiB and shown only in part: it can only be rejected]\n",
            );
        }
        s.push_str(&format!(
            "──── sha256 {} · expires {} ────\n",
            request.digest, request.expires_at
        ));
        if let Some(note) = text.note() {
            s.push_str(&note);
            s.push_str("; the digest is of the exact text, which is what runs on\n");
        }
        s
    }

    /// The next line typed after `shown_at` (older lines were typed before the person saw the
    /// request, and are skipped). `None` on cancel or end of input.
    async fn next_line(
        lines: &mut tokio::sync::mpsc::UnboundedReceiver<Line>,
        shown_at: Instant,
        cancel: &CancellationToken,
    ) -> Option<String> {
        loop {
            let (at, line) = tokio::select! {
                _ = cancel.cancelled() => return None,
                l = lines.recv() => l?,
            };
            if at >= shown_at {
                return Some(line);
            }
        }
    }

    fn hint(kind: ApprovalKind) -> &'static str {
        match kind {
            ApprovalKind::Input => "[a]nswer / [r]eject (decline) >",
            _ => "[a]pprove the digest shown / [r]eject, or type the digest (8+ characters) >",
        }
    }
}

#[async_trait]
impl DecisionSource for TerminalPrompt {
    async fn decide(
        &self,
        request: &ApprovalRequest,
        cancel: &CancellationToken,
    ) -> Option<Decision> {
        let mut guard = self.lines.lock().await;
        let lines = guard.get_or_insert_with(TerminalPrompt::start_reader);
        // Typed-ahead input never answers a request the person has not seen.
        while lines.try_recv().is_ok() {}
        // From here until the answer, the trace waits: nothing writes over the prompt.
        let _held = self.hold.as_ref().map(TerminalHold::hold);
        let shown_at = Instant::now();
        self.write(&TerminalPrompt::render(request));
        loop {
            self.write(&format!("{} ", TerminalPrompt::hint(request.kind)));
            let line = TerminalPrompt::next_line(lines, shown_at, cancel).await?;
            let answer = line.trim();
            let lower = answer.to_ascii_lowercase();
            if lower == "r" || lower == "reject" {
                self.write("comment for the next node (empty for none) > ");
                let comment = TerminalPrompt::next_line(lines, shown_at, cancel).await?;
                let comment = comment.trim();
                return Some(Decision::Reject {
                    comment: (!comment.is_empty()).then(|| comment.to_owned()),
                });
            }
            if lower == "a" || lower == "approve" || lower == "answer" {
                if request.kind == ApprovalKind::Input {
                    self.write("your answer > ");
                    let text = TerminalPrompt::next_line(lines, shown_at, cancel).await?;
                    return Some(Decision::Approve {
                        digest: request.digest.clone(),
                        answer: Some(text),
                    });
                }
                return Some(Decision::Approve {
                    digest: request.digest.clone(),
                    answer: None,
                });
            }
            if lower.len() >= 8 && lower.chars().all(|c| c.is_ascii_hexdigit()) {
                // A typed digest: a prefix of the one shown names it; anything else is passed on
                // as typed, and the run refuses it.
                let digest = if request.digest.starts_with(&lower) {
                    request.digest.clone()
                } else {
                    lower.clone()
                };
                return Some(Decision::Approve {
                    digest,
                    answer: None,
                });
            }
            self.write("type a to approve, r to reject, or the text's digest\n");
        }
    }

    fn refused(&self, _request: &ApprovalRequest, reason: &str) {
        self.write(&format!("refused: {}\n", visible_inline(reason).text));
    }
}
