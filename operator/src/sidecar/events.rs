//! `GET /api/v1/runs/{namespace}/{name}/events`: a run's trace events, to its owner and its
//! approvers (the caller's token must be able to `get` the StudioRun, and the caller must be
//! its owner or an approver).
//!
//! - With `Accept: text/event-stream`: Server-Sent Events. Each event's `id` is its `seq` and
//!   its `data` the event's JSON. A stream starts after `Last-Event-ID` (what a browser sends
//!   when it reconnects) or `?after=N`, replays what is stored, then follows the run live until
//!   its `run.end`; a finished run's stream ends after the replay, and so does a followed run
//!   that ends with no `run.end` (cancelled before its runner started, refused): while the
//!   stream is quiet the run's status is read every
//!   [`super::SidecarSettings::stream_status_check`], and two reads saying it ended end the
//!   stream. A comment line every 15 s
//!   keeps idle connections open; on shutdown every stream ends cleanly. Each frame is named by
//!   the event's type (`event: node.enter`, rule 9.20). At most
//!   [`super::SidecarSettings::max_streams_per_person`] streams per person at once (429 past it).
//! - Otherwise a JSON page: `{"events": [...], "next": N, "complete": bool}` with `?after=N`
//!   (default 0) and `?limit=M` (default and at most [`MAX_PAGE`]); `next` is the `after` of the
//!   next page; `complete` says the page ends with `run.end`.
//!
//! A follower never loses an event: it subscribes to live wakes before it reads the store, and
//! whenever a wake is not the next `seq` it expects (another replica stored it, it lagged, a
//! wake was lost) it reads the store from its cursor (rules 9.21, 10.40).

use super::Sidecar;
use super::caller::{Caller, run_for_owner_or_approver};
use super::hub::Live;
use super::problem::Problem;
use super::store::StoredEvent;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use orrery_crds::run::RunPhase;
use serde::Deserialize;
use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::broadcast;

/// The most events in one JSON page, and in one read of the store by a follower.
pub const MAX_PAGE: u32 = 500;
/// The keep-alive interval of an event stream.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The query of the events endpoint.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventsQuery {
    /// Events after this `seq`.
    pub after: Option<u64>,
    /// At most this many (pages only).
    pub limit: Option<u32>,
}

/// The handler.
pub async fn events(
    State(sidecar): State<Arc<Sidecar>>,
    Path((namespace, name)): Path<(String, String)>,
    query: Result<Query<EventsQuery>, axum::extract::rejection::QueryRejection>,
    caller: Caller,
    headers: HeaderMap,
) -> Result<Response, Problem> {
    let Query(query) = query.map_err(|e| {
        Problem::invalid(
            vec!["query".into()],
            format!(
                "{}; the parameters are `after` and `limit`, both whole numbers",
                e.body_text()
            ),
        )
    })?;
    let run = run_for_owner_or_approver(&caller, &namespace, &name).await?;
    let uid = run.metadata.uid.clone().ok_or_else(|| {
        Problem::not_found(format!("studiorun {namespace}/{name} has no UID yet"))
    })?;
    if !wants_stream(&headers) {
        let mut reply = page(&sidecar, &uid, query).await?;
        reply
            .headers_mut()
            .insert(HINT_HEADER, HeaderValue::from_static(JSON_PAGE_HINT));
        reply
            .headers_mut()
            .insert(header::VARY, HeaderValue::from_static("Accept"));
        return Ok(reply);
    }
    let after = match last_event_id(&headers)? {
        Some(id) => id,
        None => query.after.unwrap_or(0),
    };
    let permit = sidecar.streams.open(&caller.username)?;
    let finished = run
        .status
        .as_ref()
        .and_then(|s| s.phase)
        .is_some_and(RunPhase::is_terminal);
    // Subscribe before the backlog is read: nothing stored in between is missed.
    let rx = sidecar.hub.subscribe(&uid);
    let follow = Follow {
        sidecar: sidecar.clone(),
        namespace,
        name,
        uid,
        cursor: after,
        rx,
        pending: VecDeque::new(),
        read_store: true,
        ended: false,
        finished,
        ended_reads: 0,
        _permit: permit,
    };
    Ok(live_response(
        &sidecar,
        futures::stream::unfold(follow, next_event),
    ))
}

