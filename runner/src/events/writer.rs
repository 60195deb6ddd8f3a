//! How a [`super::Trace`] hands events to its sinks: inline, or through a queue to a writer
//! thread (a plain thread, not a tokio task: sinks write to pipes and terminals that may block,
//! and a blocked write must hold up neither the run nor the runtime).
//!
//! Writer threads are kept in a process-wide pool: a run takes an idle one (or starts one when
//! none is idle), has it to itself while its trace lives, and gives it back when the trace is
//! gone and everything it queued is written. So a slow or blocked sink holds up its own run's
//! writer only, never another run's, and a process running one run after another starts one
//! thread, not one per run.
//!
//! The hand-off is batched: the emitter appends to a vector under a short lock and wakes the
//! writer only when it waits; the writer takes everything queued at once. An event crosses as
//! its body, number and clock reading: the writer stamps the run id and formats the timestamp,
//! off the run's path.

use super::{EventBody, EventSink, TraceEvent, format_rfc3339};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, mpsc};
use std::time::Duration;

/// An emitted event on its way to the writer.
pub(super) struct Pending {
    pub seq: u64,
    pub ts: jiff::Timestamp,
    pub body: EventBody,
    pub reserved: bool,
}

impl Pending {
    fn into_event(self, run_id: &str) -> TraceEvent {
        TraceEvent {
            seq: self.seq,
            run_id: run_id.to_owned(),
            ts: format_rfc3339(self.ts),
            body: self.body,
        }
    }
}

/// What one run's writer has to do, under [`Shared::state`].
#[derive(Default)]
struct State {
    /// Emitted, not yet taken by the writer.
    events: Vec<Pending>,
    /// Flushes asked for, behind the events queued when they were asked; each acknowledged
    /// (when it has a sender) once the sinks flushed.
    flushes: Vec<Option<tokio::sync::oneshot::Sender<()>>>,
    /// The writer waits for work (a new event must wake it).
    writer_waiting: bool,
    /// The trace is gone: the writer writes what is left and goes back to the pool.
    closed: bool,
    /// The writer is gone (a sink panicked): nothing more is taken.
    gone: bool,
}

/// What a run's trace and its writer share.
struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    /// Ordinary events queued and not yet written.
    waiting: AtomicUsize,
    /// Work was queued since the writer last looked (read without the lock while it spins).
    work: AtomicBool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A run, handed to a writer thread.
struct Job {
    shared: Arc<Shared>,
    sinks: Vec<Arc<dyn EventSink>>,
    run_id: String,
}

/// Idle writer threads, each waiting on its own channel for the next run.
static IDLE: Mutex<Vec<mpsc::Sender<Job>>> = Mutex::new(Vec::new());

fn idle() -> MutexGuard<'static, Vec<mpsc::Sender<Job>>> {
    IDLE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The queue to a run's writer thread.
pub(super) struct Queue {
    shared: Arc<Shared>,
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
    /// Hands `sinks` to a writer thread of the pool (started when none is idle); inline
    /// delivery if no thread can be started. The thread goes back to the pool when the trace
    /// (every clone) is gone and everything queued is written.
    pub(super) fn start(sinks: Vec<Arc<dyn EventSink>>, capacity: usize, run_id: &str) -> Delivery {
        if sinks.is_empty() {
            // Nothing to write to: no thread, nothing to hand over.
            return Delivery::Inline(sinks);
        }
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            waiting: AtomicUsize::new(0),
            work: AtomicBool::new(false),
        });
        let mut job = Job {
            shared: shared.clone(),
            sinks,
            run_id: run_id.to_owned(),
        };
        loop {
            let Some(writer) = idle().pop() else { break };
            match writer.send(job) {
                Ok(()) => {
                    return Delivery::Queued(Queue {
                        shared,
                        capacity: capacity.max(1),
                    });
                }
                // That thread is gone: try the next, or start one.
                Err(mpsc::SendError(back)) => job = back,
            }
        }
        let (tx, rx) = mpsc::channel::<Job>();
        let sinks = job.sinks.clone();
        let spawned = std::thread::Builder::new()
            .name("orrery-trace".into())
            .spawn(move || writer(job, rx, tx));
        match spawned {
            Ok(_) => Delivery::Queued(Queue {
                shared,
                capacity: capacity.max(1),
            }),
            Err(_) => Delivery::Inline(sinks),
        }
    }
}

/// A writer thread: serves one run after another, idle in the pool in between.
fn writer(first: Job, jobs: mpsc::Receiver<Job>, me: mpsc::Sender<Job>) {
    let mut job = first;
    loop {
        serve(&job);
        drop(job);
        idle().push(me.clone());
        // Runs often follow one another (a loop of runs, tests): look for the next one for a
        // moment before sleeping, so handing it over needs no wake-up.
        let start = std::time::Instant::now();
        let next = loop {
            match jobs.try_recv() {
                Ok(next) => break Some(next),
                Err(mpsc::TryRecvError::Disconnected) => return,
                Err(mpsc::TryRecvError::Empty) if start.elapsed() < WRITER_SPIN => {
                    std::hint::spin_loop();
                }
                Err(mpsc::TryRecvError::Empty) => break None,
            }
        };
        match next {
            Some(next) => job = next,
            None => match jobs.recv() {
                Ok(next) => job = next,
                Err(_) => return,
            },
        }
    }
}

/// Marks a run's writer as gone if it unwinds (a sink panicked): the run's drain stops
/// waiting and nothing more is queued.
struct GoneOnUnwind<'a>(&'a Shared);

