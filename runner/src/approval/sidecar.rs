//! [`SidecarDecisions`]: a runner pod asks people through the sidecar's approval relay
//! ([`orrery_crds::relay`]), with the run's own token, on the runner's one
//! [`SidecarClient`].
//!
//! - **Ask** once per request: `POST` the [`ApprovalRequest`] (the text whole up to
//!   [`MAX_TEXT_BYTES`]; past it cut, `complete: false`, with the size and digest of the part
//!   sent, which is all the sidecar can check: such a text can only be rejected, so no approval
//!   ever names that digest). 5xx, 408, transport errors and timeouts are retried with
//!   exponential backoff and full jitter (after the reply's `Retry-After` when it has one, as a
//!   429 always is), for as long as the request is open ([`People`](super::People) ends the
//!   wait at the expiry or on cancel, dropping the call: every step is safe to drop).
//! - **Wait**: long-poll `GET` the decision with `after` one past the last decision seen for
//!   this approval and `waitSeconds` [`MAX_WAIT_SECONDS`]; 204 polls again, failures back off
//!   and poll again, a 404 (the sidecar does not hold the approval) asks again.
//! - A refusal that means nobody can ever decide (a 409 on the ask: the sidecar holds this id
//!   with another digest; the token refused; a request the sidecar calls malformed) is said on
//!   standard error and returns no decision: the request expires, a rejection (default deny).
//! - **Settle**: a decision the run refused is settled `refused` (and the next one is waited
//!   for after it); the settlement of every request (`approved`/`rejected` naming the decision
//!   taken, `expired`, `cancelled`) is posted in the background, in order, each tried a few
//!   times within [`SidecarDecisionsOptions::settle_timeout`]: the run never waits on it, and
//!   [`SidecarDecisions::wait`] lets a runner pod wait (bounded) for them before it exits.

use super::{ApprovalRequest, Decision, DecisionSource, Settled};
use crate::events::visible_inline;
use crate::sidecar_client::{
    SidecarClient, SidecarClientError, api_message, backoff_ceiling, error_chain, full_jitter,
    read_reply, retry_after,
};
use async_trait::async_trait;
use orrery_crds::approval::MAX_TEXT_BYTES;
use orrery_crds::relay::{
    MAX_WAIT_SECONDS, RelayedDecision, Settlement, approval_digest, ask_path, decision_path,
    settle_path,
};
use orrery_crds::run::DecisionVerb;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How [`SidecarDecisions`] times, retries and settles.
#[derive(Clone, Debug)]
pub struct SidecarDecisionsOptions {
    /// The connect timeout.
    pub connect_timeout: Duration,
    /// The timeout of an ask or a settlement (a long poll gets [`MAX_WAIT_SECONDS`] more).
    pub request_timeout: Duration,
    /// The first retry's backoff ceiling; doubles on every failure in a row.
    pub backoff_base: Duration,
    /// The largest backoff ceiling.
    pub backoff_max: Duration,
    /// The longest `Retry-After` honoured.
    pub max_retry_after: Duration,
    /// The least time between two long polls (a sidecar answering 204 at once is not asked in
    /// a tight loop).
    pub min_poll_interval: Duration,
    /// How many times one settlement is posted at most.
    pub settle_attempts: u32,
    /// How long one settlement is tried for at most.
    pub settle_timeout: Duration,
}

impl Default for SidecarDecisionsOptions {
    /// 5 s connect, 10 s request, backoff 100 ms doubling to 5 s, `Retry-After` up to 60 s,
    /// 1 s between polls, a settlement tried 4 times within 10 s.
    fn default() -> Self {
        SidecarDecisionsOptions {
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(10),
            backoff_base: Duration::from_millis(100),
            backoff_max: Duration::from_secs(5),
            max_retry_after: Duration::from_secs(60),
            min_poll_interval: Duration::from_secs(1),
            settle_attempts: 4,
            settle_timeout: Duration::from_secs(10),
        }
    }
}

/// What the runner knows of one open request.
#[derive(Debug, Default)]
struct Open {
    /// The sidecar took the ask.
    asked: bool,
    /// Decisions at indexes below this were seen: wait for one at or after it.
    after: usize,
    /// The index of the last decision `decide` returned.
    last: Option<usize>,
    /// A failure to reach the sidecar was said for this request.
    noted: bool,
}

/// One settlement to post.
struct Settle {
    id: String,
    settlement: Settlement,
}

