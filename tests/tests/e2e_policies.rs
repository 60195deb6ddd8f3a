//! The StudioRun rules the apiserver enforces, on the real control plane: the CRD's rule on
//! `status.decisions` (rule 4.24) and the shipped ValidatingAdmissionPolicies of
//! the chart's admission policies (`charts/orrery/templates/policies/`) (who creates a run, who decides an approval and how: rules 4.3, 4.11,
//! 4.53, 4.54).
//!
//! No operator runs here: a test sets the scene by writing `status.pendingApprovals` as admin
//! (as the sidecar would), then acts as the users: `alice` and `bob` (bearer tokens, no
//! groups), `carol` in the group `release-managers` (admin impersonating her with
//! `--as`/`--as-group`: the test users have no groups, and an impersonated request is admitted
//! as the impersonated user and groups), and a ServiceAccount `pipeline` with a token from the
//! TokenRequest API (`kubectl create token`), as a GitOps pipeline would have.
//!
//! The policies are applied unchanged from the chart's admission policies
//! (`charts/orrery/templates/policies/`); their bindings are derived from the shipped ones,
//! keeping `policyName` and `validationActions` and replacing the name and `matchResources` so
//! that each binding selects only its test's namespace: the other tests sharing the control
//! plane are unaffected (`orrery_tests::admission`, which `Studio` uses too).
//!
//! Control plane: `ORRERY_TESTENV_KUBECONFIG` (set by `tests/e2e.sh`), else one started for
//! this test binary.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::discovery::ApiResource;
use orrery_tests::admission::{PolicyBindings, apply_policies, binding_name};
use orrery_tests::harness::{
    KubectlOutput, TIMEOUT, TestNamespace, ensure_crds, eventually, kubectl_ok, run_kubectl,
};
use orrery_tests::manifests::Subject;
use orrery_tests::operator_identity::operator_client;
use orrery_tests::studio::grant_studio_role;
use orrery_tests::testenv::{self, ADMIN, ALICE, BOB, TestEnv};
use serde_json::{Value, json};

/// The shipped policies (the chart's admission policies (`charts/orrery/templates/policies/`)).
const CREATE_POLICY: &str = "studioruns-create.studio.orrery.dev";
const DECISIONS_POLICY: &str = "studioruns-decisions.studio.orrery.dev";
const PENDING_POLICY: &str = "studioruns-pending.studio.orrery.dev";
/// The group whose members approve runs that name it (`carol` is its one member here).
const APPROVER_GROUP: &str = "release-managers";
/// The ServiceAccount standing for a GitOps pipeline.
const PIPELINE: &str = "pipeline";
/// The digest of the text under review (any 64 hex digits: no runner computes it here).
const DIGEST: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
const OTHER_DIGEST: &str = "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752";

