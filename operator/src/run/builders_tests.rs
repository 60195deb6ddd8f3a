//! The unit tests of [`super`] (builders.rs).

#![allow(clippy::expect_used, clippy::panic)]
use super::*;
use orrery_crds::registry::RegistryEntryStatus;
use orrery_crds::validate::RegistryView;

use crate::sandbox::SECRETS_DIR;
pub(crate) use crate::testing::{TEST_PEM, config, trusting_config};

pub(crate) fn run(name: &str) -> StudioRun {
    let mut run: StudioRun = serde_yaml::from_str(&format!(
        "apiVersion: studio.orrery.dev/v1alpha1\nkind: StudioRun\n\
             metadata: {{name: {name}, namespace: team, uid: uid-{name}}}\n\
             spec: {{compositionRef: {{name: notes}}, input: hello, owner: jane}}"
    ))
    .expect("run");
    run.metadata.generation = Some(1);
    run
}

pub(crate) fn entries() -> Vec<RegistryEntry> {
    let yaml = [
        "metadata: {name: tools}\nspec: {mcp: {url: 'https://tools.example:8443/mcp', tools: [search], readOnly: [search], auth: {secretKeyRef: {name: tools-token, key: token}}}}",
        "metadata: {name: gpt}\nspec: {model: {provider: OpenAI, model: gpt-5-mini, apiKey: {secretKeyRef: {name: model-keys, key: openai}}}}",
        "metadata: {name: unused}\nspec: {model: {provider: OpenAI, model: x, apiKey: {secretKeyRef: {name: other, key: k}}}}",
    ];
    yaml.iter()
        .map(|y| {
            let mut e: RegistryEntry = serde_yaml::from_str(&format!(
                "apiVersion: studio.orrery.dev/v1alpha1\nkind: RegistryEntry\n{y}"
            ))
            .expect("entry");
            e.status = Some(RegistryEntryStatus {
                resolved_addresses: match e.metadata.name.as_deref() {
                    Some("tools") => vec!["203.0.113.7".into(), "2001:db8::7".into()],
                    _ => vec!["198.51.100.9".into()],
                },
                ..RegistryEntryStatus::default()
            });
            e
        })
        .collect()
}

pub(crate) fn document(config: &Config) -> PlanDocument {
    let spec: CompositionSpec = serde_yaml::from_str(
            "pattern: Pipeline\nbudgets: {timeoutSeconds: 300}\nnodes:\n\
             - {id: research, kind: LLMAgent, model: gpt, instruction: look, tools: ['mcp:tools.search']}\n\
             - {id: write, kind: LLMAgent, model: gpt, instruction: write}\n\
             edges: [{from: research, to: write}]",
        )
        .expect("spec");
    let entries = entries();
    let view = RegistryView::from_entries(&entries);
    let plan = orrery_crds::plan::plan(&spec, &view, &config.deployment_limits())
        .unwrap_or_else(|v| panic!("the test composition plans: {v:?}"));
    plan_document(
        &run("notes-1"),
        RanComposition {
            name: "notes".into(),
            revision: Some(3),
            digest: "d".repeat(64),
        },
        spec,
        plan,
        &entries,
        config,
    )
    .expect("document")
}

fn pod(config: &Config) -> Pod {
    runner_pod(&run("notes-1"), &document(config), config).expect("pod")
}

#[test]
fn the_plan_document_carries_only_the_entries_the_plan_uses_with_their_pins() {
    let doc = document(&config(""));
    let names: Vec<&str> = doc.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["gpt", "tools"]);
    assert_eq!(
        doc.entries[1].pins.resolved_addresses,
        ["203.0.113.7", "2001:db8::7"]
    );
    assert_eq!(
        doc.run,
        RunIdentity {
            name: "notes-1".into(),
            namespace: "team".into(),
            uid: "uid-notes-1".into()
        }
    );
    assert_eq!(doc.composition.revision, Some(3));
    assert_eq!(
        doc.sidecar_url,
        "http://orrery-sidecar.orrery-system.svc:8080"
    );
    assert_eq!(doc.plan.budgets.timeout_seconds, 300);
    assert_eq!(doc.version, PLAN_DOCUMENT_VERSION);
}

