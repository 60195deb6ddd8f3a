//! The Helm chart against the real kube-apiserver: `helm install` creates every object (the API
//! server accepts them all, admission policies included), the ServiceAccount gets exactly the
//! chart's rights (`kubectl auth can-i`), the pending-approvals policy trusts the release's own
//! ServiceAccount, the built-in `edit` and `view` roles cover Orrery's kinds when
//! `rbac.aggregateToDefaultRoles` is on, `helm upgrade` rolls the config and keeps the run-token
//! key, a second release that would collide with the first is refused, `watchNamespace`
//! confines the controllers' rights to that namespace, and `helm uninstall` removes the release
//! but keeps the key Secret and the CRDs.
//!
//! One test in its own binary: the admission policies are cluster-wide objects with fixed names,
//! which other test binaries apply for themselves (they run one after another, never at once).
//!
//! Control plane: `ORRERY_TESTENV_KUBECONFIG` (set by `tests/e2e.sh`), else one started for
//! this test binary.

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, RoleBinding};
use kube::Api;
use orrery_tests::chart::{self, Release, chart_dir};
use orrery_tests::harness::{TestNamespace, ensure_crds, kubectl};
use orrery_tests::testenv::{self, ADMIN, ALICE, BOB, TestEnv};

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

/// Each row (verb, resource, namespace, whether the chart grants it) as the API server
/// answers `kubectl auth can-i` for `sa`. RBAC reaches the authorizer a moment after it is
/// written, so a mismatch is asked again for up to 10 s before it fails.
fn check_rights(env: &TestEnv, sa: &str, rows: &[(&str, &str, &String, bool)]) -> Result<()> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let mut wrong = Vec::new();
        for (verb, resource, ns, want) in rows {
            let got = can_i(env, sa, verb, resource, ns)?;
            if got != *want {
                wrong.push(format!(
                    "can-i {verb} {resource} -n {ns} as {sa}: {got}, the chart means {want}"
                ));
            }
        }
        if wrong.is_empty() {
            return Ok(());
        }
        ensure!(std::time::Instant::now() < deadline, "{}", wrong.join("\n"));
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
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
            "--set",
            "rbac.aggregateToDefaultRoles=true",
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

    // The chart's RBAC, as the API server evaluates it: every right the operator's code uses
    // (charts/orrery/templates/rbac.yaml names the code), and none beyond.
    let (t, o, sys) = (&tenant.name, &other.name, &system.name);
    let rows = [
        // Orrery's kinds: read and status everywhere (the controllers watch every namespace),
        // finished runs deleted; the spec is never written.
        ("watch", "compositions.studio.orrery.dev", o, true),
        ("list", "registryentries.studio.orrery.dev", o, true),
        ("get", "studioruns.studio.orrery.dev", o, true),
        ("patch", "compositions.studio.orrery.dev/status", o, true),
        ("patch", "registryentries.studio.orrery.dev/status", o, true),
        ("patch", "studioruns.studio.orrery.dev/status", o, true),
        ("update", "studioruns.studio.orrery.dev/status", o, false),
        ("delete", "studioruns.studio.orrery.dev", o, true),
        ("patch", "studioruns.studio.orrery.dev", t, false),
        ("create", "studioruns.studio.orrery.dev", t, false),
        ("delete", "compositions.studio.orrery.dev", t, false),
        // Pods: watched everywhere, written in tenant namespaces only.
        ("watch", "pods", o, true),
        ("create", "pods", t, true),
        ("patch", "pods", t, true),
        ("delete", "pods", t, true),
        ("create", "pods", o, false),
        ("update", "pods", t, false),
        ("create", "pods/exec", t, false),
        ("get", "pods/log", t, false),
        // Secrets: by name and created, in tenant namespaces only.
        ("get", "secrets", t, true),
        ("create", "secrets", t, true),
        ("list", "secrets", t, false),
        ("delete", "secrets", t, false),
        ("get", "secrets", o, false),
        ("get", "configmaps", t, true),
        ("list", "configmaps", t, false),
        ("update", "configmaps", t, false),
        ("get", "configmaps", o, false),
        // NetworkPolicies: created and applied in tenant namespaces, never deleted (owned).
        ("create", "networkpolicies.networking.k8s.io", t, true),
        ("patch", "networkpolicies.networking.k8s.io", t, true),
        ("get", "networkpolicies.networking.k8s.io", t, true),
        ("watch", "networkpolicies.networking.k8s.io", t, false),
        ("list", "networkpolicies.networking.k8s.io", o, false),
        ("delete", "networkpolicies.networking.k8s.io", t, false),
        ("create", "networkpolicies.networking.k8s.io", o, false),
        // ControllerRevisions: watched, created and pruned.
        ("watch", "controllerrevisions.apps", o, true),
        ("create", "controllerrevisions.apps", t, true),
        ("delete", "controllerrevisions.apps", t, true),
        ("create", "controllerrevisions.apps", o, false),
        // Events, in tenant namespaces.
        ("create", "events.events.k8s.io", t, true),
        ("patch", "events.events.k8s.io", t, true),
        ("create", "events.events.k8s.io", o, false),
        // Namespaces: one get.
        ("get", "namespaces", o, true),
        ("list", "namespaces", o, false),
        // The leader Lease, in the release namespace only.
        ("get", "leases.coordination.k8s.io", sys, true),
        ("watch", "leases.coordination.k8s.io", sys, true),
        ("create", "leases.coordination.k8s.io", sys, true),
        ("patch", "leases.coordination.k8s.io", sys, true),
        ("update", "leases.coordination.k8s.io", sys, false),
        ("delete", "leases.coordination.k8s.io", sys, false),
        ("create", "leases.coordination.k8s.io", t, false),
        // Never.
        ("create", "serviceaccounts/token", t, false),
        ("create", "rolebindings.rbac.authorization.k8s.io", t, false),
    ];
    check_rights(env, &sa, &rows)?;

    // rbac.aggregateToDefaultRoles: the built-in `edit` and `view` roles, bound in the tenant
    // namespace, now cover Orrery's kinds (the aggregation controller fills them in), never a
    // status write.
    for (user, role) in [(ALICE, "edit"), (BOB, "view")] {
        let binding: RoleBinding = serde_json::from_value(serde_json::json!({
            "metadata": {"name": format!("{user}-{role}")},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]
        }))?;
        Api::<RoleBinding>::namespaced(client.clone(), &tenant.name)
            .create(&Default::default(), &binding)
            .await
            .with_context(|| format!("binding {user} to {role}"))?;
    }
    let users = [
        (ALICE, "create", "compositions.studio.orrery.dev", true),
        (ALICE, "delete", "registryentries.studio.orrery.dev", true),
        (ALICE, "patch", "studioruns.studio.orrery.dev", true),
        (ALICE, "patch", "studioruns.studio.orrery.dev/status", false),
        (BOB, "list", "studioruns.studio.orrery.dev", true),
        (BOB, "get", "compositions.studio.orrery.dev/status", true),
        (BOB, "create", "studioruns.studio.orrery.dev", false),
    ];
    for (user, verb, resource, want) in users {
        check_rights(env, user, &[(verb, resource, t, want)])?;
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

    // A second release is refused at render when it would collide: the same release name in
    // another namespace (cluster-scoped names), or serving what this one serves (every
    // namespace, here).
    let second = |name: &str, extra: &[&str]| -> Result<String> {
        let mut args = vec![
            "install",
            name,
            &chart,
            "--namespace",
            &other.name,
            "--kube-context",
            ADMIN,
        ];
        args.extend_from_slice(extra);
        let out = chart::helm(&args, Some(&env.kubeconfig))?;
        if out.success {
            let _ = helm(env, &["uninstall", name, "-n", &other.name]);
            anyhow::bail!("a second release {name} in {} was installed", other.name);
        }
        Ok(out.stderr)
    };
    let refused = second(&release, &[])?;
    ensure!(
        refused.contains("is already used by the release in namespace")
            && refused.contains(&system.name),
        "{refused}"
    );
    let watch_other = format!("watchNamespace={}", other.name);
    let refused = second(&format!("{release}b"), &["--set", &watch_other])?;
    ensure!(
        refused.contains("watchNamespace")
            && refused.contains(&format!(
                "the release {release} in namespace {}",
                system.name
            ))
            && refused.contains("every namespace"),
        "{refused}"
    );

    // One watched namespace: the controllers' and the sidecar's rights hold there alone (a
    // RoleBinding; the sidecar's sweep lists that namespace only, `sidecar --namespace`); only
    // Namespaces are still read cluster-wide.
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
            &format!("watchNamespace={}", tenant.name),
        ],
    )?;
    let rows = [
        ("watch", "compositions.studio.orrery.dev", t, true),
        ("patch", "studioruns.studio.orrery.dev/status", t, true),
        ("delete", "studioruns.studio.orrery.dev", t, true),
        ("watch", "pods", t, true),
        ("create", "pods", t, true),
        ("watch", "compositions.studio.orrery.dev", o, false),
        ("get", "studioruns.studio.orrery.dev", o, false),
        ("patch", "studioruns.studio.orrery.dev/status", o, false),
        ("delete", "studioruns.studio.orrery.dev", o, false),
        ("watch", "pods", o, false),
        ("watch", "controllerrevisions.apps", o, false),
        ("list", "studioruns.studio.orrery.dev", t, true),
        ("list", "studioruns.studio.orrery.dev", o, false),
        ("watch", "studioruns.studio.orrery.dev", o, false),
        ("get", "namespaces", o, true),
        ("create", "leases.coordination.k8s.io", sys, true),
    ];
    check_rights(env, &sa, &rows)?;

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
