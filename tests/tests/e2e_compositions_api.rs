//! The sidecar's Composition routes (issue 24, console part 2) end to end on the real control
//! plane, with the Composition controller running in-process (it records the revisions) and a
//! sidecar of the test's own: saves by server-side apply with the person's own token (rule
//! 11.15), their conflicts (a stale `resourceVersion`, fields another manager owns, a dry run
//! whose merge differs) and their per-person limit; the revisions as the ControllerRevisions
//! hold them; Compositions followed live over the apiserver's watch with `Last-Event-ID` resume
//! and `RESET`; and the seed import, equal to `orrery import`'s.
//!
//! Alice is bound to the example studio-user Role and the example composition-editor Role; bob
//! to studio-user only (he may read, not save).
//!
//! Control plane: `ORRERY_TESTENV_KUBECONFIG` (set by `tests/e2e.sh`), else one started for
//! this test binary. Needs the `orrery` binary (`cargo build -p orrery-runner --bin orrery`).

use anyhow::{Context as _, Result, bail, ensure};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::ControllerRevision;
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, Client};
use orrery_crds::Composition;
use orrery_operator::revisions::{COMPOSITION_UID_LABEL, spec_digest, spec_of};
use orrery_operator::sidecar::SidecarSettings;
use orrery_tests::harness::eventually;
use orrery_tests::manifests::scripted_model;
use orrery_tests::pod_executor::default_bin_dir;
use orrery_tests::sidecar_fixture::TestSidecar;
use orrery_tests::studio::{
    Studio, StudioOptions, api_call, grant_composition_editor, http_client, token,
};
use orrery_tests::testenv::{ALICE, BOB};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use std::time::Duration;

/// A two-node pipeline on the scripted model; `draft`'s instruction as given.
fn spec(draft: &str) -> Value {
    json!({
        "pattern": "Pipeline",
        "budgets": {"timeoutSeconds": 600},
        "nodes": [
            {"id": "draft", "kind": "LLMAgent", "model": "scripted", "instruction": draft},
            {"id": "polish", "kind": "LLMAgent", "model": "scripted", "instruction": "Polish it."}
        ],
        "edges": [{"from": "draft", "to": "polish"}]
    })
}

/// The system in a namespace of its own (alice and bob studio users, alice an editor), and a
/// sidecar with `settings` serving them.
async fn start(prefix: &str, settings: SidecarSettings) -> Result<(Studio, TestSidecar)> {
    let sidecar = TestSidecar::sqlite(prefix, settings).await?;
    let models = scripted_model(
        "scripted",
        json!({"draft": [{"reply": "d"}], "polish": [{"reply": "p"}]}),
    );
    let studio = Studio::start(StudioOptions {
        prefix,
        sidecar_url: &sidecar.url,
        manifests: &models,
        users: &[ALICE, BOB],
        policies: false,
        configure: &|_| {},
    })
    .await?;
    if let Err(e) = grant_composition_editor(studio.env, &studio.ns.name, ALICE).await {
        let _ = studio.shutdown().await;
        return Err(e);
    }
    Ok((studio, sidecar))
}

/// Runs `test`, then stops the studio and the sidecar whatever happened.
async fn with_studio(
    prefix: &str,
    settings: SidecarSettings,
    test: impl AsyncFnOnce(&Studio, &TestSidecar) -> Result<()>,
) -> Result<()> {
    let (studio, mut sidecar) = start(prefix, settings).await?;
    let result = test(&studio, &sidecar).await;
    let stopped = studio.shutdown().await;
    let _ = sidecar.stop().await;
    result.and(stopped)
}

/// `PUT …/compositions/{name}` as the holder of `token`.
async fn save(
    sidecar: &TestSidecar,
    ns: &str,
    name: &str,
    token: &str,
    body: Value,
) -> Result<(StatusCode, Value)> {
    api_call(
        Method::PUT,
        format!("{}/api/v1/namespaces/{ns}/compositions/{name}", sidecar.url),
        token,
        Some(body),
    )
    .await
}

