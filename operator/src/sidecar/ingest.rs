//! `POST /internal/v1/runs/{uid}/events`: a runner's trace events into the store (the contract
//! is [`orrery_crds::events::ingest`]). Only the run-scoped token of that very run is accepted
//! (signature, audience, issuer, expiry, subject = the run's UID); a batch is checked before
//! anything is stored (this run's events, numbered within the cap, consecutive, within the size
//! limits); storing is idempotent by `(run UID, seq)`, so a replay stores nothing twice; a batch
//! that starts past a gap is refused with the `seq` expected; when too many batches are being
//! stored at once the reply is 429 with `Retry-After`.

use super::Sidecar;
use super::extract::RunToken;
use super::hub::Live;
use super::problem::{Problem, body_loc};
use super::store::{RunRecord, StoreError, StoredEvent};
use crate::run_token::RunClaims;
use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use orrery_crds::approval::DecisionKind;
use orrery_crds::events::ingest::{EventBatch, IngestReply, MAX_BATCH_BYTES};
use std::sync::Arc;

/// The bearer token of `headers`, if there is one.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The claims of the run token in `headers`, checked for run `uid`: 401 without a valid run
/// token, 403 for a token of another run. Every runner endpoint starts here.
pub fn run_claims(sidecar: &Sidecar, headers: &HeaderMap, uid: &str) -> Result<RunClaims, Problem> {
    let token = bearer(headers).ok_or_else(|| {
        Problem::unauthenticated(
            "no run token: send the run's token from its Secret as `Authorization: Bearer <token>`",
        )
    })?;
    let claims = sidecar.verifier.verify(token).map_err(|_| {
        Problem::unauthenticated(
            "the run token is not valid here (signature, audience, issuer or expiry); a runner uses the token of its own run's Secret",
        )
    })?;
    if claims.sub != uid {
        return Err(Problem::forbidden(format!(
            "this token belongs to run {}/{}; it may reach only its own run's endpoints",
            claims.ns, claims.run
        )));
    }
    Ok(claims)
}

/// The handler.
pub async fn ingest(
    State(sidecar): State<Arc<Sidecar>>,
    RunToken { uid, claims }: RunToken,
    body: Body,
) -> Result<Json<IngestReply>, Problem> {
    let bytes = axum::body::to_bytes(body, MAX_BATCH_BYTES)
        .await
        .map_err(|_| {
            Problem::too_large(format!(
                "a batch is at most {MAX_BATCH_BYTES} bytes; send fewer events per batch"
            ))
        })?;
    let mut deserializer = serde_json::Deserializer::from_slice(&bytes);
    let batch: EventBatch = serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
        Problem::invalid(
            body_loc(&e.path().to_string()),
            format!("not an event batch: {}", e.inner()),
        )
    })?;
    let (first, _last) = batch.check(&uid).map_err(|e| {
        let loc = match e.index() {
            Some(i) => vec!["body".into(), "events".into(), i.into()],
            None => vec!["body".into(), "events".into()],
        };
        if matches!(e, orrery_crds::events::ingest::BatchError::TooMany { .. }) {
            Problem::too_large(e.to_string()).at(loc)
        } else {
            Problem::invalid(loc, e.to_string())
        }
    })?;
    // A trace ends with its run.end: nothing after it in the batch either.
    if let Some(end) = batch
        .events
        .iter()
        .position(|e| matches!(e.body, orrery_crds::events::EventBody::RunEnd { .. }))
        && end + 1 < batch.events.len()
    {
        return Err(Problem::invalid(
            vec!["body".into(), "events".into(), (end + 1).into()],
            format!(
                "an event after the run.end at seq {}: a trace ends with its run.end",
                batch.events[end].seq
            ),
        ));
    }
    let bodies = batch
        .events
        .iter()
        .map(serde_json::to_string)
        .collect::<Result<Vec<String>, _>>()
        .map_err(|e| Problem::invalid(vec!["body".into()], e.to_string()))?;
    let _slot = sidecar.ingest_slots.try_acquire().map_err(|_| {
        Problem::rate_limited(
            1,
            "the sidecar is storing as many batches as it can; retry after the delay",
        )
    })?;
    let run = RunRecord {
        uid: uid.clone(),
        namespace: claims.ns.clone(),
        name: claims.run.clone(),
    };
    let appended = match sidecar.store.append(&run, first, &bodies).await {
        Ok(a) => a,
        Err(StoreError::Gap { expected }) => {
            let mut p = Problem::new(
                axum::http::StatusCode::CONFLICT,
                super::problem::codes::GAP,
                format!(
                    "the batch starts at seq {first} but the sidecar holds this run's events only up to {}; resend from seq {expected}",
                    expected.saturating_sub(1)
                ),
            );
            p.body.expected = Some(expected);
            return Err(p);
        }
        Err(e @ StoreError::Ended { .. }) => {
            return Err(Problem::new(
                axum::http::StatusCode::CONFLICT,
                super::problem::codes::ENDED,
                e.to_string(),
            ));
        }
        Err(e) => {
            tracing::warn!(run_uid = %uid, "storing events of run {uid} failed: {e}");
            return Err(Problem::unavailable(
                "the event store cannot be written just now; retry with backoff",
            ));
        }
    };
    sidecar
        .metrics
        .ingested(appended.stored, appended.duplicates);
    if appended.stored > 0 {
        let fresh_from = first + (bodies.len() as u64 - appended.stored);
        let events: Vec<StoredEvent> = bodies
            .into_iter()
            .enumerate()
            .map(|(i, body)| StoredEvent {
                seq: first + i as u64,
                body,
            })
            .filter(|e| e.seq >= fresh_from)
            .collect();
        let ended = events
            .last()
            .is_some_and(|e| super::events::is_run_end(&e.body));
        let settled = runner_settlements(&events);
        let events: Arc<[StoredEvent]> = Arc::from(events);
        if let Some(exporter) = sidecar.otel.get() {
            exporter.offer(&run, events.clone());
        }
        sidecar.hub.publish(
            &uid,
            Live::Events {
                events,
                stored_at: std::time::Instant::now(),
            },
        );
        if ended || !settled.is_empty() {
            // The run's status says how many events the sidecar holds (rule 9.23) and which
            // approvals still wait; written in the background, the runner's reply does not
            // wait for the apiserver.
            let (sidecar, run) = (sidecar.clone(), run.clone());
            tokio::spawn(async move {
                for (id, outcome) in settled {
                    match sidecar.store.settle(&run.uid, &id, outcome, None).await {
                        Ok(true) => sidecar.metrics.settled(outcome),
                        Ok(false) => {}
                        Err(e) => {
                            tracing::warn!(run_uid = %run.uid, "run {}: settling approval {id} from its trace: {e}", run.uid);
                        }
                    }
                }
                if let Err(e) = super::run_status::publish_pending(&sidecar, &run).await {
                    tracing::warn!(run_uid = %run.uid, "run {}: recording its event count and pending approvals: {e}", run.uid);
                }
            });
        }
    }
    Ok(Json(IngestReply {
        stored: appended.stored,
        duplicates: appended.duplicates,
        last_seq: appended.last_seq,
    }))
}

