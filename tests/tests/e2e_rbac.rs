//! The operator's least-privilege RBAC (the chart's, `charts/orrery/templates/rbac.yaml`) against the real kube-apiserver: a
//! `kubectl auth can-i` table for the operator's ServiceAccount, one row per rule that matters
//! (Secrets only `get` and `create`, only in a bound tenant namespace; no exec, logs, RBAC
//! writes or impersonation; Leases only in `orrery-system`), plus a static check of the
//! manifests themselves (rule 14.24).
//!
//! Control plane: `ORRERY_TESTENV_KUBECONFIG` (set by `tests/e2e.sh`), else one started for
//! this test binary.

use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ListParams};
use orrery_tests::harness::{TestNamespace, ensure_crds, is_forbidden, run_kubectl};
use orrery_tests::operator_identity::{
    OPERATOR_USER, operator_client, operator_manifest, tenant_manifest,
};
use orrery_tests::testenv::{self, ADMIN, TestEnv};

/// Where a row asks.
#[derive(Debug, Clone, Copy)]
enum Scope {
    /// A namespace bound as the chart's `tenantNamespaces`.
    Tenant,
    /// A namespace that is not bound.
    Unbound,
    /// `orrery-system`, the operator's own namespace.
    OrrerySystem,
    KubeSystem,
    /// Every namespace (`-A`), and cluster-scoped resources.
    Cluster,
}

/// One row: `kubectl auth can-i VERB RESOURCE` in `scope` must answer `allowed`.
struct Row {
    verb: &'static str,
    /// `resource[.group]`, with `/subresource` when there is one.
    resource: &'static str,
    scope: Scope,
    allowed: bool,
}

const fn row(verb: &'static str, resource: &'static str, scope: Scope, allowed: bool) -> Row {
    Row {
        verb,
        resource,
        scope,
        allowed,
    }
}

const YES: bool = true;
const NO: bool = false;
use Scope::{Cluster, KubeSystem, OrrerySystem, Tenant, Unbound};

#[rustfmt::skip]
const TABLE: &[Row] = &[
    // Secrets: get (the RegistryEntries' references, by name) and create (plan Secrets), only
    // in a tenant namespace; nothing else, nowhere else.
    row("get",    "secrets", Tenant, YES),
    row("create", "secrets", Tenant, YES),
    row("list",   "secrets", Tenant, NO),
    row("watch",  "secrets", Tenant, NO),
    row("update", "secrets", Tenant, NO),
    row("patch",  "secrets", Tenant, NO),
    row("delete", "secrets", Tenant, NO),
    row("get",    "secrets", KubeSystem, NO),
    row("get",    "secrets", OrrerySystem, NO),
    row("get",    "secrets", Unbound, NO),
    row("create", "secrets", Unbound, NO),
    row("list",   "secrets", Cluster, NO),
    // Runner and probe pods: created, patched (cancel) and deleted in a tenant namespace only;
    // watched everywhere.
    row("create", "pods", Tenant, YES),
    row("patch",  "pods", Tenant, YES),
    row("delete", "pods", Tenant, YES),
    row("watch",  "pods", Cluster, YES),
    row("create", "pods", Unbound, NO),
    row("create", "pods", KubeSystem, NO),
    row("create", "pods/exec", Tenant, NO),
    row("get",    "pods/log", Tenant, NO),
    row("create", "pods/attach", Tenant, NO),
    row("create", "pods/portforward", Tenant, NO),
    row("create", "serviceaccounts/token", OrrerySystem, NO),
    row("create", "serviceaccounts/token", Tenant, NO),
    // NetworkPolicies, ControllerRevisions, Events: created in a tenant namespace.
    row("create", "networkpolicies.networking.k8s.io", Tenant, YES),
    row("patch",  "networkpolicies.networking.k8s.io", Tenant, YES),
    row("patch",  "networkpolicies.networking.k8s.io", Unbound, NO),
    row("get",    "networkpolicies.networking.k8s.io", Tenant, YES),
    row("get",    "networkpolicies.networking.k8s.io", Unbound, NO),
    row("watch",  "networkpolicies.networking.k8s.io", Cluster, NO),
    row("list",   "networkpolicies.networking.k8s.io", Tenant, NO),
    row("delete", "networkpolicies.networking.k8s.io", Tenant, NO),
    row("create", "networkpolicies.networking.k8s.io", Unbound, NO),
    row("create", "controllerrevisions.apps", Tenant, YES),
    row("delete", "controllerrevisions.apps", Tenant, YES),
    row("watch",  "controllerrevisions.apps", Cluster, YES),
    row("create", "controllerrevisions.apps", Unbound, NO),
    row("create", "events.events.k8s.io", Tenant, YES),
    row("patch",  "events.events.k8s.io", Tenant, YES),
    row("create", "events.events.k8s.io", Unbound, NO),
    // The Pod Security label check.
    row("get",    "namespaces", Cluster, YES),
    row("update", "namespaces", Cluster, NO),
    // Orrery's kinds: watched everywhere; only the status written; StudioRuns deleted (TTL).
    row("watch",  "compositions.studio.orrery.dev", Cluster, YES),
    row("watch",  "registryentries.studio.orrery.dev", Cluster, YES),
    row("watch",  "studioruns.studio.orrery.dev", Cluster, YES),
    row("patch",  "studioruns.studio.orrery.dev", Tenant, NO),
    row("update", "studioruns.studio.orrery.dev", Tenant, NO),
    row("create", "studioruns.studio.orrery.dev", Tenant, NO),
    row("patch",  "studioruns.studio.orrery.dev/status", Tenant, YES),
    row("delete", "studioruns.studio.orrery.dev", Tenant, YES),
    row("patch",  "compositions.studio.orrery.dev", Tenant, NO),
    row("patch",  "compositions.studio.orrery.dev/status", Tenant, YES),
    row("patch",  "registryentries.studio.orrery.dev", Tenant, NO),
    row("patch",  "registryentries.studio.orrery.dev/status", Tenant, YES),
    // No way to raise its own rights.
    row("create", "clusterrolebindings.rbac.authorization.k8s.io", Cluster, NO),
    row("create", "rolebindings.rbac.authorization.k8s.io", Tenant, NO),
    row("bind",   "clusterroles.rbac.authorization.k8s.io", Cluster, NO),
    row("escalate", "clusterroles.rbac.authorization.k8s.io", Cluster, NO),
    row("impersonate", "users", Cluster, NO),
    row("impersonate", "serviceaccounts", Tenant, NO),
    // The leader Lease: only in the operator's namespace.
    row("create", "leases.coordination.k8s.io", OrrerySystem, YES),
    row("patch",  "leases.coordination.k8s.io", OrrerySystem, YES),
    row("update", "leases.coordination.k8s.io", OrrerySystem, NO),
    row("watch",  "leases.coordination.k8s.io", OrrerySystem, YES),
    row("watch",  "leases.coordination.k8s.io", Tenant, NO),
    row("delete", "leases.coordination.k8s.io", OrrerySystem, NO),
    row("create", "leases.coordination.k8s.io", Tenant, NO),
    // No wildcard anywhere.
    row("*", "*", Cluster, NO),
    row("*", "*", Tenant, NO),
];

