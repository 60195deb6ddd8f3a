//! What a platform engineer does with kubectl, against the real kube-apiserver: install the
//! CRDs, read their docs, apply the examples, get refused for invalid manifests, read the
//! printer columns, RBAC with the example Role, a ValidatingAdmissionPolicy, and pods run by the
//! pod executor.
//!
//! Control plane: `ORRERY_TESTENV_KUBECONFIG` (set by `tests/e2e.sh`), else one started for
//! this test binary. kubectl is the v1.36.3 one built with the control plane.

use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use futures::FutureExt;
use orrery_tests::harness::{
    TIMEOUT, TestNamespace, ensure_crds, eventually, keep, kubectl_fails, kubectl_ok, run_kubectl,
    workspace_root,
};
use orrery_tests::pod_executor::{CONTAINER_ID_PREFIX, ExecutorConfig, PodExecutor};
use orrery_tests::studio::grant_studio_user;
use orrery_tests::testenv::{self, ADMIN, ALICE};
use serde::Deserialize;

/// `.yaml` files under `dir` (recursively), sorted.
fn yaml_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            out.extend(yaml_files(&path)?);
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

fn rel(path: &Path) -> String {
    path.strip_prefix(workspace_root())
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

#[tokio::test]
async fn crds_apply_become_established_and_explain_shows_their_docs() -> Result<()> {
    let env = testenv::shared_async().await?;
    // The first `kubectl apply -f crds/yaml/` of this process (other tests call it too, and
    // two concurrent first applies would race to create); then again, which must be a no-op.
    ensure_crds(env).await?;
    let out = kubectl_ok(env, ADMIN, &["apply", "-f", "crds/yaml/"]).await?;
    for crd in ["compositions", "registryentries", "studioruns"] {
        let line = format!(
            "customresourcedefinition.apiextensions.k8s.io/{crd}.studio.orrery.dev unchanged"
        );
        assert!(out.contains(&line), "{out}");
    }
    let out = kubectl_ok(
        env,
        ADMIN,
        &[
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            "crd/compositions.studio.orrery.dev",
            "crd/registryentries.studio.orrery.dev",
            "crd/studioruns.studio.orrery.dev",
        ],
    )
    .await?;
    assert_eq!(out.matches("condition met").count(), 3, "{out}");

    // The OpenAPI document is published a moment after the CRD is established.
    let explain = eventually(TIMEOUT, || async {
        kubectl_ok(env, ADMIN, &["explain", "composition.spec.nodes"]).await
    })
    .await?;
    for phrase in [
        "KIND:       Composition",
        "VERSION:    v1alpha1",
        "The nodes of the graph (at most 30), keyed by their unique `id`.",
        "Unique id within the composition",
    ] {
        assert!(
            explain.contains(phrase),
            "missing {phrase:?} in:\n{explain}"
        );
    }
    let explain = kubectl_ok(
        env,
        ADMIN,
        &["explain", "composition.spec.edges.maxIterations"],
    )
    .await?;
    assert!(explain.contains("1–5"), "{explain}");
    let explain = kubectl_ok(env, ADMIN, &["explain", "studiorun.spec.owner"]).await?;
    assert!(explain.contains("FIELD: owner <string>"), "{explain}");
    Ok(())
}

#[tokio::test]
async fn the_examples_apply_in_a_namespace() -> Result<()> {
    let env = testenv::shared_async().await?;
    ensure_crds(env).await?;
    let ns = TestNamespace::create(env, "examples").await?;
    // `kubectl apply` cannot use generateName (a run that wants a fresh name each time is
    // created, not applied).
    let mut apply = vec!["apply", "-n", ns.name.as_str()];
    let mut create = Vec::new();
    // examples/operator/ holds the operator's own config file (read with --config, not an
    // object of the cluster), so it is the one folder not applied.
    let operator_files = workspace_root().join("examples").join("operator");
    let files: Vec<PathBuf> = yaml_files(&workspace_root().join("examples"))?
        .into_iter()
        .filter(|p| !p.starts_with(&operator_files))
        .collect();
    ensure!(!files.is_empty(), "no examples found");
    let names: Vec<String> = files.iter().map(|p| rel(p)).collect();
    for (path, name) in files.iter().zip(&names) {
        if std::fs::read_to_string(path)?.contains("\n  generateName:") {
            create.push(name.as_str());
        } else {
            apply.extend(["-f", name.as_str()]);
        }
    }
    let out = kubectl_ok(env, ADMIN, &apply).await?;
    for file in create {
        kubectl_ok(env, ADMIN, &["create", "-n", &ns.name, "-f", file]).await?;
    }

    // Everything the examples declare is there (numbers from the files themselves).
    let mut kinds = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path)?;
        for doc in serde_yaml::Deserializer::from_str(&text) {
            let doc = serde_yaml::Value::deserialize(doc)?;
            if let Some(kind) = doc.get("kind").and_then(|k| k.as_str()) {
                kinds.push(kind.to_string());
            }
        }
    }
    let count = |kind: &str| kinds.iter().filter(|k| *k == kind).count();
    for (kind, resource) in [
        ("Composition", "compositions"),
        ("RegistryEntry", "registryentries"),
        ("StudioRun", "studioruns"),
        ("Role", "roles"),
    ] {
        let listed =
            kubectl_ok(env, ADMIN, &["get", resource, "-n", &ns.name, "-o", "name"]).await?;
        assert_eq!(
            listed.lines().count(),
            count(kind),
            "{resource} in {}:\n{listed}\napply said:\n{out}",
            ns.name
        );
        assert!(count(kind) > 0, "no {kind} in the examples");
    }
    Ok(())
}

