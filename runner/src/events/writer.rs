//! How a [`super::Trace`] hands events to its sinks: inline, or through a queue to a writer
//! thread (a plain thread, not a tokio task: sinks write to pipes and terminals that may block,
//! and a blocked write must hold up neither the run nor the runtime).

use super::{EventSink, TraceEvent};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

enum Message {
    Event {
        event: Box<TraceEvent>,
        reserved: bool,
    },
    Flush(Option<tokio::sync::oneshot::Sender<()>>),
}

/// The queue to a writer thread.
pub(super) struct Queue {
    tx: mpsc::Sender<Message>,
    /// Ordinary events queued and not yet written.
    waiting: Arc<AtomicUsize>,
    capacity: usize,
}

/// Where emitted events go.
pub(super) enum Delivery {
    /// Every sink, called in the emitter's thread.
    Inline(Vec<Arc<dyn EventSink>>),
    /// A writer thread.
    Queued(Queue),
}

impl Queue {
    /// Starts the writer thread for `sinks`; inline delivery if no thread can be started. The
    /// thread ends when the trace (every clone) is gone.
    pub(super) fn start(sinks: Vec<Arc<dyn EventSink>>, capacity: usize) -> Delivery {
        let (tx, rx) = mpsc::channel::<Message>();
        let waiting = Arc::new(AtomicUsize::new(0));
        let thread_sinks = sinks.clone();
        let thread_waiting = waiting.clone();
        let spawned = std::thread::Builder::new()
            .name("orrery-trace".into())
            .spawn(move || {
                while let Ok(message) = rx.recv() {
                    match message {
                        Message::Event { event, reserved } => {
                            for sink in &thread_sinks {
                                sink.emit(&event);
                            }
                            if !reserved {
                                thread_waiting.fetch_sub(1, Ordering::SeqCst);
                            }
                        }
                        Message::Flush(ack) => {
                            for sink in &thread_sinks {
                                sink.flush();
                            }
                            if let Some(ack) = ack {
                                let _ = ack.send(());
                            }
                        }
                    }
                }
            });
        match spawned {
            Ok(_) => Delivery::Queued(Queue {
                tx,
                waiting,
                capacity: capacity.max(1),
            }),
            Err(_) => Delivery::Inline(sinks),
        }
    }
}

impl Delivery {
    /// Whether an ordinary event has no room (only a queue fills up).
    pub(super) fn is_full(&self) -> bool {
        match self {
            Delivery::Inline(_) => false,
            Delivery::Queued(q) => q.waiting.load(Ordering::SeqCst) >= q.capacity,
        }
    }

    /// Hands one event over (called under the trace's lock, in `seq` order).
    pub(super) fn deliver(&self, event: TraceEvent, reserved: bool) {
        match self {
            Delivery::Inline(sinks) => {
                for sink in sinks {
                    sink.emit(&event);
                }
            }
            Delivery::Queued(q) => {
                if !reserved {
                    q.waiting.fetch_add(1, Ordering::SeqCst);
                }
                // A writer thread that is gone (a sink panicked) takes nothing more; the run
                // goes on regardless.
                if q.tx
                    .send(Message::Event {
                        event: Box::new(event),
                        reserved,
                    })
                    .is_err()
                    && !reserved
                {
                    q.waiting.fetch_sub(1, Ordering::SeqCst);
                }
            }
        }
    }

    /// Asks every sink to flush (behind what is queued).
    pub(super) fn flush(&self) {
        match self {
            Delivery::Inline(sinks) => {
                for sink in sinks {
                    sink.flush();
                }
            }
            Delivery::Queued(q) => {
                let _ = q.tx.send(Message::Flush(None));
            }
        }
    }

    /// Waits, at most `timeout`, until everything queued is written and flushed.
    pub(super) async fn drain(&self, timeout: Duration) -> bool {
        match self {
            Delivery::Inline(_) => {
                self.flush();
                true
            }
            Delivery::Queued(q) => {
                let (ack, done) = tokio::sync::oneshot::channel();
                if q.tx.send(Message::Flush(Some(ack))).is_err() {
                    return false;
                }
                matches!(tokio::time::timeout(timeout, done).await, Ok(Ok(())))
            }
        }
    }
}
