//! Helpers for tests against the control plane of [`crate::testenv`]: a fresh namespace per
//! test, server-side apply (typed and YAML), CRD installation, and waiting on conditions.

use std::fmt::Debug;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::discovery::{self, Scope};
use kube::runtime::wait::{Condition, await_condition, conditions};
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::testenv::{ADMIN, TestEnv};

/// The field manager of everything the tests apply.
pub const FIELD_MANAGER: &str = "orrery-tests";
/// Label put on every test namespace.
pub const TEST_LABEL: &str = "orrery.dev/test";
/// Default timeout for waits.
pub const TIMEOUT: Duration = Duration::from_secs(30);
/// Timeout for waits on the garbage collector, which learns about new CRDs only every 30 s.
pub const GC_TIMEOUT: Duration = Duration::from_secs(90);

/// A namespace created for one test. Deleted (without waiting) on drop, unless
/// `ORRERY_TESTENV_KEEP` is set (to anything but `0`).
#[derive(Debug)]
pub struct TestNamespace {
    pub name: String,
    kubectl: std::path::PathBuf,
    kubeconfig: std::path::PathBuf,
}

impl TestNamespace {
    /// Creates `<prefix>-<unique>` as admin, labelled `orrery.dev/test=<prefix>`, and waits for
    /// its `default` ServiceAccount (pods are rejected until it exists).
    pub async fn create(env: &TestEnv, prefix: &str) -> Result<TestNamespace> {
        let name = unique_name(prefix);
        let client = env.admin().await?;
        let api: Api<Namespace> = Api::all(client.clone());
        let ns: Namespace = serde_json::from_value(serde_json::json!({
            "metadata": { "name": name, "labels": { TEST_LABEL: sanitize(prefix, 63) } }
        }))?;
        api.create(&PostParams::default(), &ns)
            .await
            .with_context(|| format!("creating namespace {name}"))?;
        let sa: Api<ServiceAccount> = Api::namespaced(client, &name);
        wait_for(
            &sa,
            "default",
            "the default ServiceAccount",
            TIMEOUT,
            |o: Option<&ServiceAccount>| o.is_some(),
        )
        .await?;
        let kubectl = env.kubectl(ADMIN).get_program().into();
        Ok(TestNamespace {
            name,
            kubectl,
            kubeconfig: env.kubeconfig.clone(),
        })
    }

    /// A namespaced `Api` in this namespace.
    pub fn api<K>(&self, client: &Client) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as Resource>::DynamicType: Default,
    {
        Api::namespaced(client.clone(), &self.name)
    }
}