/// `# expect: <text>` lines of a fixture: what kubectl must print on stderr.
fn expectations(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# expect: "))
        .map(str::trim)
        .collect()
}

#[tokio::test]
async fn invalid_manifests_are_refused_by_the_apiserver_with_its_message() -> Result<()> {
    let env = testenv::shared_async().await?;
    ensure_crds(env).await?;
    let ns = TestNamespace::create(env, "invalid").await?;
    let files = yaml_files(&workspace_root().join("tests/fixtures/invalid"))?;
    let mut problems = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path)?;
        let want = expectations(&text);
        ensure!(!want.is_empty(), "{} has no `# expect:` line", rel(path));
        let out = run_kubectl(env, ADMIN, &["apply", "-n", &ns.name, "-f", &rel(path)]).await?;
        if out.success {
            problems.push(format!("{}: accepted:\n{}", rel(path), out.stdout));
            continue;
        }
        for w in want {
            if !out.stderr.contains(w) {
                problems.push(format!(
                    "{}: stderr lacks {w:?}:\n{}",
                    rel(path),
                    out.stderr
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
    // Nothing was stored.
    let stored = kubectl_ok(
        env,
        ADMIN,
        &[
            "get",
            "compositions,registryentries,studioruns",
            "-n",
            &ns.name,
            "-o",
            "name",
        ],
    )
    .await?;
    assert_eq!(stored.trim(), "", "{stored}");
    assert!(files.len() >= 4);
    Ok(())
}

/// The header row of each table `kubectl get` printed, as column names.
fn headers(out: &str) -> Vec<Vec<&str>> {
    out.lines()
        .filter(|l| l.starts_with("NAME "))
        .map(|l| l.split_whitespace().collect())
        .collect()
}

#[tokio::test]
async fn printer_columns_appear_in_kubectl_get() -> Result<()> {
    let env = testenv::shared_async().await?;
    ensure_crds(env).await?;
    let ns = TestNamespace::create(env, "columns").await?;
    kubectl_ok(
        env,
        ADMIN,
        &[
            "apply",
            "-n",
            &ns.name,
            "-f",
            "examples/compositions/pipeline.yaml",
            "-f",
            "examples/registry/demo-tools.yaml",
            "-f",
            "examples/runs/critic-loop-run.yaml",
        ],
    )
    .await?;
    let out = kubectl_ok(
        env,
        ADMIN,
        &[
            "get",
            "compositions,registryentries,studioruns",
            "-n",
            &ns.name,
        ],
    )
    .await?;
    assert_eq!(
        headers(&out),
        vec![
            vec!["NAME", "PATTERN", "NODES", "VALID", "REVISION", "AGE"],
            vec!["NAME", "KIND", "READY", "PINNED", "AGE"],
            vec!["NAME", "PHASE", "COMPOSITION", "TOKENS", "OWNER", "AGE"],
        ],
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("composition.studio.orrery.dev/pipeline ")
                && l.contains(" Pipeline ")),
        "{out}"
    );
    // The owner is a default column: who started a run is the first thing asked of it.
    assert!(out.contains("jane@example.com"), "{out}");

    // The cells show what the operator writes to status (patched here as it would).
    let patch_status = async |resource: &str, status: &str| -> Result<String> {
        kubectl_ok(
            env,
            ADMIN,
            &[
                "patch",
                resource,
                "-n",
                &ns.name,
                "--subresource=status",
                "--type=merge",
                "-p",
                status,
            ],
        )
        .await
    };
    patch_status(
        "composition/pipeline",
        r#"{"status":{"nodeCount":3,"revision":2,"conditions":[{"type":"Valid","status":"True","reason":"Validated","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}"#,
    )
    .await?;
    patch_status(
        "registryentry/demo-tools",
        r#"{"status":{"kind":"Mcp","conditions":[{"type":"Ready","status":"True","reason":"Reachable","lastTransitionTime":"2026-01-01T00:00:00Z"},{"type":"Pinned","status":"False","reason":"NotYet","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}"#,
    )
    .await?;
    patch_status(
        "studiorun/release-notes-1",
        r#"{"status":{"phase":"Succeeded","composition":{"name":"critic-loop","revision":4,"digest":"abc"},"totals":{"tokens":1234}}}"#,
    )
    .await?;
    let out = kubectl_ok(
        env,
        ADMIN,
        &[
            "get",
            "compositions,registryentries,studioruns",
            "-n",
            &ns.name,
            "--no-headers",
        ],
    )
    .await?;
    let row = |name: &str| -> Vec<&str> {
        out.lines()
            .find(|l| l.starts_with(name))
            .map(|l| l.split_whitespace().collect())
            .unwrap_or_default()
    };
    // NAME … AGE: the cells between name and age.
    let cells = |name: &str| -> Vec<&str> {
        let r = row(name);
        r.get(1..r.len().saturating_sub(1))
            .unwrap_or_default()
            .to_vec()
    };
    assert_eq!(
        cells("composition.studio.orrery.dev/pipeline "),
        ["Pipeline", "3", "True", "2"],
        "{out}"
    );
    assert_eq!(
        cells("registryentry.studio.orrery.dev/demo-tools "),
        ["Mcp", "True", "False"],
        "{out}"
    );
    assert_eq!(
        cells("studiorun.studio.orrery.dev/release-notes-1 "),
        ["Succeeded", "critic-loop", "1234", "jane@example.com"],
        "{out}"
    );
    Ok(())
}

/// What `kubectl patch` printed on stderr when the apiserver refused it.
async fn patch_refused(
    env: &testenv::TestEnv,
    ns: &str,
    subresource: Option<&str>,
    kind: &str,
    patch: &str,
) -> Result<String> {
    let mut args = vec![
        "patch",
        "studiorun/r1",
        "-n",
        ns,
        "--type",
        kind,
        "-p",
        patch,
    ];
    if let Some(sub) = subresource {
        args.push(sub);
    }
    kubectl_fails(env, ADMIN, &args).await
}

#[tokio::test]
async fn a_studiorun_spec_is_immutable_except_cancel() -> Result<()> {
    let env = testenv::shared_async().await?;
    ensure_crds(env).await?;
    let ns = TestNamespace::create(env, "immutable-run").await?;
    let dir = scratch_dir(&ns.name)?;
    let run = run_manifest(&dir, "r1", "jane@example.com")?;
    let run = run.to_string_lossy().into_owned();
    kubectl_ok(env, ADMIN, &["create", "-n", &ns.name, "-f", &run]).await?;

    // The reviewer's patch: add an approver, swap the composition, raise the budget.
    let stderr = patch_refused(
        env,
        &ns.name,
        None,
        "merge",
        r#"{"spec":{"approvers":{"users":["mallory"]},"compositionRef":{"name":"other"},"budgets":{"maxTokens":99999999}}}"#,
    )
    .await?;
    for want in [
        "spec.approvers: Invalid value: spec.approvers is immutable: create a new StudioRun",
        "spec.compositionRef: Invalid value: spec.compositionRef is immutable: create a new StudioRun",
        "spec.budgets: Invalid value: spec.budgets is immutable: create a new StudioRun",
    ] {
        assert!(stderr.contains(want), "missing {want:?} in:\n{stderr}");
    }
    // Adding or removing a field is a change too, and so is switching to an inline composition.
    let cases: [(&str, &str); 4] = [
        (
            r#"{"spec":{"captureContent":true}}"#,
            "spec.captureContent is immutable",
        ),
        (
            r#"{"spec":{"compositionRef":null,"composition":{"pattern":"Pipeline","nodes":[{"id":"a","kind":"LLMAgent"}]}}}"#,
            "spec.composition is immutable",
        ),
        (
            r#"{"spec":{"input":"Something else."}}"#,
            "spec.input is immutable",
        ),
        (r#"{"spec":{"owner":"mallory"}}"#, "spec.owner is immutable"),
    ];
    for (patch, want) in cases {
        let stderr = patch_refused(env, &ns.name, None, "merge", patch).await?;
        assert!(stderr.contains(want), "{patch}: {stderr}");
    }

    // Re-applying the unchanged manifest (server-side) is not a change.
    let out = kubectl_ok(
        env,
        ADMIN,
        &["apply", "--server-side", "-n", &ns.name, "-f", &run],
    )
    .await?;
    assert!(out.contains("serverside-applied"), "{out}");

    // Cancel is the one change allowed, and only false → true.
    kubectl_ok(
        env,
        ADMIN,
        &[
            "patch",
            "studiorun/r1",
            "-n",
            &ns.name,
            "--type=merge",
            "-p",
            r#"{"spec":{"cancel":true}}"#,
        ],
    )
    .await?;
    let stderr =
        patch_refused(env, &ns.name, None, "merge", r#"{"spec":{"cancel":false}}"#).await?;
    assert!(
        stderr.contains("spec.cancel: Invalid value: spec.cancel cannot be undone once set"),
        "{stderr}"
    );
    let spec = kubectl_ok(
        env,
        ADMIN,
        &[
            "get",
            "studiorun/r1",
            "-n",
            &ns.name,
            "-o",
            "jsonpath={.spec}",
        ],
    )
    .await?;
    let spec: serde_json::Value = serde_json::from_str(&spec)?;
    assert_eq!(
        spec,
        serde_json::json!({"compositionRef": {"name": "pipeline"}, "input": "Write the release notes.", "owner": "jane@example.com", "cancel": true})
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

#[tokio::test]
async fn studiorun_decisions_are_append_only() -> Result<()> {
    let env = testenv::shared_async().await?;
    ensure_crds(env).await?;
    let ns = TestNamespace::create(env, "decisions").await?;
    let dir = scratch_dir(&ns.name)?;
    let run = run_manifest(&dir, "r1", "jane@example.com")?;
    kubectl_ok(
        env,
        ADMIN,
        &["create", "-n", &ns.name, "-f", &run.to_string_lossy()],
    )
    .await?;
    let append = |id: &str, verb: &str| {
        format!(
            r#"[{{"op":"add","path":"/status/decisions/-","value":{{"approvalId":"{id}","decision":"{verb}","decidedBy":"jane@example.com"}}}}]"#
        )
    };
    let status_patch = async |kind: &str, patch: &str| {
        kubectl_ok(
            env,
            ADMIN,
            &[
                "patch",
                "studiorun/r1",
                "-n",
                &ns.name,
                "--subresource=status",
                "--type",
                kind,
                "-p",
                patch,
            ],
        )
        .await
    };
    // The first decision creates the list; later ones are appended.
    status_patch(
        "merge",
        r#"{"status":{"decisions":[{"approvalId":"a1","decision":"Reject","decidedBy":"jane@example.com"}]}}"#,
    )
    .await?;
    status_patch("json", &append("a2", "Approve")).await?;

    let refused: [(&str, String); 4] = [
        // Replacing the list (what a merge patch of the list does) with a forged decision.
        (
            "merge",
            r#"{"status":{"decisions":[{"approvalId":"a1","decision":"Approve","decidedBy":"mallory"}]}}"#.to_owned(),
        ),
        // Changing one decision in place.
        (
            "json",
            r#"[{"op":"replace","path":"/status/decisions/0/decision","value":"Approve"}]"#.to_owned(),
        ),
        // Removing one, or all.
        ("json", r#"[{"op":"remove","path":"/status/decisions/0"}]"#.to_owned()),
        ("json", r#"[{"op":"remove","path":"/status/decisions"}]"#.to_owned()),
    ];
    for (kind, patch) in &refused {
        let stderr =
            patch_refused(env, &ns.name, Some("--subresource=status"), kind, patch).await?;
        assert!(
            stderr.contains("status.decisions: Invalid value: status.decisions is append-only"),
            "{patch}: {stderr}"
        );
    }
    let decisions = kubectl_ok(
        env,
        ADMIN,
        &[
            "get",
            "studiorun/r1",
            "-n",
            &ns.name,
            "-o",
            "jsonpath={.status.decisions[*].approvalId} {.status.decisions[*].decision}",
        ],
    )
    .await?;
    assert_eq!(decisions.trim(), "a1 a2 Reject Approve");
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// A StudioRun owned by `owner`, as YAML for `kubectl create -f -`... written to a file, since
/// the helpers pass arguments only.
fn run_manifest(dir: &Path, name: &str, owner: &str) -> Result<PathBuf> {
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &path,
        format!(
            "apiVersion: studio.orrery.dev/v1alpha1\nkind: StudioRun\nmetadata:\n  name: {name}\nspec:\n  compositionRef:\n    name: pipeline\n  input: Write the release notes.\n  owner: {owner}\n"
        ),
    )?;
    Ok(path)
}

fn scratch_dir(tag: &str) -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("orrery-e2e-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

#[tokio::test]
async fn alice_needs_the_example_role_to_create_studioruns() -> Result<()> {
    let env = testenv::shared_async().await?;
    ensure_crds(env).await?;
    let ns = TestNamespace::create(env, "rbac-runs").await?;
    let dir = scratch_dir(&ns.name)?;
    let run = run_manifest(&dir, "alices-run", "alice")?;
    let run = run.to_string_lossy().into_owned();

    let stderr = kubectl_fails(env, ALICE, &["create", "-n", &ns.name, "-f", &run]).await?;
    let want = format!(
        "studioruns.studio.orrery.dev is forbidden: User \"alice\" cannot create resource \"studioruns\" in API group \"studio.orrery.dev\" in the namespace \"{}\"",
        ns.name
    );
    assert!(stderr.contains(&want), "{stderr}");

    grant_studio_user(env, &ns.name, ALICE).await?;
    let out = kubectl_ok(env, ALICE, &["create", "-n", &ns.name, "-f", &run]).await?;
    assert_eq!(out.trim(), "studiorun.studio.orrery.dev/alices-run created");
    kubectl_ok(
        env,
        ALICE,
        &["get", "studiorun", "alices-run", "-n", &ns.name],
    )
    .await?;

    // The Role's other promises: read-only Compositions and RegistryEntries, status patches
    // (decisions), cancel by patch, delete; nothing outside the namespace.
    let can = async |args: &[&str]| -> Result<String> {
        let mut full = vec!["auth", "can-i"];
        full.extend_from_slice(args);
        let out = run_kubectl(env, ALICE, &full).await?;
        Ok(out.stdout.trim().to_string())
    };
    let n = ns.name.as_str();
    let cases: [(&[&str], &str); 8] = [
        (&["list", "compositions.studio.orrery.dev", "-n", n], "yes"),
        (
            &["get", "registryentries.studio.orrery.dev", "-n", n],
            "yes",
        ),
        (&["create", "compositions.studio.orrery.dev", "-n", n], "no"),
        (
            &["delete", "registryentries.studio.orrery.dev", "-n", n],
            "no",
        ),
        (
            &[
                "patch",
                "studioruns.studio.orrery.dev",
                "--subresource=status",
                "-n",
                n,
            ],
            "yes",
        ),
        (&["patch", "studioruns.studio.orrery.dev", "-n", n], "yes"),
        (&["delete", "studioruns.studio.orrery.dev", "-n", n], "yes"),
        (
            &["create", "studioruns.studio.orrery.dev", "-n", "default"],
            "no",
        ),
    ];
    for (args, want) in cases {
        assert_eq!(
            can(args).await?,
            want,
            "kubectl auth can-i {}",
            args.join(" ")
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

#[tokio::test]
async fn a_validating_admission_policy_makes_the_requester_the_owner() -> Result<()> {
    let env = testenv::shared_async().await?;
    ensure_crds(env).await?;
    let ns = TestNamespace::create(env, "vap-owner").await?;
    kubectl_ok(
        env,
        ADMIN,
        &[
            "label",
            "namespace",
            &ns.name,
            "orrery.dev/e2e-vap=studiorun-owner",
        ],
    )
    .await?;
    kubectl_ok(
        env,
        ADMIN,
        &["apply", "-f", "tests/fixtures/vap/studiorun-owner.yaml"],
    )
    .await?;
    grant_studio_user(env, &ns.name, ALICE).await?;
    let dir = scratch_dir(&ns.name)?;
    let bobs = run_manifest(&dir, "for-bob", "bob")?
        .to_string_lossy()
        .into_owned();
    let alices = run_manifest(&dir, "for-alice", "alice")?
        .to_string_lossy()
        .into_owned();

    // The apiserver loads new policies within a second or so: until then the run goes through.
    let deadline = Instant::now() + TIMEOUT;
    let stderr = loop {
        let out = run_kubectl(env, ALICE, &["create", "-n", &ns.name, "-f", &bobs]).await?;
        if !out.success {
            break out.stderr;
        }
        kubectl_ok(env, ADMIN, &["delete", "-n", &ns.name, "-f", &bobs]).await?;
        ensure!(
            Instant::now() < deadline,
            "the policy never refused a run owned by bob"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    for want in [
        "ValidatingAdmissionPolicy 'orrery-e2e-studiorun-owner' with binding 'orrery-e2e-studiorun-owner' denied request",
        "spec.owner must be the user creating the run: alice cannot create a run owned by bob",
    ] {
        assert!(stderr.contains(want), "missing {want:?} in:\n{stderr}");
    }
    let out = kubectl_ok(env, ALICE, &["create", "-n", &ns.name, "-f", &alices]).await?;
    assert_eq!(out.trim(), "studiorun.studio.orrery.dev/for-alice created");
    // The admin is subject to it too.
    let stderr = kubectl_fails(env, ADMIN, &["create", "-n", &ns.name, "-f", &alices]).await?;
    assert!(
        stderr.contains("admin cannot create a run owned by alice"),
        "{stderr}"
    );

    if !keep() {
        kubectl_ok(
            env,
            ADMIN,
            &["delete", "-f", "tests/fixtures/vap/studiorun-owner.yaml"],
        )
        .await?;
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn pid_from(container_id: &str) -> Result<u32> {
    Ok(container_id
        .trim()
        .strip_prefix(CONTAINER_ID_PREFIX)
        .with_context(|| format!("containerID {container_id:?}"))?
        .parse()?)
}

fn process_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !stat.contains(") Z "))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_runs_pods_to_success_and_failure_and_deletes_them_without_leftovers() -> Result<()>
{
    let env = testenv::shared_async().await?;
    let ns = TestNamespace::create(env, "kubectl-pods").await?;
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_orrery-podtest"))
        .parent()
        .context("bin dir")?
        .to_path_buf();
    let config = ExecutorConfig::new(format!("node-{}", ns.name))
        .namespace(&ns.name)
        .bin_dir(bin_dir)
        .api_server(&env.server);
    let exec = PodExecutor::start_with(env.admin().await?, config).await?;
    let result = AssertUnwindSafe(async {
        let n = ns.name.as_str();
        kubectl_ok(env, ADMIN, &["apply", "-n", n, "-f", "tests/fixtures/pods/"]).await?;
        kubectl_ok(
            env,
            ADMIN,
            &["wait", "-n", n, "--for=jsonpath={.status.phase}=Succeeded", "--timeout=60s", "pod/podtest-succeeds"],
        )
        .await?;
        kubectl_ok(
            env,
            ADMIN,
            &["wait", "-n", n, "--for=jsonpath={.status.phase}=Failed", "--timeout=60s", "pod/podtest-fails"],
        )
        .await?;
        let jsonpath = "jsonpath={.status.containerStatuses[0].state.terminated.exitCode} {.status.containerStatuses[0].state.terminated.reason}: {.status.containerStatuses[0].state.terminated.message}";
        let ok = kubectl_ok(env, ADMIN, &["get", "-n", n, "pod/podtest-succeeds", "-o", jsonpath]).await?;
        assert_eq!(ok, "0 Completed: all done");
        let failed = kubectl_ok(env, ADMIN, &["get", "-n", n, "pod/podtest-fails", "-o", jsonpath]).await?;
        assert_eq!(failed, "3 Error: bad input: nothing to do");
        let listed = kubectl_ok(env, ADMIN, &["get", "pods", "-n", n]).await?;
        assert!(
            listed.lines().any(|l| l.starts_with("podtest-succeeds ") && l.contains(" Completed ")),
            "{listed}"
        );
        assert!(
            listed.lines().any(|l| l.starts_with("podtest-fails ") && l.contains(" Error ")),
            "{listed}"
        );

        kubectl_ok(env, ADMIN, &["wait", "-n", n, "--for=condition=Ready", "--timeout=60s", "pod/podtest-sleeps"]).await?;
        let id = kubectl_ok(
            env,
            ADMIN,
            &["get", "-n", n, "pod/podtest-sleeps", "-o", "jsonpath={.status.containerStatuses[0].containerID}"],
        )
        .await?;
        let pid = pid_from(&id)?;
        ensure!(process_alive(pid), "the sleeping pod's process {pid} is not running");
        // kubectl delete waits until the pod is gone: the executor stopped it and removed it.
        let out = kubectl_ok(env, ADMIN, &["delete", "-n", n, "pod/podtest-sleeps", "--timeout=60s"]).await?;
        assert!(out.starts_with("pod \"podtest-sleeps\" deleted"), "{out}");
        let deadline = Instant::now() + Duration::from_secs(10);
        while process_alive(pid) {
            if Instant::now() > deadline {
                bail!("process {pid} of the deleted pod is still running");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok::<(), anyhow::Error>(())
    })
    .catch_unwind()
    .await;
    // Stop the executor (its pods end, its directory goes) whether the test passed or not.
    let stopped = exec.shutdown().await;
    match result {
        Ok(result) => result.and(stopped.map_err(Into::into)),
        Err(panic) => std::panic::resume_unwind(panic),
    }
}
