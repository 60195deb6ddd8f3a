//! People in the loop: human approvals, remote agents' questions and acting-remote
//! confirmations (kinds Approval, Input, Action) share one mechanism.
//!
//! - [`DecisionSource`]: where decisions come from. Local mode has a [`TerminalPrompt`] and, with
//!   no terminal, [`Nobody`] (approvals expire: default deny); tests and demos use
//!   [`ScriptedDecisions`]; a runner pod asks people through the sidecar's relay
//!   ([`SidecarDecisions`]). A source hears of every decision the run refused and of how each
//!   request was settled.
//! - [`People`]: asks a source on behalf of a run: the text under review and its digest (bound
//!   to the run, the approval and the text: [`approval_digest`]), the digest re-checked on
//!   approval (a wrong one is refused and reported to the source), expiry as a rejection, at
//!   most [`MAX_APPROVALS_PER_RUN`] per run, the run's deadline paused while the person decides,
//!   and the `approval.requested` / `approval.decided` events.

mod sidecar;
mod terminal;

pub use orrery_crds::approval::{
    ApprovalRequest, DEFAULT_APPROVAL_TIMEOUT, MAX_APPROVAL_TIMEOUT, MAX_COMPLETE_BYTES,
};
pub use orrery_crds::relay::approval_digest;
pub use sidecar::{SidecarDecisions, SidecarDecisionsOptions};
pub use terminal::TerminalPrompt;

use crate::events::{EventBody, Trace, format_rfc3339};
use crate::ledger::Ledger;
use async_trait::async_trait;
use orrery_crds::approval::{ApprovalKind, DecisionKind, MAX_APPROVALS_PER_RUN};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// A person's decision as a source reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Approve the text whose digest is named (for kind Input, with the person's answer).
    Approve {
        /// The digest of the text the person read.
        digest: String,
        /// For kind Input: the answer to send to the remote.
        answer: Option<String>,
    },
    /// Reject, with an optional comment (a rejected edge's node receives it).
    Reject {
        /// The reviewer's comment.
        comment: Option<String>,
    },
}

/// How a request was settled, as the run goes on with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Settled {
    /// Approved against the right digest.
    Approved {
        /// For kind Input: the person's answer.
        answer: Option<String>,
    },
    /// Rejected.
    Rejected {
        /// The reviewer's comment.
        comment: Option<String>,
    },
    /// Nobody decided in time (or nobody can): a rejection that never takes an edge.
    Expired,
    /// The run was cancelled first.
    Cancelled,
}

/// How long a request waits for the trace to be written out before it is shown.
pub const PROMPT_FLUSH_TIMEOUT: Duration = Duration::from_secs(2);

/// Why a person could not be asked.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AskError {
    /// The run already asked for the most approvals a run may ask for.
    #[error("this run has already asked for {0} approvals, the most a run may ask for")]
    LimitReached(u32),
}

/// Where decisions come from.
#[async_trait]
pub trait DecisionSource: Send + Sync {
    /// Asks for a decision. `None`: nobody can answer here (the request expires at once).
    /// A source may take as long as it likes: [`People`] enforces the expiry and the cancel.
    async fn decide(
        &self,
        request: &ApprovalRequest,
        cancel: &CancellationToken,
    ) -> Option<Decision>;

    /// A decision the run refused (a wrong digest, an approval of incomplete text): the last
    /// one `decide` returned for `request`. The request stays open; `decide` is called again.
    fn refused(&self, _request: &ApprovalRequest, _reason: &str) {}

    /// The request is settled: called exactly once per request, whatever settled it (a
    /// decision, the expiry, a cancel, or its wait dropped), after which `decide` is never
    /// called for it again. `taken` is the decision the run went on with: the last one `decide`
    /// returned, for [`Settled::Approved`] and [`Settled::Rejected`]; `None` otherwise. It is
    /// called from synchronous code (a drop included): a source that must tell someone does so
    /// in the background, without holding up the run.
    fn settled(&self, _request: &ApprovalRequest, _outcome: &Settled, _taken: Option<&Decision>) {}
}

/// Asks people on behalf of one run.
pub struct People {
    source: Arc<dyn DecisionSource>,
    trace: Trace,
    ledger: Arc<Ledger>,
    timeout: Duration,
    asked: AtomicU32,
}

impl std::fmt::Debug for People {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("People")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl People {
    /// Asks `source` for the run whose events go to `trace` and whose deadline `ledger` keeps;
    /// each request expires after `timeout` (at most [`MAX_APPROVAL_TIMEOUT`]).
    pub fn new(
        source: Arc<dyn DecisionSource>,
        trace: Trace,
        ledger: Arc<Ledger>,
        timeout: Duration,
    ) -> Self {
        People {
            source,
            trace,
            ledger,
            timeout: timeout.min(MAX_APPROVAL_TIMEOUT),
            asked: AtomicU32::new(0),
        }
    }

    /// How long a person has to decide each request.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// How many requests the run has made.
    pub fn asked(&self) -> u32 {
        self.asked.load(Ordering::SeqCst).min(MAX_APPROVALS_PER_RUN)
    }

