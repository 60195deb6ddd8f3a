//! The operator's own identity for end-to-end tests: the ServiceAccount and RBAC the Helm chart
//! installs (`charts/orrery/templates/{serviceaccount,rbac}.yaml`, rendered with `helm
//! template` as the release `orrery` in `orrery-system`), and a client authenticated as that
//! ServiceAccount, so the controllers under test run with exactly the rules the chart grants,
//! never as admin.
//!
//! [`operator_client`] applies the rendered ServiceAccount and roles (server-side apply:
//! idempotent, and safe when many tests call it at once), binds the test's namespace as a tenant
//! namespace (the chart's RoleBinding for `tenantNamespaces`), mints a token with the
//! TokenRequest API and returns a client that sends it to the same apiserver (CA from the
//! environment's kubeconfig).

use std::time::Duration;

use anyhow::{Context, Result};
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::Client;
use kube::api::{Api, PostParams};
use kube::config::{AuthInfo, KubeConfigOptions, Kubeconfig};

use crate::chart;
use crate::harness::{apply_yaml, wait_allowed};
use crate::testenv::{ADMIN, TestEnv};

/// The operator's namespace (the chart's release namespace in the tests).
pub const OPERATOR_NAMESPACE: &str = "orrery-system";
/// The operator's ServiceAccount.
pub const OPERATOR_SERVICE_ACCOUNT: &str = "orrery-operator";
/// The operator's user name, as `kubectl --as` takes it.
pub const OPERATOR_USER: &str = "system:serviceaccount:orrery-system:orrery-operator";
/// The chart's release name in the tests (resource names start with it).
pub const RELEASE: &str = "orrery";
/// How long a minted token lives: longer than any test binary runs.
const TOKEN_LIFETIME: Duration = Duration::from_secs(4 * 3600);

/// The operator's namespace (Pod Security `restricted`, as the chart's NOTES ask), its
/// ServiceAccount and its cluster-wide and leader-election RBAC, as the chart renders them (no
/// tenant namespace bound): a multi-document YAML text.
pub fn operator_manifest() -> Result<String> {
    let namespace = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {OPERATOR_NAMESPACE}\n  labels:\n    \
         pod-security.kubernetes.io/enforce: restricted\n    \
         pod-security.kubernetes.io/enforce-version: latest\n"
    );
    let rendered = chart::template(
        RELEASE,
        OPERATOR_NAMESPACE,
        &[
            "--show-only",
            "templates/serviceaccount.yaml",
            "--show-only",
            "templates/rbac.yaml",
        ],
    )?
    .ok()?;
    Ok(format!("{namespace}---\n{rendered}"))
}

/// The chart's RoleBinding that makes `namespace` a tenant namespace (`tenantNamespaces`).
pub fn tenant_manifest(namespace: &str) -> Result<String> {
    let tenants = format!("tenantNamespaces={{{namespace}}}");
    let rendered = chart::template(
        RELEASE,
        OPERATOR_NAMESPACE,
        &["--set", &tenants, "--show-only", "templates/rbac.yaml"],
    )?
    .ok()?;
    let binding = chart::documents(&rendered)?
        .into_iter()
        .find(|d| d["kind"] == "RoleBinding" && d["metadata"]["namespace"] == namespace)
        .with_context(|| format!("the chart renders no RoleBinding in {namespace}"))?;
    Ok(serde_json::to_string(&binding)?)
}

/// Applies the operator's RBAC (the chart's, see [`operator_manifest`]) and binds `tenant_namespace` as a
/// tenant namespace, as admin; waits until the authorizer grants them.
pub async fn install_operator_rbac(env: &TestEnv, tenant_namespace: &str) -> Result<()> {
    let admin = env.admin().await?;
    apply_yaml(&admin, None, &operator_manifest()?)
        .await
        .context("applying the chart's ServiceAccount and RBAC")?;
    apply_yaml(&admin, None, &tenant_manifest(tenant_namespace)?)
        .await
        .with_context(|| format!("binding {tenant_namespace} as a tenant namespace"))?;
    Ok(())
}

/// A client acting as the operator's ServiceAccount (`orrery-system/orrery-operator`), with
/// the chart's rules and `tenant_namespace` bound as a tenant namespace. Returns once
/// the grants are in effect (RBAC reaches the authorizer's cache a moment after it is written).
pub async fn operator_client(env: &TestEnv, tenant_namespace: &str) -> Result<Client> {
    install_operator_rbac(env, tenant_namespace).await?;
    let token = mint_token(env).await?;
    let client = client_with_token(env, token).await?;
    // One rule of each binding: the ClusterRoleBinding, the tenant RoleBinding, the Lease Role.
    wait_allowed(&client, None, "watch", "studio.orrery.dev", "compositions").await?;
    wait_allowed(&client, Some(tenant_namespace), "create", "", "secrets").await?;
    wait_allowed(
        &client,
        Some(OPERATOR_NAMESPACE),
        "patch",
        "coordination.k8s.io",
        "leases",
    )
    .await?;
    Ok(client)
}

/// A token for the operator's ServiceAccount from the TokenRequest API
/// (`serviceaccounts/token`), audience the apiserver's.
pub async fn mint_token(env: &TestEnv) -> Result<String> {
    let admin = env.admin().await?;
    let accounts: Api<ServiceAccount> = Api::namespaced(admin, OPERATOR_NAMESPACE);
    let request: TokenRequest = serde_json::from_value(serde_json::json!({
        "spec": { "audiences": [], "expirationSeconds": TOKEN_LIFETIME.as_secs() }
    }))?;
    let minted = accounts
        .create_token_request(OPERATOR_SERVICE_ACCOUNT, &PostParams::default(), &request)
        .await
        .context("TokenRequest for orrery-system/orrery-operator")?;
    minted
        .status
        .and_then(|s| s.token)
        .filter(|t| !t.is_empty())
        .context("the TokenRequest came back without a token")
}

/// A client for the apiserver of `env` (server and CA from its kubeconfig) sending `token`.
pub async fn client_with_token(env: &TestEnv, token: String) -> Result<Client> {
    Client::try_from(config_with_token(env, token).await?)
        .context("building the operator's kube client")
}

/// The kube config of [`client_with_token`].
pub async fn config_with_token(env: &TestEnv, token: String) -> Result<kube::Config> {
    let kc = Kubeconfig::read_from(&env.kubeconfig)
        .with_context(|| format!("reading {}", env.kubeconfig.display()))?;
    let opts = KubeConfigOptions {
        context: Some(ADMIN.to_string()),
        ..Default::default()
    };
    let mut config = kube::Config::from_custom_kubeconfig(kc, &opts)
        .await
        .context("the kubeconfig's admin context (for the server and its CA)")?;
    config.auth_info = AuthInfo {
        token: Some(token.into()),
        ..Default::default()
    };
    Ok(config)
}