impl Drop for TestNamespace {
    fn drop(&mut self) {
        if keep() {
            return;
        }
        // Synchronous and runtime-independent; the namespace controller finishes the job.
        let _ = std::process::Command::new(&self.kubectl)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args([
                "--context",
                ADMIN,
                "delete",
                "namespace",
                &self.name,
                "--wait=false",
                "--ignore-not-found",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }
}

/// Names the flag that keeps test namespaces (and pod directories) after the tests.
pub const KEEP_ENV: &str = "ORRERY_TESTENV_KEEP";

/// Whether `ORRERY_TESTENV_KEEP` is set (to anything but empty or `0`).
pub fn keep() -> bool {
    std::env::var_os(KEEP_ENV).is_some_and(|v| !v.is_empty() && v != "0")
}

/// `<prefix>-<unique suffix>`, a valid DNS-1123 label (≤ 63 characters).
pub fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let suffix = format!(
        "{:x}{:x}{n:x}",
        std::process::id() & 0xffff,
        nanos & 0xfffff
    );
    let prefix = sanitize(prefix, 62 - suffix.len());
    if prefix.is_empty() {
        format!("t-{suffix}")
    } else {
        format!("{prefix}-{suffix}")
    }
}

fn sanitize(s: &str, max: usize) -> String {
    let s: String = s
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(max)
        .collect();
    s.trim_matches('-').to_string()
}

/// Server-side applies `obj` (force, field manager [`FIELD_MANAGER`]) and returns the result.
pub async fn apply<K>(api: &Api<K>, obj: &K) -> Result<K>
where
    K: Resource + Serialize + DeserializeOwned + Clone + Debug,
{
    let name = obj
        .meta()
        .name
        .clone()
        .context("object to apply has no metadata.name")?;
    api.patch(
        &name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(obj),
    )
    .await
    .with_context(|| format!("applying {name}"))
}

/// Server-side applies every document of a multi-document YAML string, like `kubectl apply
/// --server-side`. Namespaced objects without a namespace go to `namespace` (required then).
pub async fn apply_yaml(
    client: &Client,
    namespace: Option<&str>,
    yaml: &str,
) -> Result<Vec<DynamicObject>> {
    let mut applied = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(yaml) {
        let value = serde_yaml::Value::deserialize(doc)?;
        if value.is_null() {
            continue;
        }
        let obj: DynamicObject =
            serde_yaml::from_value(value).context("parsing a YAML document")?;
        let types = obj
            .types
            .clone()
            .context("YAML document without apiVersion/kind")?;
        let gvk = GroupVersionKind::try_from(&types)?;
        let (ar, caps) = discovery::pinned_kind(client, &gvk)
            .await
            .with_context(|| format!("discovering {}/{}", types.api_version, types.kind))?;
        let api: Api<DynamicObject> = match caps.scope {
            Scope::Cluster => Api::all_with(client.clone(), &ar),
            Scope::Namespaced => {
                let ns = obj
                    .namespace()
                    .or(namespace.map(str::to_string))
                    .with_context(|| {
                        format!(
                            "{} {} is namespaced but has no namespace",
                            types.kind,
                            obj.name_any()
                        )
                    })?;
                Api::namespaced_with(client.clone(), &ns, &ar)
            }
        };
        let name = obj.name_any();
        let out = api
            .patch(
                &name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&obj),
            )
            .await
            .with_context(|| format!("applying {} {name}", types.kind))?;
        applied.push(out);
    }
    Ok(applied)
}

/// Applies CRDs and waits until each is Established (then its resources are served).
pub async fn install_crds(client: &Client, crds: &[CustomResourceDefinition]) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in crds {
        apply(&api, crd).await?;
    }
    for crd in crds {
        let name = crd.name_any();
        wait_for(
            &api,
            &name,
            "CRD Established",
            TIMEOUT,
            conditions::is_crd_established(),
        )
        .await?;
    }
    Ok(())
}

/// Waits until `cond` holds for the object `name` (its argument is `None` while the object does
/// not exist). Returns the object as last seen (`None` if it does not exist).
pub async fn wait_for<K>(
    api: &Api<K>,
    name: &str,
    what: &str,
    timeout: Duration,
    cond: impl Condition<K>,
) -> Result<Option<K>>
where
    K: Resource + Clone + Debug + DeserializeOwned + Send + 'static,
{
    match tokio::time::timeout(timeout, await_condition(api.clone(), name, cond)).await {
        Ok(r) => r.with_context(|| format!("watching {name} for {what}")),
        Err(_) => {
            let now = api.get_opt(name).await.ok().flatten();
            bail!("timed out after {timeout:?} waiting for {what} on {name}; last state: {now:#?}")
        }
    }
}

/// Waits until the object `name` does not exist.
pub async fn wait_deleted<K>(api: &Api<K>, name: &str, timeout: Duration) -> Result<()>
where
    K: Resource + Clone + Debug + DeserializeOwned + Send + 'static,
{
    wait_for(api, name, "deletion", timeout, |o: Option<&K>| o.is_none())
        .await
        .map(|_| ())
}

/// Deletes `name` if it exists (foreground propagation, so dependents go first) and waits
/// until it is gone.
pub async fn delete_and_wait<K>(api: &Api<K>, name: &str, timeout: Duration) -> Result<()>
where
    K: Resource + Clone + Debug + DeserializeOwned + Send + 'static,
{
    match api.delete(name, &DeleteParams::foreground()).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.is_not_found() => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("deleting {name}")),
    }
    wait_deleted(api, name, timeout).await
}

