//! The Helm chart (`charts/orrery/`) from tests: the `helm` binary (Helm v4 built by
//! `tests/helm/build.sh`, cached; `ORRERY_HELM_BIN` names its directory to skip the script) and
//! `helm template` / `lint` / `install` runs whose output and errors come back as text.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use anyhow::{Context, Result, bail};

use crate::harness::workspace_root;

/// Names the directory holding `helm`, skipping `tests/helm/build.sh`.
pub const HELM_BIN_ENV: &str = "ORRERY_HELM_BIN";

/// The chart's directory.
pub fn chart_dir() -> PathBuf {
    workspace_root().join("charts/orrery")
}

/// The `helm` binary: `$ORRERY_HELM_BIN/helm`, else the one `tests/helm/build.sh` built (a
/// cold build takes minutes; later calls are instant).
pub fn helm_bin() -> Result<PathBuf> {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BIN.get_or_init(|| find_helm().map_err(|e| format!("{e:#}")))
        .clone()
        .map_err(anyhow::Error::msg)
}

fn find_helm() -> Result<PathBuf> {
    let dir = match std::env::var_os(HELM_BIN_ENV) {
        Some(dir) => PathBuf::from(dir),
        None => {
            let script = workspace_root().join("tests/helm/build.sh");
            let out = Command::new(&script)
                .stderr(std::process::Stdio::inherit())
                .output()
                .with_context(|| format!("running {}", script.display()))?;
            if !out.status.success() {
                bail!(
                    "{} failed ({}): it builds Helm from the Go module proxy and needs Go",
                    script.display(),
                    out.status
                );
            }
            let stdout = String::from_utf8_lossy(&out.stdout);
            PathBuf::from(stdout.lines().last().unwrap_or_default().trim())
        }
    };
    let bin = dir.join("helm");
    if !bin.is_file() {
        bail!(
            "{} does not exist: run tests/helm/build.sh or set {HELM_BIN_ENV}",
            bin.display()
        );
    }
    Ok(bin)
}

/// The ports of the operator's pod on the development node: the sidecar's API, the
/// controller's metrics and the sidecar's metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DevPorts {
    /// `sidecar.port`.
    pub sidecar: u16,
    /// `controller.metricsPort`.
    pub metrics: u16,
    /// `sidecar.metricsPort`.
    pub sidecar_metrics: u16,
}

impl DevPorts {
    /// Three distinct ports free on loopback now (all held while the next is found), for an
    /// operator pod that shares the host's network.
    pub fn free() -> anyhow::Result<DevPorts> {
        let ports = crate::harness::free_ports(3)?;
        Ok(DevPorts {
            sidecar: ports[0],
            metrics: ports[1],
            sidecar_metrics: ports[2],
        })
    }
}

/// The values that run the chart on the development node from the project's local images
/// (`localhost/orrery/{operator,runner}:dev`, never pulled), with no PVC (the store is SQLite
/// in the pod), one replica without leader election, and the sidecar and metrics on `ports`
/// (which must be free on this machine when the operator's pod shares the host's network).
/// Runners reach the sidecar at `sidecar_host`: 127.0.0.1 when pods share the host's network;
/// with isolated pods, a cluster IP of a Service in front of the operator's pods.
pub fn dev_node_values(sidecar_host: &str, ports: DevPorts) -> Vec<String> {
    vec![
        "image.registry=localhost".to_owned(),
        "image.repository=orrery/operator".to_owned(),
        "image.tag=dev".to_owned(),
        "image.pullPolicy=Never".to_owned(),
        "runner.image.registry=localhost".to_owned(),
        "runner.image.tag=dev".to_owned(),
        "store.sqlite.persistence.enabled=false".to_owned(),
        "controller.leaderElection.enabled=false".to_owned(),
        format!("sidecar.url=http://{sidecar_host}:{}", ports.sidecar),
        format!("sidecar.port={}", ports.sidecar),
        format!("controller.metricsPort={}", ports.metrics),
        format!("sidecar.metricsPort={}", ports.sidecar_metrics),
    ]
}

/// The label selector of release `release`'s operator pods (the chart's selector labels and
/// its component).
pub fn operator_selector(release: &str) -> String {
    format!("app.kubernetes.io/instance={release},app.kubernetes.io/component=operator")
}

