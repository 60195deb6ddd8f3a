//! The test control plane itself: version, users and RBAC, the controller-manager controllers
//! the operator relies on, server-side apply and ValidatingAdmissionPolicy.
//!
//! Uses the control plane named by `ORRERY_TESTENV_KUBECONFIG` (`tests/e2e.sh` sets it), else
//! starts one for this test binary (binaries from `tests/testenv/build.sh`: cached, or Go and
//! minutes when cold). `cargo test -p orrery-tests --test testenv_smoke`.

use anyhow::{Context, Result};
use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::{Resource, ResourceExt};
use orrery_tests::harness::{
    self, GC_TIMEOUT, TIMEOUT, TestNamespace, apply, apply_yaml, kubectl, kubectl_err,
    wait_deleted, wait_for,
};
use orrery_tests::testenv::{self, ADMIN, ALICE, BOB};
use serde_json::json;

fn from_json<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> Result<T> {
    Ok(serde_json::from_value(v)?)
}

#[tokio::test]
async fn server_is_kubernetes_1_36_3() -> Result<()> {
    let env = testenv::shared_async().await?;
    let v = env.admin().await?.apiserver_version().await?;
    assert_eq!(v.git_version, "v1.36.3");
    let out = kubectl(env, ADMIN, &["version", "-o", "json"])?;
    let out: serde_json::Value = serde_json::from_str(&out)?;
    assert_eq!(
        out.pointer("/clientVersion/gitVersion")
            .and_then(|v| v.as_str()),
        Some("v1.36.3")
    );
    assert_eq!(
        out.pointer("/serverVersion/gitVersion")
            .and_then(|v| v.as_str()),
        Some("v1.36.3")
    );
    Ok(())
}

#[tokio::test]
async fn users_and_rbac() -> Result<()> {
    let env = testenv::shared_async().await?;
    let ns = TestNamespace::create(env, "rbac").await?;
    let alice = env.client(ALICE).await?;
    let bob = env.client(BOB).await?;

    // Identities.
    let who = kubectl(
        env,
        ALICE,
        &[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ],
    )?;
    assert_eq!(who, "alice");
    let who = kubectl(
        env,
        ADMIN,
        &["auth", "whoami", "-o", "jsonpath={.status.userInfo.groups}"],
    )?;
    assert!(who.contains("system:masters"), "{who}");

    // Nothing is allowed to alice until granted...
    let err = ns
        .api::<Pod>(&alice)
        .list(&ListParams::default())
        .await
        .map_err(anyhow::Error::from);
    assert!(err.as_ref().is_err_and(harness::is_forbidden), "{err:?}");
    let stderr = kubectl_err(env, ALICE, &["-n", &ns.name, "get", "pods"])?;
    assert!(stderr.contains("Forbidden"), "{stderr}");

    // ...then the aggregated `edit` ClusterRole works for her (clusterrole-aggregation runs).
    let rb: RoleBinding = from_json(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": { "name": "alice-edit", "namespace": ns.name },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit" },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice" }]
    }))?;
    apply(&ns.api::<RoleBinding>(&env.admin().await?), &rb).await?;
    // The authorizer sees the binding through an informer: wait for it to apply.
    harness::wait_allowed(&alice, Some(&ns.name), "list", "", "pods").await?;
    ns.api::<Pod>(&alice)
        .list(&ListParams::default())
        .await
        .context("alice, after the RoleBinding")?;
    let err = ns
        .api::<Pod>(&bob)
        .list(&ListParams::default())
        .await
        .map_err(anyhow::Error::from);
    assert!(err.as_ref().is_err_and(harness::is_forbidden), "{err:?}");
    Ok(())
}

