//! The ingest contract between a runner and the sidecar: how a run's trace events reach the
//! store. Both sides build on these types and numbers, so they cannot drift apart.
//!
//! A runner posts its events in order, in batches, to [`ingest_path`] of the sidecar, with its
//! run-scoped token as `Authorization: Bearer <token>` (the JWT the operator put in the run's
//! Secret: audience the sidecar, subject the run's UID). A batch is the JSON of [`EventBatch`]:
//! events of that run only, `seq` ascending and without gaps, the first no later than one past
//! what the sidecar already holds. Posting a batch again (a retry after a lost reply, a runner
//! that restarts its sink) stores nothing twice: `(run UID, seq)` is the store's key.
//!
//! Replies (the body of every error is an [`ApiError`]):
//!
//! | status | meaning | what the runner does |
//! | --- | --- | --- |
//! | 200 | stored ([`IngestReply`]: how many were new, how many were already there, the last `seq` held) | sends the next batch |
//! | 400 | not a batch of this run's events (bad JSON, a gap inside the batch, a foreign `runId`, `seq` past [`MAX_EVENTS`]) | drops the batch and says so: it cannot succeed |
//! | 401 | no token, or not a valid run token (signature, audience, expiry) | stops sending |
//! | 403 | a valid token of another run | stops sending |
//! | 409 | the batch starts past a gap (`nextSeq` in the body's `expected`): events before it are missing | resends from `expected` |
//! | 413 | over [`MAX_BATCH_EVENTS`] events or [`MAX_BATCH_BYTES`] bytes | sends smaller batches |
//! | 429 | back-pressure; `Retry-After` says when to try again | waits, then resends |
//! | 5xx, no reply | the sidecar is down or restarting | retries with backoff and jitter |

use super::{MAX_EVENTS, TraceEvent};
use serde::{Deserialize, Serialize};

/// The most events in one batch.
pub const MAX_BATCH_EVENTS: usize = 256;
/// The largest batch body, in bytes (a run's whole trace with content capture on fits in a few).
pub const MAX_BATCH_BYTES: usize = 1024 * 1024;
/// The path runners post events to, with `{uid}` the run's UID.
pub const INGEST_ROUTE: &str = "/internal/v1/runs/{uid}/events";

/// The path a run posts its events to.
pub fn ingest_path(run_uid: &str) -> String {
    INGEST_ROUTE.replace("{uid}", run_uid)
}

/// A batch of one run's trace events, `seq` ascending without gaps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EventBatch {
    /// The events.
    pub events: Vec<TraceEvent>,
}

/// The sidecar's answer to a stored batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IngestReply {
    /// Events of the batch stored now.
    pub stored: u64,
    /// Events of the batch that were stored before (a replay).
    pub duplicates: u64,
    /// The last `seq` the sidecar holds for the run, with none missing before it.
    pub last_seq: u64,
}

/// The error body of every sidecar reply that is not a success: where, a stable code, and a
/// message a person can act on (the seeds' `loc`/`code`/`message`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiError {
    /// Where the problem is: a path into the request (`["body", "events", 3, "seq"]`), or
    /// empty when it is the request as a whole.
    #[serde(default)]
    pub loc: Vec<serde_json::Value>,
    /// A stable, machine-readable code (`gap`, `unauthenticated`, `forbidden`…).
    pub code: String,
    /// What is wrong and what to do.
    pub message: String,
    /// For `gap`: the `seq` the sidecar expects next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<u64>,
}

/// Why a batch is not a batch of `run_uid`'s events.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    /// No events.
    #[error("the batch holds no events")]
    Empty,
    /// Over [`MAX_BATCH_EVENTS`].
    #[error("the batch holds {count} events; send at most {MAX_BATCH_EVENTS} per batch")]
    TooMany {
        /// Events in the batch.
        count: usize,
    },
    /// An event of another run.
    #[error("event {index} (seq {seq}) has runId {found:?}, not this run's")]
    ForeignRun {
        /// Its index in the batch.
        index: usize,
        /// Its seq.
        seq: u64,
        /// Its runId.
        found: String,
    },
    /// `seq` 0 or past the per-run cap.
    #[error("event {index} has seq {seq}; a run's events are numbered 1 to {MAX_EVENTS}")]
    SeqOutOfRange {
        /// Its index in the batch.
        index: usize,
        /// Its seq.
        seq: u64,
    },
    /// Not one past the event before it.
    #[error("event {index} has seq {seq} after seq {previous}; a batch is consecutive events")]
    NotConsecutive {
        /// Its index in the batch.
        index: usize,
        /// Its seq.
        seq: u64,
        /// The seq before it.
        previous: u64,
    },
}