/// What a `helm` run printed.
#[derive(Debug)]
pub struct HelmOutput {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

impl HelmOutput {
    /// stdout, or an error with stderr.
    pub fn ok(self) -> Result<String> {
        if self.success {
            Ok(self.stdout)
        } else {
            bail!("helm failed:\n{}{}", self.stderr, self.stdout)
        }
    }
}

/// Runs `helm args…` with an empty Helm home (no repositories, no plugins, no cache of the
/// person running the tests) and `kubeconfig` when given.
pub fn helm(args: &[&str], kubeconfig: Option<&Path>) -> Result<HelmOutput> {
    let home = std::env::temp_dir().join(format!("orrery-helm-home-{}", std::process::id()));
    let mut cmd = Command::new(helm_bin()?);
    cmd.args(args)
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_DATA_HOME", home.join("data"))
        .env_remove("KUBECONFIG");
    if let Some(kubeconfig) = kubeconfig {
        cmd.env("KUBECONFIG", kubeconfig);
    }
    let out = cmd
        .output()
        .with_context(|| format!("running helm {}", args.join(" ")))?;
    Ok(HelmOutput {
        success: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// `helm template <release> charts/orrery -n <namespace> <extra…>`.
pub fn template(release: &str, namespace: &str, extra: &[&str]) -> Result<HelmOutput> {
    let chart = chart_dir();
    let chart = chart.to_string_lossy();
    let mut args = vec!["template", release, &chart, "--namespace", namespace];
    args.extend_from_slice(extra);
    helm(&args, None)
}

/// The documents of a multi-document YAML text, each as JSON (empty documents dropped).
pub fn documents(yaml: &str) -> Result<Vec<serde_json::Value>> {
    let mut docs = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(yaml) {
        let value: serde_json::Value =
            serde::Deserialize::deserialize(doc).context("a rendered document is not YAML")?;
        if !value.is_null() {
            docs.push(value);
        }
    }
    Ok(docs)
}

/// The rendered object of `kind` named `name`.
pub fn find<'a>(
    docs: &'a [serde_json::Value],
    kind: &str,
    name: &str,
) -> Option<&'a serde_json::Value> {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
}

/// A release installed on the test control plane, uninstalled when dropped (also when a test
/// fails half-way), so no chart object outlives its test: the chart's admission-policy bindings
/// are cluster-wide and would refuse other tests' requests.
pub struct Release {
    pub name: String,
    pub namespace: String,
    kubeconfig: PathBuf,
    context: String,
    installed: bool,
}

impl Release {
    /// `helm install <name> charts/orrery -n <namespace> <extra…>` as the control plane's
    /// admin. The cluster-wide admission policies may exist, applied by other test binaries
    /// without Helm: the release takes them over (`--take-ownership --force-conflicts`).
    pub fn install(
        env: &crate::testenv::TestEnv,
        name: &str,
        namespace: &str,
        extra: &[&str],
    ) -> Result<Release> {
        let chart = chart_dir();
        let chart = chart.to_string_lossy();
        let mut args = vec![
            "install",
            name,
            &chart,
            "--namespace",
            namespace,
            "--take-ownership",
            "--force-conflicts",
            "--kube-context",
            crate::testenv::ADMIN,
        ];
        args.extend_from_slice(extra);
        let release = Release {
            name: name.to_owned(),
            namespace: namespace.to_owned(),
            kubeconfig: env.kubeconfig.clone(),
            context: crate::testenv::ADMIN.to_owned(),
            // A failed install may have created objects: uninstall in any case.
            installed: true,
        };
        // On an error the release is dropped here, which uninstalls it.
        helm(&args, Some(&env.kubeconfig))?.ok()?;
        Ok(release)
    }

    /// `helm <args…> -n <namespace> --kube-context admin` against this release's cluster.
    pub fn helm(&self, args: &[&str]) -> Result<HelmOutput> {
        let mut all = args.to_vec();
        all.extend_from_slice(&[
            "--namespace",
            &self.namespace,
            "--kube-context",
            &self.context,
        ]);
        helm(&all, Some(&self.kubeconfig))
    }

    /// `helm uninstall --wait`.
    pub fn uninstall(mut self) -> Result<()> {
        self.uninstall_now()
    }

    fn uninstall_now(&mut self) -> Result<()> {
        if !self.installed {
            return Ok(());
        }
        self.installed = false;
        let name = self.name.clone();
        self.helm(&["uninstall", &name, "--wait", "--ignore-not-found"])?
            .ok()
            .map(|_| ())
    }
}

impl Drop for Release {
    fn drop(&mut self) {
        if crate::harness::keep() {
            return;
        }
        if let Err(e) = self.uninstall_now() {
            eprintln!("uninstalling the test release {}: {e:#}", self.name);
        }
    }
}

/// The operator pod of `release` (made by the Deployment's ReplicaSet), once both its
/// containers, the controller and the sidecar, run as runc containers (the dev node's container
/// mode), within `timeout`.
pub async fn wait_operator_pod(
    pods: &kube::Api<k8s_openapi::api::core::v1::Pod>,
    release: &str,
    timeout: std::time::Duration,
) -> Result<k8s_openapi::api::core::v1::Pod> {
    use anyhow::ensure;
    use kube::ResourceExt;
    let selector = format!("app.kubernetes.io/instance={release}");
    crate::harness::eventually(timeout, || async {
        let list = pods
            .list(&kube::api::ListParams::default().labels(&selector))
            .await?;
        let Some(pod) = list.items.into_iter().next() else {
            bail!("no pod of release {release} yet");
        };
        let statuses = pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.clone())
            .unwrap_or_default();
        let running: Vec<(String, String)> = statuses
            .iter()
            .filter(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()))
            .map(|c| (c.name.clone(), c.container_id.clone().unwrap_or_default()))
            .collect();
        ensure!(
            running.len() == 2,
            "pod {}: not both containers running: {statuses:?}",
            pod.name_any()
        );
        for (name, id) in &running {
            ensure!(
                id.starts_with("runc://"),
                "container {name} runs as {id}, not as a runc container"
            );
        }
        Ok(pod)
    })
    .await
}
