//! The Helm chart without a cluster: `helm lint` is clean, `helm template` matches the golden
//! files in `tests/fixtures/chart/` (regenerate them with `ORRERY_UPDATE_GOLDEN=1 cargo test -p
//! orrery-tests --test chart`, then read the diff), the chart's CRDs are `crds/yaml/`, the
//! rendered deployment config is one the operator accepts, and bad values are refused by `helm`
//! with the field named.

use std::path::PathBuf;

use anyhow::{Context, Result, ensure};
use orrery_tests::chart::{self, chart_dir, documents, find, template};
use orrery_tests::harness::workspace_root;

const RELEASE: &str = "orrery";
const NAMESPACE: &str = "orrery-system";

fn fixtures() -> PathBuf {
    workspace_root().join("tests/fixtures/chart")
}

/// The generated run-token key pair differs on every render: golden files hold a marker.
fn mask_generated_keys(rendered: &str) -> String {
    rendered
        .lines()
        .map(|line| {
            let trimmed = line.trim_start();
            if trimmed.starts_with("key.pem: ") || trimmed.starts_with("key.pub.pem: ") {
                let indent = &line[..line.len() - trimmed.len()];
                let key = trimmed.split(':').next().unwrap_or_default();
                format!("{indent}{key}: <generated on install>")
            } else {
                line.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

fn check_golden(name: &str, extra: &[&str]) -> Result<()> {
    let rendered = mask_generated_keys(&template(RELEASE, NAMESPACE, extra)?.ok()?);
    let path = fixtures().join(format!("{name}.golden.yaml"));
    if std::env::var_os("ORRERY_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &rendered).with_context(|| format!("writing {}", path.display()))?;
        return Ok(());
    }
    let golden = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "reading {}; make it with ORRERY_UPDATE_GOLDEN=1",
            path.display()
        )
    })?;
    if golden != rendered {
        let first = golden
            .lines()
            .zip(rendered.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| golden.lines().count().min(rendered.lines().count()));
        anyhow::bail!(
            "helm template with {extra:?} differs from {} from line {}:\n  golden:   {:?}\n  rendered: {:?}\n\
             If the change is meant, regenerate with ORRERY_UPDATE_GOLDEN=1 cargo test -p orrery-tests --test chart and review the diff",
            path.display(),
            first + 1,
            golden.lines().nth(first),
            rendered.lines().nth(first),
        );
    }
    Ok(())
}

#[test]
fn helm_lint_is_clean_in_strict_mode() -> Result<()> {
    let chart = chart_dir();
    let out = chart::helm(&["lint", "--strict", &chart.to_string_lossy()], None)?;
    ensure!(
        out.success && out.stdout.contains("0 chart(s) failed"),
        "helm lint --strict:\n{}{}",
        out.stdout,
        out.stderr
    );
    for level in ["[WARNING]", "[ERROR]"] {
        ensure!(
            !out.stdout.contains(level),
            "helm lint --strict reported {level}:\n{}",
            out.stdout
        );
    }
    Ok(())
}

#[test]
fn the_default_install_renders_as_the_golden_file() -> Result<()> {
    check_golden("default", &[])
}

#[test]
fn a_two_replica_install_on_postgresql_renders_as_the_golden_file() -> Result<()> {
    let values = fixtures().join("ha-postgres.values.yaml");
    check_golden("ha-postgres", &["--values", &values.to_string_lossy()])
}

#[test]
fn the_charts_crds_are_the_generated_crd_yaml() -> Result<()> {
    let source = workspace_root().join("crds/yaml");
    let copy = chart_dir().join("crds");
    let names = |dir: &PathBuf| -> Result<Vec<String>> {
        let mut names = std::fs::read_dir(dir)
            .with_context(|| format!("reading {}", dir.display()))?
            .map(|e| Ok(e?.file_name().to_string_lossy().into_owned()))
            .collect::<Result<Vec<_>>>()?;
        names.sort();
        Ok(names)
    };
    let (want, have) = (names(&source)?, names(&copy)?);
    ensure!(
        want == have,
        "charts/orrery/crds/ holds {have:?}, crds/yaml/ holds {want:?}: regenerate both with\n  cargo run -p orrery-runner --bin orrery -- crds --write crds/yaml/ && cargo run -p orrery-runner --bin orrery -- crds --write charts/orrery/crds/"
    );
    for name in want {
        let a = std::fs::read(source.join(&name))?;
        let b = std::fs::read(copy.join(&name))?;
        ensure!(
            a == b,
            "charts/orrery/crds/{name} differs from crds/yaml/{name}: regenerate both with\n  cargo run -p orrery-runner --bin orrery -- crds --write crds/yaml/ && cargo run -p orrery-runner --bin orrery -- crds --write charts/orrery/crds/"
        );
    }
    Ok(())
}

/// The operator config the chart renders into its ConfigMap, as the operator parses it.
fn rendered_config(docs: &[serde_json::Value]) -> Result<orrery_operator::Config> {
    let map = find(docs, "ConfigMap", "orrery-operator-config")
        .context("no ConfigMap orrery-operator-config")?;
    let text = map["data"]["config.yaml"]
        .as_str()
        .context("no config.yaml in the ConfigMap")?;
    orrery_operator::Config::parse("config.yaml", text)
        .map_err(|e| anyhow::anyhow!("the operator refuses the chart's config: {e}\n{text}"))
}

#[test]
fn the_rendered_deployment_config_is_one_the_operator_accepts() -> Result<()> {
    let values = fixtures().join("ha-postgres.values.yaml");
    for extra in [
        vec![],
        vec!["--values", values.to_str().unwrap_or_default()],
    ] {
        let docs = documents(&template(RELEASE, NAMESPACE, &extra)?.ok()?)?;
        let config = rendered_config(&docs).with_context(|| format!("{extra:?}"))?;
        // The runner NetworkPolicy's sidecar peer must select the chart's own pods.
        let deployment = find(&docs, "Deployment", "orrery-operator").context("no Deployment")?;
        let pod_labels = &deployment["spec"]["template"]["metadata"]["labels"];
        for (key, value) in &config.sidecar.pod_labels {
            ensure!(
                pod_labels[key] == value.as_str(),
                "sidecar.podLabels {key}={value} does not select the operator's pods ({pod_labels})"
            );
        }
        ensure!(
            config.sidecar.namespace == NAMESPACE
                && config.sidecar.service_name == "orrery-sidecar"
        );
        ensure!(find(&docs, "Service", &config.sidecar.service_name).is_some());
    }
    Ok(())
}

#[test]
fn the_operator_pod_meets_pod_security_restricted_and_splits_the_run_token_keys() -> Result<()> {
    let docs = documents(&template(RELEASE, NAMESPACE, &[])?.ok()?)?;
    let pod = &find(&docs, "Deployment", "orrery-operator").context("no Deployment")?["spec"]["template"]
        ["spec"];
    ensure!(pod["securityContext"]["runAsNonRoot"] == true);
    ensure!(pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault");
    ensure!(pod["automountServiceAccountToken"] == false);
    let containers = pod["containers"].as_array().context("containers")?;
    ensure!(containers.len() == 2, "controller and sidecar");
    for c in containers {
        let sc = &c["securityContext"];
        ensure!(sc["allowPrivilegeEscalation"] == false, "{}", c["name"]);
        ensure!(sc["readOnlyRootFilesystem"] == true, "{}", c["name"]);
        ensure!(
            sc["capabilities"]["drop"] == serde_json::json!(["ALL"]),
            "{}",
            c["name"]
        );
        ensure!(c["livenessProbe"].is_object() && c["readinessProbe"].is_object());
    }
    // Only the controller mounts the signing key; the sidecar gets the public half alone.
    let mounts = |name: &str| -> Vec<String> {
        containers
            .iter()
            .find(|c| c["name"] == name)
            .and_then(|c| c["volumeMounts"].as_array())
            .map(|m| {
                m.iter()
                    .filter_map(|m| m["name"].as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    ensure!(mounts("controller").contains(&"run-token-signing".to_string()));
    ensure!(!mounts("sidecar").contains(&"run-token-signing".to_string()));
    ensure!(mounts("sidecar").contains(&"run-token-verifying".to_string()));
    let volumes = pod["volumes"].as_array().context("volumes")?;
    let verifying = volumes
        .iter()
        .find(|v| v["name"] == "run-token-verifying")
        .context("run-token-verifying volume")?;
    ensure!(
        verifying["secret"]["items"]
            == serde_json::json!([{"key": "key.pub.pem", "path": "key.pub.pem"}])
    );
    // The two containers listen on different ports (they share the pod's network).
    let ports: Vec<&serde_json::Value> = containers
        .iter()
        .map(|c| &c["ports"][0]["containerPort"])
        .collect();
    ensure!(ports[0] != ports[1], "ports {ports:?}");
    Ok(())
}

/// `runner.trustedCertificates` reaches the operator's config as written, and the operator
/// accepts it.
#[test]
fn trusted_certificates_reach_the_operators_config() -> Result<()> {
    // A real CA certificate: the operator checks each is one a TLS client can trust.
    let file = orrery_tests::harness::workspace_root().join("tests/fixtures/test-ca.pem");
    let pem = std::fs::read_to_string(&file)?;
    let set = format!("runner.trustedCertificates={}", file.display());
    let rendered = template(RELEASE, NAMESPACE, &["--set-file", &set]);
    let docs = documents(&rendered?.ok()?)?;
    let config = rendered_config(&docs)?;
    ensure!(
        config.runner.trusted_certificates.as_deref() == Some(pem.as_str()),
        "{:?}",
        config.runner.trusted_certificates
    );
    Ok(())
}

/// `runner.redactIps` reaches the operator's config (off unless set, rule 8.8).
#[test]
fn redact_ips_reaches_the_operators_config_and_is_off_by_default() -> Result<()> {
    for (extra, want) in [
        (&[][..], false),
        (&["--set", "runner.redactIps=true"][..], true),
    ] {
        let docs = documents(&template(RELEASE, NAMESPACE, extra)?.ok()?)?;
        let config = rendered_config(&docs)?;
        ensure!(config.runner.redact_ips == want, "{extra:?}");
    }
    Ok(())
}

/// `config.clusterRanges` reaches the operator's config (none unless set; anchor 19), and the
/// allowlist's exact address-and-port form is one the operator accepts.
#[test]
fn cluster_ranges_reach_the_operators_config() -> Result<()> {
    let docs = documents(&template(RELEASE, NAMESPACE, &[])?.ok()?)?;
    ensure!(rendered_config(&docs)?.cluster_ranges.is_empty());
    let set = [
        "--set",
        "config.clusterRanges={10.0.0.0/16,10.96.0.0/12,192.168.1.10}",
        "--set",
        "config.privateNetworkAllowlist={10.0.0.0/8,10.96.12.7:8080}",
    ];
    let config = rendered_config(&documents(&template(RELEASE, NAMESPACE, &set)?.ok()?)?)?;
    ensure!(
        config.cluster_ranges == ["10.0.0.0/16", "10.96.0.0/12", "192.168.1.10"],
        "{:?}",
        config.cluster_ranges
    );
    ensure!(config.problems().is_empty(), "{:?}", config.problems());
    ensure!(config.exact_sockets() == ["10.96.12.7:8080".parse::<std::net::SocketAddr>()?]);
    Ok(())
}

/// `config.requireSecretOrigins` (off unless set, so an upgrade keeps unannotated Secrets
/// working) reaches the operator's config (rules 5.46/5.47).
#[test]
fn require_secret_origins_reaches_the_operators_config() -> Result<()> {
    for (extra, want) in [
        (&[][..], false),
        (&["--set", "config.requireSecretOrigins=true"][..], true),
    ] {
        let docs = documents(&template(RELEASE, NAMESPACE, extra)?.ok()?)?;
        let config = rendered_config(&docs)?;
        ensure!(config.require_secret_origins == want, "{extra:?}");
    }
    Ok(())
}

/// `config.resyncSeconds` reaches the operator's config (60 unless set, fault case 12; a value
/// out of range is one of the bad values below).
#[test]
fn resync_seconds_reaches_the_operators_config() -> Result<()> {
    for (extra, want) in [(&[][..], 60), (&["--set", "config.resyncSeconds=5"][..], 5)] {
        let docs = documents(&template(RELEASE, NAMESPACE, extra)?.ok()?)?;
        let config = rendered_config(&docs)?;
        ensure!(
            config.resync_seconds == want,
            "{extra:?}: {}",
            config.resync_seconds
        );
    }
    Ok(())
}

/// `logging.format` (JSON by default) reaches both containers' `--log-format` and, through the
/// operator's config, the runner pods; `logging.level` reaches both containers when given.
#[test]
fn the_log_format_is_json_by_default_for_every_process_and_text_when_asked() -> Result<()> {
    use orrery_crds::logging::LogFormat;
    for (extra, format, level) in [
        (&[][..], LogFormat::Json, None),
        (
            &[
                "--set",
                "logging.format=text",
                "--set",
                "logging.level=debug",
            ][..],
            LogFormat::Text,
            Some("--log-level=debug"),
        ),
    ] {
        let docs = documents(&template(RELEASE, NAMESPACE, extra)?.ok()?)?;
        let config = rendered_config(&docs)?;
        ensure!(config.runner.log_format == format, "{extra:?}");
        let deployment = find(&docs, "Deployment", "orrery-operator").context("no deployment")?;
        let containers = deployment["spec"]["template"]["spec"]["containers"]
            .as_array()
            .context("containers")?;
        ensure!(containers.len() == 2);
        for container in containers {
            let args: Vec<&str> = container["args"]
                .as_array()
                .context("args")?
                .iter()
                .filter_map(|a| a.as_str())
                .collect();
            let want = format!("--log-format={format}");
            ensure!(args.contains(&want.as_str()), "{extra:?}: {args:?}");
            ensure!(
                args.iter().find(|a| a.starts_with("--log-level")).copied() == level,
                "{extra:?}: {args:?}"
            );
        }
    }
    Ok(())
}

#[test]
fn the_pending_approvals_policy_trusts_the_releases_own_service_account() -> Result<()> {
    let docs = documents(
        &template(
            "studio",
            "platform",
            &["--set", "serviceAccount.name=orrery-bot"],
        )?
        .ok()?,
    )?;
    let policy = find(
        &docs,
        "ValidatingAdmissionPolicy",
        "studioruns-pending.studio.orrery.dev",
    )
    .context("no pending policy")?;
    let system = policy["spec"]["variables"]
        .as_array()
        .and_then(|v| v.iter().find(|v| v["name"] == "system"))
        .context("no `system` variable")?;
    ensure!(
        system["expression"] == "'system:serviceaccount:platform:orrery-bot'",
        "{}",
        system["expression"]
    );
    Ok(())
}

/// The admission policies as a default install renders them, shipped for teams that apply
/// manifests without Helm.
const RENDERED_POLICIES: &str = "deploy/admission-policies.yaml";

/// What the shipped file says above the rendered policies.
const RENDERED_POLICIES_HEADER: &str = "\
# The three StudioRun admission policies and their bindings, as `helm install orrery charts/orrery
# -n orrery-system` renders them (docs/admission-policies.md says what each guarantees), for a
# cluster installed without Helm:
#
#   kubectl apply --server-side -f deploy/admission-policies.yaml
#
# Generated from charts/orrery/templates/policies/ (a test keeps it equal; regenerate with
# ORRERY_UPDATE_GOLDEN=1 cargo test -p orrery-tests --test chart). One line depends on where
# the operator runs: the pending-approvals policy trusts
# system:serviceaccount:orrery-system:orrery-operator (variable `system`); if your operator's
# ServiceAccount has another name or namespace, change that line, or render the policies with
# `helm template` and your release's values.
";

#[test]
fn the_shipped_admission_policies_are_the_charts_as_a_default_install_renders_them() -> Result<()> {
    let mut args = Vec::new();
    for file in [
        "studioruns-create.yaml",
        "studioruns-decisions.yaml",
        "studioruns-pending.yaml",
    ] {
        args.push("--show-only".to_owned());
        args.push(format!("templates/policies/{file}"));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let rendered = template(RELEASE, NAMESPACE, &args)?.ok()?;
    ensure!(
        documents(&rendered)?.len() == 6,
        "three policies and three bindings:\n{rendered}"
    );
    let want = format!("{RENDERED_POLICIES_HEADER}{rendered}");
    let path = workspace_root().join(RENDERED_POLICIES);
    if std::env::var_os("ORRERY_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &want).with_context(|| format!("writing {}", path.display()))?;
        return Ok(());
    }
    let shipped = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "reading {}; make it with ORRERY_UPDATE_GOLDEN=1",
            path.display()
        )
    })?;
    ensure!(
        shipped == want,
        "{RENDERED_POLICIES} differs from the chart's policies as rendered now: regenerate it with \
         ORRERY_UPDATE_GOLDEN=1 cargo test -p orrery-tests --test chart and review the diff"
    );
    Ok(())
}

#[test]
fn every_refusal_of_every_admission_policy_has_the_one_form_forbidden() -> Result<()> {
    // `reason: Invalid` prints `The studioruns "x" is invalid: : …` (an empty field), `Forbidden`
    // prints `Error from server (Forbidden): … is forbidden: …`: one form for every refusal.
    let dir = chart_dir().join("templates/policies");
    let mut reasons = 0;
    for entry in std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        let text = std::fs::read_to_string(&path)?;
        for line in text.lines() {
            if let Some(reason) = line.trim().strip_prefix("reason:") {
                reasons += 1;
                ensure!(
                    reason.trim() == "Forbidden",
                    "{}: a refusal with reason {}; every policy refuses as Forbidden",
                    path.display(),
                    reason.trim()
                );
            }
        }
    }
    ensure!(
        reasons >= 11,
        "only {reasons} reasons found under {}",
        dir.display()
    );
    Ok(())
}

/// Each row: values given with --set / --set-string, and what helm's refusal must name.
#[test]
fn bad_values_are_refused_by_helm_with_the_field_named() -> Result<()> {
    let rows: &[(&[&str], &[&str])] = &[
        (
            &["--set-string", "replicaCount=two"],
            &["/replicaCount", "want integer"],
        ),
        (&["--set", "replicaCount=0"], &["/replicaCount", "minimum"]),
        (&["--set", "image.tag=latest"], &["/image/tag"]),
        (&["--set", "replicas=2"], &["replicas"]),
        (
            &["--set", "store.type=mysql"],
            &["/store/type", "sqlite", "postgres"],
        ),
        (
            &["--set", "runner.image.digest=sha1:abc"],
            &["/runner/image/digest"],
        ),
        (
            &["--set", "tenantNamespaces={Team_A}"],
            &["/tenantNamespaces/0"],
        ),
        (
            &["--set", "config.approvalTimeoutSeconds=0"],
            &["/config/approvalTimeoutSeconds"],
        ),
        (
            &["--set", "config.resyncSeconds=0"],
            &["/config/resyncSeconds", "minimum"],
        ),
        (
            &["--set", "config.runLimits.maxConcurrentRuns=3"],
            &["maxConcurrentRuns"],
        ),
        (&["--set", "sidecar.url=ftp://x"], &["/sidecar/url"]),
        (
            &["--set", "service.clusterIP=my-service"],
            &["/service/clusterIP"],
        ),
        (
            &["--set", "service.publicUrl=orrery.example.com"],
            &["/service/publicUrl"],
        ),
        (
            &["--set", "replicaCount=2"],
            &["replicaCount", "store.type=postgres"],
        ),
        (
            &["--set", "controller.metricsPort=8080"],
            &["controller.metricsPort", "sidecar.port"],
        ),
        (
            &["--set", "controller.leaderElection.leaseGraceSeconds=15"],
            &["leaseGraceSeconds", "leaseDurationSeconds"],
        ),
        (
            &["--set", "controller.shutdownTimeoutSeconds=30"],
            &["shutdownTimeoutSeconds", "terminationGracePeriodSeconds"],
        ),
        (
            &["--set", r"podLabels.app\.kubernetes\.io/component=x"],
            &["podLabels.app.kubernetes.io/component"],
        ),
        (&["--set", "sidecar.url=http://x/path"], &["/sidecar/url"]),
        (
            &["--set", "otel.endpoint=collector:4318"],
            &["/otel/endpoint"],
        ),
        (
            &["--set", "otel.headersSecret.name=otel-key"],
            &["otel.endpoint", "otel.headersSecret"],
        ),
        (&["--set", "otel.queueSpans=0"], &["/otel/queueSpans"]),
        (
            &["--set", "config.ttlSecondsAfterFinished=0"],
            &["/config/ttlSecondsAfterFinished"],
        ),
        (&["--set", "fullnameOverride=1abc"], &["fullnameOverride"]),
        (
            &["--set", "metrics.serviceMonitor.interval=soon"],
            &["/metrics/serviceMonitor/interval"],
        ),
        (
            &["--set-string", "rbac.aggregateToDefaultRoles=yes"],
            &["/rbac/aggregateToDefaultRoles"],
        ),
        (
            &["--set", "runToken.existingSecret=My_Keys"],
            &["/runToken/existingSecret"],
        ),
        (
            &[
                "--set",
                "store.type=postgres,store.postgres.urlSecret.name=db,controller.leaderElection.enabled=false",
            ],
            &["controller.leaderElection.enabled", "two controllers"],
        ),
        (
            &["--set", "store.type=postgres"],
            &["store.postgres.urlSecret.name"],
        ),
        (
            &["--set", "runner.trustedCertificates=our CA"],
            &["/runner/trustedCertificates"],
        ),
        (
            &[
                "--set",
                "runner.trustedCertificates=-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----",
            ],
            &["runner.trustedCertificates", "private key"],
        ),
        (
            &[
                "--set",
                "runner.trustedCertificates=-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n-----BEGIN PUBLIC KEY-----",
            ],
            &["runner.trustedCertificates", "not a CERTIFICATE"],
        ),
        (&["--set", "hostNetwork=true"], &["hostNetwork"]),
        (
            &[
                "--set",
                "replicaCount=2,store.type=postgres,store.postgres.urlSecret.name=db,controller.leaderElection.enabled=false",
            ],
            &["controller.leaderElection.enabled"],
        ),
    ];
    let mut failures = Vec::new();
    for (args, must_name) in rows {
        let out = template(RELEASE, NAMESPACE, args)?;
        if out.success {
            failures.push(format!("{args:?}: accepted"));
            continue;
        }
        for needle in *must_name {
            if !out.stderr.contains(needle) {
                failures.push(format!(
                    "{args:?}: the refusal does not name {needle:?}:\n{}",
                    out.stderr
                ));
            }
        }
    }
    ensure!(failures.is_empty(), "{}", failures.join("\n\n"));
    Ok(())
}

/// The `openssl` command lines the chart documents for making the run-token pair: the lines of
/// values.yaml's runToken comment that start with `openssl`.
fn documented_openssl_commands() -> Result<Vec<String>> {
    let values = std::fs::read_to_string(chart_dir().join("values.yaml"))?;
    let commands: Vec<String> = values
        .lines()
        .filter_map(|l| l.trim_start_matches('#').trim().strip_prefix("openssl "))
        .map(|rest| format!("openssl {rest}"))
        .collect();
    ensure!(
        commands.len() == 2,
        "values.yaml documents {} openssl commands, expected the key and the certificate: {commands:?}",
        commands.len()
    );
    Ok(commands)
}

#[test]
fn the_documented_openssl_commands_make_a_run_token_pair_the_operator_accepts() -> Result<()> {
    use orrery_operator::run_token::{RunTokenSigner, run_claims, verify};
    let commands = documented_openssl_commands()?;
    // NOTES.txt tells the same commands.
    let notes = std::fs::read_to_string(chart_dir().join("templates/NOTES.txt"))?;
    for command in &commands {
        ensure!(
            notes.contains(command.as_str()),
            "NOTES.txt does not show `{command}` as values.yaml does"
        );
    }
    let dir = std::env::temp_dir().join(format!("orrery-chart-keys-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    for command in &commands {
        let out = std::process::Command::new("sh")
            .args(["-c", command])
            .current_dir(&dir)
            .output()
            .with_context(|| format!("running `{command}`"))?;
        ensure!(
            out.status.success(),
            "`{command}` failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let private = std::fs::read(dir.join("key.pem"))?;
    let public = std::fs::read(dir.join("key.pub.pem"))?;
    let _ = std::fs::remove_dir_all(&dir);
    ensure!(
        String::from_utf8_lossy(&public).contains("BEGIN CERTIFICATE"),
        "key.pub.pem is meant to be a certificate, as the chart makes it"
    );
    let signer = RunTokenSigner::from_ed_pem(&private)
        .map_err(|e| anyhow::anyhow!("the controller refuses key.pem: {e}"))?;
    let now = i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_secs(),
    )?;
    let claims = run_claims("team-a", "run-1", "uid-1", "orrery-sidecar", now, 600);
    let token = signer
        .sign(&claims)
        .map_err(|e| anyhow::anyhow!("signing: {e}"))?;
    let back = verify(&token, &public, "orrery-sidecar")
        .map_err(|e| anyhow::anyhow!("the sidecar refuses a token with key.pub.pem: {e}"))?;
    ensure!(back.run == "run-1" && back.ns == "team-a");
    Ok(())
}

#[test]
fn an_existing_run_token_secret_replaces_the_charts_own() -> Result<()> {
    let docs = documents(
        &template(
            RELEASE,
            NAMESPACE,
            &["--set", "runToken.existingSecret=my-run-token-keys"],
        )?
        .ok()?,
    )?;
    ensure!(
        !docs.iter().any(|d| d["kind"] == "Secret"),
        "with runToken.existingSecret the chart renders no Secret (under helm template it would \
         make a new key on every render)"
    );
    let pod = &find(&docs, "Deployment", "orrery-operator").context("no Deployment")?["spec"]["template"]
        ["spec"];
    let volumes = pod["volumes"].as_array().context("volumes")?;
    for name in ["run-token-signing", "run-token-verifying"] {
        let volume = volumes
            .iter()
            .find(|v| v["name"] == name)
            .with_context(|| format!("no {name} volume"))?;
        ensure!(
            volume["secret"]["secretName"] == "my-run-token-keys",
            "{name} mounts {}",
            volume["secret"]["secretName"]
        );
    }
    // Without it, the chart makes its own (kept on upgrade through lookup).
    let docs = documents(&template(RELEASE, NAMESPACE, &[])?.ok()?)?;
    ensure!(find(&docs, "Secret", "orrery-run-token").is_some());
    Ok(())
}

/// Whether `role` carries the label that aggregates it into the built-in role `label`.
fn aggregated_to(role: &serde_json::Value, label: &str) -> bool {
    role["metadata"]["labels"][format!("rbac.authorization.k8s.io/aggregate-to-{label}")] == "true"
}

#[test]
fn the_optional_extras_are_off_by_default() -> Result<()> {
    let docs = documents(&template(RELEASE, NAMESPACE, &[])?.ok()?)?;
    ensure!(!docs.iter().any(|d| d["kind"] == "ServiceMonitor"));
    ensure!(!docs.iter().any(|d| d["kind"] == "PrometheusRule"));
    ensure!(find(&docs, "ConfigMap", "orrery-operator-dashboard").is_none());
    ensure!(find(&docs, "Service", "orrery-operator-metrics").is_none());
    ensure!(find(&docs, "ClusterRole", "orrery-studio-view").is_none());
    ensure!(find(&docs, "ClusterRole", "orrery-studio-edit").is_none());
    let pod = &find(&docs, "Deployment", "orrery-operator").context("no Deployment")?["spec"]["template"]
        ["spec"];
    ensure!(pod.get("affinity").is_none(), "one replica: no affinity");
    Ok(())
}

#[test]
fn a_service_monitor_scrapes_the_controllers_metrics_port() -> Result<()> {
    let docs = documents(
        &template(
            RELEASE,
            NAMESPACE,
            &[
                "--set",
                "metrics.serviceMonitor.enabled=true,metrics.serviceMonitor.labels.release=kps,controller.metricsPort=9100",
            ],
        )?
        .ok()?,
    )?;
    let monitor = find(&docs, "ServiceMonitor", "orrery-operator").context("no ServiceMonitor")?;
    ensure!(monitor["apiVersion"] == "monitoring.coreos.com/v1");
    ensure!(monitor["metadata"]["labels"]["release"] == "kps");
    ensure!(monitor["spec"]["namespaceSelector"]["matchNames"] == serde_json::json!([NAMESPACE]));
    let endpoint = &monitor["spec"]["endpoints"][0];
    ensure!(endpoint["port"] == "metrics" && endpoint["path"] == "/metrics");
    // It selects the metrics Service alone (not the sidecar's), which targets the controller's
    // metrics port on the operator's pods.
    let selector = monitor["spec"]["selector"]["matchLabels"]
        .as_object()
        .context("matchLabels")?;
    let selected: Vec<&serde_json::Value> = docs
        .iter()
        .filter(|d| d["kind"] == "Service")
        .filter(|d| {
            selector
                .iter()
                .all(|(k, v)| &d["metadata"]["labels"][k] == v)
        })
        .collect();
    ensure!(
        selected.len() == 1 && selected[0]["metadata"]["name"] == "orrery-operator-metrics",
        "the ServiceMonitor selects {selected:?}"
    );
    let service = selected[0];
    ensure!(service["spec"]["ports"][0]["name"] == "metrics");
    ensure!(service["spec"]["ports"][0]["targetPort"] == "metrics");
    let deployment = find(&docs, "Deployment", "orrery-operator").context("no Deployment")?;
    let labels = &deployment["spec"]["template"]["metadata"]["labels"];
    let pod_selector = service["spec"]["selector"]
        .as_object()
        .context("selector")?;
    ensure!(pod_selector.iter().all(|(k, v)| &labels[k] == v));
    let controller = deployment["spec"]["template"]["spec"]["containers"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "controller"))
        .context("no controller container")?;
    ensure!(
        controller["ports"][0]["name"] == "metrics"
            && controller["ports"][0]["containerPort"] == 9100
    );
    Ok(())
}

#[test]
fn the_service_monitor_scrapes_the_sidecars_metrics_port_too_and_the_network_policy_admits_it()
-> Result<()> {
    let docs = documents(
        &template(
            RELEASE,
            NAMESPACE,
            &[
                "--set",
                "metrics.serviceMonitor.enabled=true,sidecar.metricsPort=9200",
            ],
        )?
        .ok()?,
    )?;
    let monitor = find(&docs, "ServiceMonitor", "orrery-operator").context("no ServiceMonitor")?;
    let ports: Vec<&serde_json::Value> = monitor["spec"]["endpoints"]
        .as_array()
        .context("endpoints")?
        .iter()
        .map(|e| &e["port"])
        .collect();
    ensure!(ports == ["metrics", "sidecar-metrics"], "{ports:?}");
    let service =
        find(&docs, "Service", "orrery-operator-metrics").context("no metrics Service")?;
    ensure!(
        service["spec"]["ports"][1]
            == serde_json::json!({"name": "sidecar-metrics", "port": 9200, "targetPort": "sidecar-metrics", "protocol": "TCP"}),
        "{}",
        service["spec"]["ports"]
    );
    let deployment = find(&docs, "Deployment", "orrery-operator").context("no Deployment")?;
    let sidecar = sidecar_container(deployment)?;
    ensure!(
        sidecar["args"]
            .as_array()
            .is_some_and(|a| a.iter().any(|a| a == "--metrics-listen=0.0.0.0:9200")),
        "{}",
        sidecar["args"]
    );
    ensure!(
        sidecar["ports"][1]
            == serde_json::json!({"name": "sidecar-metrics", "containerPort": 9200, "protocol": "TCP"})
    );
    let policy = find(&docs, "NetworkPolicy", "orrery-operator").context("no NetworkPolicy")?;
    ensure!(
        policy["spec"]["ingress"][1]["ports"][1]["port"] == 9200,
        "{}",
        policy["spec"]["ingress"]
    );
    // The sidecar's metrics port may not be another's.
    let clash = template(RELEASE, NAMESPACE, &["--set", "sidecar.metricsPort=8081"])?;
    ensure!(
        !clash.success
            && clash
                .stderr
                .contains("controller.metricsPort and sidecar.metricsPort are both 8081"),
        "{}",
        clash.stderr
    );
    Ok(())
}

#[test]
fn with_a_collector_both_containers_send_traces_with_its_headers_and_ca_and_only_there_may_they_go()
-> Result<()> {
    let docs = documents(
        &template(
            RELEASE,
            NAMESPACE,
            &[
                "--set",
                "otel.endpoint=http://otel-collector.monitoring:4318,otel.headersSecret.name=otel-key,otel.caConfigMap.name=otel-ca,otel.cidrs={10.9.0.0/16}",
            ],
        )?
        .ok()?,
    )?;
    let deployment = find(&docs, "Deployment", "orrery-operator").context("no Deployment")?;
    let containers = deployment["spec"]["template"]["spec"]["containers"]
        .as_array()
        .context("containers")?;
    for container in containers {
        let args: Vec<&str> = container["args"]
            .as_array()
            .context("args")?
            .iter()
            .filter_map(|a| a.as_str())
            .filter(|a| a.starts_with("--otel"))
            .collect();
        let mut want = vec![
            "--otel-endpoint=http://otel-collector.monitoring:4318",
            "--otel-queue-spans=8192",
            "--otel-headers-file=/etc/orrery/otel-headers/headers",
            "--otel-ca-file=/etc/orrery/otel-ca/ca.crt",
        ];
        if container["name"] == "sidecar" {
            // No content by default.
            ensure!(!args.contains(&"--otel-export-content"));
        }
        want.retain(|w| !args.contains(w));
        ensure!(
            want.is_empty(),
            "{}: missing {want:?} in {args:?}",
            container["name"]
        );
        let mounts: Vec<&str> = container["volumeMounts"]
            .as_array()
            .context("mounts")?
            .iter()
            .filter_map(|m| m["mountPath"].as_str())
            .collect();
        ensure!(
            mounts.contains(&"/etc/orrery/otel-headers") && mounts.contains(&"/etc/orrery/otel-ca"),
            "{mounts:?}"
        );
    }
    let volumes = &deployment["spec"]["template"]["spec"]["volumes"];
    let headers = volumes
        .as_array()
        .and_then(|v| v.iter().find(|v| v["name"] == "otel-headers"))
        .context("the headers volume")?;
    ensure!(headers["secret"]["secretName"] == "otel-key", "{headers}");
    ensure!(
        headers["secret"]["items"][0] == serde_json::json!({"key": "headers", "path": "headers"})
    );
    let policy = find(&docs, "NetworkPolicy", "orrery-operator").context("no NetworkPolicy")?;
    let egress = policy["spec"]["egress"].as_array().context("egress")?;
    ensure!(
        egress.iter().any(|rule| rule
            == &serde_json::json!({"to": [{"ipBlock": {"cidr": "10.9.0.0/16"}}],
                                   "ports": [{"port": 4318, "protocol": "TCP"}]})),
        "egress to the collector: {}",
        policy["spec"]["egress"]
    );
    // The content switch; an https endpoint without a port is let out on 443.
    let docs = documents(
        &template(
            RELEASE,
            NAMESPACE,
            &[
                "--set",
                "otel.endpoint=https://api.honeycomb.io,otel.exportContent=true",
            ],
        )?
        .ok()?,
    )?;
    let deployment = find(&docs, "Deployment", "orrery-operator").context("no Deployment")?;
    let sidecar = sidecar_container(deployment)?;
    ensure!(
        sidecar["args"]
            .as_array()
            .is_some_and(|a| a.iter().any(|a| a == "--otel-export-content")),
        "{}",
        sidecar["args"]
    );
    let policy = find(&docs, "NetworkPolicy", "orrery-operator").context("no NetworkPolicy")?;
    let last = policy["spec"]["egress"]
        .as_array()
        .and_then(|e| e.last())
        .context("egress")?;
    ensure!(last["ports"][0]["port"] == 443, "{last}");
    // Without an endpoint nothing of it is rendered.
    let plain = template(RELEASE, NAMESPACE, &[])?.ok()?;
    ensure!(
        !plain.contains("--otel") && !plain.contains("otel-headers") && !plain.contains("otel-ca"),
        "an install without a collector has trace flags or volumes"
    );
    Ok(())
}

/// The operator Deployment's sidecar container.
fn sidecar_container(deployment: &serde_json::Value) -> Result<&serde_json::Value> {
    deployment["spec"]["template"]["spec"]["containers"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "sidecar"))
        .context("no sidecar container")
}

/// Every `orrery_…` series an expression names, without a histogram's `_bucket`, `_count`
/// or `_sum`.
fn series_named(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = expr;
    while let Some(at) = rest.find("orrery_") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        let name = &tail[..end];
        let family = ["_bucket", "_count", "_sum"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .unwrap_or(name);
        names.push(family.to_owned());
        rest = &tail[end..];
    }
    names
}

#[test]
fn the_alerts_and_the_dashboard_query_only_series_the_operator_and_sidecar_export() -> Result<()> {
    use orrery_operator::sidecar::metrics::{SidecarMetrics, store_ops};
    // Every family shows once it has a series: one of each.
    let operator = orrery_operator::metrics::Metrics::new();
    operator.run_ended(
        "team-a",
        orrery_crds::run::RunPhase::Failed,
        "PodDeleted",
        10,
    );
    let ops = store_ops();
    let sidecar = SidecarMetrics::new(&ops);
    sidecar.answered(
        "/api/v1/me",
        "GET",
        200,
        std::time::Duration::from_millis(1),
    );
    ops.get_or_create(&orrery_operator::sidecar::metrics::StoreOpLabels {
        backend: "sqlite".into(),
        operation: "append".into(),
    })
    .observe(0.001);
    let exported: std::collections::BTreeSet<String> = [operator.encode(), sidecar.encode()]
        .iter()
        .flat_map(|text| text.lines())
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .map(str::to_owned)
        .collect();
    let docs = documents(
        &template(
            RELEASE,
            NAMESPACE,
            &["--set", "metrics.prometheusRule.enabled=true,metrics.dashboard.enabled=true,metrics.prometheusRule.labels.release=kps"],
        )?
        .ok()?,
    )?;
    let rule = find(&docs, "PrometheusRule", "orrery-operator").context("no PrometheusRule")?;
    ensure!(rule["metadata"]["labels"]["release"] == "kps");
    let mut exprs: Vec<(String, String)> = Vec::new();
    for group in rule["spec"]["groups"].as_array().context("groups")? {
        for r in group["rules"].as_array().context("rules")? {
            let alert = r["alert"].as_str().context("alert")?.to_owned();
            let expr = r["expr"].as_str().context("expr")?;
            ensure!(
                expr.contains(&format!("namespace=\"{NAMESPACE}\"")),
                "{alert} selects the release's namespace: {expr}"
            );
            ensure!(
                r["annotations"]["description"].is_string(),
                "{alert} says what to do"
            );
            exprs.push((alert, expr.to_owned()));
        }
    }
    let alerts: Vec<&str> = exprs.iter().map(|(a, _)| a.as_str()).collect();
    for wanted in [
        "OrreryRunsFailing",
        "OrreryIngestRefusing",
        "OrreryApprovalsExpiring",
        "OrreryLeaderMissing",
    ] {
        ensure!(alerts.contains(&wanted), "{wanted} in {alerts:?}");
    }
    let dashboard =
        find(&docs, "ConfigMap", "orrery-operator-dashboard").context("no dashboard")?;
    ensure!(dashboard["metadata"]["labels"]["grafana_dashboard"] == "1");
    let json: serde_json::Value = serde_json::from_str(
        dashboard["data"]["orrery.json"]
            .as_str()
            .context("orrery.json")?,
    )?;
    let mut panels = 0;
    for panel in json["panels"].as_array().context("panels")? {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().context("a target's expr")?;
            exprs.push((format!("panel {}", panel["title"]), expr.to_owned()));
            panels += 1;
        }
    }
    ensure!(panels >= 20, "{panels} queries");
    for (what, expr) in &exprs {
        let named = series_named(expr);
        ensure!(
            !named.is_empty(),
            "{what} queries no series of ours: {expr}"
        );
        for name in named {
            ensure!(
                exported.contains(&name),
                "{what} queries {name}, which neither process exports ({exported:?})"
            );
        }
    }
    Ok(())
}

#[test]
fn several_replicas_spread_over_nodes_unless_the_affinity_is_given() -> Result<()> {
    let ha = fixtures().join("ha-postgres.values.yaml");
    let ha = ha.to_string_lossy();
    let affinity = |extra: &[&str]| -> Result<serde_json::Value> {
        let mut args = vec!["--values", ha.as_ref()];
        args.extend_from_slice(extra);
        let docs = documents(&template(RELEASE, NAMESPACE, &args)?.ok()?)?;
        Ok(
            find(&docs, "Deployment", "orrery-operator").context("no Deployment")?["spec"]
                ["template"]["spec"]["affinity"]
                .clone(),
        )
    };
    let spread = affinity(&[])?;
    let term = &spread["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0];
    ensure!(
        term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname",
        "{spread}"
    );
    ensure!(
        term["podAffinityTerm"]["labelSelector"]["matchLabels"]["app.kubernetes.io/component"]
            == "operator",
        "{spread}"
    );
    ensure!(
        spread["podAntiAffinity"]
            .get("requiredDuringSchedulingIgnoredDuringExecution")
            .is_none(),
        "soft only: a cluster of one node still runs every replica"
    );
    let own = affinity(&[
        "--set",
        "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=pool",
    ])?;
    ensure!(
        own.get("podAntiAffinity").is_none() && own.get("nodeAffinity").is_some(),
        "the given affinity replaces the default: {own}"
    );
    Ok(())
}

#[test]
fn aggregated_roles_let_view_read_and_edit_write_but_never_status() -> Result<()> {
    let docs = documents(
        &template(
            RELEASE,
            NAMESPACE,
            &["--set", "rbac.aggregateToDefaultRoles=true"],
        )?
        .ok()?,
    )?;
    let view = find(&docs, "ClusterRole", "orrery-studio-view").context("no view role")?;
    let edit = find(&docs, "ClusterRole", "orrery-studio-edit").context("no edit role")?;
    ensure!(aggregated_to(view, "view") && !aggregated_to(view, "edit"));
    ensure!(aggregated_to(edit, "edit") && aggregated_to(edit, "admin"));
    let rules = |role: &serde_json::Value| -> Vec<(String, String)> {
        let mut all = Vec::new();
        for rule in role["rules"].as_array().into_iter().flatten() {
            for resource in rule["resources"].as_array().into_iter().flatten() {
                for verb in rule["verbs"].as_array().into_iter().flatten() {
                    all.push((
                        resource.as_str().unwrap_or_default().to_owned(),
                        verb.as_str().unwrap_or_default().to_owned(),
                    ));
                }
            }
        }
        all
    };
    for role in [view, edit] {
        ensure!(
            role["rules"]
                .as_array()
                .into_iter()
                .flatten()
                .all(|r| r["apiGroups"] == serde_json::json!(["studio.orrery.dev"])),
            "only Orrery's API group: {role}"
        );
    }
    let (view, edit) = (rules(view), rules(edit));
    let has = |rules: &[(String, String)], resource: &str, verb: &str| {
        rules.iter().any(|(r, v)| r == resource && v == verb)
    };
    for kind in ["compositions", "registryentries", "studioruns"] {
        for verb in ["get", "list", "watch"] {
            ensure!(has(&view, kind, verb), "view: {verb} {kind}");
        }
        for verb in ["create", "update", "patch", "delete"] {
            ensure!(has(&edit, kind, verb), "edit: {verb} {kind}");
            ensure!(!has(&view, kind, verb), "view may not {verb} {kind}");
        }
    }
    ensure!(
        view.iter()
            .all(|(r, v)| !r.ends_with("/status") || v == "get"),
        "view reads status only: {view:?}"
    );
    ensure!(
        edit.iter().all(|(r, _)| !r.contains('/')),
        "edit writes no subresource (deciding an approval is a status patch, granted on purpose): {edit:?}"
    );
    Ok(())
}

/// The (kind, name, namespace, role) of every binding rendered, with the role it grants.
fn bindings(docs: &[serde_json::Value]) -> Vec<(String, String, String, String)> {
    docs.iter()
        .filter(|d| d["kind"] == "ClusterRoleBinding" || d["kind"] == "RoleBinding")
        .map(|d| {
            let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
            (
                text(&d["kind"]),
                text(&d["metadata"]["name"]),
                text(&d["metadata"]["namespace"]),
                text(&d["roleRef"]["name"]),
            )
        })
        .collect()
}

#[test]
fn with_a_watch_namespace_the_controllers_rights_hold_in_it_alone() -> Result<()> {
    let role = "orrery-operator";
    // All namespaces: the controllers' role is bound cluster-wide.
    let docs = documents(&template(RELEASE, NAMESPACE, &[])?.ok()?)?;
    ensure!(
        bindings(&docs)
            .iter()
            .any(|(kind, _, _, r)| kind == "ClusterRoleBinding" && r == role),
        "{:?}",
        bindings(&docs)
    );
    // One namespace: only a RoleBinding there grants it; what stays cluster-wide is a get of
    // Namespaces and of the admission policies and their bindings (cluster-scoped kinds), and
    // the sidecar's list of StudioRuns.
    let docs = documents(
        &template(
            RELEASE,
            NAMESPACE,
            &[
                "--set",
                "watchNamespace=team-a",
                "--set",
                "tenantNamespaces={team-a}",
            ],
        )?
        .ok()?,
    )?;
    let all = bindings(&docs);
    let granting: Vec<_> = all.iter().filter(|(_, _, _, r)| r == role).collect();
    ensure!(
        granting.len() == 1 && granting[0].0 == "RoleBinding" && granting[0].2 == "team-a",
        "{granting:?}"
    );
    // Binding names do not collide with the tenant RoleBinding in the same namespace.
    let mut names: Vec<(&str, &str, &str)> = all
        .iter()
        .map(|(k, n, ns, _)| (k.as_str(), n.as_str(), ns.as_str()))
        .collect();
    names.sort_unstable();
    let count = names.len();
    names.dedup();
    ensure!(names.len() == count, "two bindings share a name: {all:?}");
    for (kind, _, _, cluster_role) in all.iter().filter(|(k, ..)| k == "ClusterRoleBinding") {
        let bound = find(&docs, "ClusterRole", cluster_role)
            .with_context(|| format!("no ClusterRole {cluster_role}"))?;
        let mut rights = Vec::new();
        for rule in bound["rules"].as_array().into_iter().flatten() {
            for resource in rule["resources"].as_array().into_iter().flatten() {
                for verb in rule["verbs"].as_array().into_iter().flatten() {
                    rights.push(format!(
                        "{} {}",
                        verb.as_str().unwrap_or_default(),
                        resource.as_str().unwrap_or_default()
                    ));
                }
            }
        }
        ensure!(
            rights.iter().all(|r| [
                "get namespaces",
                "list studioruns",
                "get validatingadmissionpolicies",
                "get validatingadmissionpolicybindings"
            ]
            .contains(&r.as_str())),
            "{kind} {cluster_role} grants cluster-wide {rights:?}"
        );
    }
    Ok(())
}

/// The kinds `helm template` renders without a namespace (the CRDs aside: Helm installs them
/// once from crds/ and skips them when they exist).
const CLUSTER_SCOPED: &[&str] = &[
    "ClusterRole",
    "ClusterRoleBinding",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
];

/// The cluster-scoped objects of a render: "Kind/name", sorted.
fn cluster_scoped(release: &str, namespace: &str, extra: &[&str]) -> Result<Vec<String>> {
    let docs = documents(&template(release, namespace, extra)?.ok()?)?;
    let mut names = Vec::new();
    for doc in &docs {
        let kind = doc["kind"].as_str().unwrap_or_default();
        if doc["metadata"].get("namespace").is_none() {
            ensure!(
                CLUSTER_SCOPED.contains(&kind),
                "{kind} {} has no namespace",
                doc["metadata"]["name"]
            );
            names.push(format!(
                "{kind}/{}",
                doc["metadata"]["name"].as_str().unwrap_or_default()
            ));
        }
    }
    names.sort();
    Ok(names)
}

#[test]
fn two_releases_serving_different_namespaces_share_no_cluster_scoped_name() -> Result<()> {
    let all = ["--set", "rbac.aggregateToDefaultRoles=true"];
    let a = cluster_scoped(
        "studio-a",
        "ops-a",
        &[
            all[0],
            all[1],
            "--set",
            "watchNamespace=team-a",
            "--set",
            "tenantNamespaces={team-a}",
        ],
    )?;
    let b = cluster_scoped(
        "studio-b",
        "ops-b",
        &[
            all[0],
            all[1],
            "--set",
            "watchNamespace=team-b",
            "--set",
            "tenantNamespaces={team-b}",
        ],
    )?;
    for kind in CLUSTER_SCOPED {
        ensure!(
            a.iter().any(|n| n.starts_with(&format!("{kind}/"))),
            "no {kind} rendered: {a:?}"
        );
    }
    let shared: Vec<&String> = a.iter().filter(|n| b.contains(n)).collect();
    ensure!(shared.is_empty(), "both releases render {shared:?}");
    // Two releases serving every namespace would reconcile the same runs: their admission
    // policies share names, so Helm refuses the second (after the chart's guard said why, when
    // it can see the cluster).
    let a = cluster_scoped("studio-a", "ops-a", &[])?;
    let b = cluster_scoped("studio-b", "ops-b", &[])?;
    ensure!(
        a.iter()
            .filter(|n| n.starts_with("ValidatingAdmissionPolicy"))
            .all(|n| b.contains(n)),
        "{a:?} / {b:?}"
    );
    Ok(())
}

#[test]
fn a_release_serving_one_namespace_binds_its_pending_policy_there() -> Result<()> {
    let docs =
        documents(&template("studio", "platform", &["--set", "watchNamespace=team-a"])?.ok()?)?;
    let name = "studioruns-pending.team-a.studio.orrery.dev";
    let binding = find(&docs, "ValidatingAdmissionPolicyBinding", name)
        .with_context(|| format!("no binding {name}"))?;
    ensure!(binding["spec"]["policyName"] == name);
    ensure!(
        binding["spec"]["matchResources"]["namespaceSelector"]["matchLabels"]
            == serde_json::json!({"kubernetes.io/metadata.name": "team-a"}),
        "{binding}"
    );
    // Who may create and decide is the same rule for every release: cluster-wide.
    for base in ["studioruns-create", "studioruns-decisions"] {
        let name = format!("{base}.team-a.studio.orrery.dev");
        let binding = find(&docs, "ValidatingAdmissionPolicyBinding", &name)
            .with_context(|| format!("no binding {name}"))?;
        ensure!(binding["spec"].get("matchResources").is_none(), "{binding}");
    }
    Ok(())
}

#[test]
fn the_sidecar_service_says_where_people_reach_it_for_kubectl_orrery() -> Result<()> {
    let plain = documents(&template(RELEASE, NAMESPACE, &[])?.ok()?)?;
    let service = find(&plain, "Service", "orrery-sidecar").context("no sidecar Service")?;
    // The plugin finds it by these labels.
    ensure!(service["metadata"]["labels"]["app.kubernetes.io/name"] == "orrery");
    ensure!(service["metadata"]["labels"]["app.kubernetes.io/component"] == "sidecar");
    ensure!(
        service["metadata"].get("annotations").is_none(),
        "no annotation without a public URL: {service}"
    );
    let published = documents(
        &template(
            RELEASE,
            NAMESPACE,
            &[
                "--set",
                "service.publicUrl=https://orrery.example.com/studio,service.annotations.team=platform",
            ],
        )?
        .ok()?,
    )?;
    let service = find(&published, "Service", "orrery-sidecar").context("no sidecar Service")?;
    ensure!(
        service["metadata"]["annotations"]
            == serde_json::json!({
                kubectl_orrery::sidecar::PUBLIC_URL_ANNOTATION: "https://orrery.example.com/studio",
                "team": "platform"
            }),
        "{service}"
    );
    Ok(())
}