/// Who sends a request.
#[derive(Clone, Debug)]
enum Who {
    /// A kubeconfig context of the control plane: `admin`, `alice`, `bob`.
    User(&'static str),
    /// Admin impersonating `user` as a member of `group`.
    Member {
        user: &'static str,
        group: &'static str,
    },
    /// A ServiceAccount's bearer token (sent through the `alice` context, whose token it
    /// replaces: `--token` overrides the kubeconfig's).
    Token { name: String, token: String },
}

impl Who {
    fn name(&self) -> String {
        match self {
            Who::User(u) => (*u).to_owned(),
            Who::Member { user, .. } => (*user).to_owned(),
            Who::Token { name, .. } => name.clone(),
        }
    }
}

/// Runs kubectl as `who`.
async fn kubectl_as(env: &TestEnv, who: &Who, args: &[&str]) -> Result<KubectlOutput> {
    let (context, mut full): (&str, Vec<String>) = match who {
        Who::User(u) => (u, Vec::new()),
        Who::Member { user, group } => (
            ADMIN,
            vec![format!("--as={user}"), format!("--as-group={group}")],
        ),
        Who::Token { token, .. } => (ALICE, vec![format!("--token={token}")]),
    };
    full.extend(args.iter().map(|a| (*a).to_owned()));
    let refs: Vec<&str> = full.iter().map(String::as_str).collect();
    run_kubectl(env, context, &refs).await
}

async fn ok_as(env: &TestEnv, who: &Who, args: &[&str]) -> Result<String> {
    let out = kubectl_as(env, who, args).await?;
    ensure!(
        out.success,
        "kubectl as {} {} failed: {}",
        who.name(),
        args.join(" "),
        out.stderr.trim()
    );
    Ok(out.stdout)
}

async fn fails_as(env: &TestEnv, who: &Who, args: &[&str]) -> Result<String> {
    let out = kubectl_as(env, who, args).await?;
    ensure!(
        !out.success,
        "kubectl as {} {} unexpectedly succeeded: {}",
        who.name(),
        args.join(" "),
        out.stdout.trim()
    );
    Ok(out.stderr)
}

/// What kubectl prints when `policy`'s binding for `ns` refuses a request: every refusal of
/// every policy in one form, `Error from server (Forbidden): … is forbidden: …` (a policy
/// reason `Invalid` would print `… is invalid: : …` instead, with an empty field).
fn denied_by(policy: &str, ns: &str, message: &str) -> String {
    format!(
        "is forbidden: ValidatingAdmissionPolicy '{policy}' with binding '{}' denied request: {message}",
        binding_name(policy, ns)
    )
}

/// A fresh file for a manifest (the kubectl helpers pass arguments only, no stdin).
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Result<Scratch> {
        let dir = std::env::temp_dir().join(format!("orrery-e2e-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        Ok(Scratch(dir))
    }

    fn write(&self, name: &str, value: &Value) -> Result<String> {
        let path = self.0.join(format!("{name}.json"));
        std::fs::write(&path, serde_json::to_vec_pretty(value)?)?;
        Ok(path.to_string_lossy().into_owned())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A StudioRun `name` owned by `owner`; `spec` fields are added to (or replace) the default
/// `compositionRef: {name: pipeline}`.
fn run_manifest(name: &str, owner: &str, spec: Value) -> Value {
    let mut full = json!({
        "compositionRef": {"name": "pipeline"},
        "input": "Write the release notes.",
        "owner": owner,
    });
    if let (Some(full), Some(extra)) = (full.as_object_mut(), spec.as_object()) {
        if extra.contains_key("composition") {
            full.remove("compositionRef");
        }
        for (k, v) in extra {
            full.insert(k.clone(), v.clone());
        }
    }
    json!({
        "apiVersion": "studio.orrery.dev/v1alpha1",
        "kind": "StudioRun",
        "metadata": {"name": name},
        "spec": full,
    })
}

/// An inline composition that can ask a person (a HumanApproval node `review`).
fn with_approval() -> Value {
    json!({"pattern": "Pipeline", "nodes": [
        {"id": "draft", "kind": "LLMAgent", "model": "gpt", "instruction": "Draft it."},
        {"id": "review", "kind": "HumanApproval", "prompt": "Publish this?"}
    ], "edges": [{"from": "draft", "to": "review"}]})
}

/// An inline composition whose node `ask` calls an A2A remote (it may ask a question).
fn with_a2a() -> Value {
    json!({"pattern": "Pipeline", "nodes": [
        {"id": "ask", "kind": "LLMAgent", "model": "gpt", "instruction": "Ask the desk.",
         "tools": ["a2a:news-desk.summarize"]}
    ]})
}

/// An inline composition that never asks a person.
fn plain() -> Value {
    json!({"pattern": "Pipeline", "nodes": [
        {"id": "draft", "kind": "LLMAgent", "model": "gpt", "instruction": "Draft it.",
         "tools": ["mcp:demo-tools.search_articles"]}
    ]})
}

/// A pending approval as the sidecar writes it.
fn pending(id: &str, digest: &str, complete: bool) -> Value {
    json!({"id": id, "node": "review", "kind": "Approval", "digest": digest,
           "size": 42, "complete": complete, "expiresAt": "2099-01-01T00:00:00Z"})
}

/// A decision as a person appends it.
fn decision(id: &str, verb: &str, digest: Option<&str>, by: Option<&str>) -> Value {
    let mut d = json!({"approvalId": id, "decision": verb});
    if let Some(digest) = digest {
        d["digest"] = json!(digest);
    }
    if let Some(by) = by {
        d["decidedBy"] = json!(by);
    }
    d
}

/// `kubectl patch studiorun/<run> --subresource=status --type=json` appending `value` to
/// `status.decisions`, as `who`.
async fn decide(
    env: &TestEnv,
    who: &Who,
    ns: &str,
    run: &str,
    value: &Value,
) -> Result<KubectlOutput> {
    let patch = json!([{"op": "add", "path": "/status/decisions/-", "value": value}]).to_string();
    kubectl_as(
        env,
        who,
        &[
            "patch",
            &format!("studiorun/{run}"),
            "-n",
            ns,
            "--subresource=status",
            "--type=json",
            "-p",
            &patch,
        ],
    )
    .await
}

/// A status merge patch as admin (the scene: what the operator and the sidecar write).
async fn patch_status(env: &TestEnv, ns: &str, run: &str, status: Value) -> Result<String> {
    kubectl_ok(
        env,
        ADMIN,
        &[
            "patch",
            &format!("studiorun/{run}"),
            "-n",
            ns,
            "--subresource=status",
            "--type=merge",
            "-p",
            &json!({ "status": status }).to_string(),
        ],
    )
    .await
}

/// The run waits for a person on `approvals`.
async fn awaiting(env: &TestEnv, ns: &str, run: &str, approvals: Vec<Value>) -> Result<()> {
    patch_status(
        env,
        ns,
        run,
        json!({"phase": "AwaitingApproval", "pendingApprovals": approvals}),
    )
    .await
    .map(|_| ())
}

/// `status.decisions` of `run`, as `approvalId:decision:decidedBy` strings.
async fn decisions(env: &TestEnv, ns: &str, run: &str) -> Result<Vec<String>> {
    let out = kubectl_ok(
        env,
        ADMIN,
        &[
            "get",
            &format!("studiorun/{run}"),
            "-n",
            ns,
            "-o",
            "jsonpath={.status.decisions}",
        ],
    )
    .await?;
    if out.trim().is_empty() {
        return Ok(Vec::new());
    }
    let list: Vec<Value> = serde_json::from_str(&out).with_context(|| out.clone())?;
    let field = |d: &Value, k: &str| d.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    Ok(list
        .iter()
        .map(|d| {
            format!(
                "{}:{}:{}",
                field(d, "approvalId"),
                field(d, "decision"),
                field(d, "decidedBy")
            )
        })
        .collect())
}

/// A test namespace with the shipped policies bound to it alone (the bindings are deleted on
/// drop), and no operator: not a `Studio`, whose controllers would write the runs' status that
/// these tests write by hand to set the scene (and whose node would run pods no test here needs).
struct Policed {
    env: &'static TestEnv,
    ns: TestNamespace,
    /// Deletes the bindings when dropped.
    _bindings: PolicyBindings,
    scratch: Scratch,
}

impl Policed {
    /// Creates the namespace, applies the policies and their bindings for it, binds the example
    /// Role (`examples/rbac/studio-user-role.yaml`) to alice, bob, the group
    /// `release-managers` and the ServiceAccount `pipeline`, and waits until both policies act.
    async fn create(prefix: &str) -> Result<Policed> {
        let env = testenv::shared_async().await?;
        ensure_crds(env).await?;
        let ns = TestNamespace::create(env, prefix).await?;
        let scratch = Scratch::new(&ns.name)?;
        let bindings = apply_policies(env, &ns.name).await?;
        ensure!(
            bindings.policies.len() == 3 && bindings.bindings.len() == 3,
            "the chart ships three policies with a binding each"
        );
        let policed = Policed {
            env,
            ns,
            _bindings: bindings,
            scratch,
        };
        policed.grant_studio_users().await?;
        policed.wait_until_the_policies_act().await?;
        Ok(policed)
    }

    fn ns(&self) -> &str {
        &self.ns.name
    }

    async fn grant_studio_users(&self) -> Result<()> {
        let (env, ns) = (self.env, self.ns());
        kubectl_ok(
            env,
            ADMIN,
            &["create", "serviceaccount", PIPELINE, "-n", ns],
        )
        .await?;
        grant_studio_role(
            env,
            ns,
            "e2e-studio-users",
            &[
                Subject::User(ALICE),
                Subject::User(BOB),
                Subject::Group(APPROVER_GROUP),
                Subject::ServiceAccount {
                    namespace: ns,
                    name: PIPELINE,
                },
            ],
        )
        .await?;
        // RoleBindings reach the authorizer's cache a moment later.
        let who = [
            Who::User(ALICE),
            Who::User(BOB),
            Who::Member {
                user: "carol",
                group: APPROVER_GROUP,
            },
            self.pipeline().await?,
        ];
        for w in &who {
            eventually(TIMEOUT, || async {
                ok_as(
                    env,
                    w,
                    &[
                        "auth",
                        "can-i",
                        "patch",
                        "studioruns.studio.orrery.dev",
                        "--subresource=status",
                        "-n",
                        ns,
                    ],
                )
                .await
            })
            .await?;
        }
        Ok(())
    }

    /// The ServiceAccount `pipeline` with a fresh token (TokenRequest API).
    async fn pipeline(&self) -> Result<Who> {
        let token = kubectl_ok(
            self.env,
            ADMIN,
            &[
                "create",
                "token",
                PIPELINE,
                "-n",
                self.ns(),
                "--duration=1h",
            ],
        )
        .await?;
        Ok(Who::Token {
            name: format!("system:serviceaccount:{}:{PIPELINE}", self.ns()),
            token: token.trim().to_owned(),
        })
    }

    /// The apiserver loads policies and bindings from informers: until then requests pass.
    /// Probes each with a request only it refuses (server-side dry runs, nothing stored).
    async fn wait_until_the_policies_act(&self) -> Result<()> {
        let (env, ns) = (self.env, self.ns());
        let not_mine = self.scratch.write(
            "probe-not-mine",
            &run_manifest("probe-not-mine", "nobody", json!({})),
        )?;
        self.wait_refused(
            CREATE_POLICY,
            &["create", "--dry-run=server", "-n", ns, "-f", &not_mine],
        )
        .await?;
        // A run of admin's own, with a status, to append a dry-run decision to.
        let probe = self
            .scratch
            .write("probe", &run_manifest("probe", ADMIN, json!({})))?;
        kubectl_ok(env, ADMIN, &["create", "-n", ns, "-f", &probe]).await?;
        patch_status(env, ns, "probe", json!({"phase": "Pending"})).await?;
        let patch = json!([{"op": "add", "path": "/status/decisions/-",
                            "value": decision("nothing-pending", "Reject", None, Some(ADMIN))}])
        .to_string();
        self.wait_refused(
            DECISIONS_POLICY,
            &[
                "patch",
                "studiorun/probe",
                "-n",
                ns,
                "--subresource=status",
                "--type=json",
                "--dry-run=server",
                "-p",
                &patch,
            ],
        )
        .await
    }

    async fn wait_refused(&self, policy: &str, args: &[&str]) -> Result<()> {
        let deadline = Instant::now() + TIMEOUT;
        let binding = binding_name(policy, self.ns());
        loop {
            let out = run_kubectl(self.env, ADMIN, args).await?;
            if !out.success && out.stderr.contains(&binding) {
                return Ok(());
            }
            ensure!(
                out.success,
                "waiting for {policy}: refused by something else: {}",
                out.stderr
            );
            ensure!(
                Instant::now() < deadline,
                "the policy {policy} never acted in {}",
                self.ns()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Creates the run `manifest` as `who`.
    async fn create_run(&self, who: &Who, manifest: &Value) -> Result<KubectlOutput> {
        let name = manifest["metadata"]["name"].as_str().unwrap_or("run");
        let file = self.scratch.write(name, manifest)?;
        kubectl_as(self.env, who, &["create", "-n", self.ns(), "-f", &file]).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_crd_lets_a_status_write_append_exactly_one_decision_and_refuses_any_other_change_rule_4_24()
-> Result<()> {
    let env = testenv::shared_async().await?;
    ensure_crds(env).await?;
    // No policy is bound here: what is refused is the CRD's rule, which binds everyone.
    let ns = TestNamespace::create(env, "crd-decisions").await?;
    let n = ns.name.as_str();
    let scratch = Scratch::new(n)?;
    for run in ["r1", "fresh"] {
        let file = scratch.write(run, &run_manifest(run, "alice", json!({})))?;
        kubectl_ok(env, ADMIN, &["create", "-n", n, "-f", &file]).await?;
    }
    patch_status(env, n, "r1", json!({"phase": "AwaitingApproval"})).await?;
    let admin = Who::User(ADMIN);
    let d = |id: &str| decision(id, "Reject", None, Some("alice"));
    // The list defaults to empty, so the first decision is the same `add` as every other.
    for id in ["a1", "a2"] {
        let out = decide(env, &admin, n, "r1", &d(id)).await?;
        ensure!(out.success, "appending {id}: {}", out.stderr);
    }

    let status_rule = "status.decisions: Invalid value: status.decisions is append-only: a write may append exactly one decision at the end and must leave the earlier ones unchanged and in order";
    let root_rule = "status.decisions: Invalid value: status.decisions is append-only: a write may add at most one decision and never removes the decisions made";
    let first = d("a1").to_string();
    let second = d("a2").to_string();
    let refused: Vec<(&str, &str, String, &str)> = vec![
        (
            "reordered",
            "merge",
            format!(r#"{{"status":{{"decisions":[{second},{first}]}}}}"#),
            status_rule,
        ),
        (
            "two at once",
            "json",
            json!([
                {"op": "add", "path": "/status/decisions/-", "value": d("a3")},
                {"op": "add", "path": "/status/decisions/-", "value": d("a4")}
            ])
            .to_string(),
            status_rule,
        ),
        (
            "an earlier one changed",
            "json",
            r#"[{"op":"replace","path":"/status/decisions/0/decision","value":"Approve"}]"#
                .to_owned(),
            status_rule,
        ),
        (
            "an earlier one changed while one is appended",
            "json",
            json!([
                {"op": "replace", "path": "/status/decisions/0/decidedBy", "value": "mallory"},
                {"op": "add", "path": "/status/decisions/-", "value": d("a3")}
            ])
            .to_string(),
            status_rule,
        ),
        (
            "one removed",
            "json",
            r#"[{"op":"remove","path":"/status/decisions/0"}]"#.to_owned(),
            status_rule,
        ),
        (
            "the field removed",
            "json",
            r#"[{"op":"remove","path":"/status/decisions"}]"#.to_owned(),
            status_rule,
        ),
        (
            "the status removed",
            "merge",
            r#"{"status":null}"#.to_owned(),
            root_rule,
        ),
    ];
    for (what, kind, patch, want) in &refused {
        let out = run_kubectl(
            env,
            ADMIN,
            &[
                "patch",
                "studiorun/r1",
                "-n",
                n,
                "--subresource=status",
                "--type",
                kind,
                "-p",
                patch,
            ],
        )
        .await?;
        ensure!(!out.success, "{what}: accepted");
        ensure!(out.stderr.contains(want), "{what}: {}", out.stderr);
    }
    // A status written for the first time may carry one decision, not two.
    let two = json!({"status": {"decisions": [d("a1"), d("a2")]}}).to_string();
    let out = run_kubectl(
        env,
        ADMIN,
        &[
            "patch",
            "studiorun/fresh",
            "-n",
            n,
            "--subresource=status",
            "--type=merge",
            "-p",
            &two,
        ],
    )
    .await?;
    ensure!(!out.success, "a first status with two decisions: accepted");
    ensure!(out.stderr.contains(root_rule), "{}", out.stderr);

    // Unchanged decisions with another field changed, and one more appended, pass.
    patch_status(env, n, "r1", json!({"phase": "Running"})).await?;
    let out = decide(env, &admin, n, "r1", &d("a3")).await?;
    ensure!(out.success, "appending a3: {}", out.stderr);
    assert_eq!(
        decisions(env, n, "r1").await?,
        ["a1:Reject:alice", "a2:Reject:alice", "a3:Reject:alice"]
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_created_only_by_its_owner_and_a_service_account_run_that_can_ask_a_person_names_approvers_rules_4_3_4_54()
-> Result<()> {
    let p = Policed::create("policy-create").await?;
    let (env, ns) = (p.env, p.ns());
    let pipeline = p.pipeline().await?;
    let sa = pipeline.name();
    let alice = Who::User(ALICE);
    // The token is the ServiceAccount's: the apiserver says who it is.
    let whoami = ok_as(
        env,
        &pipeline,
        &[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ],
    )
    .await?;
    assert_eq!(whoami.trim(), sa);

    let not_own = |user: &str, owner: &str| {
        denied_by(
            CREATE_POLICY,
            ns,
            &format!(
                "spec.owner must be the user creating the run: {user} cannot create a run owned by '{owner}'; set spec.owner to {user}"
            ),
        )
    };
    let needs_approvers = |nodes: &str| {
        denied_by(
            CREATE_POLICY,
            ns,
            &format!(
                "the run's owner {sa} is not a person and can never decide, but its inline composition can ask a person (HumanApproval or a2a: tools in node(s) {nodes}): name the people who decide in spec.approvers.users or spec.approvers.groups"
            ),
        )
    };
    // (who, run, Err(the refusal) or Ok(()))
    let cases: Vec<(&Who, Value, Result<(), String>)> = vec![
        (
            &alice,
            run_manifest("for-bob", "bob", json!({})),
            Err(not_own("alice", "bob")),
        ),
        (&alice, run_manifest("alices", "alice", json!({})), Ok(())),
        (
            &alice,
            run_manifest(
                "alices-approval",
                "alice",
                json!({"composition": with_approval()}),
            ),
            Ok(()),
        ),
        (
            &pipeline,
            run_manifest("sa-for-alice", "alice", json!({})),
            Err(not_own(&sa, "alice")),
        ),
        (
            &pipeline,
            run_manifest("sa-approval", &sa, json!({"composition": with_approval()})),
            Err(needs_approvers("review")),
        ),
        (
            &pipeline,
            run_manifest("sa-a2a", &sa, json!({"composition": with_a2a()})),
            Err(needs_approvers("ask")),
        ),
        (
            &pipeline,
            run_manifest(
                "sa-approval-sa-approver",
                &sa,
                json!({"composition": with_approval(),
                       "approvers": {"users": ["system:serviceaccount:other:bot"]}}),
            ),
            Err(needs_approvers("review")),
        ),
        (
            &pipeline,
            run_manifest(
                "sa-approval-users",
                &sa,
                json!({"composition": with_approval(), "approvers": {"users": ["alice"]}}),
            ),
            Ok(()),
        ),
        (
            &pipeline,
            run_manifest(
                "sa-a2a-groups",
                &sa,
                json!({"composition": with_a2a(), "approvers": {"groups": [APPROVER_GROUP]}}),
            ),
            Ok(()),
        ),
        (
            &pipeline,
            run_manifest("sa-plain", &sa, json!({"composition": plain()})),
            Ok(()),
        ),
        // A Composition by name is not visible to the policy: the operator refuses such a run
        // (reason ApproversRequired) when the composition can ask a person.
        (
            &pipeline,
            run_manifest("sa-by-name", &sa, json!({})),
            Ok(()),
        ),
    ];
    let mut problems = Vec::new();
    for (who, manifest, want) in &cases {
        let name = manifest["metadata"]["name"].as_str().unwrap_or_default();
        let out = p.create_run(who, manifest).await?;
        match want {
            Ok(()) if !out.success => problems.push(format!("{name}: refused: {}", out.stderr)),
            Err(msg) if out.success => problems.push(format!("{name}: accepted, wanted {msg}")),
            Err(msg) if !out.stderr.contains(msg.as_str()) => {
                problems.push(format!("{name}: wanted {msg:?}, got: {}", out.stderr));
            }
            _ => {}
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // Admins are held to it too.
    let stderr = fails_as(
        env,
        &Who::User(ADMIN),
        &[
            "create",
            "-n",
            ns,
            "-f",
            &p.scratch.write(
                "admin-for-alice",
                &run_manifest("admin-for-alice", "alice", json!({})),
            )?,
        ],
    )
    .await?;
    assert!(stderr.contains(&not_own("admin", "alice")), "{stderr}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owner_a_named_approver_and_a_member_of_an_approver_group_decide_and_nobody_else_does_rules_4_3_4_53()
-> Result<()> {
    let p = Policed::create("policy-who").await?;
    let (env, ns) = (p.env, p.ns());
    let (alice, bob) = (Who::User(ALICE), Who::User(BOB));
    let carol = Who::Member {
        user: "carol",
        group: APPROVER_GROUP,
    };
    // r1 names bob and the group as approvers; r2 names none.
    let approvers = json!({"approvers": {"users": ["bob"], "groups": [APPROVER_GROUP]}});
    for manifest in [
        run_manifest("r1", "alice", approvers),
        run_manifest("r2", "alice", json!({})),
    ] {
        let out = p.create_run(&alice, &manifest).await?;
        ensure!(out.success, "{}", out.stderr);
    }
    awaiting(
        env,
        ns,
        "r1",
        vec![
            pending("a1", DIGEST, true),
            pending("a2", DIGEST, true),
            pending("a3", DIGEST, true),
        ],
    )
    .await?;
    awaiting(
        env,
        ns,
        "r2",
        vec![pending("b1", DIGEST, true), pending("b2", DIGEST, true)],
    )
    .await?;

    let not_theirs = |user: &str| {
        denied_by(
            DECISIONS_POLICY,
            ns,
            &format!(
                "{user} may not decide on this run: only its owner (alice) or one of its approvers (spec.approvers.users or spec.approvers.groups) may; ask one of them"
            ),
        )
    };
    // (who, run, decision, refusal or None)
    let approve = |id: &str, by: &str| decision(id, "Approve", Some(DIGEST), Some(by));
    let cases: Vec<(&Who, &str, Value, Option<String>)> = vec![
        // bob holds the Role (RBAC lets him patch status), and r2 does not name him.
        (&bob, "r2", approve("b1", "bob"), Some(not_theirs("bob"))),
        (
            &carol,
            "r2",
            approve("b1", "carol"),
            Some(not_theirs("carol")),
        ),
        (
            &Who::User(ADMIN),
            "r2",
            approve("b1", "admin"),
            Some(not_theirs("admin")),
        ),
        (&alice, "r1", approve("a1", "alice"), None),
        (
            &bob,
            "r1",
            decision("a2", "Reject", None, Some("bob")),
            None,
        ),
        (&carol, "r1", approve("a3", "carol"), None),
        (&alice, "r2", approve("b1", "alice"), None),
    ];
    let mut problems = Vec::new();
    for (who, run, value, want) in &cases {
        let out = decide(env, who, ns, run, value).await?;
        let what = format!("{} deciding {value} on {run}", who.name());
        match want {
            None if !out.success => problems.push(format!("{what}: refused: {}", out.stderr)),
            Some(msg) if out.success => problems.push(format!("{what}: accepted, wanted {msg}")),
            Some(msg) if !out.stderr.contains(msg.as_str()) => {
                problems.push(format!("{what}: wanted {msg:?}, got: {}", out.stderr));
            }
            _ => {}
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert_eq!(
        decisions(env, ns, "r1").await?,
        ["a1:Approve:alice", "a2:Reject:bob", "a3:Approve:carol"]
    );
    assert_eq!(decisions(env, ns, "r2").await?, ["b1:Approve:alice"]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_names_an_open_approval_once_with_its_digest_and_the_deciders_own_name_rules_4_11_4_53()
-> Result<()> {
    let p = Policed::create("policy-what").await?;
    let (env, ns) = (p.env, p.ns());
    let alice = Who::User(ALICE);
    let out = p
        .create_run(&alice, &run_manifest("r1", "alice", json!({})))
        .await?;
    ensure!(out.success, "{}", out.stderr);
    awaiting(
        env,
        ns,
        "r1",
        vec![
            pending("a1", DIGEST, true),
            pending("big", DIGEST, false),
            pending("late", DIGEST, true),
        ],
    )
    .await?;
    // The sidecar removes an approval from status when it expires.
    awaiting(
        env,
        ns,
        "r1",
        vec![pending("a1", DIGEST, true), pending("big", DIGEST, false)],
    )
    .await?;
    let refused = |m: &str| Some(denied_by(DECISIONS_POLICY, ns, m));
    let not_the_digest = |d: &str, id: &str| {
        refused(&format!(
            "an Approve must carry the digest of the text you read: '{d}' is not the digest of approval '{id}'; read the text again and approve with the digest of what you read, or Reject"
        ))
    };
    let cases: Vec<(Value, Option<String>)> = vec![
        (
            decision("a1", "Approve", Some(OTHER_DIGEST), Some("alice")),
            not_the_digest(OTHER_DIGEST, "a1"),
        ),
        (
            decision("a1", "Approve", None, Some("alice")),
            not_the_digest("", "a1"),
        ),
        (
            decision("a1", "Approve", Some(DIGEST), Some("bob")),
            refused("decidedBy must be the requesting user: set decidedBy to alice (it is 'bob')"),
        ),
        (
            decision("a1", "Reject", None, None),
            refused("decidedBy must be the requesting user: set decidedBy to alice (it is '')"),
        ),
        (
            decision("late", "Approve", Some(DIGEST), Some("alice")),
            refused(
                "approval 'late' is not pending on this run (never asked, already settled, or expired and removed): decide only what status.pendingApprovals lists",
            ),
        ),
        (
            decision("big", "Approve", Some(DIGEST), Some("alice")),
            refused(
                "approval 'big' shows only part of its text (over 128 KiB, complete: false): it can only be rejected",
            ),
        ),
        (decision("big", "Reject", None, Some("alice")), None),
        (decision("a1", "Approve", Some(DIGEST), Some("alice")), None),
        (
            decision("a1", "Reject", None, Some("alice")),
            refused(
                "approval 'a1' was already decided (status.decisions has it): each approval is decided once",
            ),
        ),
        (
            decision("a1", "Approve", Some(DIGEST), Some("alice")),
            refused(
                "approval 'a1' was already decided (status.decisions has it): each approval is decided once",
            ),
        ),
    ];
    let mut problems = Vec::new();
    for (value, want) in &cases {
        let out = decide(env, &alice, ns, "r1", value).await?;
        match want {
            None if !out.success => problems.push(format!("{value}: refused: {}", out.stderr)),
            Some(msg) if out.success => problems.push(format!("{value}: accepted, wanted {msg}")),
            Some(msg) if !out.stderr.contains(msg.as_str()) => {
                problems.push(format!("{value}: wanted {msg:?}, got: {}", out.stderr));
            }
            _ => {}
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert_eq!(
        decisions(env, ns, "r1").await?,
        ["big:Reject:alice", "a1:Approve:alice"]
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_account_never_decides_even_on_its_own_run_and_status_writes_without_decisions_pass_rule_4_53()
-> Result<()> {
    let p = Policed::create("policy-sa").await?;
    let (env, ns) = (p.env, p.ns());
    let pipeline = p.pipeline().await?;
    let sa = pipeline.name();
    let manifest = run_manifest(
        "gitops",
        &sa,
        json!({"composition": with_approval(), "approvers": {"users": ["alice"]}}),
    );
    let out = p.create_run(&pipeline, &manifest).await?;
    ensure!(out.success, "{}", out.stderr);
    awaiting(env, ns, "gitops", vec![pending("p1", DIGEST, true)]).await?;

    let out = decide(
        env,
        &pipeline,
        ns,
        "gitops",
        &decision("p1", "Approve", Some(DIGEST), Some(&sa)),
    )
    .await?;
    ensure!(!out.success, "the ServiceAccount decided");
    let want = denied_by(
        DECISIONS_POLICY,
        ns,
        &format!(
            "decisions are made by people: {sa} is a service account or a system user and may not decide; the run's owner or one of its approvers (spec.approvers) decides"
        ),
    );
    assert!(out.stderr.contains(&want), "{}", out.stderr);

    // Status writes that leave decisions alone pass, whoever writes them: the ServiceAccount
    // (the Role lets it patch status), admin, and the operator's own ServiceAccount applying
    // status server-side as it does (the chart's RBAC, bound to this namespace).
    ok_as(
        env,
        &pipeline,
        &[
            "patch",
            "studiorun/gitops",
            "-n",
            ns,
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"eventCount":3}}"#,
        ],
    )
    .await?;
    patch_status(
        env,
        ns,
        "gitops",
        json!({"phase": "AwaitingApproval", "pendingApprovals": [pending("p1", DIGEST, true), pending("p2", DIGEST, true)]}),
    )
    .await?;
    let operator = operator_client(env, ns).await?;
    let runs: Api<DynamicObject> = Api::namespaced_with(
        operator,
        ns,
        &ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("studio.orrery.dev", "v1alpha1", "StudioRun"),
            "studioruns",
        ),
    );
    let body = json!({
        "apiVersion": "studio.orrery.dev/v1alpha1",
        "kind": "StudioRun",
        "metadata": {"name": "gitops"},
        "status": {"phase": "AwaitingApproval", "runnerPod": "gitops-runner"}
    });
    runs.patch_status(
        "gitops",
        &PatchParams::apply("orrery-operator").force(),
        &Patch::Apply(&body),
    )
    .await
    .context("the operator's server-side apply of status")?;

    // The person it names decides.
    let out = decide(
        env,
        &Who::User(ALICE),
        ns,
        "gitops",
        &decision("p1", "Approve", Some(DIGEST), Some("alice")),
    )
    .await?;
    ensure!(out.success, "alice deciding: {}", out.stderr);
    assert_eq!(decisions(env, ns, "gitops").await?, ["p1:Approve:alice"]);
    let pod = kubectl_ok(
        env,
        ADMIN,
        &[
            "get",
            "studiorun/gitops",
            "-n",
            ns,
            "-o",
            "jsonpath={.status.runnerPod} {.status.eventCount}",
        ],
    )
    .await?;
    assert_eq!(pod, "gitops-runner 3");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_operators_account_or_an_administrator_changes_what_is_pending_rule_4_56()
-> Result<()> {
    let p = Policed::create("policy-pending").await?;
    let (env, ns) = (p.env, p.ns());
    let out = p
        .create_run(
            &Who::User(ALICE),
            &run_manifest("mine", ALICE, json!({"composition": with_approval()})),
        )
        .await?;
    ensure!(out.success, "{}", out.stderr);
    awaiting(env, ns, "mine", vec![pending("p1", DIGEST, true)]).await?;
    // The owner, who may append a decision, may not rewrite the digest she will approve; nor
    // may a pipeline's account that holds the same Role.
    let forged =
        json!({"status": {"pendingApprovals": [pending("p1", &"0".repeat(64), true)]}}).to_string();
    let patch = [
        "patch",
        "studiorun/mine",
        "-n",
        ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        forged.as_str(),
    ];
    let stderr = fails_as(env, &Who::User(ALICE), &patch).await?;
    let want = denied_by(
        PENDING_POLICY,
        ns,
        "status.pendingApprovals is written by the system only (the sidecar, as system:serviceaccount:orrery-system:orrery-operator, asks, settles and expires approvals): alice may append a decision to status.decisions but not change what is pending",
    );
    ensure!(stderr.contains(&want), "{stderr}");
    let pipeline = p.pipeline().await?;
    let stderr = fails_as(env, &pipeline, &patch).await?;
    ensure!(stderr.contains(PENDING_POLICY), "{stderr}");
    // The operator's own account (the sidecar runs as it) settles the approval.
    let operator = operator_client(env, ns).await?;
    let runs: Api<DynamicObject> = Api::namespaced_with(
        operator,
        ns,
        &ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("studio.orrery.dev", "v1alpha1", "StudioRun"),
            "studioruns",
        ),
    );
    let body = json!({
        "apiVersion": "studio.orrery.dev/v1alpha1",
        "kind": "StudioRun",
        "metadata": {"name": "mine"},
        "status": {"pendingApprovals": []}
    });
    runs.patch_status(
        "mine",
        &PatchParams::apply("orrery-sidecar").force(),
        &Patch::Apply(&body),
    )
    .await
    .context("the sidecar's account clears what is pending")?;
    Ok(())
}