struct Inner {
    client: SidecarClient,
    options: SidecarDecisionsOptions,
    /// The sidecar's URL, for notes.
    endpoint: String,
    open: Mutex<HashMap<String, Open>>,
    /// Settlements handed in and not yet delivered or given up.
    settling: tokio::sync::watch::Sender<usize>,
}

/// A [`DecisionSource`] asking people through the sidecar's relay (see the module).
pub struct SidecarDecisions {
    inner: Arc<Inner>,
    settle: tokio::sync::mpsc::UnboundedSender<Settle>,
}

impl std::fmt::Debug for SidecarDecisions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SidecarDecisions")
            .field("endpoint", &self.inner.endpoint)
            .finish_non_exhaustive()
    }
}

/// What one call to the sidecar came to.
enum Step<T> {
    /// Done.
    Done(T),
    /// A failure that may pass: back off, then again.
    Retry(String),
    /// 429 (or 5xx with `Retry-After`): again after this long.
    After(Duration, String),
    /// The sidecar does not hold the approval (ask again).
    Unknown,
    /// Nobody can decide this request through the sidecar.
    Fatal(String),
}

impl SidecarDecisions {
    /// A source asking people about run `run_uid`'s requests through the sidecar at
    /// `sidecar_url` with `token`; settlements are posted by a task spawned on `runtime`.
    pub fn new(
        sidecar_url: &str,
        run_uid: &str,
        token: &str,
        options: SidecarDecisionsOptions,
        runtime: &tokio::runtime::Handle,
    ) -> Result<SidecarDecisions, SidecarClientError> {
        let client = SidecarClient::new(
            sidecar_url,
            run_uid,
            token,
            options.connect_timeout,
            options.request_timeout,
        )?;
        let endpoint = client.url("/")?.to_string();
        let inner = Arc::new(Inner {
            client,
            options,
            endpoint,
            open: Mutex::new(HashMap::new()),
            settling: tokio::sync::watch::Sender::new(0),
        });
        let (settle, queue) = tokio::sync::mpsc::unbounded_channel();
        runtime.spawn(settle_in_order(inner.clone(), queue));
        Ok(SidecarDecisions { inner, settle })
    }

    /// Waits, at most `timeout`, until every settlement handed in so far was delivered or given
    /// up. False when some were still being tried.
    pub async fn wait(&self, timeout: Duration) -> bool {
        let mut settling = self.inner.settling.subscribe();
        tokio::time::timeout(timeout, settling.wait_for(|n| *n == 0))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Hands a settlement to the task posting them.
    fn enqueue(&self, id: &str, settlement: Settlement) {
        self.inner.settling.send_modify(|n| *n += 1);
        let item = Settle {
            id: id.to_owned(),
            settlement,
        };
        if self.settle.send(item).is_err() {
            // The task is gone (its runtime shut down): nothing will post it.
            self.inner
                .settling
                .send_modify(|n| *n = n.saturating_sub(1));
        }
    }
}

impl Inner {
    fn open(&self) -> MutexGuard<'_, HashMap<String, Open>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Says once per request that the sidecar cannot be reached (it is retried).
    fn note_failure(&self, request: &ApprovalRequest, reason: &str) {
        let first = !std::mem::replace(
            &mut self.open().entry(request.id.clone()).or_default().noted,
            true,
        );
        if first {
            tracing::warn!(
                "{} {} at node {}: {reason}; retrying until a person decides or the request expires ({})",
                request.kind.word(),
                request.id,
                visible_inline(&request.node).text,
                request.expires_at
            );
        }
    }

    /// The wait before trying again after `failures` failures in a row.
    fn backoff(&self, failures: u32) -> Duration {
        full_jitter(backoff_ceiling(
            self.options.backoff_base,
            self.options.backoff_max,
            failures,
        ))
    }

    /// The reply's `Retry-After`, capped.
    fn retry_after(&self, response: &reqwest::Response) -> Option<Duration> {
        retry_after(response).map(|s| Duration::from_secs(s).min(self.options.max_retry_after))
    }

    /// What a reply that is neither a success nor a refusal for good comes to: 429 waits its
    /// `Retry-After` (1 s without one), 408 and 5xx that too when they have one, else back off.
    fn transient<T>(
        &self,
        status: reqwest::StatusCode,
        wait: Option<Duration>,
        why: String,
    ) -> Step<T> {
        match (status.as_u16(), wait) {
            (429, wait) => Step::After(wait.unwrap_or(Duration::from_secs(1)), why),
            (_, Some(wait)) => Step::After(wait, why),
            (_, None) => Step::Retry(why),
        }
    }

