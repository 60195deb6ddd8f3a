//! The web console end to end, as a person meets it: the chart installs the Studio (its
//! operator image now carries the built console, which the sidecar serves), alice and bob are
//! bound to the example studio-user Role, and the console's Playwright specs (`web/e2e/`) run in
//! headless Chromium against the sidecar's URL, under the console's real Content-Security-Policy.
//!
//! Each Rust test here runs one `test.describe` group of the specs (`--grep` on its title), so
//! each has a name docs/behaviour.md can cite; [`every_other_console_spec_passes`] runs all the
//! rest, so a spec added to `web/e2e/` runs even before it gets a test of its own. The tests
//! share one installed Studio while they run ([`SharedStudio`]); every spec also fails on a CSP
//! violation or a console error in the page (`web/e2e/fixtures.ts`), which is what rule 12.5
//! asks of what the console shows so far (the sign-in page).
//!
//! Control plane: `ORRERY_TESTENV_KUBECONFIG` (set by `tests/e2e.sh`), else one started for
//! this test binary. Needs root, buildah and runc (the images), the built console and its
//! packages (`cd web && npm ci --engine-strict && npm run build`: scripts/test.sh's web step),
//! and Debian's chromium (`scripts/install-packages.sh`).

use anyhow::Result;
use futures::future::LocalBoxFuture;
use kube::api::{Patch, PatchParams, PostParams};
use orrery_crds::RegistryEntry;
use orrery_crds::run::RunPhase;
use orrery_operator::registry::status::REPROBE_ANNOTATION;
use orrery_runner::demo::{Fleet, FleetConfig, start_fleet};
use orrery_tests::console::{FINISHED_RUNS, SpecEnv, Specs, check_served, run_specs};
use orrery_tests::harness::{has_condition, wait_for};
use orrery_tests::manifests::{
    demo_tools_entry, demo_writer_entry, documents, draft_review_publish,
    restart_fleet_with_another_card, scripted_model, writer_asks_which_version,
};
use orrery_tests::shared_studio::{SharedInfo, SharedStudio};
use orrery_tests::studio::{ChartStudioOptions, Studio, grant_composition_editor, token};
use orrery_tests::testenv::{ALICE, BOB};
use serde_json::{Value, json};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// The approval timeout of the console's Studio (the chart's `config.approvalTimeoutSeconds`):
/// short enough that the expired-approval spec waits for an expiry, long enough that the other
/// specs read and decide a card well before its last 10 s (when Approve goes off,
/// `web/src/approvals/rules.ts` EXPIRING_SECONDS) under CI load. The spec reads it from
/// `/api/v1/schema` and needs it between 15 and 90 s.
const APPROVAL_TIMEOUT_SECONDS: u32 = 90;

/// The in-process demo fleet whose `demo-writer` asks the question of the `remote-question`
/// runs. Its servers are tasks of the shared studio's runtime (the install runs there, see
/// [`SharedStudio`]), so they serve while that studio is up and stop with its runtime; it is
/// kept here rather than dropped at the end of the install (dropping it stops the servers). A
/// later install (a studio of its own per test under `--test-threads=1`) replaces it.
static FLEET: Mutex<Option<Fleet>> = Mutex::new(None);

