//! The Helm chart against the real kube-apiserver: `helm install` creates every object (the API
//! server accepts them all, admission policies included), the ServiceAccount gets exactly the
//! chart's rights (`kubectl auth can-i`), the pending-approvals policy trusts the release's own
//! ServiceAccount, `helm upgrade` rolls the config and keeps the run-token key, and `helm
//! uninstall` removes the release but keeps the key Secret and the CRDs.
//!
//! One test in its own binary: the admission policies are cluster-wide objects with fixed names,
//! which other test binaries apply for themselves (they run one after another, never at once).
//!
//! Control plane: `ORRERY_TESTENV_KUBECONFIG` (set by `tests/e2e.sh`), else one started for
//! this test binary.

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::Api;
use orrery_tests::chart::{self, Release, chart_dir};
use orrery_tests::harness::{TestNamespace, ensure_crds, kubectl};
use orrery_tests::testenv::{self, ADMIN, TestEnv};

fn helm(env: &TestEnv, args: &[&str]) -> Result<String> {
    let mut all = args.to_vec();
    all.extend_from_slice(&["--kube-context", ADMIN]);
    chart::helm(&all, Some(&env.kubeconfig))?.ok()
}

fn can_i(env: &TestEnv, sa: &str, verb: &str, resource: &str, ns: &str) -> Result<bool> {
    let mut cmd = env.kubectl(ADMIN);
    cmd.args(["auth", "can-i", verb, "-n", ns, "--as", sa]);
    match resource.split_once('/') {
        Some((resource, sub)) => cmd.args([resource, "--subresource", sub]),
        None => cmd.arg(resource),
    };
    let out = cmd.output().context("kubectl auth can-i")?;
    Ok(String::from_utf8_lossy(&out.stdout).trim() == "yes")
}

