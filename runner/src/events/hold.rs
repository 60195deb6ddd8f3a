//! One terminal shared by the live trace and a person's prompt: while a prompt waits for its
//! answer, nothing writes over it. The trace's sinks write through a [`TerminalHold`]'s
//! [`TerminalHold::writer`]; a prompt takes [`TerminalHold::hold`] before it shows its request,
//! and trace output arriving meanwhile is kept and written when the prompt is answered (the
//! guard dropped). The run flushes its trace before any prompt (see
//! [`crate::approval::People::ask`]), so the person reads the context first.

use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard};

/// Trace output kept while a prompt waits, at most (a run emits at most 2000 short events).
pub const MAX_HELD_BYTES: usize = 1024 * 1024;

struct HoldState {
    /// Prompts waiting.
    holds: usize,
    /// Trace output kept meanwhile.
    held: Vec<u8>,
    /// Bytes not kept because [`MAX_HELD_BYTES`] was reached.
    dropped: usize,
    out: Box<dyn Write + Send>,
}

/// The terminal the trace is printed on, held while a prompt waits. Cheap to clone.
#[derive(Clone)]
pub struct TerminalHold {
    state: Arc<Mutex<HoldState>>,
}

impl std::fmt::Debug for TerminalHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TerminalHold").finish_non_exhaustive()
    }
}

impl TerminalHold {
    /// The trace goes to standard output.
    pub fn stdout() -> Self {
        TerminalHold::new(Box::new(std::io::stdout()))
    }

    /// The trace goes to `out`.
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        TerminalHold {
            state: Arc::new(Mutex::new(HoldState {
                holds: 0,
                held: Vec::new(),
                dropped: 0,
                out,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HoldState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A writer for a sink: it writes through, or keeps what it is given while a prompt waits.
    pub fn writer(&self) -> HeldWriter {
        HeldWriter { hold: self.clone() }
    }

    /// Holds the trace until the guard is dropped.
    pub fn hold(&self) -> HoldGuard {
        self.lock().holds += 1;
        HoldGuard { hold: self.clone() }
    }

    /// Whether a prompt is waiting.
    pub fn is_held(&self) -> bool {
        self.lock().holds > 0
    }
}

/// A prompt waiting: the trace is kept until this is dropped.
#[must_use = "the trace is held only while the guard lives"]
pub struct HoldGuard {
    hold: TerminalHold,
}

impl std::fmt::Debug for HoldGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HoldGuard").finish_non_exhaustive()
    }
}

impl Drop for HoldGuard {
    fn drop(&mut self) {
        let mut state = self.hold.lock();
        state.holds = state.holds.saturating_sub(1);
        if state.holds > 0 {
            return;
        }
        let held = std::mem::take(&mut state.held);
        let dropped = std::mem::take(&mut state.dropped);
        // A closed terminal must not stop the run.
        let _ = state.out.write_all(&held);
        if dropped > 0 {
            let _ = writeln!(
                state.out,
                "[orrery: {dropped} bytes of trace output were not kept while a prompt waited (at most {MAX_HELD_BYTES})]"
            );
        }
        let _ = state.out.flush();
    }
}

/// What a sink writes to: the terminal, or the hold while a prompt waits.
pub struct HeldWriter {
    hold: TerminalHold,
}

impl Write for HeldWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut state = self.hold.lock();
        if state.holds == 0 {
            return state.out.write(buf);
        }
        let room = MAX_HELD_BYTES.saturating_sub(state.held.len());
        let kept = buf.len().min(room);
        state.held.extend_from_slice(&buf[..kept]);
        state.dropped += buf.len() - kept;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let mut state = self.hold.lock();
        if state.holds == 0 {
            state.out.flush()
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

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
    impl Buf {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    #[test]
    fn output_during_a_hold_is_written_when_the_last_hold_ends() {
        let buf = Buf::default();
        let hold = TerminalHold::new(Box::new(buf.clone()));
        let mut w = hold.writer();
        w.write_all(b"before\n").unwrap();
        let outer = hold.hold();
        let inner = hold.hold();
        w.write_all(b"during\n").unwrap();
        drop(inner);
        assert_eq!(buf.text(), "before\n", "one prompt still waits");
        drop(outer);
        assert_eq!(buf.text(), "before\nduring\n");
        assert!(!hold.is_held());
    }

    #[test]
    fn output_past_the_held_cap_is_counted_and_said() {
        let buf = Buf::default();
        let hold = TerminalHold::new(Box::new(buf.clone()));
        let mut w = hold.writer();
        let guard = hold.hold();
        w.write_all(&vec![b'x'; MAX_HELD_BYTES + 10]).unwrap();
        drop(guard);
        let text = buf.text();
        assert!(
            text.contains("10 bytes of trace output were not kept"),
            "{}",
            &text[text.len() - 120..]
        );
    }
}