/// The Studio the specs run against: the chart's operator with the chart's admission policies
/// and a short approval timeout ([`APPROVAL_TIMEOUT_SECONDS`]), alice and bob bound to the
/// studio-user Role, and the scripted model that the compositions run on: human-review (`draft`
/// → `review` → `publish`, `manifests::draft_review_publish`), notes (`draft` → `publish`) and
/// remote-question (`writer`, whose call to the demo fleet's `demo-writer` leaves the version
/// open, so the remote asks a person which version: an approval of kind Input).
fn install() -> LocalBoxFuture<'static, Result<Studio>> {
    Box::pin(async {
        // demo-writer asks which version notes are for when their first line leaves it open.
        let fleet = start_fleet(FleetConfig::ephemeral()).await?;
        let manifests = documents(&[
            scripted_model(
                "scripted",
                json!({"draft": [{"reply": "Release notes for: {{input}}"}],
                "publish": [{"reply": "Changelog: {{input}}"}],
                "writer": writer_asks_which_version(),
                // The run tabs' calls (web/e2e/remote-tabs.spec.ts): one to demo-tools, one to
                // demo-writer that needs no answer.
                "research": [
                    {"toolCalls": [{"name": "mcp_demo_tools_search_articles",
                                    "arguments": {"query": "{{input}}", "limit": 2}}]},
                    {"reply": "Notes from the articles:\n{{tool_results}}"}
                ],
                "drafter": [
                    {"toolCalls": [{"name": "a2a_demo_writer_draft",
                                    "arguments": {"request": "# Version 2.4\n- Search is faster."}}]},
                    {"reply": "{{tool_results.reply}}"}
                ]}),
            ),
            demo_writer_entry(&fleet.writer_card_url()),
            // The same writer registered as acting: shown, marked, never Ready and not addable
            // to a node here, where the chart keeps acting remotes off (12.17, 12.50).
            acting_writer_entry(&fleet.writer_card_url())?,
            // The templates' MCP tools (rule 12.6: every template validates here).
            demo_tools_entry(&fleet.tools_url())?,
            composition("human-review", draft_review_publish()),
            composition(
                "notes",
                json!({
                    "pattern": "Pipeline",
                    "budgets": {"timeoutSeconds": 600},
                    "nodes": [
                        {"id": "draft", "kind": "LLMAgent", "model": "scripted", "instruction": "Draft it."},
                        {"id": "publish", "kind": "LLMAgent", "model": "scripted", "instruction": "Publish it."}
                    ],
                    "edges": [{"from": "draft", "to": "publish"}]
                }),
            ),
            composition(
                "remote-question",
                json!({
                    "pattern": "Pipeline",
                    "budgets": {"timeoutSeconds": 600, "maxRemoteCalls": 5},
                    "nodes": [{"id": "writer", "kind": "LLMAgent", "model": "scripted",
                               "instruction": "Draft the notes.", "tools": ["a2a:demo-writer.draft"]}]
                }),
            ),
        ]);
        *FLEET.lock().unwrap_or_else(PoisonError::into_inner) = Some(fleet);
        let timeout = format!("config.approvalTimeoutSeconds={APPROVAL_TIMEOUT_SECONDS}");
        let studio = Studio::install(ChartStudioOptions {
            prefix: "console",
            prelude: "",
            manifests: &manifests,
            users: &[ALICE, BOB],
            policies: true,
            values: &[&timeout],
        })
        .await?;
        // The entry is pinned by its probe pod before a run may call it.
        // Alice may save Compositions from the canvas (the example composition-editor Role);
        // bob may not.
        grant_composition_editor(studio.env, &studio.ns.name, ALICE).await?;
        let entries: kube::Api<RegistryEntry> = studio.ns.api(&studio.admin);
        for entry in ["demo-writer", "demo-tools"] {
            wait_for(
                &entries,
                entry,
                "Ready",
                Duration::from_secs(90),
                has_condition("Ready", "True"),
            )
            .await?;
        }
        // Two finished runs of alice's for History, replay and compare.
        let alice = token(studio.env, ALICE)?;
        for (name, input) in FINISHED_RUNS
            .iter()
            .zip(["version 2.3", "version 2.4 with more"])
        {
            studio
                .start_via_api(
                    &alice,
                    json!({"name": name, "compositionRef": {"name": "notes"}, "input": input, "captureContent": true}),
                )
                .await?;
        }
        for name in FINISHED_RUNS {
            studio.wait_phase(name, RunPhase::Succeeded).await?;
        }
        Ok(studio)
    })
}

/// `acting-writer`: demo-writer's card registered again with `effect: Acting`.
fn acting_writer_entry(card_url: &str) -> Result<String> {
    let mut entry: Value = serde_json::from_str(&demo_writer_entry(card_url))?;
    entry["metadata"]["name"] = json!("acting-writer");
    entry["spec"]["a2a"]["effect"] = json!("Acting");
    Ok(entry.to_string())
}

/// A Composition manifest.
fn composition(name: &str, spec: Value) -> String {
    json!({
        "apiVersion": "studio.orrery.dev/v1alpha1",
        "kind": "Composition",
        "metadata": {"name": name},
        "spec": spec,
    })
    .to_string()
}

static STUDIO: SharedStudio = SharedStudio::new(install);

