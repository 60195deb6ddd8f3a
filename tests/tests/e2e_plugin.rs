//! `kubectl orrery` (issue 25) against the chart's operator, sidecar and admission policies on
//! the project's control plane, run as kubectl runs a plugin: the binary with the person's
//! kubeconfig context, so the cluster sees the person.
//!
//! - alice starts the human-review Composition as herself, lists it waiting for her approval,
//!   and cancels it; bob's start where his Role does not reach is refused in the apiserver's
//!   words; a kubeconfig context that does not exist is named.
//! - alice, signed in through an exec credential plugin, starts a review and follows its trace
//!   (`logs -f -o json`) across a restart of the sidecar's container; reads the approval's text
//!   (escapes visible, the digest computed and checked against the status); bob can neither read
//!   nor decide it; a stale digest and a service account are refused with the reason; alice
//!   approves it and the run Succeeds, the followed trace holding every seq once.

use anyhow::{Context as _, Result, bail, ensure};
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, ListParams, PostParams};
use orrery_crds::events::{EventBody, TraceEvent};
use orrery_crds::run::RunPhase;
use orrery_tests::harness::workspace_binary;
use orrery_tests::manifests::{documents, draft_review_publish, scripted_model};
use orrery_tests::studio::{ChartStudioOptions, Studio};
use orrery_tests::testenv::{ALICE, BOB, TestEnv};
use serde_json::json;
use std::process::Output;

/// `kubectl-orrery --kubeconfig … --context <user> -n <namespace> <args>`.
async fn plugin(env: &TestEnv, user: &str, namespace: &str, args: &[&str]) -> Result<Output> {
    Ok(command(&env.kubeconfig, user, namespace, args)?
        .output()
        .await?)
}

/// The plugin as `user` of `kubeconfig`, in `namespace` (nothing from the test's environment
/// says where the sidecar is).
fn command(
    kubeconfig: &std::path::Path,
    user: &str,
    namespace: &str,
    args: &[&str],
) -> Result<tokio::process::Command> {
    let mut cmd = tokio::process::Command::new(workspace_binary("kubectl-orrery")?);
    cmd.arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["--context", user, "-n", namespace])
        .args(args)
        .env_remove("ORRERY_SIDECAR")
        .env_remove("ORRERY_TOKEN")
        .env("NO_COLOR", "1")
        .kill_on_drop(true);
    Ok(cmd)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alice_starts_lists_and_cancels_a_run_as_herself_and_refusals_read_as_the_apiserver_says()
-> Result<()> {
    let studio = review_studio("plugin").await?;
    let result = async {
        let ns = studio.ns.name.clone();
        let env = studio.env;

        // alice starts it as herself: the run is hers, named after its Composition.
        let started = plugin(
            env,
            ALICE,
            &ns,
            &["start", "human-review", "--input", "version 2.4"],
        )
        .await?;
        let out = text(&started.stdout);
        ensure!(
            started.status.success(),
            "start: {out}{}",
            text(&started.stderr)
        );
        let name = out
            .strip_prefix("studiorun/")
            .and_then(|rest| rest.split_whitespace().next())
            .context("start prints studiorun/NAME")?
            .to_owned();
        ensure!(name.starts_with("human-review-"), "{out}");
        let waiting = studio.wait_pending_approval(&name).await?;
        ensure!(waiting.spec.owner == ALICE, "owner {}", waiting.spec.owner);

        // runs: her run, its Composition and revision, the approval waiting for her.
        let listed = plugin(env, ALICE, &ns, &["runs"]).await?;
        let table = text(&listed.stdout);
        ensure!(
            listed.status.success(),
            "runs: {table}{}",
            text(&listed.stderr)
        );
        ensure!(table.starts_with("NAME "), "{table}");
        let line = table
            .lines()
            .find(|l| l.starts_with(&name))
            .with_context(|| format!("runs lists {name}: {table}"))?;
        // NAME PHASE COMPOSITION OWNER TOKENS APPROVALS AGE
        let cells: Vec<&str> = line.split_whitespace().collect();
        ensure!(
            cells.len() == 7
                && cells[1] == "AwaitingApproval"
                && cells[2] == "human-review@1"
                && cells[3] == ALICE
                && cells[5] == "1",
            "{line}"
        );

        // bob cannot start a run where his Role does not reach: the apiserver's words.
        let refused = plugin(
            env,
            BOB,
            "default",
            &["start", "human-review", "--input", "x"],
        )
        .await?;
        let why = text(&refused.stderr);
        ensure!(!refused.status.success(), "{}", text(&refused.stdout));
        ensure!(
            why.contains("starting human-review in default: the cluster refused (403 Forbidden)")
                && why.contains("User \"bob\" cannot create resource \"studioruns\""),
            "{why}"
        );

        // A context the kubeconfig lacks is named.
        let lost = plugin(env, "carol", &ns, &["runs"]).await?;
        let why = text(&lost.stderr);
        ensure!(!lost.status.success() && why.contains("carol"), "{why}");

        // alice cancels it; the operator ends it Cancelled, and runs says so.
        let cancelled = plugin(env, ALICE, &ns, &["cancel", &name]).await?;
        ensure!(
            cancelled.status.success(),
            "cancel: {}{}",
            text(&cancelled.stdout),
            text(&cancelled.stderr)
        );
        studio.wait_phase(&name, RunPhase::Cancelled).await?;
        let listed = plugin(env, ALICE, &ns, &["runs"]).await?;
        let table = text(&listed.stdout);
        ensure!(
            table
                .lines()
                .any(|l| l.starts_with(&name) && l.contains(" Cancelled ")),
            "{table}"
        );
        Ok(())
    }
    .await;
    let stopped = studio.shutdown().await;
    result.and(stopped)
}