#[test]
fn the_runner_waits_for_the_sidecar_within_its_pods_deadline_margin() {
    // The default margin (120 s) less the slack: a sidecar may be unreachable for 105 s.
    let doc = document(&config(""));
    assert_eq!(doc.flush_seconds, Some(105));
    let mut wide = config("");
    wide.runner.deadline_margin_seconds = 600;
    assert_eq!(document(&wide).flush_seconds, Some(585));
    // A margin too small for the slack still gives the sidecar a few seconds.
    let mut narrow = config("");
    narrow.runner.deadline_margin_seconds = 10;
    assert_eq!(document(&narrow).flush_seconds, Some(MIN_FLUSH_SECONDS));
    // What the runner waits always ends before the kubelet's backstop.
    for margin in [0, 10, 20, 120, 600] {
        let mut c = config("");
        c.runner.deadline_margin_seconds = margin;
        assert!(
            flush_seconds(&c) <= margin.max(MIN_FLUSH_SECONDS),
            "margin {margin}"
        );
    }
}

#[test]
fn the_plan_secret_holds_plan_input_and_token_and_is_owned_and_immutable() {
    let doc = document(&config(""));
    let secret = plan_secret(&run("notes-1"), &doc, "tok.en.sig").expect("secret");
    assert_eq!(secret.metadata.name.as_deref(), Some("notes-1-plan"));
    assert_eq!(secret.metadata.namespace.as_deref(), Some("team"));
    assert_eq!(secret.immutable, Some(true));
    let data = secret.data.expect("data");
    let keys: Vec<&str> = data.keys().map(String::as_str).collect();
    assert_eq!(keys, [INPUT_KEY, PLAN_KEY, TOKEN_KEY]);
    assert_eq!(data[INPUT_KEY].0, b"hello");
    assert_eq!(data[TOKEN_KEY].0, b"tok.en.sig");
    let back: PlanDocument =
        serde_json::from_slice(&data[PLAN_KEY].0).expect("plan.json reads back");
    assert_eq!(back, doc);
    let owner = secret
        .metadata
        .owner_references
        .as_deref()
        .and_then(<[_]>::first)
        .expect("owner");
    assert_eq!(
        (
            owner.kind.as_str(),
            owner.name.as_str(),
            owner.uid.as_str(),
            owner.controller
        ),
        ("StudioRun", "notes-1", "uid-notes-1", Some(true))
    );
}

/// Every check of Pod Security `restricted` (and the baseline it includes), on the pod as
/// built, field by field.
#[test]
fn the_runner_pod_meets_every_restricted_requirement() {
    for extra in [
        String::new(),
        "runner: {image: 'o:1', runtimeClassName: gvisor}".to_owned(),
        format!("runner: {{image: 'o:1', trustedCertificates: {TEST_PEM:?}}}"),
    ] {
        let config = if extra.is_empty() {
            config("")
        } else {
            Config::parse("t.yaml", &format!(
                    "apiVersion: config.studio.orrery.dev/v1alpha1\nkind: OperatorConfig\n{extra}\n\
                     sidecar: {{namespace: s, serviceName: s, port: 1}}\nrunToken: {{signingKeyFile: k}}\n"
                )).expect("config")
        };
        let pod = pod(&config);
        let spec = pod.spec.as_ref().expect("spec");
        // baseline: host namespaces, hostPath, hostPorts, privileged, sysctls, SELinux, procMount
        assert_ne!(spec.host_network, Some(true));
        assert_ne!(spec.host_pid, Some(true));
        assert_ne!(spec.host_ipc, Some(true));
        let psc = spec.security_context.as_ref().expect("pod securityContext");
        assert!(psc.sysctls.is_none() && psc.se_linux_options.is_none());
        // restricted, pod level
        assert_eq!(psc.run_as_non_root, Some(true));
        assert_ne!(psc.run_as_user, Some(0));
        assert_eq!(
            psc.seccomp_profile.as_ref().map(|s| s.type_.as_str()),
            Some("RuntimeDefault")
        );
        let allowed_volumes = spec.volumes.iter().flatten().all(|v| {
            v.host_path.is_none()
                && (v.secret.is_some()
                    || v.empty_dir.is_some()
                    || v.config_map.is_some()
                    || v.projected.is_some()
                    || v.downward_api.is_some())
        });
        assert!(allowed_volumes, "only restricted volume types");
        assert!(spec.init_containers.is_none() && spec.ephemeral_containers.is_none());
        for c in &spec.containers {
            let sc = c
                .security_context
                .as_ref()
                .expect("container securityContext");
            assert_eq!(
                sc.allow_privilege_escalation,
                Some(false),
                "allowPrivilegeEscalation"
            );
            assert_ne!(sc.privileged, Some(true));
            assert_eq!(
                sc.capabilities.as_ref().and_then(|c| c.drop.clone()),
                Some(vec!["ALL".to_owned()])
            );
            assert!(
                sc.capabilities
                    .as_ref()
                    .and_then(|c| c.add.as_ref())
                    .is_none_or(|a| a.is_empty())
            );
            assert_eq!(sc.run_as_non_root, Some(true));
            assert_ne!(sc.run_as_user, Some(0));
            assert_eq!(
                sc.seccomp_profile.as_ref().map(|s| s.type_.as_str()),
                Some("RuntimeDefault")
            );
            assert!(sc.proc_mount.is_none() || sc.proc_mount.as_deref() == Some("Default"));
            assert!(sc.se_linux_options.is_none());
            assert_eq!(sc.read_only_root_filesystem, Some(true));
            assert!(
                c.ports
                    .as_ref()
                    .is_none_or(|ports| ports.iter().all(|p| p.host_port.is_none()))
            );
        }
        // the rest of the sandbox
        assert_eq!(spec.automount_service_account_token, Some(false));
        assert_eq!(spec.enable_service_links, Some(false));
        assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
        assert_eq!(spec.runtime_class_name, config.runner.runtime_class_name);
    }
}