/// The approvals the runner settled on its own in `events` (an `approval.decided` that expired
/// or was cancelled), as `(approval id, outcome)`. The runner also tells the relay, but only a
/// bounded number of times: a sidecar down at that moment (fault case 15) would keep the
/// approval pending for good, while the trace, retried until stored, always arrives. A person's
/// decision is settled by the relay alone (it names the decision's index).
fn runner_settlements(events: &[StoredEvent]) -> Vec<(String, DecisionKind)> {
    events
        .iter()
        .filter_map(|e| serde_json::from_str::<serde_json::Value>(&e.body).ok())
        .filter(|v| v["type"] == "approval.decided")
        .filter_map(|v| {
            let outcome = match v["decision"].as_str()? {
                "expired" => DecisionKind::Expired,
                "cancelled" => DecisionKind::Cancelled,
                _ => return None,
            };
            Some((v["approvalId"].as_str()?.to_owned(), outcome))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_approval_the_runner_let_expire_or_cancelled_is_settled_from_its_trace_and_a_persons_is_not()
     {
        let event = |seq: u64, body: serde_json::Value| StoredEvent {
            seq,
            body: body.to_string(),
        };
        let decided = |id: &str, decision: &str| {
            serde_json::json!({"type": "approval.decided", "approvalId": id, "nodeId": "review",
                               "kind": "Approval", "decision": decision, "waitMs": 5})
        };
        let events = [
            event(
                1,
                serde_json::json!({"type": "node.enter", "nodeId": "review"}),
            ),
            event(2, decided("approval-1", "expired")),
            event(3, decided("approval-2", "approved")),
            event(4, decided("approval-3", "cancelled")),
            event(5, decided("approval-4", "rejected")),
            event(
                6,
                serde_json::json!({"type": "approval.decided", "decision": "expired"}),
            ),
            StoredEvent {
                seq: 7,
                body: "not json".into(),
            },
        ];
        assert_eq!(
            runner_settlements(&events),
            [
                ("approval-1".to_owned(), DecisionKind::Expired),
                ("approval-3".to_owned(), DecisionKind::Cancelled),
            ]
        );
    }

    #[test]
    fn the_bearer_token_is_read_from_the_authorization_header() {
        let cases = [
            ("Bearer abc.def", Some("abc.def")),
            ("bearer  abc ", Some("abc")),
            ("Basic abc", None),
            ("Bearer ", None),
            ("abc", None),
        ];
        for (value, want) in cases {
            let mut headers = HeaderMap::new();
            headers.insert(
                axum::http::header::AUTHORIZATION,
                axum::http::HeaderValue::from_str(value)
                    .unwrap_or(axum::http::HeaderValue::from_static("x")),
            );
            assert_eq!(bearer(&headers), want, "{value:?}");
        }
        assert_eq!(bearer(&HeaderMap::new()), None);
    }
}