/// The test control plane's kubeconfig with one more context, `alice-exec`: alice signed in
/// through an exec credential plugin (a script printing her token as an ExecCredential, counting
/// its calls in `calls`).
fn exec_kubeconfig(env: &TestEnv, dir: &std::path::Path) -> Result<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let token = env
        .var("TESTENV_ALICE_TOKEN")
        .context("the control plane's env names no TESTENV_ALICE_TOKEN")?;
    let script = dir.join("alice-credential");
    let calls = dir.join("calls");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho called >> '{}'\nprintf '%s' '{{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{{\"token\":\"{token}\"}}}}'\n",
            calls.display()
        ),
    )?;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o700))?;
    let mut config: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(&env.kubeconfig)?)?;
    let cluster = config["contexts"]
        .as_sequence()
        .and_then(|c| c.first())
        .and_then(|c| c["context"]["cluster"].as_str())
        .context("the kubeconfig has a context with a cluster")?
        .to_owned();
    let user: serde_yaml::Value = serde_yaml::from_str(&format!(
        "name: alice-exec\nuser:\n  exec:\n    apiVersion: client.authentication.k8s.io/v1\n    command: {}\n    interactiveMode: Never\n",
        script.display()
    ))?;
    let context: serde_yaml::Value = serde_yaml::from_str(&format!(
        "name: alice-exec\ncontext:\n  cluster: {cluster}\n  user: alice-exec\n"
    ))?;
    config["users"]
        .as_sequence_mut()
        .context("users")?
        .push(user);
    config["contexts"]
        .as_sequence_mut()
        .context("contexts")?
        .push(context);
    let path = dir.join("kubeconfig");
    std::fs::write(&path, serde_yaml::to_string(&config)?)?;
    Ok(path)
}

/// The name of the chart's operator pod in the studio's namespace.
async fn operator_pod(studio: &Studio) -> Result<String> {
    let release = studio.chart().context("a chart install")?.name.clone();
    studio
        .pods()
        .list(&ListParams::default().labels(&orrery_tests::chart::operator_selector(&release)))
        .await?
        .items
        .into_iter()
        .next()
        .and_then(|p| p.metadata.name)
        .context("the operator's pod")
}