#[tokio::test]
async fn controller_manager_controllers() -> Result<()> {
    let env = testenv::shared_async().await?;
    let admin = env.admin().await?;
    let ns = TestNamespace::create(env, "kcm").await?; // waits for the default ServiceAccount

    // root-ca-certificate-publisher.
    let cms = ns.api::<ConfigMap>(&admin);
    wait_for(
        &cms,
        "kube-root-ca.crt",
        "the root CA ConfigMap",
        TIMEOUT,
        |c: Option<&ConfigMap>| c.is_some(),
    )
    .await?;

    // serviceaccount-token fills a token Secret.
    let sa: ServiceAccount = from_json(json!({ "metadata": { "name": "robot" } }))?;
    ns.api::<ServiceAccount>(&admin)
        .create(&PostParams::default(), &sa)
        .await?;
    let secret: Secret = from_json(json!({
        "metadata": { "name": "robot-token", "annotations": { "kubernetes.io/service-account.name": "robot" } },
        "type": "kubernetes.io/service-account-token"
    }))?;
    let secrets = ns.api::<Secret>(&admin);
    secrets.create(&PostParams::default(), &secret).await?;
    wait_for(
        &secrets,
        "robot-token",
        "a token in the Secret",
        TIMEOUT,
        |s: Option<&Secret>| {
            s.and_then(|s| s.data.as_ref())
                .is_some_and(|d| d.contains_key("token") && d.contains_key("ca.crt"))
        },
    )
    .await?;

    // garbage-collector: deleting the owner deletes the dependent.
    let owner: ConfigMap =
        from_json(json!({ "metadata": { "name": "owner" }, "data": { "a": "1" } }))?;
    let owner = cms.create(&PostParams::default(), &owner).await?;
    let owner_ref = owner.controller_owner_ref(&()).context("owner reference")?;
    let mut owned: ConfigMap =
        from_json(json!({ "metadata": { "name": "owned" }, "data": { "b": "2" } }))?;
    owned.meta_mut().owner_references = Some(vec![owner_ref]);
    cms.create(&PostParams::default(), &owned).await?;
    cms.delete("owner", &DeleteParams::default()).await?;
    wait_deleted(&cms, "owned", GC_TIMEOUT).await?;

    // namespace: deleting a namespace with content completes.
    let namespaces: Api<Namespace> = Api::all(admin.clone());
    let gone = TestNamespace::create(env, "nsdel").await?;
    gone.api::<ConfigMap>(&admin)
        .create(
            &PostParams::default(),
            &from_json(json!({ "metadata": { "name": "x" } }))?,
        )
        .await?;
    namespaces
        .delete(&gone.name, &DeleteParams::default())
        .await?;
    wait_deleted(&namespaces, &gone.name, GC_TIMEOUT).await?;
    Ok(())
}

#[tokio::test]
async fn server_side_apply_and_validating_admission_policy() -> Result<()> {
    let env = testenv::shared_async().await?;
    let admin = env.admin().await?;
    let ns = TestNamespace::create(env, "vap").await?;

    // SSA from YAML, twice (idempotent), cluster-scoped policy plus a namespaced object.
    let policy = format!(
        r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {{ name: "{ns}-no-forbidden-data" }}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["configmaps"]
  validations:
  - expression: "!has(object.data) || !('forbidden' in object.data)"
    message: "configmaps may not carry a 'forbidden' key"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {{ name: "{ns}-no-forbidden-data" }}
spec:
  policyName: "{ns}-no-forbidden-data"
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels: {{ kubernetes.io/metadata.name: "{ns}" }}
---
apiVersion: v1
kind: ConfigMap
metadata: {{ name: allowed }}
data: {{ fine: "yes" }}
"#,
        ns = ns.name
    );
    for _ in 0..2 {
        let applied = apply_yaml(&admin, Some(&ns.name), &policy).await?;
        assert_eq!(applied.len(), 3);
    }

    // The policy takes effect within seconds (the apiserver's policy informer).
    let cms = ns.api::<ConfigMap>(&admin);
    let bad: ConfigMap =
        from_json(json!({ "metadata": { "name": "bad" }, "data": { "forbidden": "1" } }))?;
    let deadline = std::time::Instant::now() + TIMEOUT;
    let err = loop {
        match cms.create(&PostParams::default(), &bad).await {
            Err(e) => break anyhow::Error::from(e),
            Ok(_) => {
                cms.delete("bad", &DeleteParams::default()).await?;
                anyhow::ensure!(
                    std::time::Instant::now() < deadline,
                    "the policy never denied the ConfigMap"
                );
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
        }
    };
    let msg = format!("{err:#}");
    assert!(msg.contains("forbidden' key"), "{msg}");

    // validatingadmissionpolicy-status-controller type-checks the policy.
    let vaps: Api<ValidatingAdmissionPolicy> = Api::all(admin.clone());
    let name = format!("{}-no-forbidden-data", ns.name);
    wait_for(
        &vaps,
        &name,
        "type checking",
        TIMEOUT,
        |p: Option<&ValidatingAdmissionPolicy>| {
            p.and_then(|p| p.status.as_ref())
                .is_some_and(|s| s.type_checking.is_some())
        },
    )
    .await?;
    vaps.delete(&name, &DeleteParams::default()).await?;
    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(admin.clone());
    bindings.delete(&name, &DeleteParams::default()).await?;
    let _ = cms.get("allowed").await?.name_any();
    Ok(())
}