/// A condition: `status.conditions[type == type_].status == status` (any resource following the
/// Kubernetes condition convention).
pub fn has_condition<K: Serialize>(type_: &str, status: &str) -> impl Fn(Option<&K>) -> bool {
    let (type_, status) = (type_.to_string(), status.to_string());
    move |obj: Option<&K>| {
        obj.and_then(|o| serde_json::to_value(o).ok())
            .and_then(|v| v.pointer("/status/conditions").cloned())
            .and_then(|c| c.as_array().cloned())
            .is_some_and(|cs| {
                cs.iter().any(|c| {
                    c.get("type").and_then(|t| t.as_str()) == Some(type_.as_str())
                        && c.get("status").and_then(|s| s.as_str()) == Some(status.as_str())
                })
            })
    }
}

/// Retries `f` every 200 ms until it succeeds or `timeout` passes (then returns its last error).
/// For effects that are eventually consistent, such as RBAC changes: the authorizer reads
/// RoleBindings from an informer cache, so a grant takes effect some milliseconds later.
pub async fn eventually<T, F, Fut>(timeout: Duration, mut f: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        match f().await {
            Ok(v) => return Ok(v),
            Err(e) if tokio::time::Instant::now() >= deadline => {
                return Err(e.context(format!("still failing after {timeout:?}")));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// Waits until the user behind `client` may `verb` the `resource` (`group` "" for core) in
/// `namespace` (None: cluster-wide), asking the apiserver with SelfSubjectAccessReview.
pub async fn wait_allowed(
    client: &Client,
    namespace: Option<&str>,
    verb: &str,
    group: &str,
    resource: &str,
) -> Result<()> {
    use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let review: SelfSubjectAccessReview = serde_json::from_value(serde_json::json!({
        "spec": { "resourceAttributes": {
            "namespace": namespace, "verb": verb, "group": group, "resource": resource
        } }
    }))?;
    eventually(TIMEOUT, || async {
        let r = api.create(&PostParams::default(), &review).await?;
        if r.status.is_some_and(|s| s.allowed) {
            Ok(())
        } else {
            bail!("not allowed to {verb} {resource}.{group} in {namespace:?}")
        }
    })
    .await
}

/// Whether `err` is (or wraps) an API error with HTTP status 403.
pub fn is_forbidden(err: &anyhow::Error) -> bool {
    api_status(err).is_some_and(|s| s.is_forbidden())
}

/// Whether `err` is (or wraps) an API error with HTTP status 422 (admission or validation).
pub fn is_invalid(err: &anyhow::Error) -> bool {
    api_status(err).is_some_and(|s| s.is_invalid())
}

/// The API `Status` inside `err`, if any.
pub fn api_status(err: &anyhow::Error) -> Option<&kube::core::Status> {
    err.chain()
        .find_map(|e| match e.downcast_ref::<kube::Error>() {
            Some(kube::Error::Api(s)) => Some(&**s),
            _ => None,
        })
}

/// Runs a `kubectl` command, returning stdout; fails with stderr on a non-zero exit.
pub fn kubectl(env: &TestEnv, user: &str, args: &[&str]) -> Result<String> {
    let out = env
        .kubectl(user)
        .args(args)
        .output()
        .context("running kubectl")?;
    if !out.status.success() {
        bail!(
            "kubectl {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Like [`kubectl`] but expects failure; returns stderr.
pub fn kubectl_err(env: &TestEnv, user: &str, args: &[&str]) -> Result<String> {
    let out = env
        .kubectl(user)
        .args(args)
        .output()
        .context("running kubectl")?;
    if out.status.success() {
        bail!(
            "kubectl {} unexpectedly succeeded: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The workspace root (`crds/`, `examples/`, `tests/fixtures/` are below it).
pub fn workspace_root() -> std::path::PathBuf {
    let tests = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    tests.parent().unwrap_or(tests).to_path_buf()
}

/// Names a prebuilt binary to use instead of building it, per binary:
/// `ORRERY_BIN_<NAME>` with the name upper-cased and `-` as `_` (e.g.
/// `ORRERY_BIN_ORRERY_OPERATOR=/path/to/orrery-operator`).
pub fn binary_override_env(bin: &str) -> String {
    format!("ORRERY_BIN_{}", bin.to_ascii_uppercase().replace('-', "_"))
}

/// The path of the workspace's binary `bin`, built first (`cargo build --workspace --bin
/// <bin>`, a no-op when it is current) into the target directory and profile of the running
/// test binary: `CARGO_BIN_EXE_*` exists only for a crate's own binaries, and `cargo test` does
/// not build other packages' binaries. `--workspace` resolves features as a plain `cargo build`
/// at the root does, so the two share one build of the binary. The override variable of
/// [`binary_override_env`] skips the build.
pub fn workspace_binary(bin: &str) -> Result<std::path::PathBuf> {
    if let Some(path) = std::env::var_os(binary_override_env(bin)).filter(|p| !p.is_empty()) {
        return Ok(path.into());
    }
    let build = TestBuild::current()?;
    let mut cargo = build.cargo();
    cargo.args(["build", "--quiet", "--workspace", "--bin", bin]);
    build.profile_args(&mut cargo);
    let what = format!("cargo build --workspace --bin {bin}");
    let status = cargo.status().with_context(|| format!("running {what}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    let path = build.profile_dir.join(bin);
    if !path.is_file() {
        bail!("{what} left no {}", path.display());
    }
    Ok(path)
}

/// Where the running test binary was built: `<target>/<profile>/deps/<test binary>`, or
/// `<target>/<profile>/<binary>` (`orrery-up`). Binaries a test builds go to the same place.
#[derive(Debug, Clone)]
pub struct TestBuild {
    /// The target directory.
    pub target_dir: std::path::PathBuf,
    /// `<target>/<profile>`.
    pub profile_dir: std::path::PathBuf,
    /// The profile's directory name: `debug`, `release`, or a custom profile's name.
    pub profile: String,
}

impl TestBuild {
    /// The build of the running test binary.
    pub fn current() -> Result<TestBuild> {
        let exe = std::env::current_exe().context("locating the running test binary")?;
        let profile_dir = exe
            .parent()
            .map(|d| {
                if d.file_name().is_some_and(|n| n == "deps") {
                    d.parent().unwrap_or(d)
                } else {
                    d
                }
            })
            .with_context(|| format!("{} is not in <target>/<profile>/", exe.display()))?
            .to_path_buf();
        let target_dir = profile_dir
            .parent()
            .with_context(|| format!("{} has no parent", profile_dir.display()))?
            .to_path_buf();
        let profile = profile_dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("debug")
            .to_owned();
        Ok(TestBuild {
            target_dir,
            profile_dir,
            profile,
        })
    }

    /// `cargo` at the workspace root with this build's target directory, and no standard input.
    pub fn cargo(&self) -> std::process::Command {
        let mut cargo = std::process::Command::new(env!("CARGO"));
        cargo
            .env("CARGO_TARGET_DIR", &self.target_dir)
            .current_dir(workspace_root())
            .stdin(std::process::Stdio::null());
        cargo
    }

    /// Adds the flag that selects this build's profile (none for `debug`).
    pub fn profile_args(&self, cargo: &mut std::process::Command) {
        match self.profile.as_str() {
            "debug" => {}
            "release" => {
                cargo.arg("--release");
            }
            other => {
                cargo.args(["--profile", other]);
            }
        }
    }
}

/// What a `kubectl` run printed.
#[derive(Debug, Clone)]
pub struct KubectlOutput {
    pub success: bool,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `kubectl --context <user> <args>` without blocking the async runtime (a pod executor
/// may run on the same thread), from the workspace root so relative paths work.
pub async fn run_kubectl(env: &TestEnv, user: &str, args: &[&str]) -> Result<KubectlOutput> {
    let mut cmd = tokio::process::Command::from(env.kubectl(user));
    let out = cmd
        .args(args)
        .current_dir(workspace_root())
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .context("running kubectl")?;
    Ok(KubectlOutput {
        success: out.status.success(),
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// [`run_kubectl`] that must succeed; returns stdout.
pub async fn kubectl_ok(env: &TestEnv, user: &str, args: &[&str]) -> Result<String> {
    let out = run_kubectl(env, user, args).await?;
    if !out.success {
        bail!(
            "kubectl --context {user} {} failed ({:?}): {}",
            args.join(" "),
            out.code,
            out.stderr.trim()
        );
    }
    Ok(out.stdout)
}

/// [`run_kubectl`] that must fail with a non-zero exit code; returns stderr.
pub async fn kubectl_fails(env: &TestEnv, user: &str, args: &[&str]) -> Result<String> {
    let out = run_kubectl(env, user, args).await?;
    if out.success || out.code == Some(0) {
        bail!(
            "kubectl --context {user} {} unexpectedly succeeded: {}",
            args.join(" "),
            out.stdout.trim()
        );
    }
    Ok(out.stderr)
}

/// The names of the project's CRDs (`crds/yaml/`).
pub const CRD_NAMES: &[&str] = &[
    "compositions.studio.orrery.dev",
    "registryentries.studio.orrery.dev",
    "studioruns.studio.orrery.dev",
];

/// `kubectl apply -f crds/yaml/` and `kubectl wait --for=condition=Established`, once per test
/// process (later calls return at once).
pub async fn ensure_crds(env: &TestEnv) -> Result<()> {
    static INSTALLED: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    INSTALLED
        .get_or_try_init(|| async {
            kubectl_ok(env, ADMIN, &["apply", "-f", "crds/yaml/"]).await?;
            let mut args = vec!["wait", "--for=condition=Established", "--timeout=60s"];
            let crds: Vec<String> = CRD_NAMES.iter().map(|n| format!("crd/{n}")).collect();
            args.extend(crds.iter().map(String::as_str));
            kubectl_ok(env, ADMIN, &args).await?;
            Ok::<(), anyhow::Error>(())
        })
        .await
        .map(|_| ())
}

/// A port free on 127.0.0.1 now (the system's choice; free until someone binds it).
pub fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}

/// `n` distinct free ports on loopback (all held while the next is found: two calls of
/// [`free_port`] may return the same one).
pub fn free_ports(n: usize) -> Result<Vec<u16>> {
    let held = (0..n)
        .map(|_| std::net::TcpListener::bind(("127.0.0.1", 0)).context("finding a free port"))
        .collect::<Result<Vec<_>>>()?;
    held.iter().map(|l| Ok(l.local_addr()?.port())).collect()
}

/// The processes whose command line names `needle` (e.g. a pod executor's work directory),
/// each as `<pid>: <command line>`: what is left running of something that should be gone.
pub fn processes_naming(needle: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.contains(needle) {
                out.push(format!("{name}: {cmdline}"));
            }
        }
    }
    out
}

/// Waits until StudioRun `name` reaches a final phase; fails unless it is `Succeeded`, saying the
/// phase and the run's error.
pub async fn wait_succeeded(
    runs: &Api<orrery_crds::StudioRun>,
    name: &str,
    timeout: Duration,
) -> Result<orrery_crds::StudioRun> {
    let done = wait_for(
        runs,
        name,
        "a final phase",
        timeout,
        |r: Option<&orrery_crds::StudioRun>| {
            r.and_then(|r| r.status.as_ref())
                .and_then(|s| s.phase)
                .is_some_and(|p| p.is_terminal())
        },
    )
    .await?
    .with_context(|| format!("StudioRun {name} is gone"))?;
    let status = done.status.as_ref().context("run status")?;
    ensure!(
        status.phase == Some(orrery_crds::run::RunPhase::Succeeded),
        "StudioRun {name} ended {:?}: {:?}",
        status.phase,
        status.error
    );
    Ok(done)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn unique_names_are_dns_labels() {
        for p in ["", "Run_Flow.1", &"x".repeat(100), "---"] {
            let n = unique_name(p);
            assert!(n.len() <= 63, "{n}");
            assert!(
                n.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{n}"
            );
            assert!(!n.starts_with('-') && !n.ends_with('-'), "{n}");
        }
        assert_ne!(unique_name("a"), unique_name("a"));
    }
}