    /// Posts the ask.
    async fn ask(&self, request: &ApprovalRequest) -> Step<()> {
        let url = match self.client.url(&ask_path(self.client.run_uid())) {
            Ok(url) => url,
            Err(e) => return Step::Fatal(e.to_string()),
        };
        let body = match serde_json::to_vec(&ask_of(self.client.run_uid(), request)) {
            Ok(body) => body,
            Err(e) => return Step::Fatal(format!("cannot encode the request: {e}")),
        };
        let response = match self.client.post_json(url, body).send().await {
            Ok(r) => r,
            Err(e) => {
                return Step::Retry(format!(
                    "cannot reach the sidecar at {}: {}",
                    self.endpoint,
                    error_chain(e)
                ));
            }
        };
        let status = response.status();
        let wait = self.retry_after(&response);
        let body = read_reply(response).await;
        match status.as_u16() {
            200..=299 => Step::Done(()),
            409 => Step::Fatal(format!(
                "the sidecar at {} holds {} with another digest ({}): this run cannot ask about it again",
                self.endpoint,
                request.id,
                api_message(status, &body)
            )),
            408 | 429 | 500..=599 => self.transient(
                status,
                wait,
                format!(
                    "the sidecar at {} answered {}",
                    self.endpoint,
                    api_message(status, &body)
                ),
            ),
            _ => Step::Fatal(format!(
                "the sidecar at {} refused the request ({})",
                self.endpoint,
                api_message(status, &body)
            )),
        }
    }

    /// One long poll for a decision at index `after` or later; `Done(None)`: none came.
    async fn poll(&self, request: &ApprovalRequest, after: usize) -> Step<Option<RelayedDecision>> {
        let mut url = match self
            .client
            .url(&decision_path(self.client.run_uid(), &request.id))
        {
            Ok(url) => url,
            Err(e) => return Step::Fatal(e.to_string()),
        };
        url.query_pairs_mut()
            .append_pair("after", &after.to_string())
            .append_pair("waitSeconds", &MAX_WAIT_SECONDS.to_string());
        let sent = self
            .client
            .request(reqwest::Method::GET, url)
            .timeout(Duration::from_secs(MAX_WAIT_SECONDS) + self.options.request_timeout)
            .send()
            .await;
        let response = match sent {
            Ok(r) => r,
            Err(e) => {
                return Step::Retry(format!(
                    "cannot reach the sidecar at {}: {}",
                    self.endpoint,
                    error_chain(e)
                ));
            }
        };
        let status = response.status();
        let wait = self.retry_after(&response);
        let body = read_reply(response).await;
        match status.as_u16() {
            204 => Step::Done(None),
            200..=299 => match body
                .as_deref()
                .map(serde_json::from_slice::<RelayedDecision>)
            {
                Ok(Ok(decision)) => Step::Done(Some(decision)),
                _ => Step::Retry(format!(
                    "the sidecar at {} answered HTTP {status} without a decision",
                    self.endpoint
                )),
            },
            404 => Step::Unknown,
            408 | 429 | 500..=599 => self.transient(
                status,
                wait,
                format!(
                    "the sidecar at {} answered {}",
                    self.endpoint,
                    api_message(status, &body)
                ),
            ),
            _ => Step::Fatal(format!(
                "the sidecar at {} refused to relay decisions ({})",
                self.endpoint,
                api_message(status, &body)
            )),
        }
    }

