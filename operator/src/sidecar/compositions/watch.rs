//! Compositions followed live: with `Accept: text/event-stream`, `GET …/compositions` and `GET
//! …/compositions/{name}` follow the apiserver's watch of them, made with the caller's own
//! token (RBAC's `watch` verb decides), as Server-Sent Events (rule 11.25):
//!
//! - `event: ADDED|MODIFIED|DELETED`, `id:` the object's `resourceVersion`, `data:` `{"object",
//!   "managers"}`: the object without its `managedFields`, and `[{manager, operation, time}]`
//!   from them ([`super::super::objects::with_managers`]).
//! - Without `Last-Event-ID` the stream starts with an `ADDED` frame for each Composition as it
//!   is; with it, the watch starts at that `resourceVersion`, so only later changes come.
//! - When the apiserver no longer holds that version (410 Gone: too old), one `event: RESET`
//!   frame carries the Compositions as they are now, `{"items": [{"object", "managers"}],
//!   "resourceVersion"}` (its `id:` that version), and the watch goes on from there.
//! - When the apiserver ends a watch (its timeout), it is made again from the last version
//!   seen, so the stream goes on; after [`MAX_FAILURES`] failed watches in a row (the token
//!   expired, the apiserver is gone) the stream ends and the client resumes with
//!   `Last-Event-ID`.
//!
//! Each stream is one of the person's streams (`--max-streams-per-person`, 429 past it), keeps
//! an idle connection open with a comment line every [`KEEP_ALIVE`](super::super::events::KEEP_ALIVE), and ends cleanly when the
//! sidecar stops.

use super::super::Sidecar;
use super::super::caller::{Caller, cluster_problem};
use super::super::events::{StreamPermit, live_response};
use super::super::objects::with_managers;
use super::super::problem::Problem;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::response::sse::Event;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use kube::Api;
use kube::api::{ListParams, WatchEvent, WatchParams};
use orrery_crds::Composition;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

/// Failed watches in a row after which a stream ends.
pub const MAX_FAILURES: u32 = 3;
/// The longest `Last-Event-ID` taken (a `resourceVersion`).
const MAX_VERSION_LEN: usize = 64;

/// One frame of the stream.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    /// `ADDED`, `MODIFIED`, `DELETED` or `RESET`.
    pub event: &'static str,
    /// The `resourceVersion` to resume after.
    pub id: Option<String>,
    /// The JSON of `data:`.
    pub data: Value,
}

impl Frame {
    /// The frame of a watch event of kind `event` (`ADDED`…) about `object`.
    pub fn change(event: &'static str, object: Value) -> Frame {
        let id = version_of(&object);
        Frame {
            event,
            id,
            data: with_managers(object),
        }
    }

    /// The `RESET` frame: the Compositions as they are at `version`.
    pub fn reset(objects: Vec<Value>, version: &str) -> Frame {
        let items: Vec<Value> = objects.into_iter().map(with_managers).collect();
        Frame {
            event: "RESET",
            id: Some(version.to_owned()).filter(|v| is_version(v)),
            data: json!({"items": items, "resourceVersion": version}),
        }
    }

    /// As Server-Sent Events (an `id` that could break the frame is left out).
    pub fn into_event(self) -> Event {
        let mut event = Event::default().event(self.event);
        if let Some(id) = self.id.filter(|id| is_version(id)) {
            event = event.id(id);
        }
        event.data(self.data.to_string())
    }
}

/// `metadata.resourceVersion` of an object, when it is one that may be an `id`.
fn version_of(object: &Value) -> Option<String> {
    object
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|v| is_version(v))
        .map(str::to_owned)
}