    /// Asks a person to decide on `text` for `node_id`, and waits (the run's deadline paused)
    /// until a valid decision, the expiry or `cancel`. Every request emitted is settled by one
    /// `approval.decided`, even when the caller stops waiting (the future is dropped, e.g. a
    /// tool call cut short by a cancel): it is then recorded `cancelled` (rules 4.14, 4.15).
    pub async fn ask(
        &self,
        kind: ApprovalKind,
        node_id: &str,
        prompt: &str,
        text: &str,
        cancel: &CancellationToken,
    ) -> Result<Settled, AskError> {
        let number = self.asked.fetch_add(1, Ordering::SeqCst) + 1;
        if number > MAX_APPROVALS_PER_RUN {
            return Err(AskError::LimitReached(MAX_APPROVALS_PER_RUN));
        }
        let expires = jiff::Timestamp::now()
            .checked_add(
                jiff::SignedDuration::try_from(self.timeout).unwrap_or(jiff::SignedDuration::MAX),
            )
            .unwrap_or(jiff::Timestamp::MAX);
        let id = format!("{}-{number}", kind.word());
        let request = ApprovalRequest {
            id: id.clone(),
            kind,
            node: node_id.to_owned(),
            prompt: prompt.to_owned(),
            text: text.to_owned(),
            digest: approval_digest(self.trace.run_id(), &id, text),
            size: text.len() as u64,
            complete: text.len() <= MAX_COMPLETE_BYTES,
            expires_at: format_rfc3339(expires),
        };
        self.trace.emit(EventBody::ApprovalRequested {
            approval_id: request.id.clone(),
            node_id: request.node.clone(),
            kind,
            digest: request.digest.clone(),
            size: request.size,
            complete: request.complete,
            expires_at: request.expires_at.clone(),
            text: self.trace.content(text),
        });
        let started = Instant::now();
        let mut pending = Pending {
            people: self,
            request: &request,
            started,
            settled: false,
        };
        let (settled, taken) = {
            let _paused = self.ledger.pause();
            // The person reads the context first: every event so far (this request's
            // included) is written out before the source shows the request.
            self.trace.drain(PROMPT_FLUSH_TIMEOUT).await;
            self.wait_for_decision(&request, cancel).await
        };
        pending.settled = true;
        self.decided(&request, started, &settled, taken.as_ref());
        Ok(settled)
    }

    /// Emits `approval.decided` for a request and tells the source how it was settled.
    fn decided(
        &self,
        request: &ApprovalRequest,
        started: Instant,
        settled: &Settled,
        taken: Option<&Decision>,
    ) {
        let (decision, comment, digest) = match settled {
            Settled::Approved { answer } => (
                DecisionKind::Approved,
                answer.clone(),
                Some(request.digest.clone()),
            ),
            Settled::Rejected { comment } => (DecisionKind::Rejected, comment.clone(), None),
            Settled::Expired => (DecisionKind::Expired, None, None),
            Settled::Cancelled => (DecisionKind::Cancelled, None, None),
        };
        self.trace.emit(EventBody::ApprovalDecided {
            approval_id: request.id.clone(),
            node_id: request.node.clone(),
            kind: request.kind,
            decision,
            digest,
            wait_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            comment: comment.as_deref().and_then(|c| self.trace.content(c)),
        });
        self.source.settled(request, settled, taken);
    }

    async fn wait_for_decision(
        &self,
        request: &ApprovalRequest,
        cancel: &CancellationToken,
    ) -> (Settled, Option<Decision>) {
        let now = tokio::time::Instant::now();
        // The timeout is at most a day, so this cannot overflow; never panic if it did.
        let expiry = now
            .checked_add(self.timeout)
            .or_else(|| now.checked_add(MAX_APPROVAL_TIMEOUT))
            .unwrap_or(now);
        loop {
            let decision = tokio::select! {
                biased;
                _ = cancel.cancelled() => return (Settled::Cancelled, None),
                _ = tokio::time::sleep_until(expiry) => return (Settled::Expired, None),
                d = self.source.decide(request, cancel) => d,
            };
            match decision {
                None => return (Settled::Expired, None),
                Some(Decision::Reject { comment }) => {
                    let taken = Decision::Reject {
                        comment: comment.clone(),
                    };
                    return (Settled::Rejected { comment }, Some(taken));
                }
                Some(Decision::Approve { digest, answer }) => {
                    if !request.complete {
                        self.source.refused(
                            request,
                            "the text is over 128 KiB and was shown only in part: it can only be rejected",
                        );
                    } else if !digest.eq_ignore_ascii_case(&request.digest) {
                        self.source.refused(
                            request,
                            &format!(
                                "the digest {digest} does not match the text under review ({}); read the text again and approve its digest",
                                request.digest
                            ),
                        );
                    } else {
                        let taken = Decision::Approve {
                            digest,
                            answer: answer.clone(),
                        };
                        return (Settled::Approved { answer }, Some(taken));
                    }
                }
            }
        }
    }
}

/// A request waiting for its decision: if the wait is dropped before it settles, the request is
/// recorded `cancelled`, so no `approval.requested` is ever left without its `approval.decided`.
struct Pending<'a> {
    people: &'a People,
    request: &'a ApprovalRequest,
    started: Instant,
    settled: bool,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.settled {
            self.people
                .decided(self.request, self.started, &Settled::Cancelled, None);
        }
    }
}