/// The spec groups (`test.describe` titles in `web/e2e/*.spec.ts`) a test of their own runs.
const POLICY: &str = "the console runs under its policy";
const BAD_TOKEN: &str = "a bad token is refused with the sidecar's reason";
const KEYBOARD: &str = "alice signs in with the keyboard alone and sees her name";
const AXE: &str = "the sign-in page is axe-clean in both themes";
const UNAVAILABLE: &str = "a Studio that refuses its schema is said to be not available";
const RUNS: &str = "the runs page: start, filter, cancel";
const PANEL: &str = "the live run panel";
const APPROVALS: &str = "approval cards: decide by keyboard, already settled, not found";
const REFUSED: &str = "approval cards: a stale digest and an expired approval are refused";
const REJECT: &str = "approval cards: reject with a comment";
const QUESTION: &str = "a remote agent's question: answered or declined on its card";
const HISTORY: &str = "history, replay and compare";
const DROP: &str = "a live run through a dropped stream, a sidecar down and a reload";
const COMPOSE: &str = "compose: the canvas, its templates and validation";
const LAYOUT: &str = "compose: layout, fitting and the palette rail";
const REGISTRY: &str = "compose: the registry, read-only, with a changed card";
const REVISIONS: &str = "compose: open, revisions, restore and run by reference";
const FOLLOW: &str = "compose: the canvas follows the cluster";
const REMOTE_TABS: &str = "run: the A2A and MCP tabs";
const INSPECTOR: &str = "compose: tools from the registry, the model list and seed import";
const GROUPS: &[&str] = &[
    POLICY,
    BAD_TOKEN,
    KEYBOARD,
    AXE,
    UNAVAILABLE,
    RUNS,
    PANEL,
    APPROVALS,
    REFUSED,
    REJECT,
    QUESTION,
    HISTORY,
    DROP,
    COMPOSE,
    LAYOUT,
    REGISTRY,
    REVISIONS,
    FOLLOW,
    REMOTE_TABS,
    INSPECTOR,
];

/// Runs `specs` against the shared Studio; `name` names the run's results directory.
fn specs(specs: Specs<'_>, name: &str) -> Result<()> {
    STUDIO.with(|studio| run_specs(&SpecEnv::of(studio)?, specs, name))
}

#[test]
fn the_operator_image_serves_the_built_console_under_the_consoles_policy() -> Result<()> {
    STUDIO.with(|studio| {
        let page = format!("/runs/{}", studio.namespace);
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(check_served(&studio.sidecar_url, &page))
    })
}

#[test]
fn the_console_runs_under_its_policy_and_what_it_forbids_is_refused_and_reported() -> Result<()> {
    specs(Specs::Group(POLICY), "policy")
}

#[test]
fn a_bad_token_is_refused_with_the_sidecars_reason() -> Result<()> {
    specs(Specs::Group(BAD_TOKEN), "bad-token")
}

#[test]
fn alice_signs_in_with_the_keyboard_alone_and_sees_her_name() -> Result<()> {
    specs(Specs::Group(KEYBOARD), "keyboard")
}

#[test]
fn the_sign_in_page_is_axe_clean_in_both_themes() -> Result<()> {
    specs(Specs::Group(AXE), "axe")
}

#[test]
fn a_studio_that_refuses_its_schema_is_said_to_be_not_available_and_nothing_else_is_asked()
-> Result<()> {
    specs(Specs::Group(UNAVAILABLE), "unavailable")
}

#[test]
fn alice_starts_a_run_from_the_runs_page_by_keyboard_filters_the_list_and_cancels_it() -> Result<()>
{
    specs(Specs::Group(RUNS), "runs")
}

#[test]
fn alice_follows_her_run_live_on_its_graph_and_timeline_every_event_once() -> Result<()> {
    specs(Specs::Group(PANEL), "panel")
}

#[test]
fn alice_approves_by_keyboard_with_the_digest_checked_and_bob_sees_nothing_of_her_run() -> Result<()>
{
    specs(Specs::Group(APPROVALS), "approvals")
}

#[test]
fn a_stale_digest_and_an_expired_approval_are_refused_409_and_the_card_says_why() -> Result<()> {
    specs(Specs::Group(REFUSED), "refused")
}

#[test]
fn alice_rejects_by_keyboard_with_a_comment_and_the_run_receives_it() -> Result<()> {
    specs(Specs::Group(REJECT), "reject")
}

#[test]
fn a_remote_agents_question_is_answered_or_declined_on_its_card() -> Result<()> {
    specs(Specs::Group(QUESTION), "question")
}

#[test]
fn history_lists_finished_runs_replays_one_instantly_and_compares_two() -> Result<()> {
    specs(Specs::Group(HISTORY), "history")
}

/// Console part 2, the canvas (`web/e2e/compose.spec.ts`): every template loads, validates and
/// runs from the canvas; a critic loop built by keyboard alone, a loop cap past the limit marked
/// on its edge until fixed, undo and redo; export and import; a read-only narrow canvas.
#[test]
fn the_canvas_loads_validates_and_runs_every_template_builds_a_loop_by_keyboard_and_imports_and_exports()
-> Result<()> {
    specs(Specs::Group(COMPOSE), "compose")
}