/// Whether `text` may be a `resourceVersion` to resume from: 1–64 ASCII letters and digits
/// (the apiserver's versions are opaque but never need more; nothing that breaks a frame).
pub fn is_version(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= MAX_VERSION_LEN
        && text.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// `Last-Event-ID`, when sent: a `resourceVersion` ([`is_version`]), or 400.
pub fn resume_version(headers: &HeaderMap) -> Result<Option<String>, Problem> {
    let Some(value) = headers.get("last-event-id") else {
        return Ok(None);
    };
    let text = value.to_str().unwrap_or("\u{0}").trim();
    if text.is_empty() {
        return Ok(None);
    }
    if is_version(text) {
        Ok(Some(text.to_owned()))
    } else {
        Err(Problem::invalid(
            vec!["header".into(), "Last-Event-ID".into()],
            "Last-Event-ID is the `id` of the last frame received (a resourceVersion: letters \
             and digits); send it as it came, or leave it out to start from the current state",
        ))
    }
}

/// The stream of `GET …/compositions[/{name}]` with `Accept: text/event-stream`: one of the
/// caller's streams, the first watch made before the reply (so a refusal is the reply's own
/// status), then frames until the sidecar stops.
pub async fn follow(
    sidecar: &Arc<Sidecar>,
    caller: Caller,
    namespace: &str,
    name: Option<&str>,
    headers: &HeaderMap,
) -> Result<Response, Problem> {
    let resume = resume_version(headers)?;
    let permit = sidecar.streams.open(&caller.username)?;
    let what = match name {
        Some(name) => format!("watching composition {namespace}/{name}"),
        None => format!("watching compositions in {namespace}"),
    };
    let mut follower = Follower {
        api: Api::namespaced(caller.client.clone(), namespace),
        selector: name.map(|n| format!("metadata.name={n}")),
        what,
        version: resume.unwrap_or_default(),
        events: None,
        pending: VecDeque::new(),
        failures: 0,
        _permit: permit,
    };
    match follower.watch().await {
        Ok(()) => {}
        Err(kube::Error::Api(status)) if status.code == 410 => follower
            .reset()
            .await
            .map_err(|e| cluster_problem(&e, &follower.what))?,
        Err(e) => return Err(cluster_problem(&e, &follower.what)),
    }
    Ok(live_response(
        sidecar,
        futures::stream::unfold(follower, next_frame)
            .map(|frame| Ok::<Event, Infallible>(frame.into_event())),
    ))
}

struct Follower {
    api: Api<Composition>,
    /// `metadata.name=<name>` when one Composition is followed.
    selector: Option<String>,
    /// What is followed, for messages.
    what: String,
    /// The last `resourceVersion` seen ("" before any: the watch then starts with the current
    /// state).
    version: String,
    events: Option<BoxStream<'static, kube::Result<WatchEvent<Composition>>>>,
    pending: VecDeque<Frame>,
    /// Failed watches in a row.
    failures: u32,
    _permit: StreamPermit,
}

impl Follower {
    /// Starts a watch from [`Follower::version`].
    async fn watch(&mut self) -> kube::Result<()> {
        let mut params = WatchParams::default();
        if let Some(selector) = &self.selector {
            params = params.fields(selector);
        }
        let events = self.api.watch(&params, &self.version).await?;
        self.events = Some(events.boxed());
        Ok(())
    }

    /// The `RESET` frame: a list as it is now, the watch to go on from its version.
    async fn reset(&mut self) -> kube::Result<()> {
        let mut params = ListParams::default();
        if let Some(selector) = &self.selector {
            params = params.fields(selector);
        }
        let list = self.api.list(&params).await?;
        let version = list.metadata.resource_version.clone().unwrap_or_default();
        let objects = list
            .items
            .iter()
            .filter_map(|c| serde_json::to_value(c).ok())
            .collect();
        self.pending.push_back(Frame::reset(objects, &version));
        self.version = version;
        self.events = None;
        Ok(())
    }

    /// One more failed watch: `false` once there were [`MAX_FAILURES`] in a row.
    async fn failed(&mut self, why: &str) -> bool {
        self.events = None;
        self.failures += 1;
        tracing::debug!("{}: {why}", self.what);
        if self.failures >= MAX_FAILURES {
            tracing::info!(
                "{}: ending the stream after {} failed watches; the client resumes with Last-Event-ID",
                self.what,
                self.failures
            );
            return false;
        }
        tokio::time::sleep(Duration::from_millis(500 * u64::from(self.failures))).await;
        true
    }
}

async fn next_frame(mut f: Follower) -> Option<(Frame, Follower)> {
    loop {
        if let Some(frame) = f.pending.pop_front() {
            return Some((frame, f));
        }
        let Some(events) = f.events.as_mut() else {
            let outcome = match f.watch().await {
                Ok(()) => Ok(()),
                Err(kube::Error::Api(status)) if status.code == 410 => f.reset().await,
                Err(e) => Err(e),
            };
            if let Err(e) = outcome
                && !f.failed(&e.to_string()).await
            {
                return None;
            }
            continue;
        };
        let kind = match events.try_next().await {
            // The apiserver ended the watch (its timeout): watch again from the last version.
            Ok(None) => {
                f.events = None;
                continue;
            }
            Ok(Some(event)) => event,
            Err(e) => {
                if !f.failed(&e.to_string()).await {
                    return None;
                }
                continue;
            }
        };
        let (name, object) = match kind {
            WatchEvent::Added(o) => ("ADDED", o),
            WatchEvent::Modified(o) => ("MODIFIED", o),
            WatchEvent::Deleted(o) => ("DELETED", o),
            WatchEvent::Bookmark(b) => {
                f.version = b.metadata.resource_version;
                continue;
            }
            WatchEvent::Error(status) if status.code == 410 => {
                if let Err(e) = f.reset().await
                    && !f.failed(&e.to_string()).await
                {
                    return None;
                }
                continue;
            }
            WatchEvent::Error(status) => {
                if !f.failed(&status.message).await {
                    return None;
                }
                continue;
            }
        };
        f.failures = 0;
        let Ok(object) = serde_json::to_value(&object) else {
            continue;
        };
        let frame = Frame::change(name, object);
        if let Some(version) = &frame.id {
            f.version = version.clone();
        }
        return Some((frame, f));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use axum::http::HeaderValue;

    fn object(version: &str) -> Value {
        json!({
            "metadata": {"name": "notes", "resourceVersion": version, "managedFields": [
                {"manager": "orrery-console", "operation": "Apply", "time": "2026-01-01T00:00:00Z",
                 "fieldsV1": {"f:spec": {}}}
            ]},
            "spec": {"pattern": "Pipeline"}
        })
    }

    #[test]
    fn a_change_frame_is_named_by_its_kind_with_the_version_as_id_and_managers_once() {
        let frame = Frame::change("MODIFIED", object("42"));
        assert_eq!(frame.event, "MODIFIED");
        assert_eq!(frame.id.as_deref(), Some("42"));
        assert_eq!(frame.data["managers"][0]["manager"], "orrery-console");
        assert!(
            frame.data["object"]["metadata"]
                .get("managedFields")
                .is_none()
        );
        assert_eq!(frame.data["object"]["spec"]["pattern"], "Pipeline");
        // A version that could break the frame is never an id.
        assert_eq!(Frame::change("ADDED", object("4\n2")).id, None);
    }

    #[test]
    fn a_reset_frame_carries_every_object_and_the_lists_version() {
        let frame = Frame::reset(vec![object("7"), object("9")], "12");
        assert_eq!(frame.event, "RESET");
        assert_eq!(frame.id.as_deref(), Some("12"));
        assert_eq!(frame.data["resourceVersion"], "12");
        assert_eq!(
            frame.data["items"][1]["object"]["metadata"]["resourceVersion"],
            "9"
        );
        assert_eq!(frame.data["items"][0]["managers"][0]["operation"], "Apply");
    }

    #[test]
    fn last_event_id_is_a_resource_version_or_refused() {
        let mut headers = HeaderMap::new();
        assert_eq!(resume_version(&headers).unwrap(), None);
        headers.insert("last-event-id", HeaderValue::from_static(" 41 "));
        assert_eq!(resume_version(&headers).unwrap().as_deref(), Some("41"));
        for bad in ["4 1", "41;", &"9".repeat(65)] {
            headers.insert("last-event-id", HeaderValue::from_str(bad).unwrap());
            let refused = resume_version(&headers).unwrap_err();
            assert_eq!(refused.status, axum::http::StatusCode::BAD_REQUEST, "{bad}");
            assert_eq!(
                Value::from(refused.body.loc),
                json!(["header", "Last-Event-ID"])
            );
        }
    }
}