/// `kubectl auth can-i` as the operator: `Ok(true)` for yes, `Ok(false)` for no.
async fn can_i(env: &TestEnv, row: &Row, tenant: &str, unbound: &str) -> Result<bool> {
    let (resource, subresource) = match row.resource.split_once('/') {
        Some((r, s)) => (r, Some(s)),
        None => (row.resource, None),
    };
    let mut args = vec!["auth", "can-i", row.verb, resource];
    let subresource = subresource.map(|s| format!("--subresource={s}"));
    args.extend(subresource.as_deref());
    let as_user = format!("--as={OPERATOR_USER}");
    args.push(&as_user);
    match row.scope {
        Tenant => args.extend(["-n", tenant]),
        Unbound => args.extend(["-n", unbound]),
        OrrerySystem => args.extend(["-n", "orrery-system"]),
        KubeSystem => args.extend(["-n", "kube-system"]),
        Cluster => args.push("--all-namespaces"),
    }
    let out = run_kubectl(env, ADMIN, &args).await?;
    match (out.code, out.stdout.trim()) {
        (Some(0), "yes") => Ok(true),
        (Some(1), "no") => Ok(false),
        _ => bail!(
            "kubectl {} answered {:?} (exit {:?}): {}",
            args.join(" "),
            out.stdout.trim(),
            out.code,
            out.stderr.trim()
        ),
    }
}

fn describe(row: &Row) -> String {
    let scope = match row.scope {
        Tenant => "in the tenant namespace",
        Unbound => "in a namespace not bound as tenant",
        OrrerySystem => "in orrery-system",
        KubeSystem => "in kube-system",
        Cluster => "cluster-wide",
    };
    format!(
        "{} {} {scope}: want {}",
        row.verb,
        row.resource,
        if row.allowed { "yes" } else { "no" }
    )
}

