//! Where events go: the [`EventSink`] trait every sink implements (the terminal printer, JSON
//! lines, memory, the sidecar). A module of its own so that the writer, which delivers a
//! [`super::Trace`]'s events to its sinks, does not import the trace's module, which imports the
//! writer's.

use super::TraceEvent;

/// Where events go: a terminal printer, JSON lines, memory, the sidecar.
pub trait EventSink: Send + Sync {
    /// Takes one event. Called in `seq` order, one at a time.
    fn emit(&self, event: &TraceEvent);
    /// Writes out anything buffered (called after `run.end`).
    fn flush(&self) {}
}

/// The terminal printer (its home is the event contract, so `kubectl orrery logs` prints a run
/// as `orrery run` does) as a sink of a live run.
impl EventSink for super::TerminalPrinter {
    fn emit(&self, event: &TraceEvent) {
        self.print(event);
    }

    fn flush(&self) {
        super::TerminalPrinter::flush(self);
    }
}