/// No one can decide (no terminal; in a runner pod, no way to reach the sidecar): every request
/// expires at once, a rejection (default deny).
#[derive(Debug, Default)]
pub struct Nobody {
    /// Write nothing (otherwise the reason goes to standard error).
    quiet: bool,
    /// Why nobody can answer, when it is not the missing terminal.
    why: Option<String>,
}

impl Nobody {
    /// A source that explains on standard error that there is no terminal to ask.
    pub fn new() -> Self {
        Nobody::default()
    }

    /// A source that expires requests without writing anything.
    pub fn quiet() -> Self {
        Nobody {
            quiet: true,
            why: None,
        }
    }

    /// A source that says on standard error that nobody answers because of `why` (a clause:
    /// "no run token is next to the plan, so the sidecar cannot be reached").
    pub fn because(why: impl Into<String>) -> Self {
        Nobody {
            quiet: false,
            why: Some(why.into()),
        }
    }
}

#[async_trait]
impl DecisionSource for Nobody {
    async fn decide(
        &self,
        request: &ApprovalRequest,
        _cancel: &CancellationToken,
    ) -> Option<Decision> {
        if self.quiet {
            return None;
        }
        match &self.why {
            None => tracing::warn!(
                "{} {} at node {} needs a person, but there is no terminal to ask (standard input is not a TTY): it expires, which is a rejection (default deny). Run in a terminal to decide.",
                request.kind.word(),
                request.id,
                request.node
            ),
            Some(why) => tracing::warn!(
                "{} {} at node {} needs a person, but {why}: it expires, which is a rejection (default deny)",
                request.kind.word(),
                request.id,
                request.node
            ),
        }
        None
    }
}

/// One scripted decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScriptedDecision {
    /// Approve, naming the digest of the text under review.
    Approve,
    /// Approve naming this digest (e.g. a wrong one, which the run refuses).
    ApproveDigest(String),
    /// Answer a remote's question (kind Input), naming the right digest.
    Answer(String),
    /// Reject with an optional comment.
    Reject(Option<String>),
    /// Never decide: the request expires.
    Wait,
}

/// Decisions from a list, in order, for tests and demos. When the list runs out, requests wait
/// (and expire). Records every request, every refusal and every settlement.
#[derive(Debug, Default)]
pub struct ScriptedDecisions {
    decisions: Mutex<VecDeque<ScriptedDecision>>,
    requests: Mutex<Vec<ApprovalRequest>>,
    refusals: Mutex<Vec<String>>,
    settlements: Mutex<Vec<(String, Settled, Option<Decision>)>>,
}

impl ScriptedDecisions {
    /// Decisions taken in order.
    pub fn new(decisions: impl IntoIterator<Item = ScriptedDecision>) -> Self {
        ScriptedDecisions {
            decisions: Mutex::new(decisions.into_iter().collect()),
            ..Default::default()
        }
    }

    /// Every request seen (a refused decision's request appears again when it is asked again).
    pub fn requests(&self) -> Vec<ApprovalRequest> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Every refusal reported.
    pub fn refusals(&self) -> Vec<String> {
        self.refusals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Every settlement reported, in order: the request's id, how it was settled, and the
    /// decision taken.
    pub fn settlements(&self) -> Vec<(String, Settled, Option<Decision>)> {
        self.settlements
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

#[async_trait]
impl DecisionSource for ScriptedDecisions {
    async fn decide(
        &self,
        request: &ApprovalRequest,
        _cancel: &CancellationToken,
    ) -> Option<Decision> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(request.clone());
        let next = self
            .decisions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front();
        match next {
            Some(ScriptedDecision::Approve) => Some(Decision::Approve {
                digest: request.digest.clone(),
                answer: None,
            }),
            Some(ScriptedDecision::ApproveDigest(digest)) => Some(Decision::Approve {
                digest,
                answer: None,
            }),
            Some(ScriptedDecision::Answer(text)) => Some(Decision::Approve {
                digest: request.digest.clone(),
                answer: Some(text),
            }),
            Some(ScriptedDecision::Reject(comment)) => Some(Decision::Reject { comment }),
            Some(ScriptedDecision::Wait) | None => std::future::pending().await,
        }
    }

    fn refused(&self, _request: &ApprovalRequest, reason: &str) {
        self.refusals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(reason.to_owned());
    }

    fn settled(&self, request: &ApprovalRequest, outcome: &Settled, taken: Option<&Decision>) {
        self.settlements
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((request.id.clone(), outcome.clone(), taken.cloned()));
    }
}

#[cfg(test)]
mod tests;