/// Waits until the controller has recorded the Composition's current generation (its status
/// names the revision), so nothing but the test changes it afterwards; returns it.
async fn settled(admin: &Client, ns: &str, name: &str) -> Result<Composition> {
    let api: Api<Composition> = Api::namespaced(admin.clone(), ns);
    eventually(Duration::from_secs(60), || async {
        let c = api.get(name).await?;
        let status = c.status.as_ref().context("no status yet")?;
        ensure!(
            status.observed_generation == c.metadata.generation && status.revision.is_some(),
            "generation {:?} not recorded yet",
            c.metadata.generation
        );
        Ok(c)
    })
    .await
}

fn version(object: &Value) -> String {
    object["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The managers of the object's `managedFields`, as `manager/operation`.
fn managers(c: &Composition) -> Vec<String> {
    c.metadata
        .managed_fields
        .iter()
        .flatten()
        .map(|m| {
            format!(
                "{}/{}",
                m.manager.as_deref().unwrap_or_default(),
                m.operation.as_deref().unwrap_or_default()
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_save_creates_then_updates_as_orrery_console_and_never_overwrites_a_newer_version_rule_11_15()
-> Result<()> {
    with_studio(
        "cs-save",
        SidecarSettings::default(),
        async |studio, sidecar| {
            let ns = &studio.ns.name;
            let alice = token(studio.env, ALICE)?;
            let bob = token(studio.env, BOB)?;

            // Created (201) by server-side apply as orrery-console.
            let (status, created) = save(
                sidecar,
                ns,
                "notes",
                &alice,
                json!({"spec": spec("Draft it.")}),
            )
            .await?;
            ensure!(status == StatusCode::CREATED, "create: {status} {created}");
            ensure!(
                created["spec"]["nodes"][0]["instruction"] == "Draft it.",
                "{created}"
            );
            let first = settled(&studio.admin, ns, "notes").await?;
            ensure!(
                managers(&first).contains(&"orrery-console/Apply".to_owned()),
                "{:?}",
                managers(&first)
            );
            // A create-only save of a taken name: 409 exists, with the object as it is.
            let (status, body) = save(
                sidecar,
                ns,
                "notes",
                &alice,
                json!({"spec": spec("Again.")}),
            )
            .await?;
            ensure!(
                status == StatusCode::CONFLICT
                    && body["code"] == "exists"
                    && body["current"]["metadata"]["name"] == "notes",
                "exists: {status} {body}"
            );

            // Updated (200) with the version read.
            let read = first
                .metadata
                .resource_version
                .clone()
                .context("a version")?;
            let (status, updated) = save(
                sidecar,
                ns,
                "notes",
                &alice,
                json!({"spec": spec("Draft it well."), "resourceVersion": read}),
            )
            .await?;
            ensure!(status == StatusCode::OK, "update: {status} {updated}");
            let second = settled(&studio.admin, ns, "notes").await?;
            ensure!(
                second.spec.nodes[0].instruction.as_deref() == Some("Draft it well.")
                    && second.metadata.generation == Some(2)
                    && managers(&second).contains(&"orrery-console/Apply".to_owned()),
                "{:?} {:?}",
                second.spec.nodes[0].instruction,
                managers(&second)
            );

            // The version read before that update is stale now: 409 conflict with the current object.
            let (status, body) = save(
                sidecar,
                ns,
                "notes",
                &alice,
                json!({"spec": spec("Overwrite."), "resourceVersion": read}),
            )
            .await?;
            ensure!(
                status == StatusCode::CONFLICT
                    && body["code"] == "conflict"
                    && body["current"]["spec"]["nodes"][0]["instruction"] == "Draft it well."
                    && body["current"]["metadata"]["resourceVersion"]
                        == json!(second.metadata.resource_version),
                "stale: {status} {body}"
            );

            // An invalid spec: 422 with every finding, nothing written.
            let mut invalid = spec("Draft it.");
            invalid["edges"] = json!([{"from": "draft", "to": "nowhere"}]);
            let (status, body) = save(
                sidecar,
                ns,
                "notes",
                &alice,
                json!({"spec": invalid, "resourceVersion": version(&updated)}),
            )
            .await?;
            let errors = body["errors"].as_array().cloned().unwrap_or_default();
            ensure!(
                status == StatusCode::UNPROCESSABLE_ENTITY
                    && body["code"] == "invalid_composition"
                    && !errors.is_empty()
                    && errors.iter().all(|e| e["loc"][0] == "spec"),
                "invalid: {status} {body}"
            );
            // An unknown field of the body: 400 naming it.
            let (status, body) = save(
                sidecar,
                ns,
                "notes",
                &alice,
                json!({"spec": spec("x"), "overwrite": true}),
            )
            .await?;
            ensure!(
                status == StatusCode::BAD_REQUEST
                    && body["message"]
                        .as_str()
                        .is_some_and(|m| m.contains("overwrite")),
                "unknown field: {status} {body}"
            );

            // Bob may read Compositions but has no editor Role: the apiserver's refusal, as it is.
            let (status, body) =
                save(sidecar, ns, "bobs", &bob, json!({"spec": spec("Mine.")})).await?;
            ensure!(
                status == StatusCode::FORBIDDEN
                    && body["message"].as_str().is_some_and(|m| m
                        .contains(r#"User "bob" cannot patch resource "compositions""#)
                        && m.contains("composition-editor-role.yaml")),
                "bob: {status} {body}"
            );
            let stored = Api::<Composition>::namespaced(studio.admin.clone(), ns)
                .get("notes")
                .await?;
            ensure!(
                stored.metadata.generation == Some(2),
                "nothing else was written"
            );
            Ok(())
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_managers_field_is_a_field_conflict_a_dry_run_shows_the_merge_and_force_takes_over()
-> Result<()> {
    with_studio("cs-merge", SidecarSettings::default(), async |studio, sidecar| {
        let ns = &studio.ns.name;
        let alice = token(studio.env, ALICE)?;
        let (status, body) = save(sidecar, ns, "notes", &alice, json!({"spec": spec("Draft it.")})).await?;
        ensure!(status == StatusCode::CREATED, "{status} {body}");
        settled(&studio.admin, ns, "notes").await?;

        // `kubectl apply --server-side --force-conflicts` of another instruction for `draft` and a
        // node of its own.
        let kubectl = json!({
            "apiVersion": "studio.orrery.dev/v1alpha1", "kind": "Composition",
            "metadata": {"name": "notes"},
            "spec": {"nodes": [
                {"id": "draft", "kind": "LLMAgent", "instruction": "Admin's words."},
                {"id": "extra", "kind": "LLMAgent", "model": "scripted", "instruction": "Extra."}
            ]}
        });
        Api::<Composition>::namespaced(studio.admin.clone(), ns)
            .patch("notes", &PatchParams::apply("kubectl").force(), &Patch::Apply(&kubectl))
            .await
            .context("kubectl's apply")?;
        let current = settled(&studio.admin, ns, "notes").await?;
        let read = current.metadata.resource_version.clone().context("a version")?;

        // Alice's own instruction again: kubectl owns that field now.
        let (status, body) = save(sidecar, ns, "notes", &alice, json!({"spec": spec("Draft it."), "resourceVersion": read})).await?;
        let conflicts = body["conflicts"].as_array().cloned().unwrap_or_default();
        ensure!(
            status == StatusCode::CONFLICT
                && body["code"] == "field_conflict"
                && conflicts.iter().any(|c| c["manager"] == "kubectl"
                    && c["field"].as_str().is_some_and(|f| f.contains("draft") && f.contains("instruction")))
                && body["message"].as_str().is_some_and(|m| m.contains("kubectl")),
            "field conflict: {status} {body}"
        );

        // A dry run with kubectl's value (no conflict) but without its node: the merge keeps the
        // node, so what would be stored is not what was sent.
        let (status, body) = save(
            sidecar, ns, "notes", &alice,
            json!({"spec": spec("Admin's words."), "resourceVersion": read, "dryRun": true}),
        )
        .await?;
        let merged_ids: Vec<&str> = body["merged"]["nodes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|n| n["id"].as_str())
            .collect();
        ensure!(
            status == StatusCode::CONFLICT && body["code"] == "merge_differs" && merged_ids.contains(&"extra"),
            "merge differs: {status} {body}"
        );
        let unchanged = Api::<Composition>::namespaced(studio.admin.clone(), ns).get("notes").await?;
        ensure!(unchanged.metadata.resource_version.as_deref() == Some(read.as_str()), "a dry run stores nothing");

        // Forced, alice's instruction takes the field over; kubectl's node stays its own.
        let (status, body) = save(
            sidecar, ns, "notes", &alice,
            json!({"spec": spec("Draft it."), "resourceVersion": read, "force": true}),
        )
        .await?;
        ensure!(status == StatusCode::OK, "force: {status} {body}");
        let after = settled(&studio.admin, ns, "notes").await?;
        let ids: Vec<&str> = after.spec.nodes.iter().map(|n| n.id.as_str()).collect();
        ensure!(
            after.spec.nodes[0].instruction.as_deref() == Some("Draft it.") && ids.contains(&"extra"),
            "{ids:?}"
        );
        // The field is alice's now: the same save without force is no conflict.
        let (status, body) = save(
            sidecar, ns, "notes", &alice,
            json!({"spec": spec("Draft it."), "resourceVersion": after.metadata.resource_version}),
        )
        .await?;
        ensure!(status == StatusCode::OK, "after the takeover: {status} {body}");
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn saves_past_the_per_person_limit_are_refused_429_with_retry_after() -> Result<()> {
    let settings = SidecarSettings {
        saves_per_minute: 2,
        ..SidecarSettings::default()
    };
    with_studio("cs-limit", settings, async |studio, sidecar| {
        let ns = &studio.ns.name;
        let alice = token(studio.env, ALICE)?;
        for n in 0..2 {
            let body = json!({"spec": spec("Draft it."), "dryRun": true});
            let (status, reply) = save(sidecar, ns, "notes", &alice, body).await?;
            ensure!(
                status == StatusCode::CREATED,
                "dry run {n}: {status} {reply}"
            );
        }
        let response = http_client()?
            .put(format!(
                "{}/api/v1/namespaces/{ns}/compositions/notes",
                sidecar.url
            ))
            .bearer_auth(&alice)
            .json(&json!({"spec": spec("Draft it.")}))
            .send()
            .await?;
        ensure!(
            response.status() == StatusCode::TOO_MANY_REQUESTS,
            "{}",
            response.status()
        );
        ensure!(
            response.headers().contains_key("retry-after"),
            "Retry-After"
        );
        let body: Value = response.json().await?;
        ensure!(
            body["message"]
                .as_str()
                .is_some_and(|m| m.contains("2 composition saves")),
            "{body}"
        );
        // Bob is not limited by alice's saves (he gets as far as the apiserver's refusal).
        let bob = token(studio.env, BOB)?;
        let (status, _) = save(
            sidecar,
            ns,
            "notes",
            &bob,
            json!({"spec": spec("Draft it."), "dryRun": true}),
        )
        .await?;
        ensure!(status == StatusCode::FORBIDDEN, "bob: {status}");
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_revisions_after_two_saves_are_the_compositions_controller_revisions() -> Result<()> {
    with_studio(
        "cs-revs",
        SidecarSettings::default(),
        async |studio, sidecar| {
            let ns = &studio.ns.name;
            let alice = token(studio.env, ALICE)?;
            let (status, body) =
                save(sidecar, ns, "notes", &alice, json!({"spec": spec("One.")})).await?;
            ensure!(status == StatusCode::CREATED, "{status} {body}");
            let first = settled(&studio.admin, ns, "notes").await?;
            let body =
                json!({"spec": spec("Two."), "resourceVersion": first.metadata.resource_version});
            let (status, reply) = save(sidecar, ns, "notes", &alice, body).await?;
            ensure!(status == StatusCode::OK, "{status} {reply}");
            let second = settled(&studio.admin, ns, "notes").await?;
            ensure!(
                second.status.as_ref().and_then(|s| s.revision) == Some(2),
                "revision 2 recorded"
            );

            // What the ControllerRevisions hold, newest first.
            let uid = second.metadata.uid.clone().context("uid")?;
            let mut held = Api::<ControllerRevision>::namespaced(studio.admin.clone(), ns)
                .list(&ListParams::default().labels(&format!("{COMPOSITION_UID_LABEL}={uid}")))
                .await?
                .items;
            held.sort_by_key(|r| std::cmp::Reverse(r.revision));
            let mut want = Vec::new();
            for r in &held {
                let spec = spec_of(r)?;
                want.push(
                    json!({"revision": r.revision, "digest": spec_digest(&spec)?, "spec": spec,
                             "created": r.metadata.creation_timestamp}),
                );
            }
            ensure!(want.len() == 2, "two revisions held: {want:?}");

            let base = format!(
                "{}/api/v1/namespaces/{ns}/compositions/notes/revisions",
                sidecar.url
            );
            let (status, list) = api_call(Method::GET, base.clone(), &alice, None).await?;
            ensure!(status == StatusCode::OK, "{status} {list}");
            ensure!(list["items"] == json!(want), "{list}\n{want:?}");
            ensure!(
                list["items"][1]["spec"]["nodes"][0]["instruction"] == "One.",
                "{list}"
            );
            let (status, one) = api_call(Method::GET, format!("{base}/1"), &alice, None).await?;
            ensure!(status == StatusCode::OK && one == want[1], "{status} {one}");
            ensure!(
                one["digest"] != list["items"][0]["digest"],
                "each revision has its own digest"
            );
            let (status, body) = api_call(Method::GET, format!("{base}/9"), &alice, None).await?;
            ensure!(
                status == StatusCode::NOT_FOUND,
                "unknown revision: {status} {body}"
            );
            Ok(())
        },
    )
    .await
}

/// One frame of a followed Composition: its `event`, `id` and `data`.
#[derive(Debug)]
struct Frame {
    event: String,
    id: Option<String>,
    data: Value,
}

impl Frame {
    fn description(&self) -> Option<&str> {
        self.data["object"]["spec"]["description"].as_str()
    }
}

/// An open event stream of the sidecar.
struct Frames {
    body: futures::stream::BoxStream<'static, reqwest::Result<Vec<u8>>>,
    buffer: String,
}

impl Frames {
    /// `GET url` with `Accept: text/event-stream` (and `Last-Event-ID` when given).
    async fn open(url: &str, token: &str, last_event_id: Option<&str>) -> Result<Frames> {
        let mut request = http_client()?
            .get(url)
            .header("accept", "text/event-stream")
            .bearer_auth(token)
            .timeout(Duration::from_secs(600));
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id);
        }
        let response = request.send().await?;
        ensure!(
            response.status() == StatusCode::OK,
            "stream: {}",
            response.status()
        );
        ensure!(
            response
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with("text/event-stream")),
            "not an event stream"
        );
        Ok(Frames {
            body: response
                .bytes_stream()
                .map(|c| c.map(|b| b.to_vec()))
                .boxed(),
            buffer: String::new(),
        })
    }

    /// The next frame (keep-alive comments skipped), within 30 s.
    async fn next(&mut self) -> Result<Frame> {
        tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                while let Some(end) = self.buffer.find("\n\n") {
                    let block: String = self.buffer.drain(..end + 2).collect();
                    let (mut event, mut id, mut data) = (None, None, String::new());
                    for line in block.lines() {
                        if let Some(v) = line.strip_prefix("event:") {
                            event = Some(v.trim().to_owned());
                        } else if let Some(v) = line.strip_prefix("id:") {
                            id = Some(v.trim().to_owned());
                        } else if let Some(v) = line.strip_prefix("data:") {
                            data.push_str(v.trim_start());
                        }
                    }
                    if let Some(event) = event {
                        return Ok(Frame {
                            event,
                            id,
                            data: serde_json::from_str(&data)?,
                        });
                    }
                }
                match self.body.next().await {
                    Some(chunk) => self.buffer.push_str(std::str::from_utf8(&chunk?)?),
                    None => bail!("the stream ended"),
                }
            }
        })
        .await
        .context("no frame within 30 s")?
    }

    /// Frames until one satisfies `want`; returns them all, that one last.
    async fn until(&mut self, want: impl Fn(&Frame) -> bool) -> Result<Vec<Frame>> {
        let mut seen = Vec::new();
        loop {
            let frame = self.next().await?;
            let done = want(&frame);
            seen.push(frame);
            if done {
                return Ok(seen);
            }
        }
    }
}

fn number(id: &Option<String>) -> u64 {
    id.as_deref().and_then(|v| v.parse().ok()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_followed_composition_streams_changes_resumes_after_last_event_id_and_resets_when_too_old()
-> Result<()> {
    with_studio(
        "cs-watch",
        SidecarSettings::default(),
        async |studio, sidecar| {
            let ns = &studio.ns.name;
            let alice = token(studio.env, ALICE)?;
            let (status, body) = save(
                sidecar,
                ns,
                "notes",
                &alice,
                json!({"spec": spec("Draft it.")}),
            )
            .await?;
            ensure!(status == StatusCode::CREATED, "{status} {body}");
            settled(&studio.admin, ns, "notes").await?;
            let url = format!("{}/api/v1/namespaces/{ns}/compositions/notes", sidecar.url);
            let api = Api::<Composition>::namespaced(studio.admin.clone(), ns);
            let describe = |text: &'static str| {
                let api = api.clone();
                async move {
                    api.patch(
                        "notes",
                        &PatchParams::default(),
                        &Patch::Merge(json!({"spec": {"description": text}})),
                    )
                    .await
                    .context("kubectl patch")
                }
            };

            // Without Last-Event-ID: the Composition as it is, then a patch as MODIFIED.
            let mut live = Frames::open(&url, &alice, None).await?;
            let added = live.next().await?;
            ensure!(
                added.event == "ADDED"
                    && added.data["object"]["metadata"]["name"] == "notes"
                    && added.data["object"]["metadata"]
                        .get("managedFields")
                        .is_none()
                    && added.data["managers"]
                        .as_array()
                        .is_some_and(|m| m.iter().any(|m| m["manager"] == "orrery-console")),
                "{added:?}"
            );
            describe("first").await?;
            let seen = live.until(|f| f.description() == Some("first")).await?;
            let first = seen.last().context("a frame")?;
            ensure!(first.event == "MODIFIED", "{first:?}");
            let after_first = first.id.clone().context("an id")?;
            describe("second").await?;
            live.until(|f| f.description() == Some("second")).await?;
            drop(live);

            // Resumed after the first patch: only what came later.
            let mut resumed = Frames::open(&url, &alice, Some(&after_first)).await?;
            let later = resumed.until(|f| f.description() == Some("second")).await?;
            ensure!(
                later
                    .iter()
                    .all(|f| f.event == "MODIFIED"
                        && number(&f.id) > number(&Some(after_first.clone()))),
                "resumed: {later:?}"
            );
            drop(resumed);

            // Resumed from a version the apiserver no longer holds: RESET with the list as it is,
            // then the stream goes on.
            let mut reset = Frames::open(&url, &alice, Some("1")).await?;
            let frame = reset.next().await?;
            ensure!(
                frame.event == "RESET"
                    && frame.data["items"][0]["object"]["spec"]["description"] == "second"
                    && frame.data["resourceVersion"]
                        .as_str()
                        .is_some_and(|v| !v.is_empty())
                    && frame
                        .id
                        .as_ref()
                        .is_some_and(|id| frame.data["resourceVersion"] == json!(id)),
                "{frame:?}"
            );
            describe("third").await?;
            let went_on = reset.until(|f| f.description() == Some("third")).await?;
            ensure!(
                went_on.last().is_some_and(|f| f.event == "MODIFIED"),
                "{went_on:?}"
            );

            // The list route follows too; without the Accept header it stays JSON.
            let mut all = Frames::open(
                &format!("{}/api/v1/namespaces/{ns}/compositions", sidecar.url),
                &alice,
                None,
            )
            .await?;
            let frame = all.next().await?;
            ensure!(
                frame.event == "ADDED" && frame.data["object"]["metadata"]["name"] == "notes",
                "{frame:?}"
            );
            let (status, list) = api_call(
                Method::GET,
                format!("{}/api/v1/namespaces/{ns}/compositions", sidecar.url),
                &alice,
                None,
            )
            .await?;
            ensure!(
                status == StatusCode::OK && list["items"][0]["metadata"]["name"] == "notes",
                "{status} {list}"
            );
            // A Last-Event-ID that is no version: 400 at the header.
            let response = http_client()?
                .get(&url)
                .header("accept", "text/event-stream")
                .header("last-event-id", "1;2")
                .bearer_auth(&alice)
                .send()
                .await?;
            ensure!(
                response.status() == StatusCode::BAD_REQUEST,
                "{}",
                response.status()
            );
            Ok(())
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_is_what_orrery_import_gives_and_a_bad_seed_is_refused_at_its_path() -> Result<()>
{
    with_studio(
        "cs-import",
        SidecarSettings::default(),
        async |studio, sidecar| {
            let ns = &studio.ns.name;
            let alice = token(studio.env, ALICE)?;
            let url = format!("{}/api/v1/namespaces/{ns}/import", sidecar.url);
            let fixture = orrery_tests::harness::workspace_root()
                .join("crds/tests/fixtures/release-notes.spec.json");
            let text = std::fs::read_to_string(&fixture)?;
            let seed: Value = serde_json::from_str(&text)?;

            // What `orrery import` prints for the same file in this namespace.
            let out = tokio::process::Command::new(default_bin_dir().join("orrery"))
                .args(["import", &fixture.to_string_lossy(), "--namespace", ns])
                .output()
                .await
                .context("running orrery import")?;
            ensure!(
                out.status.success(),
                "orrery import: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let cli: Composition = serde_yaml::from_slice(&out.stdout)?;

            let (status, body) = api_call(
                Method::POST,
                url.clone(),
                &alice,
                Some(json!({"seed": seed})),
            )
            .await?;
            ensure!(status == StatusCode::OK, "{status} {body}");
            let imported: Composition = serde_json::from_value(body["composition"].clone())?;
            ensure!(
                imported.spec == cli.spec
                    && imported.metadata.name == cli.metadata.name
                    && imported.metadata.namespace == cli.metadata.namespace,
                "the sidecar's import is the CLI's:\n{body}\n{cli:?}"
            );
            // The verdict is the validator's on that spec in this namespace.
            let (_, verdict) = api_call(
                Method::POST,
                format!("{}/api/v1/namespaces/{ns}/validate", sidecar.url),
                &alice,
                Some(json!({"spec": body["composition"]["spec"]})),
            )
            .await?;
            ensure!(
                body["validation"] == verdict,
                "{} vs {verdict}",
                body["validation"]
            );
            // The seed's text works the same, and `name` renames it.
            let (status, renamed) = api_call(
                Method::POST,
                url.clone(),
                &alice,
                Some(json!({"seed": text, "name": "notes-2"})),
            )
            .await?;
            ensure!(
                status == StatusCode::OK
                    && renamed["composition"]["metadata"]["name"] == "notes-2"
                    && renamed["composition"]["spec"] == body["composition"]["spec"],
                "{status} {renamed}"
            );

            // A newer spec_version and an unknown key: 422 with each at its path in the seed.
            let mut bad = seed.clone();
            bad["spec_version"] = json!(2);
            bad["nodes"][1]["colour"] = json!("red");
            let (status, body) = api_call(
                Method::POST,
                url.clone(),
                &alice,
                Some(json!({"seed": bad})),
            )
            .await?;
            let locs: Vec<Value> = body["errors"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|e| e["loc"].clone())
                .collect();
            ensure!(
                status == StatusCode::UNPROCESSABLE_ENTITY
                    && body["code"] == "invalid_seed"
                    && locs.contains(&json!(["body", "seed", "spec_version"]))
                    && locs.contains(&json!(["body", "seed", "nodes", 1, "colour"])),
                "{status} {body}"
            );
            // A key twice in the seed's text: refused, named, never read as the last.
            let twice = text.replacen(
                "\"pattern\": \"critic_loop\",",
                "\"pattern\": \"critic_loop\", \"pattern\": \"pipeline\",",
                1,
            );
            let (status, body) = api_call(
                Method::POST,
                url.clone(),
                &alice,
                Some(json!({"seed": twice})),
            )
            .await?;
            ensure!(
                status == StatusCode::UNPROCESSABLE_ENTITY
                    && body["loc"] == json!(["body", "seed"])
                    && body["message"]
                        .as_str()
                        .is_some_and(|m| m.contains("pattern")),
                "{status} {body}"
            );

            // Over 1 MiB: 413 naming the limit.
            let padding = "x".repeat(1024 * 1024 + 1);
            let (status, body) =
                api_call(Method::POST, url, &alice, Some(json!({"seed": padding}))).await?;
            ensure!(
                status == StatusCode::PAYLOAD_TOO_LARGE
                    && body["code"] == "too_large"
                    && body["message"]
                        .as_str()
                        .is_some_and(|m| m.contains("1048576")),
                "{status} {body}"
            );
            Ok(())
        },
    )
    .await
}