impl BatchError {
    /// The index of the event at fault, if one is.
    pub fn index(&self) -> Option<usize> {
        match self {
            BatchError::Empty | BatchError::TooMany { .. } => None,
            BatchError::ForeignRun { index, .. }
            | BatchError::SeqOutOfRange { index, .. }
            | BatchError::NotConsecutive { index, .. } => Some(*index),
        }
    }
}

impl EventBatch {
    /// Checks the batch is `run_uid`'s events, numbered within the cap, consecutive, and not
    /// too many. Returns the first and last `seq`.
    pub fn check(&self, run_uid: &str) -> Result<(u64, u64), BatchError> {
        let count = self.events.len();
        if count > MAX_BATCH_EVENTS {
            return Err(BatchError::TooMany { count });
        }
        let mut previous: Option<u64> = None;
        for (index, event) in self.events.iter().enumerate() {
            if event.run_id != run_uid {
                return Err(BatchError::ForeignRun {
                    index,
                    seq: event.seq,
                    found: event.run_id.clone(),
                });
            }
            if event.seq == 0 || event.seq > MAX_EVENTS {
                return Err(BatchError::SeqOutOfRange {
                    index,
                    seq: event.seq,
                });
            }
            if let Some(previous) = previous
                && event.seq != previous + 1
            {
                return Err(BatchError::NotConsecutive {
                    index,
                    seq: event.seq,
                    previous,
                });
            }
            previous = Some(event.seq);
        }
        match (self.events.first(), previous) {
            (Some(first), Some(last)) => Ok((first.seq, last)),
            _ => Err(BatchError::Empty),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::events::EventBody;
    use crate::run::RunTotals;

    fn event(run: &str, seq: u64) -> TraceEvent {
        TraceEvent {
            seq,
            run_id: run.into(),
            ts: "2026-12-02T00:00:00.000Z".into(),
            body: EventBody::NodeEnter {
                node_id: "a".into(),
                kind: "LLMAgent".into(),
                entry: seq,
                depth: 0,
                parent_entry: None,
                model: None,
                input_size: 0,
                screen_flags: Vec::new(),
                input: None,
            },
        }
    }

    fn batch(run: &str, seqs: &[u64]) -> EventBatch {
        EventBatch {
            events: seqs.iter().map(|s| event(run, *s)).collect(),
        }
    }

    #[test]
    fn a_batch_is_checked_for_run_numbering_order_and_size() {
        let too_many: Vec<u64> = (1..=MAX_BATCH_EVENTS as u64 + 1).collect();
        type Case = (EventBatch, Result<(u64, u64), BatchError>);
        let cases: Vec<Case> = vec![
            (batch("r", &[1, 2, 3]), Ok((1, 3))),
            (batch("r", &[7]), Ok((7, 7))),
            (batch("r", &[]), Err(BatchError::Empty)),
            (
                batch("r", &too_many),
                Err(BatchError::TooMany {
                    count: MAX_BATCH_EVENTS + 1,
                }),
            ),
            (
                batch("r", &[0]),
                Err(BatchError::SeqOutOfRange { index: 0, seq: 0 }),
            ),
            (
                batch("r", &[MAX_EVENTS, MAX_EVENTS + 1]),
                Err(BatchError::SeqOutOfRange {
                    index: 1,
                    seq: MAX_EVENTS + 1,
                }),
            ),
            (
                batch("r", &[1, 3]),
                Err(BatchError::NotConsecutive {
                    index: 1,
                    seq: 3,
                    previous: 1,
                }),
            ),
            (
                batch("r", &[2, 1]),
                Err(BatchError::NotConsecutive {
                    index: 1,
                    seq: 1,
                    previous: 2,
                }),
            ),
            (
                batch("other", &[1]),
                Err(BatchError::ForeignRun {
                    index: 0,
                    seq: 1,
                    found: "other".into(),
                }),
            ),
        ];
        for (batch, want) in cases {
            assert_eq!(batch.check("r"), want, "{:?}", batch.events.len());
        }
    }

    #[test]
    fn a_batch_refuses_unknown_fields_and_round_trips() {
        let b = EventBatch {
            events: vec![TraceEvent {
                seq: 1,
                run_id: "r".into(),
                ts: "2026-12-02T00:00:00.000Z".into(),
                body: EventBody::RunEnd {
                    outcome: crate::events::Outcome::Succeeded,
                    totals: RunTotals::default(),
                    error: None,
                    dropped: 0,
                    output_size: 0,
                    output: None,
                },
            }],
        };
        let text = serde_json::to_string(&b).unwrap();
        assert_eq!(serde_json::from_str::<EventBatch>(&text).unwrap(), b);
        assert!(serde_json::from_str::<EventBatch>(r#"{"events":[],"extra":1}"#).is_err());
    }

    #[test]
    fn the_ingest_path_names_the_run() {
        assert_eq!(ingest_path("u-1"), "/internal/v1/runs/u-1/events");
    }
}