/// A live stream as the sidecar serves every one: a comment every [`KEEP_ALIVE`] on an idle
/// connection, ended cleanly on shutdown, and marked so that proxies (nginx) do not buffer it.
pub fn live_response<S>(sidecar: &Sidecar, stream: S) -> Response
where
    S: futures::Stream<Item = Result<Event, Infallible>> + Send + 'static,
{
    // Counted open while the stream lives (the guard goes with the stream).
    let open = sidecar.metrics.stream_opened();
    let stream = stream
        .map(move |event| {
            let _open = &open;
            event
        })
        .take_until(sidecar.shutdown.clone().cancelled_owned());
    let mut response = Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response();
    response
        .headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// Whether the request asks for Server-Sent Events (`Accept: text/event-stream`); any other
/// `Accept` gets the route's JSON.
pub fn wants_stream(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/event-stream"))
}

/// `Last-Event-ID`, when sent: a whole number, or 400.
fn last_event_id(headers: &HeaderMap) -> Result<Option<u64>, Problem> {
    let Some(value) = headers.get("last-event-id") else {
        return Ok(None);
    };
    let text = value.to_str().unwrap_or_default().trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse::<u64>().map(Some).map_err(|_| {
        Problem::invalid(
            vec!["header".into(), "Last-Event-ID".into()],
            "Last-Event-ID is the `seq` of the last event received, a whole number",
        )
    })
}

/// The header a JSON page of events carries to say a live stream exists (`curl -N` without
/// `Accept: text/event-stream` otherwise sees one JSON blob and no hint why).
pub const HINT_HEADER: &str = "orrery-hint";
/// What [`HINT_HEADER`] says.
pub const JSON_PAGE_HINT: &str = "this is one JSON page of stored events; send Accept: text/event-stream to follow the run live (Server-Sent Events)";

async fn page(sidecar: &Sidecar, uid: &str, query: EventsQuery) -> Result<Response, Problem> {
    let after = query.after.unwrap_or(0);
    let limit = query.limit.unwrap_or(MAX_PAGE).clamp(1, MAX_PAGE);
    let events = sidecar
        .store
        .events_after(uid, after, limit)
        .await
        .map_err(|e| {
            tracing::warn!(run_uid = %uid, "reading events of run {uid}: {e}");
            Problem::unavailable("the event store cannot be read just now; retry")
        })?;
    let next = events.last().map_or(after, |e| e.seq);
    let complete = events.last().is_some_and(|e| is_run_end(&e.body));
    // The stored bodies are JSON the sidecar wrote itself: joined, not parsed again.
    let bodies: Vec<&str> = events.iter().map(|e| e.body.as_str()).collect();
    let body = format!(
        "{{\"events\":[{}],\"next\":{next},\"complete\":{complete}}}",
        bodies.join(",")
    );
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}

/// The `type` of a stored event (`node.enter`, `run.end`…), if it has one.
pub fn event_type(body: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Kind<'a> {
        #[serde(rename = "type", borrow)]
        kind: std::borrow::Cow<'a, str>,
    }
    serde_json::from_str::<Kind<'_>>(body)
        .ok()
        .map(|k| k.kind.into_owned())
}

/// Whether a stored event is the run's `run.end`.
pub fn is_run_end(body: &str) -> bool {
    event_type(body).as_deref() == Some("run.end")
}

struct Follow {
    sidecar: Arc<Sidecar>,
    namespace: String,
    name: String,
    uid: String,
    cursor: u64,
    rx: broadcast::Receiver<Live>,
    /// Events to send, with when this process stored them when they came live (not read back).
    pending: VecDeque<(StoredEvent, Option<std::time::Instant>)>,
    /// The store may hold events past the cursor.
    read_store: bool,
    /// `run.end` went out.
    ended: bool,
    /// The run was over when the stream started: end after the replay.
    finished: bool,
    /// Quiet checks in a row that found the run over with no `run.end` stored (cancelled or
    /// refused before its runner started): at [`ENDED_READS`] the stream ends.
    ended_reads: u8,
    _permit: StreamPermit,
}