impl Drop for GoneOnUnwind<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut state = self.0.lock();
            state.gone = true;
            state.events.clear();
            // Dropping the senders ends every drain waiting on them.
            state.flushes.clear();
            self.0.waiting.store(0, Ordering::SeqCst);
        }
    }
}

/// How long an idle writer looks for new work before it sleeps.
const WRITER_SPIN: Duration = Duration::from_micros(20);
/// How long a drain looks for the writer's acknowledgement before it sleeps.
const DRAIN_SPIN: Duration = Duration::from_micros(30);

/// Spins for at most [`WRITER_SPIN`] until the run queued something. It keeps the processor
/// (no `sched_yield`: on a busy machine a yield can lose it for a whole time slice, which
/// costs milliseconds, not microseconds).
fn spin_for_work(shared: &Shared) {
    let start = std::time::Instant::now();
    while start.elapsed() < WRITER_SPIN {
        if shared.work.load(Ordering::Acquire) {
            return;
        }
        std::hint::spin_loop();
    }
}

/// Writes one run's events until its trace is gone and nothing is left.
fn serve(job: &Job) {
    let shared = &*job.shared;
    let mut events: Vec<Pending> = Vec::new();
    let mut flushes: Vec<Option<tokio::sync::oneshot::Sender<()>>> = Vec::new();
    // Declared after the batch in hand, so on unwind it is dropped first: the writer is marked
    // gone before a drain's acknowledgement held in `flushes` is dropped. The other order let
    // a drain return and the run emit into a queue that was not yet marked gone, where its
    // events counted as waiting and filled it.
    let _gone = GoneOnUnwind(shared);
    loop {
        {
            let mut state = shared.lock();
            if state.events.is_empty() && state.flushes.is_empty() && !state.closed {
                // A run emits in bursts: look again for a moment before sleeping, so the
                // emitter seldom has to wake this thread (a system call on its path).
                drop(state);
                spin_for_work(shared);
                state = shared.lock();
            }
            while state.events.is_empty() && state.flushes.is_empty() && !state.closed {
                state.writer_waiting = true;
                state = shared.wake.wait(state).unwrap_or_else(|e| e.into_inner());
            }
            state.writer_waiting = false;
            shared.work.store(false, Ordering::Release);
            if state.events.is_empty() && state.flushes.is_empty() {
                // Closed, and everything is written.
                return;
            }
            std::mem::swap(&mut events, &mut state.events);
            std::mem::swap(&mut flushes, &mut state.flushes);
        }
        for pending in events.drain(..) {
            let reserved = pending.reserved;
            let event = pending.into_event(&job.run_id);
            for sink in &job.sinks {
                sink.emit(&event);
            }
            if !reserved {
                shared.waiting.fetch_sub(1, Ordering::SeqCst);
            }
        }
        if !flushes.is_empty() {
            for sink in &job.sinks {
                sink.flush();
            }
            for ack in flushes.drain(..).flatten() {
                let _ = ack.send(());
            }
        }
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.closed = true;
        self.shared.work.store(true, Ordering::Release);
        if state.writer_waiting {
            self.shared.wake.notify_one();
        }
    }
}

impl Queue {
    /// Queues one event, or a flush; wakes the writer if it waits.
    fn push(
        &self,
        event: Option<Pending>,
        flush: Option<Option<tokio::sync::oneshot::Sender<()>>>,
    ) {
        let mut state = self.shared.lock();
        if state.gone {
            return;
        }
        if let Some(event) = event {
            if !event.reserved {
                self.shared.waiting.fetch_add(1, Ordering::SeqCst);
            }
            state.events.push(event);
        }
        if let Some(flush) = flush {
            state.flushes.push(flush);
        }
        self.shared.work.store(true, Ordering::Release);
        if state.writer_waiting {
            state.writer_waiting = false;
            self.shared.wake.notify_one();
        }
    }
}

impl Delivery {
    /// Whether an ordinary event has no room (only a queue fills up).
    pub(super) fn is_full(&self) -> bool {
        match self {
            Delivery::Inline(_) => false,
            Delivery::Queued(q) => q.shared.waiting.load(Ordering::SeqCst) >= q.capacity,
        }
    }

    /// Hands one event over (called under the trace's lock, in `seq` order).
    pub(super) fn deliver(&self, pending: Pending, run_id: &str) {
        match self {
            // No sink: nothing to build (the run id's copy, the timestamp's text).
            Delivery::Inline(sinks) if sinks.is_empty() => {}
            Delivery::Inline(sinks) => {
                let event = pending.into_event(run_id);
                for sink in sinks {
                    sink.emit(&event);
                }
            }
            // A writer that is gone (a sink panicked) takes nothing more; the run goes on
            // regardless.
            Delivery::Queued(q) => q.push(Some(pending), None),
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
            Delivery::Queued(q) => q.push(None, Some(None)),
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
                let (ack, mut done) = tokio::sync::oneshot::channel();
                q.push(None, Some(Some(ack)));
                // The writer usually answers within microseconds (it is awake while the run
                // emits): look for the answer for a moment before this task sleeps, which
                // saves waking the runtime's thread again.
                let start = std::time::Instant::now();
                while start.elapsed() < DRAIN_SPIN.min(timeout) {
                    match done.try_recv() {
                        Ok(()) => return true,
                        Err(tokio::sync::oneshot::error::TryRecvError::Closed) => return false,
                        Err(tokio::sync::oneshot::error::TryRecvError::Empty) => {
                            std::hint::spin_loop();
                        }
                    }
                }
                matches!(tokio::time::timeout(timeout, done).await, Ok(Ok(())))
            }
        }
    }
}
