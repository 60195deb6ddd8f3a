//! `kubectl orrery`'s krew manifest (issue 25): `plugin/krew/orrery.yaml`, rendered as
//! krew-release-bot renders it on a release (each platform's archive URL and sha256, the version)
//! for an archive `plugin/krew/package.sh` packs from this build, is installed by krew itself
//! (v0.4.3, built from the Go module proxy by `tests/krew/build.sh`): the plugin and its
//! completion land on krew's PATH and run.

use anyhow::{Context as _, Result, bail, ensure};
use orrery_tests::harness::{workspace_binary, workspace_root};
use std::path::{Path, PathBuf};
use std::process::Command;

/// krew, built (once, cached) by `tests/krew/build.sh`.
fn krew() -> Result<PathBuf> {
    let script = workspace_root().join("tests/krew/build.sh");
    let out = Command::new(&script)
        .stderr(std::process::Stdio::inherit())
        .output()
        .with_context(|| format!("running {}", script.display()))?;
    ensure!(
        out.status.success(),
        "{} failed ({}): it builds krew from the Go module proxy and needs Go",
        script.display(),
        out.status
    );
    let dir = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap_or_default()
        .trim()
        .to_owned();
    Ok(Path::new(&dir).join("krew"))
}

/// What krew-release-bot does to the template: `{{ .TagName }}` is the tag, and each
/// `{{addURIAndSha "URL" .TagName }}` becomes the archive's `uri` and `sha256` (here every
/// platform's is this machine's archive: only this platform's is installed).
fn render(template: &str, tag: &str, sha256: &str) -> Result<String> {
    let mut out = String::new();
    for line in template.lines() {
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix("{{addURIAndSha \"") {
            let indent = &line[..line.len() - trimmed.len()];
            let url = rest
                .split_once('"')
                .map(|(url, _)| url.replace("{{ .TagName }}", tag))
                .context("addURIAndSha names a URL")?;
            out.push_str(&format!("{indent}uri: {url}\n{indent}sha256: {sha256}\n"));
        } else {
            out.push_str(&line.replace("{{ .TagName }}", tag));
            out.push('\n');
        }
    }
    if out.contains("{{") {
        bail!("a template action is left:\n{out}");
    }
    Ok(out)
}

#[test]
fn the_krew_manifest_installs_the_plugin_and_its_completion_from_the_packaged_archive() -> Result<()>
{
    let plugin = workspace_binary("kubectl-orrery")?;
    let completion = workspace_binary("kubectl_complete-orrery")?;
    let bin_dir = plugin.parent().context("the binaries' directory")?;
    ensure!(completion.parent() == Some(bin_dir));
    let scratch = std::env::temp_dir().join(format!("orrery-krew-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch)?;
    let result = (|| -> Result<()> {
        // The archive, as a release packs it.
        let packed = Command::new(workspace_root().join("plugin/krew/package.sh"))
            .arg(scratch.join("dist"))
            .arg(bin_dir)
            .output()?;
        ensure!(
            packed.status.success(),
            "package.sh: {}",
            String::from_utf8_lossy(&packed.stderr)
        );
        let said = String::from_utf8_lossy(&packed.stdout).trim().to_owned();
        let (archive, sha256) = said
            .split_once(' ')
            .context("package.sh prints PATH SHA256")?;
        ensure!(
            sha256.len() == 64 && sha256.chars().all(|c| c.is_ascii_hexdigit()),
            "{said}"
        );
        ensure!(
            Path::new(archive)
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("kubectl-orrery_linux_") && n.ends_with(".tar.gz")),
            "{archive}"
        );
        // Packing again gives the same bytes (a release's sha256 is reproducible).
        let again = Command::new(workspace_root().join("plugin/krew/package.sh"))
            .arg(scratch.join("dist2"))
            .arg(bin_dir)
            .output()?;
        let again = String::from_utf8_lossy(&again.stdout).trim().to_owned();
        ensure!(again.ends_with(sha256), "{said} then {again}");

        let template = std::fs::read_to_string(workspace_root().join("plugin/krew/orrery.yaml"))?;
        let tag = format!("v{}", env!("CARGO_PKG_VERSION"));
        let manifest = scratch.join("orrery.yaml");
        std::fs::write(&manifest, render(&template, &tag, sha256)?)?;

        let root = scratch.join("krew-root");
        let installed = Command::new(krew()?)
            .env("KREW_ROOT", &root)
            .env("KREW_NO_UPGRADE_CHECK", "1")
            .arg("install")
            .arg(format!("--manifest={}", manifest.display()))
            .arg(format!("--archive={archive}"))
            .output()?;
        ensure!(
            installed.status.success(),
            "krew install: {}{}",
            String::from_utf8_lossy(&installed.stdout),
            String::from_utf8_lossy(&installed.stderr)
        );
        // krew links the plugin into its bin directory, which users put on their PATH.
        let linked = root.join("bin/kubectl-orrery");
        let version = Command::new(&linked).arg("--version").output()?;
        let printed = String::from_utf8_lossy(&version.stdout);
        ensure!(
            version.status.success() && printed.contains(env!("CARGO_PKG_VERSION")),
            "{} --version: {printed}",
            linked.display()
        );
        let receipt = std::fs::read_to_string(root.join("receipts/orrery.yaml"))?;
        ensure!(receipt.contains(&format!("version: {tag}")), "{receipt}");
        // The completion executable is in the installed plugin's directory, for the PATH.
        let store = root.join(format!("store/orrery/{tag}"));
        let offered = Command::new(store.join("kubectl_complete-orrery"))
            .arg("ap")
            .output()?;
        let offered = String::from_utf8_lossy(&offered.stdout);
        ensure!(
            offered.starts_with("approvals\t") && offered.ends_with(":4\n"),
            "{offered}"
        );
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

#[test]
fn every_platform_of_the_manifest_names_its_own_archive_and_both_binaries() -> Result<()> {
    let template = std::fs::read_to_string(workspace_root().join("plugin/krew/orrery.yaml"))?;
    let manifest: serde_yaml::Value =
        serde_yaml::from_str(&render(&template, "v1.2.3", &"a".repeat(64))?)?;
    ensure!(manifest["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2");
    ensure!(manifest["kind"] == "Plugin" && manifest["metadata"]["name"] == "orrery");
    ensure!(manifest["spec"]["version"] == "v1.2.3");
    let platforms = manifest["spec"]["platforms"]
        .as_sequence()
        .context("platforms")?;
    let mut seen = Vec::new();
    for p in platforms {
        let (os, arch) = (
            p["selector"]["matchLabels"]["os"]
                .as_str()
                .unwrap_or_default(),
            p["selector"]["matchLabels"]["arch"]
                .as_str()
                .unwrap_or_default(),
        );
        let uri = p["uri"].as_str().unwrap_or_default();
        ensure!(
            uri.ends_with(&format!("/v1.2.3/kubectl-orrery_{os}_{arch}.tar.gz")),
            "{os}/{arch}: {uri}"
        );
        ensure!(p["bin"] == "kubectl-orrery", "{os}/{arch}");
        let files: Vec<&str> = p["files"]
            .as_sequence()
            .map(|f| f.iter().filter_map(|f| f["from"].as_str()).collect())
            .unwrap_or_default();
        ensure!(
            files == ["kubectl-orrery", "kubectl_complete-orrery"],
            "{os}/{arch}: {files:?}"
        );
        seen.push(format!("{os}/{arch}"));
    }
    ensure!(
        seen == ["linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"],
        "{seen:?}"
    );
    Ok(())
}