async fn next_event(mut f: Follow) -> Option<(Result<Event, Infallible>, Follow)> {
    loop {
        if let Some((e, stored_at)) = f.pending.pop_front() {
            if e.seq <= f.cursor {
                continue;
            }
            if let Some(at) = stored_at {
                f.sidecar.metrics.delivered(at);
            }
            f.cursor = e.seq;
            let kind = event_type(&e.body);
            f.ended = kind.as_deref() == Some("run.end");
            let mut event = Event::default().id(e.seq.to_string());
            // The type names the frame (rule 9.20); the stored types are plain dotted names.
            if let Some(kind) = kind.filter(|k| k.bytes().all(|b| b.is_ascii_graphic())) {
                event = event.event(kind);
            }
            let event = event.data(e.body);
            return Some((Ok(event), f));
        }
        if f.ended {
            return None;
        }
        if f.read_store {
            match f
                .sidecar
                .store
                .events_after(&f.uid, f.cursor, MAX_PAGE)
                .await
            {
                Ok(events) => {
                    f.read_store = events.len() == MAX_PAGE as usize;
                    f.pending.extend(events.into_iter().map(|e| (e, None)));
                }
                Err(e) => {
                    tracing::warn!(run_uid = %f.uid, "following run {}: {e}", f.uid);
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
            continue;
        }
        if f.finished {
            return None;
        }
        let Ok(woken) = tokio::time::timeout(f.sidecar.stream_status_check, f.rx.recv()).await
        else {
            // Quiet for a while: a run that ended with no `run.end` (cancelled before its pod
            // started, refused) would otherwise hold the stream open for ever. Read the store
            // once more between the checks, so an event stored meanwhile still goes out.
            if run_has_ended(&f).await {
                f.ended_reads += 1;
                if f.ended_reads >= ENDED_READS {
                    return None;
                }
                f.read_store = true;
            } else {
                f.ended_reads = 0;
            }
            continue;
        };
        match woken {
            Ok(Live::Events { events, stored_at }) => match (events.first(), events.last()) {
                (Some(first), _) if first.seq == f.cursor + 1 => {
                    f.pending
                        .extend(events.iter().cloned().map(|e| (e, Some(stored_at))));
                }
                (_, Some(last)) if last.seq > f.cursor => f.read_store = true,
                _ => {}
            },
            Ok(Live::Wake(last)) => f.read_store = last > f.cursor,
            Err(broadcast::error::RecvError::Lagged(_)) => f.read_store = true,
            Err(broadcast::error::RecvError::Closed) => return None,
        }
    }
}

/// Quiet checks in a row that must find a run over, with no `run.end`, before its stream ends:
/// two, so a `run.end` still on its way (a runner retrying its last batch) is not cut off.
pub const ENDED_READS: u8 = 2;

/// Whether the followed run's status says it is over (read with the sidecar's own client; the
/// caller was checked when the stream opened). A run deleted, or made again under its name, is
/// over too. No client, or an apiserver that does not answer: not known to be over.
async fn run_has_ended(f: &Follow) -> bool {
    let Some(client) = f.sidecar.own_client.clone() else {
        return false;
    };
    let api = kube::Api::<orrery_crds::StudioRun>::namespaced(client, &f.namespace);
    match api.get_opt(&f.name).await {
        Ok(Some(run)) => {
            run.metadata.uid.as_deref() != Some(f.uid.as_str())
                || run
                    .status
                    .and_then(|s| s.phase)
                    .is_some_and(RunPhase::is_terminal)
        }
        Ok(None) => true,
        Err(e) => {
            tracing::debug!(run_uid = %f.uid, "reading studiorun {}/{} for its stream: {e}", f.namespace, f.name);
            false
        }
    }
}

/// Open streams per person.
#[derive(Debug)]
pub struct StreamLimits {
    max: usize,
    open: Arc<Mutex<HashMap<String, usize>>>,
}

/// One open stream, counted until dropped.
#[derive(Debug)]
pub struct StreamPermit {
    user: String,
    open: Arc<Mutex<HashMap<String, usize>>>,
}

impl StreamLimits {
    /// At most `max` streams per person.
    pub fn new(max: usize) -> StreamLimits {
        StreamLimits {
            max,
            open: Arc::default(),
        }
    }

    /// A permit for one more stream of `user`, or 429.
    pub fn open(&self, user: &str) -> Result<StreamPermit, Problem> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let count = open.entry(user.to_owned()).or_insert(0);
        if *count >= self.max {
            return Err(Problem::rate_limited(
                5,
                format!(
                    "{user} has {} event streams open, the most one person may; close one first",
                    self.max
                ),
            ));
        }
        *count += 1;
        Ok(StreamPermit {
            user: user.to_owned(),
            open: self.open.clone(),
        })
    }

    /// Streams `user` has open.
    pub fn count(&self, user: &str) -> usize {
        let open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.get(user).copied().unwrap_or(0)
    }
}

impl Drop for StreamPermit {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = open.get_mut(&self.user) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&self.user);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_person_may_hold_only_so_many_streams_and_a_closed_one_frees_its_place() {
        let limits = StreamLimits::new(2);
        let a = limits.open("alice").unwrap();
        let _b = limits.open("alice").unwrap();
        let refused = limits.open("alice").unwrap_err();
        assert_eq!(refused.status, axum::http::StatusCode::TOO_MANY_REQUESTS);
        assert!(
            refused
                .body
                .message
                .contains("alice has 2 event streams open")
        );
        assert!(
            limits.open("bob").is_ok(),
            "another person is not limited by alice"
        );
        drop(a);
        assert_eq!(limits.count("alice"), 1);
        assert!(limits.open("alice").is_ok());
    }

    #[test]
    fn run_end_is_recognised_by_the_event_type_alone() {
        assert!(is_run_end(
            r#"{"type":"run.end","seq":9,"x":{"type":"no"}}"#
        ));
        assert!(!is_run_end(
            r#"{"seq":1,"type":"node.enter","note":"run.end"}"#
        ));
        assert!(!is_run_end("not json"));
    }

    #[test]
    fn last_event_id_is_a_whole_number_or_refused() {
        let mut headers = HeaderMap::new();
        assert_eq!(last_event_id(&headers).unwrap(), None);
        headers.insert("last-event-id", HeaderValue::from_static("41"));
        assert_eq!(last_event_id(&headers).unwrap(), Some(41));
        headers.insert("last-event-id", HeaderValue::from_static("x1"));
        assert_eq!(
            last_event_id(&headers).unwrap_err().status,
            axum::http::StatusCode::BAD_REQUEST
        );
    }
}
