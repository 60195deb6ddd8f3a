//! The chart's admission policies (`charts/orrery/templates/policies/`) bound to one test
//! namespace: the policies as the chart renders them, and bindings derived from the chart's that
//! select that namespace alone, so the other tests sharing the control plane are unaffected.
//! [`Studio::start`](crate::studio::Studio::start) binds them when asked; `e2e_policies` binds
//! them with no operator at all.

use crate::harness::{apply_yaml, keep, kubectl_ok};
use crate::testenv::{ADMIN, TestEnv};
use anyhow::{Context as _, Result, bail, ensure};
use serde_json::{Value, json};
use std::time::Duration;

/// The name of `policy`'s binding for namespace `ns`.
pub fn binding_name(policy: &str, ns: &str) -> String {
    format!("{policy}.{ns}")
}

/// The chart's admission-policy templates.
pub const POLICY_TEMPLATES: &[&str] = &[
    "templates/policies/studioruns-create.yaml",
    "templates/policies/studioruns-decisions.yaml",
    "templates/policies/studioruns-pending.yaml",
];

/// The chart's policy documents (`charts/orrery/templates/policies/`, rendered as the release
/// `orrery` in `orrery-system`), and bindings derived from the chart's for `ns` alone: each
/// chart binding (cluster-wide, `validationActions: [Deny]`) gets the name [`binding_name`] and
/// a `namespaceSelector` on `ns`'s immutable name label.
pub fn policies_for(ns: &str) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut args = Vec::new();
    for file in POLICY_TEMPLATES {
        args.extend(["--show-only", *file]);
    }
    let rendered = crate::chart::template(
        crate::operator_identity::RELEASE,
        crate::operator_identity::OPERATOR_NAMESPACE,
        &args,
    )?
    .ok()?;
    let (mut policies, mut bindings) = (Vec::new(), Vec::new());
    let path = std::path::Path::new("charts/orrery/templates/policies");
    {
        for mut doc in crate::chart::documents(&rendered)? {
            match doc["kind"].as_str() {
                Some("ValidatingAdmissionPolicy") => {
                    ensure!(
                        doc["spec"]["failurePolicy"] == "Fail",
                        "{}: failurePolicy must be Fail",
                        path.display()
                    );
                    policies.push(doc);
                }
                Some("ValidatingAdmissionPolicyBinding") => {
                    ensure!(
                        doc["spec"]["validationActions"] == json!(["Deny"]),
                        "{}: a shipped binding denies",
                        path.display()
                    );
                    ensure!(
                        doc["spec"].get("matchResources").is_none(),
                        "{}: a shipped binding is cluster-wide",
                        path.display()
                    );
                    let policy = doc["spec"]["policyName"]
                        .as_str()
                        .context("a binding without policyName")?
                        .to_owned();
                    doc["metadata"] = json!({"name": binding_name(&policy, ns)});
                    doc["spec"]["matchResources"] = json!({"namespaceSelector": {
                        "matchLabels": {"kubernetes.io/metadata.name": ns}
                    }});
                    bindings.push(doc);
                }
                other => bail!("{}: unexpected document kind {other:?}", path.display()),
            }
        }
    }
    Ok((policies, bindings))
}

/// The policies and bindings [`apply_policies`] made for one namespace. The bindings are deleted
/// when this is dropped, unless test namespaces are kept ([`keep`]); the policies stay (without a
/// binding they act on nothing).
pub struct PolicyBindings {
    env: &'static TestEnv,
    /// The policies' names.
    pub policies: Vec<String>,
    /// The bindings' names ([`binding_name`]).
    pub bindings: Vec<String>,
}

impl PolicyBindings {
    /// The policies and their bindings in namespace `ns`, as the operator's config
    /// `admissionPolicies` names them.
    pub fn refs(&self, ns: &str) -> Vec<orrery_operator::config::AdmissionPolicyRef> {
        self.policies
            .iter()
            .map(|policy| orrery_operator::config::AdmissionPolicyRef {
                policy: policy.clone(),
                binding: binding_name(policy, ns),
            })
            .collect()
    }
}

impl Drop for PolicyBindings {
    fn drop(&mut self) {
        if keep() || self.bindings.is_empty() {
            return;
        }
        // Synchronous and runtime-independent, like a test namespace's deletion.
        let _ = self
            .env
            .kubectl(ADMIN)
            .args([
                "delete",
                "validatingadmissionpolicybinding",
                "--ignore-not-found",
            ])
            .args(&self.bindings)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }
}

/// Applies the chart's policies and binds them to `ns` alone ([`policies_for`]). They take
/// effect asynchronously: [`bind_policies`] waits until they act.
pub async fn apply_policies(env: &'static TestEnv, ns: &str) -> Result<PolicyBindings> {
    let (policies, bindings) = policies_for(ns)?;
    let names = |docs: &[Value]| -> Vec<String> {
        docs.iter()
            .filter_map(|d| d["metadata"]["name"].as_str().map(str::to_owned))
            .collect()
    };
    let bound = PolicyBindings {
        env,
        policies: names(&policies),
        bindings: names(&bindings),
    };
    let admin = env.admin().await?;
    for doc in policies.iter().chain(bindings.iter()) {
        apply_yaml(&admin, None, &serde_json::to_string(doc)?).await?;
    }
    Ok(bound)
}

/// [`apply_policies`], then waits until a policy is seen to act ([`wait_policies_act`]).
pub async fn bind_policies(env: &'static TestEnv, ns: &str) -> Result<PolicyBindings> {
    let bound = apply_policies(env, ns).await?;
    wait_policies_act(env, ns).await?;
    Ok(bound)
}

/// Waits until the admission policies act in `ns` (they take effect asynchronously): a run
/// created by admin but owned by someone else is refused.
pub async fn wait_policies_act(env: &TestEnv, ns: &str) -> Result<()> {
    let admin = env.admin().await?;
    let probe = json!({
        "apiVersion": "studio.orrery.dev/v1alpha1",
        "kind": "StudioRun",
        "metadata": {"name": "policy-probe"},
        "spec": {"compositionRef": {"name": "nothing"}, "input": "x", "owner": "somebody-else"}
    })
    .to_string();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        match apply_yaml(&admin, Some(ns), &probe).await {
            Err(_) => break,
            Ok(_) => {
                let _ = kubectl_ok(
                    env,
                    ADMIN,
                    &[
                        "delete",
                        "studiorun",
                        "policy-probe",
                        "-n",
                        ns,
                        "--wait=false",
                    ],
                )
                .await;
            }
        }
        ensure!(
            tokio::time::Instant::now() < deadline,
            "the admission policies did not take effect in {ns} within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    Ok(())
}