/// The canvas's layout (`web/e2e/canvas-layout.spec.ts`, rules 12.10, 12.13, 12.20–12.24,
/// 12.69): left to right when wide, top to bottom when tall, one layout per spec; a dragged
/// graph kept through a resize until Tidy; a graph loaded over another fitted to its own nodes,
/// an oversized import at its first node, the fit kept on resizes until a zoom; the palette's
/// rail; nothing gated until the schema answers.
#[test]
fn the_canvas_lays_out_by_its_shape_keeps_a_dragged_graph_through_resizes_and_fits_what_it_loads()
-> Result<()> {
    specs(Specs::Group(LAYOUT), "layout")
}

/// Open and revisions (`web/e2e/revisions.spec.ts`, rules 12.56 and 12.58): a Composition alice
/// saved three times is listed first and filtered; its revisions listed newest first and two
/// compared; the oldest opened, run by reference to it (the run filed under it) and restored as
/// the newest.
#[test]
fn an_older_revision_is_listed_compared_run_by_reference_and_restored_as_the_newest() -> Result<()>
{
    specs(Specs::Group(REVISIONS), "revisions")
}

/// Two-way (`web/e2e/follow.spec.ts`, issue 24; rules 12.53, 12.54): a `kubectl patch` of the
/// Composition open on alice's canvas reaches it; with unsaved edits a banner offers theirs or
/// hers, and her save after Keep mine is a field conflict with kubectl-patch that she takes
/// over; a `kubectl delete` is shown and Save creates it again.
#[test]
fn the_canvas_follows_kubectl_changes_offers_theirs_or_mine_over_unsaved_edits_and_recreates_a_deleted_one()
-> Result<()> {
    specs(Specs::Group(FOLLOW), "follow")
}

/// The run's A2A and MCP tabs (`web/e2e/remote-tabs.spec.ts`, rules 12.47–12.51): a run whose
/// `research` searches demo-tools and whose `drafter` asks demo-writer for a draft, with content
/// captured: each call with what was sent, the task's states and the reply, and the entries the
/// run uses, live and in replay.
#[test]
fn the_run_shows_each_remote_and_mcp_call_with_its_request_states_and_reply() -> Result<()> {
    specs(Specs::Group(REMOTE_TABS), "remote-tabs")
}

/// The inspector and the seed import (`web/e2e/inspector.spec.ts`, rules 12.12, 12.17, 12.18,
/// 12.67): Remote agent calls a registry skill; a read-only tool added and removed, an acting one
/// refused with why; the model from the deployment's; the release-notes seed converted by the
/// sidecar and loaded with Undo, a bad seed's every problem listed first.
#[test]
fn tools_come_from_the_registry_models_from_the_deployment_and_a_seed_imports_through_the_sidecar()
-> Result<()> {
    specs(Specs::Group(INSPECTOR), "inspector")
}

/// The registry tab (`web/e2e/registry.spec.ts`, rules 12.49–12.52): every entry read-only with
/// its readiness, endpoint, pins, skills and tools; and `changing-writer`, a writer of a demo
/// fleet of this test's own whose card changed after it was pinned (it now asks for a bearer
/// token, as in `e2e_probe.rs`), shown `PinChanged` with the pinned and proposed digests and
/// the `kubectl annotate` commands that accept them or probe again.
#[test]
fn the_registry_tab_shows_each_entry_read_only_and_a_changed_card_with_the_commands_to_accept_it()
-> Result<()> {
    STUDIO.with(|studio| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let fleet = runtime.block_on(change_a_card(studio))?;
        let outcome = run_specs(&SpecEnv::of(studio)?, Specs::Group(REGISTRY), "registry");
        runtime.block_on(fleet.shutdown())?;
        outcome
    })
}

