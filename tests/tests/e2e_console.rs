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
use orrery_tests::console::{SpecEnv, Specs, check_served, run_specs};
use orrery_tests::manifests::scripted_model;
use orrery_tests::shared_studio::SharedStudio;
use orrery_tests::studio::{ChartStudioOptions, Studio};
use orrery_tests::testenv::{ALICE, BOB};
use serde_json::json;

/// The Studio the specs run against: the chart's operator with the chart's admission policies,
/// alice and bob bound to the studio-user Role, and the scripted model that the human-review
/// composition (`draft` → `review` → `publish`, `manifests::draft_review_publish`) runs on.
fn install() -> LocalBoxFuture<'static, Result<Studio>> {
    Box::pin(async {
        let manifests = scripted_model(
            "scripted",
            json!({"draft": [{"reply": "Release notes for: {{input}}"}],
                   "publish": [{"reply": "Changelog: {{input}}"}]}),
        );
        Studio::install(ChartStudioOptions {
            prefix: "console",
            prelude: "",
            manifests: &manifests,
            users: &[ALICE, BOB],
            policies: true,
            values: &[],
        })
        .await
    })
}

static STUDIO: SharedStudio = SharedStudio::new(install);

/// The spec groups (`test.describe` titles in `web/e2e/*.spec.ts`) a test of their own runs.
const POLICY: &str = "the console runs under its policy";
const BAD_TOKEN: &str = "a bad token is refused with the sidecar's reason";
const KEYBOARD: &str = "alice signs in with the keyboard alone and sees her name";
const AXE: &str = "the sign-in page is axe-clean in both themes";
const GROUPS: &[&str] = &[POLICY, BAD_TOKEN, KEYBOARD, AXE];

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
fn every_other_console_spec_passes() -> Result<()> {
    specs(Specs::AllBut(GROUPS), "others")
}