#[test]
fn the_runner_pod_runs_the_plan_with_its_secrets_resources_and_deadline() {
    let config = config(
        "privateNetworkAllowlist: [vllm.ml.svc, 10.0.0.0/8]\negressProxy: {url: 'http://proxy:3128', addresses: [203.0.113.1]}",
    );
    let pod = pod(&config);
    assert_eq!(pod.metadata.name.as_deref(), Some("notes-1-runner"));
    assert_eq!(
        pod.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(RUN_UID_LABEL))
            .map(String::as_str),
        Some("uid-notes-1")
    );
    let owner = pod
        .metadata
        .owner_references
        .as_deref()
        .and_then(<[_]>::first)
        .expect("owner");
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str()),
        ("StudioRun", "uid-notes-1")
    );
    let spec = pod.spec.expect("spec");
    assert_eq!(
        spec.active_deadline_seconds,
        Some(300 + 120),
        "deadline + margin"
    );
    let c = &spec.containers[0];
    assert_eq!(c.image.as_deref(), Some("ghcr.io/example/orrery:0.1.0"));
    assert_eq!(
        c.args.as_deref(),
        Some(
            &[
                "run".to_owned(),
                "--plan".to_owned(),
                "/etc/orrery/run/plan.json".to_owned(),
                "--tools".to_owned(),
                "real".to_owned(),
                // Named, not defaulted: a kubelet stand-in maps paths it sees in args.
                "--termination-log".to_owned(),
                "/dev/termination-log".to_owned()
            ][..]
        )
    );
    assert_eq!(c.termination_message_policy.as_deref(), Some("File"));
    assert_eq!(
        c.termination_message_path.as_deref(),
        Some(TERMINATION_MESSAGE_PATH)
    );
    let resources = c.resources.as_ref().expect("resources");
    assert_eq!(
        resources
            .limits
            .as_ref()
            .and_then(|l| l.get("memory"))
            .map(|q| q.0.as_str()),
        Some("512Mi")
    );
    assert_eq!(
        resources
            .requests
            .as_ref()
            .and_then(|l| l.get("cpu"))
            .map(|q| q.0.as_str()),
        Some("100m")
    );
    let env: BTreeMap<&str, &str> = c
        .env
        .iter()
        .flatten()
        .map(|e| (e.name.as_str(), e.value.as_deref().unwrap_or("")))
        .collect();
    assert_eq!(
        env.get("ORRERY_A2A_PRIVATE_ALLOW"),
        Some(&"vllm.ml.svc,10.0.0.0/8")
    );
    assert_eq!(
        env.get("ORRERY_STUDIO_EGRESS_PROXY"),
        Some(&"http://proxy:3128")
    );
    assert_eq!(env.get("ORRERY_SECRETS_DIR"), Some(&SECRETS_DIR));
    // The run's W3C trace context: the trace of the run's UID, the parent its root span.
    let uid = "uid-notes-1";
    let traceparent = env.get("TRACEPARENT").expect("TRACEPARENT");
    assert_eq!(*traceparent, crate::otel::traceparent(uid));
    assert_eq!(
        orrery_crds::logging::trace_id_of(traceparent),
        Some(hex::encode(crate::otel::trace_id(uid)).as_str())
    );
    // every mount but /tmp is read-only; the plan Secret and exactly the used entries' Secrets
    let mounts: Vec<(&str, bool)> = c
        .volume_mounts
        .iter()
        .flatten()
        .map(|m| (m.mount_path.as_str(), m.read_only == Some(true)))
        .collect();
    assert_eq!(
        mounts,
        [
            ("/etc/orrery/run", true),
            ("/tmp", false),
            ("/var/run/orrery/secrets/model-keys", true),
            ("/var/run/orrery/secrets/tools-token", true),
        ]
    );
    let secrets: Vec<(String, Vec<String>)> = spec
        .volumes
        .iter()
        .flatten()
        .filter_map(|v| v.secret.as_ref())
        .map(|s| {
            (
                s.secret_name.clone().unwrap_or_default(),
                s.items.iter().flatten().map(|i| i.key.clone()).collect(),
            )
        })
        .collect();
    assert_eq!(
        secrets,
        [
            ("notes-1-plan".to_owned(), vec![]),
            ("model-keys".to_owned(), vec!["openai".to_owned()]),
            ("tools-token".to_owned(), vec!["token".to_owned()]),
        ]
    );
}