#[tokio::test]
async fn helm_installs_upgrades_and_uninstalls_the_chart_on_a_real_apiserver() -> Result<()> {
    let env = testenv::shared_async().await?;
    ensure_crds(env).await?;
    let system = TestNamespace::create(env, "chart-sys").await?;
    let tenant = TestNamespace::create(env, "chart-tenant").await?;
    let other = TestNamespace::create(env, "chart-other").await?;
    let release = format!("chart{}", &system.name[system.name.len() - 5..]);
    let operator = format!("{release}-operator");
    let sa = format!("system:serviceaccount:{}:{operator}", system.name);
    let client = env.admin().await?;
    let chart = chart_dir();
    let chart = chart.to_string_lossy();
    let tenants = format!("tenantNamespaces={{{}}}", tenant.name);

    // Install. The admission policies may exist from another test binary (applied without
    // Helm): the release takes them over. Dropping `installed` (a failed step) uninstalls.
    let installed = Release::install(
        env,
        &release,
        &system.name,
        &[
            "--set",
            &tenants,
            "--set",
            "store.sqlite.persistence.enabled=false",
        ],
    )?;
    let deployment: Deployment = Api::namespaced(client.clone(), &system.name)
        .get(&operator)
        .await
        .context("the Deployment")?;
    let template = deployment
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .context("a pod template")?;
    ensure!(template.service_account_name.as_deref() == Some(operator.as_str()));
    Api::<ServiceAccount>::namespaced(client.clone(), &system.name)
        .get(&operator)
        .await?;
    Api::<Service>::namespaced(client.clone(), &system.name)
        .get(&format!("{release}-sidecar"))
        .await?;
    Api::<ClusterRole>::all(client.clone())
        .get(&format!("{operator}-tenant"))
        .await?;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &system.name);
    let key = secrets
        .get(&format!("{release}-run-token"))
        .await
        .context("the run-token Secret")?
        .data
        .context("its data")?;
    ensure!(key.contains_key("key.pem") && key.contains_key("key.pub.pem"));

    // The chart's RBAC, as the API server evaluates it.
    let rows = [
        ("create", "pods", &tenant.name, true),
        ("create", "pods", &other.name, false),
        ("get", "secrets", &tenant.name, true),
        ("list", "secrets", &tenant.name, false),
        ("get", "secrets", &other.name, false),
        (
            "create",
            "networkpolicies.networking.k8s.io",
            &tenant.name,
            true,
        ),
        (
            "patch",
            "studioruns.studio.orrery.dev/status",
            &other.name,
            true,
        ),
        ("patch", "studioruns.studio.orrery.dev", &tenant.name, false),
        ("create", "leases.coordination.k8s.io", &system.name, true),
        ("create", "leases.coordination.k8s.io", &tenant.name, false),
        ("create", "pods/exec", &tenant.name, false),
        ("create", "serviceaccounts/token", &tenant.name, false),
    ];
    for (verb, resource, ns, want) in rows {
        let got = can_i(env, &sa, verb, resource, ns)?;
        ensure!(
            got == want,
            "can-i {verb} {resource} -n {ns} as {sa}: {got}, the chart means {want}"
        );
    }

    // The pending-approvals policy names this release's ServiceAccount.
    let policy = kubectl(
        env,
        ADMIN,
        &[
            "get",
            "validatingadmissionpolicy",
            "studioruns-pending.studio.orrery.dev",
            "-o",
            "jsonpath={.spec.variables[?(@.name==\"system\")].expression}",
        ],
    )?;
    ensure!(
        policy == format!("'{sa}'"),
        "pending policy trusts {policy}"
    );

    // Upgrade: a config change reaches the ConfigMap and rolls the pods (a new checksum); the
    // run-token key stays (runs in flight keep verifying).
    let checksum = |d: &Deployment| {
        d.spec
            .as_ref()
            .and_then(|s| s.template.metadata.as_ref())
            .and_then(|m| m.annotations.as_ref())
            .and_then(|a| a.get("checksum/config").cloned())
    };
    let before = checksum(&deployment);
    helm(
        env,
        &[
            "upgrade",
            &release,
            &chart,
            "-n",
            &system.name,
            "--reuse-values",
            "--set",
            "config.approvalTimeoutSeconds=600",
        ],
    )?;
    let config: ConfigMap = Api::namespaced(client.clone(), &system.name)
        .get(&format!("{operator}-config"))
        .await?;
    let text = config
        .data
        .and_then(|d| d.get("config.yaml").cloned())
        .context("config.yaml")?;
    ensure!(text.contains("approvalTimeoutSeconds: 600"), "{text}");
    let after: Deployment = Api::namespaced(client.clone(), &system.name)
        .get(&operator)
        .await?;
    ensure!(
        checksum(&after) != before,
        "the pod template did not change"
    );
    let key_after = secrets
        .get(&format!("{release}-run-token"))
        .await?
        .data
        .context("its data")?;
    ensure!(key_after == key, "helm upgrade replaced the run-token key");

    // Bad values: helm refuses before touching the cluster, naming the field.
    let refused = chart::helm(
        &[
            "upgrade",
            &release,
            &chart,
            "-n",
            &system.name,
            "--reuse-values",
            "--set",
            "replicaCount=2",
            "--kube-context",
            ADMIN,
        ],
        Some(&env.kubeconfig),
    )?;
    ensure!(
        !refused.success && refused.stderr.contains("store.type=postgres"),
        "{}",
        refused.stderr
    );

    // Uninstall: the release's objects go; the key Secret (helm.sh/resource-policy: keep) and
    // the CRDs stay.
    installed.uninstall()?;
    ensure!(
        Api::<Deployment>::namespaced(client.clone(), &system.name)
            .get_opt(&operator)
            .await?
            .is_none(),
        "the Deployment is still there"
    );
    ensure!(
        Api::<ClusterRole>::all(client.clone())
            .get_opt(&format!("{operator}-tenant"))
            .await?
            .is_none(),
        "the tenant ClusterRole is still there"
    );
    ensure!(!can_i(env, &sa, "create", "pods", &tenant.name)?);
    ensure!(
        secrets
            .get_opt(&format!("{release}-run-token"))
            .await?
            .is_some()
    );
    kubectl(env, ADMIN, &["get", "crd", "studioruns.studio.orrery.dev"])?;
    Ok(())
}