/// Registers `changing-writer` on a fleet of its own, waits for its pins, then starts the fleet
/// again on the same ports with a writer that asks for a bearer token (another card) and asks
/// for a probe: the entry is `PinChanged`. Gives the fleet that now runs.
async fn change_a_card(studio: &SharedInfo) -> Result<Fleet> {
    let admin = studio.env.admin().await?;
    let entries: kube::Api<RegistryEntry> = kube::Api::namespaced(admin, &studio.namespace);
    let fleet = start_fleet(FleetConfig::ephemeral()).await?;
    let mut entry: Value = serde_json::from_str(&demo_writer_entry(&fleet.writer_card_url()))?;
    entry["metadata"]["name"] = json!(CHANGING);
    let entry: RegistryEntry = serde_json::from_value(entry)?;
    entries.create(&PostParams::default(), &entry).await?;
    let ready = Duration::from_secs(90);
    wait_for(
        &entries,
        CHANGING,
        "Ready",
        ready,
        has_condition("Ready", "True"),
    )
    .await?;
    let fleet = restart_fleet_with_another_card(fleet, "s3cret").await?;
    let reprobe = json!({"metadata": {"annotations": {REPROBE_ANNOTATION: "card-changed"}}});
    entries
        .patch(CHANGING, &PatchParams::default(), &Patch::Merge(&reprobe))
        .await?;
    wait_for(
        &entries,
        CHANGING,
        "Ready=False (PinChanged)",
        ready,
        |e: Option<&RegistryEntry>| {
            e.and_then(|e| e.status.as_ref()).is_some_and(|s| {
                s.conditions
                    .iter()
                    .any(|c| c.r#type == "Ready" && c.reason == "PinChanged")
            })
        },
    )
    .await?;
    Ok(fleet)
}

/// The entry whose card changes ([`change_a_card`]); `web/e2e/registry.spec.ts` names it too.
const CHANGING: &str = "changing-writer";

#[test]
fn every_other_console_spec_passes() -> Result<()> {
    specs(Specs::AllBut(GROUPS), "others")
}

/// Rules 12.43, 12.44 and 12.64 (issue 23's "drop"): the specs follow alice's human-review runs
/// while the sidecar that serves the console is killed (a crash: every connection cut) and
/// started again when they ask (`orrery_tests::spec_sidecar`), so this test has a Studio of its
/// own: the operator in-process (`Studio::start`, not the chart) with a `TestSidecar` serving
/// the built console (`web/dist`, `orrery_tests::images::console_source`) and, as the chart's
/// does, the Studio's one namespace; alice and bob bound to the studio-user Role, the chart's
/// admission policies, and the same scripted model and human-review composition as
/// [`install`], so a run waits for alice at `review` mid-run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_followed_through_a_sidecar_restart_lists_every_event_once_and_a_reload_picks_it_back_up()
-> Result<()> {
    use orrery_operator::sidecar::SidecarSettings;
    use orrery_tests::harness::free_port;
    use orrery_tests::sidecar_fixture::{TestSidecar, temp_dir};
    use orrery_tests::spec_sidecar::run_specs_restarting;
    use orrery_tests::studio::StudioOptions;

    // The sidecar's address first: the Studio's runners post there, and the sidecar serves
    // the namespace the Studio makes.
    let address = std::net::SocketAddr::from(([127, 0, 0, 1], free_port()?));
    let url = format!("http://{address}");
    let manifests = documents(&[
        scripted_model(
            "scripted",
            json!({"draft": [{"reply": "Release notes for: {{input}}"}],
                   "publish": [{"reply": "Changelog: {{input}}"}]}),
        ),
        composition("human-review", draft_review_publish()),
    ]);
    let studio = Studio::start(StudioOptions {
        prefix: "console-drop",
        sidecar_url: &url,
        manifests: &manifests,
        users: &[ALICE, BOB],
        policies: true,
        configure: &|_| {},
    })
    .await?;
    let result = async {
        let store = format!(
            "sqlite:{}",
            temp_dir("console-drop")?.join("events.db").display()
        );
        let settings = SidecarSettings {
            namespace: Some(studio.ns.name.clone()),
            console_dir: Some(orrery_tests::images::console_source()),
            ..SidecarSettings::default()
        };
        let mut sidecar = TestSidecar::start_on(address, &store, settings).await?;
        let ran = async {
            check_served(&url, &format!("/runs/{}", studio.ns.name)).await?;
            let env = SpecEnv {
                url: url.clone(),
                namespace: studio.ns.name.clone(),
                alice: token(studio.env, ALICE)?,
                bob: token(studio.env, BOB)?,
                finished: None,
                restart_file: None,
                kubectl: None,
            };
            let served =
                run_specs_restarting(&env, Specs::Group(DROP), "drop", &mut sidecar).await?;
            // The specs skip themselves without the restart file: make sure they ran and asked.
            anyhow::ensure!(
                served.kills() >= 2,
                "the drop specs killed the sidecar {} time(s), not at least twice (12.43 and \
                 12.44): did they run? ({:?})",
                served.kills(),
                served.done
            );
            Ok(())
        }
        .await;
        ran.and(sidecar.stop().await)
    }
    .await;
    let stopped = studio.shutdown().await;
    result.and(stopped)
}
