//! Runs as OpenTelemetry traces: the sidecar turns each run's stored events into spans
//! ([`spans`]) as they are ingested and sends them to an OTLP/HTTP collector (protobuf,
//! `POST <endpoint>/v1/traces`). Runner pods gain no egress: the sidecar exports, the runners
//! do not.
//!
//! A collector that is down or slow never slows ingest or a run: ingest hands fresh events to
//! the exporter without waiting (a full hand-off is skipped and made up from the store), ended
//! spans wait in a bounded queue, and a batch the collector does not take is retried with
//! backoff (honouring `Retry-After`) a bounded number of times. Spans that found the queue full
//! or were given up are counted in `orrery_sidecar_otel_spans_dropped_total{reason}` and said
//! in a log line (at most one every 30 s).

pub mod spans;

use super::store::{RunRecord, Store, StoredEvent};
use crate::otel::proto::Span;
use crate::otel::{OtelError, OtelMetrics, OtelSettings, SpanSender};
use spans::{RunIdentity, RunSpans};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Ingested batches that may wait to become spans; past it a hand-off is skipped (and read
/// back from the store with the run's next batch).
pub const HANDOFF_BATCHES: usize = 4096;
/// How long a run's trace may be quiet before it is forgotten, its open spans unsent (a runner
/// that died without `run.end`).
pub const QUIET_RUN: Duration = Duration::from_secs(3600);

struct Handoff {
    run: RunRecord,
    events: Arc<[StoredEvent]>,
}

/// The exporter: cheap to offer to, never blocking.
pub struct Exporter {
    handoff: mpsc::Sender<Handoff>,
    metrics: OtelMetrics,
}

impl std::fmt::Debug for Exporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Exporter")
    }
}

impl Exporter {
    /// Starts the exporter's two tasks on the current runtime: one turns ingested events into
    /// spans, the other sends them. Both stop when `shutdown` is cancelled (the sender after
    /// one last send of what waits, for at most [`crate::otel::REQUEST_TIMEOUT`]).
    pub fn start(
        settings: OtelSettings,
        store: Store,
        metrics: OtelMetrics,
        shutdown: CancellationToken,
    ) -> Result<Exporter, OtelError> {
        let content = settings.content;
        let sender = SpanSender::start(
            settings,
            "orrery-sidecar",
            metrics.clone(),
            shutdown.clone(),
        )?;
        let (handoff, events) = mpsc::channel(HANDOFF_BATCHES);
        tokio::spawn(build_spans(events, store, content, sender, shutdown));
        Ok(Exporter { handoff, metrics })
    }

    /// Offers events `run` just stored (in `seq` order, none stored before by this process).
    /// Never waits: when the exporter is behind, the hand-off is skipped and counted, and the
    /// events are read back from the store with the run's next batch (a skipped last batch is
    /// lost to the export: the run's root span is not sent).
    pub fn offer(&self, run: &RunRecord, events: Arc<[StoredEvent]>) {
        let handoff = Handoff {
            run: run.clone(),
            events,
        };
        if self.handoff.try_send(handoff).is_err() {
            self.metrics.skipped();
        }
    }
}

struct Tracked {
    spans: RunSpans,
    touched: Instant,
}

async fn build_spans(
    mut events: mpsc::Receiver<Handoff>,
    store: Store,
    content: bool,
    sender: SpanSender,
    shutdown: CancellationToken,
) {
    let mut runs: HashMap<String, Tracked> = HashMap::new();
    let mut sweep = tokio::time::interval(Duration::from_secs(60));
    loop {
        let handoff = tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = sweep.tick() => {
                runs.retain(|_, t| t.touched.elapsed() < QUIET_RUN);
                continue;
            }
            h = events.recv() => match h {
                Some(h) => h,
                None => return,
            },
        };
        let Some(first) = handoff.events.first().map(|e| e.seq) else {
            continue;
        };
        let tracked = runs
            .entry(handoff.run.uid.clone())
            .or_insert_with(|| Tracked {
                spans: RunSpans::new(
                    RunIdentity {
                        uid: handoff.run.uid.clone(),
                        namespace: handoff.run.namespace.clone(),
                        name: handoff.run.name.clone(),
                    },
                    content,
                ),
                touched: Instant::now(),
            });
        tracked.touched = Instant::now();
        let mut ended = Vec::new();
        // Events this process did not see (another replica stored them, a hand-off was
        // skipped, the sidecar restarted): read back from the store.
        while tracked.spans.next_seq() < first {
            let after = tracked.spans.next_seq() - 1;
            let limit = u32::try_from((first - 1 - after).min(500)).unwrap_or(500);
            match store.events_after(&handoff.run.uid, after, limit).await {
                Ok(missed) if !missed.is_empty() => {
                    for event in missed.iter().filter(|e| e.seq < first) {
                        take(&mut tracked.spans, event, &mut ended);
                    }
                }
                Ok(_) => break,
                Err(e) => {
                    tracing::warn!(run_uid = %handoff.run.uid, "exporting run {}'s trace: reading its earlier events: {e}", handoff.run.uid);
                    break;
                }
            }
        }
        for event in handoff.events.iter() {
            take(&mut tracked.spans, event, &mut ended);
        }
        if tracked.spans.ended() {
            runs.remove(&handoff.run.uid);
        }
        sender.send(ended);
    }
}

fn take(spans: &mut RunSpans, event: &StoredEvent, out: &mut Vec<Span>) {
    if event.seq != spans.next_seq() {
        return;
    }
    match serde_json::from_str::<orrery_crds::events::TraceEvent>(&event.body) {
        Ok(parsed) => out.extend(spans.push(&parsed)),
        Err(e) => tracing::warn!(
            "exporting a trace: stored event {} is not a trace event: {e}",
            event.seq
        ),
    }
}