#[tokio::test]
async fn the_operator_service_account_can_do_exactly_what_the_can_i_table_says() -> Result<()> {
    let env = testenv::shared_async().await?;
    ensure_crds(env).await?;
    let tenant = TestNamespace::create(env, "rbac-tenant").await?;
    let unbound = TestNamespace::create(env, "rbac-unbound").await?;
    // Applies the chart's RBAC, binds the tenant namespace and waits until the grants are in effect.
    let operator = operator_client(env, &tenant.name).await?;

    let mut wrong = Vec::new();
    for row in TABLE {
        match can_i(env, row, &tenant.name, &unbound.name).await {
            Ok(answer) if answer == row.allowed => {}
            Ok(answer) => wrong.push(format!(
                "{} (got {})",
                describe(row),
                if answer { "yes" } else { "no" }
            )),
            Err(e) => wrong.push(format!("{}: {e:#}", describe(row))),
        }
    }
    ensure!(
        wrong.is_empty(),
        "rows of the can-i table that do not hold:\n  {}",
        wrong.join("\n  ")
    );

    // The token the e2e tests run the controllers with is that ServiceAccount: it reads a
    // Secret by name in the tenant namespace (not found: there is none) but cannot list them.
    let secrets: Api<Secret> = Api::namespaced(operator.clone(), &tenant.name);
    assert!(secrets.get_opt("no-such-secret").await?.is_none());
    let listed = secrets
        .list(&ListParams::default())
        .await
        .map_err(anyhow::Error::from);
    let err = listed
        .err()
        .context("listing Secrets as the operator must fail")?;
    assert!(is_forbidden(&err), "{err:#}");
    let unbound_secrets: Api<Secret> = Api::namespaced(operator, &unbound.name);
    let err = unbound_secrets
        .get_opt("no-such-secret")
        .await
        .map_err(anyhow::Error::from)
        .err()
        .context("reading a Secret outside a tenant namespace must fail")?;
    assert!(is_forbidden(&err), "{err:#}");
    Ok(())
}

/// Every rule of every Role and ClusterRole the chart renders: (role name, rule).
fn rules() -> Result<Vec<(String, serde_yaml::Value)>> {
    let mut out = Vec::new();
    let text = format!("{}\n---\n{}", operator_manifest()?, tenant_manifest("t")?);
    for doc in serde_yaml::Deserializer::from_str(&text) {
        let doc = <serde_yaml::Value as serde::Deserialize>::deserialize(doc)?;
        let kind = doc["kind"].as_str().unwrap_or_default();
        if kind != "Role" && kind != "ClusterRole" {
            continue;
        }
        let name = doc["metadata"]["name"].as_str().unwrap_or_default();
        for rule in doc["rules"].as_sequence().context("a role without rules")? {
            out.push((format!("{kind} {name}"), rule.clone()));
        }
    }
    Ok(out)
}

fn strings(rule: &serde_yaml::Value, key: &str) -> Vec<String> {
    rule[key]
        .as_sequence()
        .map(|s| {
            s.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_manifests_grant_no_wildcard_no_escalation_and_secrets_only_get_and_create() -> Result<()> {
    let rules = rules()?;
    ensure!(rules.len() >= 10, "{} rules", rules.len());
    for (role, rule) in &rules {
        let (groups, resources, verbs) = (
            strings(rule, "apiGroups"),
            strings(rule, "resources"),
            strings(rule, "verbs"),
        );
        for value in groups.iter().chain(&resources).chain(&verbs) {
            assert!(!value.contains('*'), "{role}: a wildcard in {rule:?}");
        }
        for verb in ["escalate", "bind", "impersonate", "deletecollection"] {
            assert!(
                !verbs.iter().any(|v| v == verb),
                "{role}: {verb} in {rule:?}"
            );
        }
        for resource in [
            "pods/exec",
            "pods/log",
            "pods/attach",
            "pods/portforward",
            "serviceaccounts/token",
            "nodes",
        ] {
            assert!(
                !resources.iter().any(|r| r == resource),
                "{role}: {resource} in {rule:?}"
            );
        }
        assert!(
            !groups.iter().any(|g| g == "rbac.authorization.k8s.io"),
            "{role}: a rule on RBAC objects: {rule:?}"
        );
        if resources.iter().any(|r| r == "secrets") {
            assert_eq!(role, "ClusterRole orrery-operator-tenant", "{rule:?}");
            assert_eq!(
                resources,
                ["secrets"],
                "{role}: Secrets in a rule of their own"
            );
            assert_eq!(verbs, ["get", "create"], "{role}: {rule:?}");
            assert!(
                rule.get("resourceNames").is_none(),
                "{role}: plan Secrets get new names"
            );
        }
        if resources.iter().any(|r| r == "leases") {
            assert_eq!(role, "Role orrery-operator-leader-election", "{rule:?}");
        }
    }
    // The tenant ClusterRole is bound per namespace only, never cluster-wide.
    let operator = operator_manifest()?;
    for doc in serde_yaml::Deserializer::from_str(&operator) {
        let doc = <serde_yaml::Value as serde::Deserialize>::deserialize(doc)?;
        if doc["kind"].as_str() == Some("ClusterRoleBinding") {
            assert_ne!(
                doc["roleRef"]["name"].as_str(),
                Some("orrery-operator-tenant"),
                "the tenant role is bound cluster-wide"
            );
        }
    }
    Ok(())
}