    /// Posts one settlement: a few times at most, within the settle timeout. A 404 or a 409
    /// (the sidecar no longer holds the approval as open) ends it: there is nothing left to
    /// tell.
    async fn deliver(&self, item: &Settle) {
        let deadline = Instant::now() + self.options.settle_timeout;
        let outcome = outcome_word(&item.settlement);
        let said = |why: &str| {
            tracing::warn!(
                "could not tell the sidecar at {} that {} was {outcome}: {why}",
                self.endpoint,
                item.id
            );
        };
        let url = match self
            .client
            .url(&settle_path(self.client.run_uid(), &item.id))
        {
            Ok(url) => url,
            Err(e) => return said(&e.to_string()),
        };
        let Ok(body) = serde_json::to_vec(&item.settlement) else {
            return said("the settlement cannot be encoded");
        };
        let mut last_error = String::from("no attempt was made in time");
        let attempts = self.options.settle_attempts.max(1);
        for attempt in 1..=attempts {
            let sent = tokio::time::timeout_at(
                deadline,
                self.client.post_json(url.clone(), body.clone()).send(),
            )
            .await;
            let wait = match sent {
                Err(_) => break,
                Ok(Err(e)) => {
                    last_error = format!("cannot reach it: {}", error_chain(e));
                    self.backoff(attempt)
                }
                Ok(Ok(response)) => {
                    let status = response.status();
                    let wait = self.retry_after(&response);
                    let body = read_reply(response).await;
                    match status.as_u16() {
                        200..=299 | 404 | 409 => return,
                        408 | 429 | 500..=599 => {
                            last_error = api_message(status, &body);
                            match (status.as_u16(), wait) {
                                (429, wait) => wait.unwrap_or(Duration::from_secs(1)),
                                (_, Some(wait)) => wait,
                                (_, None) => self.backoff(attempt),
                            }
                        }
                        _ => return said(&api_message(status, &body)),
                    }
                }
            };
            if attempt == attempts || Instant::now() + wait >= deadline {
                break;
            }
            tokio::time::sleep(wait).await;
        }
        said(&last_error);
    }
}

/// Posts settlements one at a time, in the order they were handed in.
async fn settle_in_order(
    inner: Arc<Inner>,
    mut queue: tokio::sync::mpsc::UnboundedReceiver<Settle>,
) {
    while let Some(item) = queue.recv().await {
        inner.deliver(&item).await;
        inner.settling.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// The relay's ask of a request of run `run_uid`: the text whole up to [`MAX_TEXT_BYTES`]; past
/// it cut, never complete, with the size and digest of the part sent (what the sidecar checks).
fn ask_of(run_uid: &str, request: &ApprovalRequest) -> ApprovalRequest {
    let mut end = request.text.len().min(MAX_TEXT_BYTES);
    while !request.text.is_char_boundary(end) {
        end -= 1;
    }
    let text = &request.text[..end];
    let whole = end == request.text.len();
    ApprovalRequest {
        id: request.id.clone(),
        kind: request.kind,
        node: request.node.clone(),
        prompt: request.prompt.clone(),
        text: text.to_owned(),
        digest: if whole {
            request.digest.clone()
        } else {
            approval_digest(run_uid, &request.id, text)
        },
        size: text.len() as u64,
        complete: request.complete && whole,
        expires_at: request.expires_at.clone(),
    }
}

/// A relayed decision as the run reads it.
fn decision_of(relayed: RelayedDecision) -> Decision {
    match relayed.decision {
        DecisionVerb::Approve => Decision::Approve {
            digest: relayed.digest.unwrap_or_default(),
            answer: relayed.answer,
        },
        DecisionVerb::Reject => Decision::Reject {
            comment: relayed.comment,
        },
    }
}

fn outcome_word(settlement: &Settlement) -> &'static str {
    match settlement {
        Settlement::Approved { .. } => "approved",
        Settlement::Rejected { .. } => "rejected",
        Settlement::Expired => "expired",
        Settlement::Cancelled => "cancelled",
        Settlement::Refused { .. } => "refused",
    }
}

#[async_trait]
impl DecisionSource for SidecarDecisions {
    async fn decide(
        &self,
        request: &ApprovalRequest,
        _cancel: &CancellationToken,
    ) -> Option<Decision> {
        // The cancel and the expiry are People's: they drop this call, which is safe at every
        // await (what was seen is recorded only once a decision is returned).
        let inner = &self.inner;
        let mut failures: u32 = 0;
        loop {
            let (asked, after) = {
                let mut open = inner.open();
                let open = open.entry(request.id.clone()).or_default();
                (open.asked, open.after)
            };
            let polled_at = Instant::now();
            let step = if asked {
                inner.poll(request, after).await
            } else {
                match inner.ask(request).await {
                    Step::Done(()) => {
                        inner.open().entry(request.id.clone()).or_default().asked = true;
                        failures = 0;
                        continue;
                    }
                    Step::Retry(why) => Step::Retry(why),
                    Step::After(wait, why) => Step::After(wait, why),
                    Step::Unknown => Step::Unknown,
                    Step::Fatal(why) => Step::Fatal(why),
                }
            };
            match step {
                Step::Done(Some(relayed)) if relayed.index >= after => {
                    let mut open = inner.open();
                    let open = open.entry(request.id.clone()).or_default();
                    open.after = relayed.index.saturating_add(1);
                    open.last = Some(relayed.index);
                    return Some(decision_of(relayed));
                }
                Step::Done(_) => {
                    // None came (or an old one, which a sidecar keeping the contract never
                    // sends): poll again, never faster than the floor.
                    failures = 0;
                    let next = polled_at + inner.options.min_poll_interval;
                    tokio::time::sleep_until(next).await;
                }
                Step::Retry(why) => {
                    inner.note_failure(request, &why);
                    failures = failures.saturating_add(1);
                    tokio::time::sleep(inner.backoff(failures)).await;
                }
                Step::After(wait, why) => {
                    inner.note_failure(request, &why);
                    tokio::time::sleep(wait).await;
                }
                Step::Unknown => {
                    inner.open().entry(request.id.clone()).or_default().asked = false;
                    failures = failures.saturating_add(1);
                    tokio::time::sleep(inner.backoff(failures)).await;
                }
                Step::Fatal(why) => {
                    tracing::warn!(
                        "{} {} at node {}: {why}; nobody can decide it, so it expires, which is a rejection (default deny)",
                        request.kind.word(),
                        request.id,
                        visible_inline(&request.node).text
                    );
                    return None;
                }
            }
        }
    }

    fn refused(&self, request: &ApprovalRequest, reason: &str) {
        let last = self
            .inner
            .open()
            .get(&request.id)
            .and_then(|open| open.last);
        if let Some(index) = last {
            self.enqueue(
                &request.id,
                Settlement::Refused {
                    index,
                    reason: reason.to_owned(),
                },
            );
        }
    }

    fn settled(&self, request: &ApprovalRequest, outcome: &Settled, _taken: Option<&Decision>) {
        let last = self
            .inner
            .open()
            .remove(&request.id)
            .and_then(|open| open.last);
        let settlement = match (outcome, last) {
            (Settled::Approved { .. }, Some(index)) => Settlement::Approved { index },
            (Settled::Rejected { .. }, Some(index)) => Settlement::Rejected { index },
            // A decision this source did not return: nothing the sidecar could match.
            (Settled::Approved { .. } | Settled::Rejected { .. }, None) => return,
            (Settled::Expired, _) => Settlement::Expired,
            (Settled::Cancelled, _) => Settlement::Cancelled,
        };
        self.enqueue(&request.id, settlement);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use orrery_crds::run::ApprovalKind;

    fn request(text: &str, complete: bool) -> ApprovalRequest {
        ApprovalRequest {
            id: "approval-1".into(),
            kind: ApprovalKind::Approval,
            node: "gate".into(),
            prompt: "Publish?".into(),
            text: text.into(),
            digest: approval_digest("u", "approval-1", text),
            size: text.len() as u64,
            complete,
            expires_at: "2026-01-01T00:00:00.000Z".into(),
        }
    }

    #[test]
    fn the_ask_carries_the_text_whole_up_to_the_relays_cap_and_cut_past_it_incomplete() {
        let small = ask_of("u", &request("draft", true));
        assert_eq!(
            (small.text.as_str(), small.size, small.complete),
            ("draft", 5, true)
        );
        assert_eq!(small.digest, request("draft", true).digest);
        // Over 128 KiB and under the relay's cap: whole, and incomplete (only rejected).
        let long = "x".repeat(200 * 1024);
        let sent = ask_of("u", &request(&long, false));
        assert_eq!((sent.text.len(), sent.complete), (long.len(), false));
        assert_eq!(sent.digest, request(&long, false).digest);
        // Multi-byte characters across the cap: cut on a character boundary, the size and
        // digest those of the part sent, which is what the sidecar checks.
        let big_text = "é".repeat(MAX_TEXT_BYTES / 2 + 10);
        let big = ask_of("u", &request(&big_text, false));
        assert!(big.text.len() <= MAX_TEXT_BYTES && big.text.len() >= MAX_TEXT_BYTES - 1);
        assert!(big_text.starts_with(&big.text));
        assert_eq!(big.size, big.text.len() as u64);
        assert!(!big.complete);
        assert_eq!(big.digest, approval_digest("u", "approval-1", &big.text));
    }

    #[test]
    fn a_relayed_decision_maps_to_the_runs_decision() {
        let approve = RelayedDecision {
            index: 3,
            decision: DecisionVerb::Approve,
            digest: Some("abc".into()),
            comment: None,
            answer: Some("yes".into()),
            decided_by: Some("jane".into()),
        };
        assert_eq!(
            decision_of(approve),
            Decision::Approve {
                digest: "abc".into(),
                answer: Some("yes".into())
            }
        );
        let reject = RelayedDecision {
            index: 4,
            decision: DecisionVerb::Reject,
            digest: None,
            comment: Some("no".into()),
            answer: None,
            decided_by: None,
        };
        assert_eq!(
            decision_of(reject),
            Decision::Reject {
                comment: Some("no".into())
            }
        );
    }
}