/// The chart's operator and sidecar, serving the human-review Composition (its draft and
/// publish nodes Scripted), for alice and bob, under the admission policies.
async fn review_studio(prefix: &str) -> Result<Studio> {
    let manifests = documents(&[
        scripted_model(
            "scripted",
            json!({"draft": [{"reply": "Release notes for: {{input}}"}],
                   "publish": [{"reply": "Changelog: {{input}}"}]}),
        ),
        json!({
            "apiVersion": "studio.orrery.dev/v1alpha1",
            "kind": "Composition",
            "metadata": {"name": "human-review"},
            "spec": draft_review_publish(),
        })
        .to_string(),
    ]);
    Studio::install(ChartStudioOptions {
        prefix,
        prelude: "",
        manifests: &manifests,
        users: &[ALICE, BOB],
        policies: true,
        values: &[],
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alice_follows_reads_and_approves_a_review_across_a_sidecar_restart_and_others_are_refused_with_the_reason()
-> Result<()> {
    let studio = review_studio("plugin-review").await?;
    let dir = std::env::temp_dir().join(format!("orrery-{}", studio.ns.name));
    std::fs::create_dir_all(&dir)?;
    let result = async {
        let ns = studio.ns.name.clone();
        let env = studio.env;
        let sidecar = studio.sidecar_url.clone();
        let kubeconfig = exec_kubeconfig(env, &dir)?;
        // alice, as a person would be: an exec credential plugin, the sidecar's URL from the
        // platform team (she may not read the chart's namespace, so cannot look it up).
        let alice = |args: &[&str]| -> Result<tokio::process::Command> {
            let mut cmd = command(&kubeconfig, "alice-exec", &ns, args)?;
            cmd.env("ORRERY_SIDECAR", &sidecar);
            Ok(cmd)
        };

        let started = alice(&["start", "human-review", "--input", "v2.4 \u{1b}[2J", "-o", "name"])?
            .output()
            .await?;
        let out = text(&started.stdout);
        ensure!(started.status.success(), "start: {out}{}", text(&started.stderr));
        ensure!(
            std::fs::read_to_string(dir.join("calls"))?.lines().count() >= 1,
            "the exec plugin gave the token"
        );
        let name = out
            .trim()
            .strip_prefix("studiorun/")
            .context("start -o name prints studiorun/NAME")?
            .to_owned();

        // Followed from the start, one event's JSON a line; and the run list, watched.
        let follower = alice(&["logs", "-f", "-o", "json", &format!("studiorun/{name}")])?
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()?;
        let watcher = alice(&["runs", "-w"])?
            .stdout(std::process::Stdio::piped())
            .spawn()?;
        let waiting = studio.wait_pending_approval(&name).await?;
        let pending = waiting
            .status
            .as_ref()
            .and_then(|s| s.pending_approvals.first())
            .cloned()
            .context("a pending approval")?;

        // Completion offers her run and its approval.
        let completion = tokio::process::Command::new(workspace_binary("kubectl_complete-orrery")?)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--context", "alice-exec", "-n", &ns, "approve", &name, ""])
            .output()
            .await?;
        let offered = text(&completion.stdout);
        ensure!(
            offered.starts_with(&format!("{}\tApproval at node review\n", pending.id))
                && offered.ends_with(":4\n"),
            "{offered}"
        );

        // The sidecar crashes while the run waits; the node starts it again in the same pod.
        studio
            .kill_container(&operator_pod(&studio).await?, "sidecar")
            .await?;
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        orrery_tests::studio::wait_sidecar(&sidecar, std::time::Duration::from_secs(90)).await?;

        // The text, escapes visible, its digest computed here and checked against the status.
        let read = alice(&["approvals", &name])?.output().await?;
        let shown = text(&read.stdout);
        ensure!(read.status.success(), "approvals: {shown}{}", text(&read.stderr));
        for want in [
            format!("{}  Approval  node review  expires in ", pending.id),
            "  asks: Publish these notes?\n".to_owned(),
            "  | Release notes for: v2.4 \\x1b[2J\n".to_owned(),
            format!("  digest {}  (computed from this text; matches the run's status)", pending.digest),
        ] {
            ensure!(shown.contains(&want), "{want:?} not in:\n{shown}");
        }
        ensure!(!shown.contains('\u{1b}'), "an escape reached the terminal: {shown:?}");

        // The admin finds the sidecar from the chart's Service (its public-url annotation), and
        // the sidecar shows the text to the owner and approvers only.
        let admin = plugin(env, "admin", &ns, &["approvals", &name]).await?;
        let why = text(&admin.stderr);
        ensure!(
            !admin.status.success() && why.contains("the sidecar refused (40"),
            "admin: {}{why}",
            text(&admin.stdout)
        );

        // bob cannot read it, nor decide it (the admission policy's words).
        let bob_reads = plugin(env, BOB, &ns, &["--sidecar", &sidecar, "approvals", &name]).await?;
        ensure!(!bob_reads.status.success(), "{}", text(&bob_reads.stdout));
        let bob_decides = plugin(
            env,
            BOB,
            &ns,
            &["approve", &name, &pending.id, "--yes", "--digest", &pending.digest],
        )
        .await?;
        let why = text(&bob_decides.stderr);
        ensure!(
            !bob_decides.status.success()
                && why.contains(&format!("approving approval {} of studiorun {name} in {ns}: the cluster refused (403 Forbidden)", pending.id))
                && why.contains("bob may not decide on this run: only its owner (alice)"),
            "{why}"
        );

        // A stale digest: refused by the admission policy, with what to do.
        let stale = "0".repeat(64);
        let refused = alice(&["approve", &name, &pending.id, "--yes", "--digest", &stale])?
            .output()
            .await?;
        let why = text(&refused.stderr);
        ensure!(
            !refused.status.success()
                && why.contains(&format!("is not the digest of approval '{}'", pending.id))
                && why.contains("read the text again"),
            "{why}"
        );

        // A service account is told it cannot decide.
        let accounts: Api<ServiceAccount> = Api::namespaced(studio.admin.clone(), &ns);
        let robot: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": "robot"}}))?;
        accounts.create(&PostParams::default(), &robot).await?;
        let token = accounts
            .create_token_request("robot", &PostParams::default(), &TokenRequest::default())
            .await?
            .status
            .and_then(|s| s.token)
            .context("a token for robot")?;
        let robot = alice(&["approve", &name, &pending.id, "--yes", "--digest", &pending.digest])?
            .env("ORRERY_TOKEN", &token)
            .output()
            .await?;
        let why = text(&robot.stderr);
        ensure!(
            !robot.status.success()
                && why.contains(&format!("you are signed in as system:serviceaccount:{ns}:robot, a service account"))
                && why.contains("never decide"),
            "{why}"
        );

        // alice approves what she read: the text shown first, then her decision, taken up.
        let approved = alice(&["approve", &name, "--yes"])?.output().await?;
        let said = text(&approved.stdout);
        ensure!(approved.status.success(), "approve: {said}{}", text(&approved.stderr));
        ensure!(said.contains("  | Release notes for: v2.4 \\x1b[2J"), "{said}");
        ensure!(
            said.contains(&format!("approval {} of studiorun/{name} approved; the run took it up", pending.id)),
            "{said}"
        );
        studio.wait_phase(&name, RunPhase::Succeeded).await?;

        // The followed trace: every seq once, in order, to run.end, across the restart.
        let followed = tokio::time::timeout(std::time::Duration::from_secs(60), follower.wait_with_output())
            .await
            .context("logs -f did not end after run.end")??;
        ensure!(followed.status.success(), "logs -f: {}", text(&followed.stderr));
        let events: Vec<TraceEvent> = text(&followed.stdout)
            .lines()
            .map(serde_json::from_str)
            .collect::<Result<_, _>>()
            .context("logs -f -o json prints one event a line")?;
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        let expected: Vec<u64> = (1..=seqs.len() as u64).collect();
        ensure!(seqs == expected, "seqs {seqs:?}");
        match events.last().map(|e| &e.body) {
            Some(EventBody::RunEnd { .. }) => {}
            other => bail!("the trace ends with {other:?}"),
        }
        ensure!(
            events.iter().any(|e| matches!(e.body, EventBody::ApprovalRequested { .. })),
            "the approval is in the trace"
        );

        // The stored trace, printed as `orrery run` prints it.
        let stored = alice(&["logs", &name])?.output().await?;
        let printed = text(&stored.stdout);
        ensure!(stored.status.success() && printed.contains("Succeeded"), "{printed}{}", text(&stored.stderr));

        // runs -w printed the run waiting, then its end.
        let mut watcher = watcher;
        let _ = watcher.start_kill();
        let watched = text(&watcher.wait_with_output().await?.stdout);
        ensure!(watched.starts_with("NAME "), "{watched}");
        for phase in ["AwaitingApproval", "Succeeded"] {
            ensure!(
                watched.lines().any(|l| l.starts_with(&name) && l.contains(phase)),
                "runs -w shows {phase}:\n{watched}"
            );
        }
        Ok(())
    }
    .await;
    let _ = std::fs::remove_dir_all(&dir);
    let stopped = studio.shutdown().await;
    result.and(stopped)
}
