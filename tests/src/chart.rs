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