/// `runner.trustedCertificates` reach the runner through its own annotation as a read-only
/// file, and `SSL_CERT_DIR` keeps the image's CAs beside them; without it, none of this.
#[test]
fn trusted_certificates_reach_the_runner_as_a_read_only_file_beside_the_images_cas() {
    let pem = TEST_PEM;
    for (config, trusted) in [(config(""), false), (trusting_config(), true)] {
        let pod = pod(&config);
        let annotation = pod
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(sandbox::TRUSTED_CERTIFICATES_ANNOTATION));
        assert_eq!(annotation.map(String::as_str), trusted.then_some(pem));
        let spec = pod.spec.expect("spec");
        let volume = spec
            .volumes
            .iter()
            .flatten()
            .find(|v| v.name == "trust")
            .and_then(|v| v.downward_api.clone())
            .and_then(|d| d.items)
            .and_then(|items| items.into_iter().next());
        assert_eq!(
            volume.map(|f| (f.path, f.field_ref.map(|r| r.field_path))),
            trusted.then(|| (
                "ca.crt".to_owned(),
                Some("metadata.annotations['studio.orrery.dev/trusted-certificates']".to_owned())
            ))
        );
        let container = &spec.containers[0];
        let mount = container
            .volume_mounts
            .iter()
            .flatten()
            .find(|m| m.name == "trust")
            .map(|m| (m.mount_path.clone(), m.read_only));
        assert_eq!(
            mount,
            trusted.then(|| ("/etc/orrery/trust".to_owned(), Some(true)))
        );
        let dirs = container
            .env
            .iter()
            .flatten()
            .find(|e| e.name == "SSL_CERT_DIR")
            .and_then(|e| e.value.clone());
        assert_eq!(
            dirs.as_deref(),
            trusted.then_some("/etc/ssl/certs:/etc/orrery/trust")
        );
    }
}

/// `runner.redactIps` turns the runner's IP redaction on through its environment (rule 8.8);
/// without it the runner gets no such variable and redacts credentials and emails only.
#[test]
fn redact_ips_reaches_the_runner_as_its_environment_switch_rule_8_8() {
    let mut on = config("");
    on.runner.redact_ips = true;
    for (config, want) in [(config(""), None), (on, Some("true"))] {
        let spec = pod(&config).spec.expect("spec");
        let value = spec.containers[0]
            .env
            .iter()
            .flatten()
            .find(|e| e.name == "ORRERY_REDACT_IPS")
            .and_then(|e| e.value.clone());
        assert_eq!(value.as_deref(), want);
    }
}

/// `runner.logFormat: json` gives runner pods the JSON log format through their environment;
/// text (the default) leaves the variable out.
#[test]
fn the_log_format_reaches_the_runner_as_its_environment() {
    let mut json = config("");
    json.runner.log_format = orrery_crds::logging::LogFormat::Json;
    for (config, want) in [(config(""), None), (json, Some("json"))] {
        let spec = pod(&config).spec.expect("spec");
        let value = spec.containers[0]
            .env
            .iter()
            .flatten()
            .find(|e| e.name == orrery_crds::logging::FORMAT_ENV)
            .and_then(|e| e.value.clone());
        assert_eq!(value.as_deref(), want);
    }
}

#[test]
fn a_run_not_read_from_the_cluster_cannot_get_children() {
    let mut r = run("notes-1");
    r.metadata.uid = None;
    let doc = document(&config(""));
    assert!(matches!(
        runner_pod(&r, &doc, &config("")),
        Err(Error::MissingMetadata { field: "uid", .. })
    ));
    assert!(matches!(
        plan_secret(&r, &doc, "t"),
        Err(Error::MissingMetadata { field: "uid", .. })
    ));
}
