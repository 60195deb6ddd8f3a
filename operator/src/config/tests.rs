//! The config's parsing, defaults and every check, at its field.

#![allow(clippy::expect_used, clippy::panic)]
use super::checks::{is_quantity, trusted_certificates_problem};
use super::*;

const MINIMAL: &str = "
apiVersion: config.studio.orrery.dev/v1alpha1
kind: OperatorConfig
runner: {image: 'ghcr.io/example/orrery:0.1.0'}
sidecar: {namespace: orrery-system, serviceName: orrery-sidecar, port: 8080}
runToken: {signingKeyFile: /etc/orrery/run-token/key.pem}
";

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse("test.yaml", text)
}

fn with(extra: &str) -> String {
    format!("{MINIMAL}{extra}\n")
}

fn problem_fields(text: &str) -> Vec<String> {
    match parse(text) {
        Err(ConfigError::Invalid { problems, .. }) => {
            problems.into_iter().map(|p| p.field).collect()
        }
        Ok(_) => Vec::new(),
        Err(other) => vec![format!("unexpected: {other}")],
    }
}

#[test]
fn a_minimal_config_takes_the_documented_defaults() {
    let config = parse(MINIMAL).expect("the minimal config parses");
    assert_eq!(config.ttl_seconds_after_finished, 14 * 24 * 3600);
    assert_eq!(config.approval_timeout_seconds, 900);
    assert_eq!(config.probe_interval_seconds, 3600);
    assert_eq!(config.resync_seconds, 60);
    assert_eq!(config.ceilings(), BudgetLimits::DEFAULT_CEILINGS);
    assert!(!config.acting_remotes);
    assert_eq!(config.runner.resources, Resources::default());
    assert_eq!(config.run_token.audience, "orrery-sidecar");
    assert_eq!(
        config.sidecar.url(),
        "http://orrery-sidecar.orrery-system.svc:8080"
    );
    assert_eq!(config.sidecar.pod_port(), 8080);
}

#[test]
fn the_example_config_in_the_repository_parses_and_checks_clean() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/operator/config.yaml"
    );
    let config = Config::load(path).expect("examples/operator/config.yaml is a good config");
    // The example documents every field: each one the config serializes appears in it.
    let text = std::fs::read_to_string(path).expect("readable");
    let fields = serde_json::to_value(&config).expect("serializes");
    for (key, value) in fields.as_object().into_iter().flatten() {
        assert!(text.contains(&format!("{key}:")), "the example shows {key}");
        for inner in value.as_object().map(|o| o.keys()).into_iter().flatten() {
            assert!(
                text.contains(&format!("{inner}:")),
                "the example shows {key}.{inner}"
            );
        }
    }
    assert!(
        text.contains("# egressProxy:"),
        "the example shows the egress proxy, commented out"
    );
}

#[test]
fn relative_key_files_are_read_from_the_configs_directory_and_absolute_ones_as_written() {
    let mut config = parse(&MINIMAL.replace(
        "{signingKeyFile: /etc/orrery/run-token/key.pem}",
        "{signingKeyFile: key.pem, verifyingKeyFile: keys/key.pub.pem}",
    ))
    .expect("parses");
    config
        .run_token
        .resolve_against("/tmp/orrery-op/config.yaml");
    assert_eq!(config.run_token.signing_key_file, "/tmp/orrery-op/key.pem");
    assert_eq!(
        config.run_token.verifying_key_file.as_deref(),
        Some("/tmp/orrery-op/keys/key.pub.pem")
    );
    let mut config = parse(MINIMAL).expect("parses");
    config
        .run_token
        .resolve_against("/tmp/orrery-op/config.yaml");
    assert_eq!(
        config.run_token.signing_key_file,
        "/etc/orrery/run-token/key.pem"
    );
}

#[test]
fn an_unknown_field_is_refused_at_its_path() {
    let err = parse(&MINIMAL.replace("port: 8080", "port: 8080, prot: 1")).err();
    match err {
        Some(ConfigError::Parse { field, message, .. }) => {
            assert_eq!(field, "sidecar.prot");
            assert!(message.contains("prot"), "{message}");
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
}

#[test]
fn a_value_of_the_wrong_type_is_refused_with_its_nested_path() {
    let err = parse(&with("runLimits: {maxConcurrentRunsPerOwner: many}")).err();
    match err {
        Some(ConfigError::Parse { field, .. }) => {
            assert_eq!(field, "runLimits.maxConcurrentRunsPerOwner")
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
}

#[test]
fn a_missing_required_section_is_refused() {
    let text = MINIMAL.replace(
        "runToken: {signingKeyFile: /etc/orrery/run-token/key.pem}",
        "",
    );
    let err = parse(&text)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("field (top level): missing field `runToken`"),
        "{err}"
    );
}

#[test]
fn each_semantic_rule_names_its_field() {
    let cases: &[(&str, &[&str])] = &[
        (
            "privateNetworkAllowlist: [vllm.ml.svc, 10.0.0.0/8, '2001:db8::/32']",
            &[],
        ),
        (
            "privateNetworkAllowlist: ['not a host!']",
            &["privateNetworkAllowlist[0]"],
        ),
        (
            "privateNetworkAllowlist: [ok.example, 0.0.0.0/0]",
            &["privateNetworkAllowlist[1]"],
        ),
        (
            "privateNetworkAllowlist: [169.254.169.254]",
            &["privateNetworkAllowlist[0]"],
        ),
        (
            "privateNetworkAllowlist: [127.0.0.1, localhost]",
            &["privateNetworkAllowlist[0]", "privateNetworkAllowlist[1]"],
        ),
        (
            "privateNetworkAllowlist: ['10.96.12.7:8080', '[fd00::7]:443', '169.254.169.254:80']",
            &["privateNetworkAllowlist[2]"],
        ),
        (
            "clusterRanges: [10.0.0.0/16, 10.96.0.0/12, 192.168.1.10, 'fd00:10::/108']",
            &[],
        ),
        (
            "clusterRanges: [10.0.0.0/16, 'the pods', 10.96.0.0/33]",
            &["clusterRanges[1]", "clusterRanges[2]"],
        ),
        (
            "egressProxy: {url: 'http://proxy.internal:3128', addresses: [203.0.113.7]}",
            &[],
        ),
        (
            "egressProxy: {url: 'https://proxy:3128/x', addresses: [203.0.113.7]}",
            &["egressProxy.url"],
        ),
        ("egressProxy: {url: 'http://proxy:3128'}", &["egressProxy"]),
        (
            "egressProxy: {url: 'http://proxy:3128', addresses: [proxy.example]}",
            &["egressProxy.addresses[0]"],
        ),
        (
            "egressProxy: {url: 'http://proxy:3128', pods: {namespace: net, matchLabels: {}}}",
            &["egressProxy.pods.matchLabels"],
        ),
        ("allowedModels: [a, b]\ndefaultModel: c", &["defaultModel"]),
        ("allowedModels: [a, b]\ndefaultModel: a", &[]),
        (
            "budgetCeilings: {maxTokens: 0}",
            &["budgetCeilings.maxTokens"],
        ),
        (
            "budgetCeilings: {timeoutSeconds: 0, maxToolCalls: 0}",
            &["budgetCeilings.timeoutSeconds"],
        ),
        (
            "runLimits: {maxConcurrentRunsPerOwner: 0, dailyTokenBudgetPerOwner: 0}",
            &[
                "runLimits.maxConcurrentRunsPerOwner",
                "runLimits.dailyTokenBudgetPerOwner",
            ],
        ),
        ("approvalTimeoutSeconds: 86401", &["approvalTimeoutSeconds"]),
        ("ttlSecondsAfterFinished: 0", &["ttlSecondsAfterFinished"]),
        ("probeIntervalSeconds: 59", &["probeIntervalSeconds"]),
        ("probeIntervalSeconds: 604801", &["probeIntervalSeconds"]),
        ("probeIntervalSeconds: 60", &[]),
        ("resyncSeconds: 0", &["resyncSeconds"]),
        ("resyncSeconds: 3601", &["resyncSeconds"]),
        ("resyncSeconds: 5", &[]),
        (
            "admissionPolicies: [{policy: studioruns-decisions.studio.orrery.dev, binding: studioruns-decisions.studio.orrery.dev}]",
            &[],
        ),
        (
            "admissionPolicies: [{policy: '', binding: Not_A_Name}]",
            &[
                "admissionPolicies[0].policy",
                "admissionPolicies[0].binding",
            ],
        ),
        // The daily ledger is the day's runs: deleting them sooner would forget spending.
        (
            "runLimits: {dailyTokenBudgetPerOwner: 1000}\nttlSecondsAfterFinished: 3600",
            &["ttlSecondsAfterFinished"],
        ),
        (
            "runLimits: {dailyTokenBudgetPerOwner: 1000}\nttlSecondsAfterFinished: 86400",
            &[],
        ),
    ];
    let versioned: &[(String, &[&str])] = &[
        (MINIMAL.replace("/v1alpha1", "/v1"), &["apiVersion"]),
        (
            MINIMAL.replace("kind: OperatorConfig", "kind: Config"),
            &["kind"],
        ),
    ];
    for (text, want) in versioned {
        assert_eq!(problem_fields(text), *want, "{text}");
    }
    for (extra, want) in cases {
        assert_eq!(problem_fields(&with(extra)), *want, "{extra}");
    }
}

/// `runner.trustedCertificates` holds PEM certificates and nothing else: never a key (it is
/// copied into every tenant's pods), never something the TLS verifier would skip.
#[test]
fn trusted_certificates_must_be_pem_certificates_only() {
    // A real CA certificate (the one crate::testing's configs trust; not imported from there,
    // which imports this module).
    let cert = include_str!("../../../tests/fixtures/test-ca.pem");
    // Valid base64 in a CERTIFICATE section, but no certificate.
    let garbage = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    let key = "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n";
    let encrypted =
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----\n";
    let openssh = "-----BEGIN OPENSSH PRIVATE KEY-----\nMIIB\n-----END OPENSSH PRIVATE KEY-----\n";
    let cases: Vec<(String, Result<usize, &str>)> = vec![
        (cert.to_owned(), Ok(1)),
        (
            garbage.to_owned(),
            Err("certificate 1 is not an X.509 certificate"),
        ),
        (
            format!("{cert}{garbage}"),
            Err("certificate 2 is not an X.509 certificate"),
        ),
        (format!("# our CA\n{cert}{cert}"), Ok(2)),
        (String::new(), Err("holds no PEM certificate")),
        ("not pem at all".to_owned(), Err("holds no PEM certificate")),
        (format!("{cert}{key}"), Err("holds a PRIVATE KEY section")),
        (
            format!("{cert}{encrypted}"),
            Err("holds a ENCRYPTED PRIVATE KEY section"),
        ),
        (
            format!("{openssh}{cert}"),
            Err("holds a OPENSSH PRIVATE KEY"),
        ),
        (
            format!("GlobalSign Root CA\n==================\n{cert}"),
            Ok(1),
        ),
        (
            "-----BEGIN CERTIFICATE-----\nMIIB\n".to_owned(),
            Err("is not valid PEM"),
        ),
        (
            cert.repeat(MAX_TRUSTED_CERTIFICATES_BYTES / cert.len() + 1),
            Err("is more than 65536"),
        ),
    ];
    for (pem, want) in cases {
        let got = trusted_certificates_problem(&pem);
        match (&got, want) {
            (Ok(n), Ok(m)) => assert_eq!(*n, m, "{pem}"),
            (Err(why), Err(start)) => {
                assert!(why.to_string().contains(start), "{why} for {pem}")
            }
            _ => panic!("{got:?} for {pem:?}"),
        }
    }
    let text = MINIMAL.replace(
        "runner: {image: 'ghcr.io/example/orrery:0.1.0'}",
        &format!("runner: {{image: 'o:1', trustedCertificates: {key:?}}}"),
    );
    assert_eq!(problem_fields(&text), ["runner.trustedCertificates"]);
}

#[test]
fn runner_and_sidecar_rules_name_their_fields() {
    let runner = |body: &str| {
        MINIMAL.replace(
            "runner: {image: 'ghcr.io/example/orrery:0.1.0'}",
            &format!("runner: {{{body}}}"),
        )
    };
    let cases: Vec<(String, &[&str])> = vec![
        (runner("image: ghcr.io/example/orrery"), &["runner.image"]),
        (runner("image: 'localhost:5000/orrery'"), &["runner.image"]),
        (runner("image: 'localhost:5000/orrery:1'"), &[]),
        (runner("image: 'orrery:latest'"), &["runner.image"]),
        (runner("image: 'orrery@sha256:0123'"), &[]),
        (
            runner("image: 'o:1', imagePullPolicy: Sometimes"),
            &["runner.imagePullPolicy"],
        ),
        (
            runner("image: 'o:1', runtimeClassName: gVisor"),
            &["runner.runtimeClassName"],
        ),
        (runner("image: 'o:1', runtimeClassName: gvisor"), &[]),
        (
            runner("image: 'o:1', resources: {limits: {memory: 1Gi, gpu: '1'}}"),
            &["runner.resources.limits.gpu"],
        ),
        (
            runner("image: 'o:1', resources: {requests: {cpu: lots}, limits: {memory: 1Gi}}"),
            &["runner.resources.requests.cpu"],
        ),
        (
            runner("image: 'o:1', resources: {limits: {cpu: '2'}}"),
            &["runner.resources.limits.memory"],
        ),
        (
            MINIMAL.replace("namespace: orrery-system", "namespace: Orrery"),
            &["sidecar.namespace"],
        ),
        (MINIMAL.replace("port: 8080", "port: 0"), &["sidecar.port"]),
        (
            MINIMAL.replace("port: 8080", "port: 8080, podLabels: {}"),
            &["sidecar.podLabels"],
        ),
        (
            MINIMAL.replace("port: 8080", "port: 8080, url: 'http://127.0.0.1:9000'"),
            &[],
        ),
        (
            MINIMAL.replace("port: 8080", "port: 8080, url: 'ftp://h:1'"),
            &["sidecar.url"],
        ),
        (
            MINIMAL.replace("port: 8080", "port: 8080, url: 'http://u:p@h:1/api?x'"),
            &["sidecar.url"],
        ),
        (
            MINIMAL.replace("/etc/orrery/run-token/key.pem", "' '"),
            &["runToken.signingKeyFile"],
        ),
    ];
    for (text, want) in cases {
        assert_eq!(problem_fields(&text), want, "{text}");
    }
}

#[test]
fn an_invalid_config_message_carries_every_field_and_its_fix() {
    let err = parse(&with(
        "budgetCeilings: {maxTokens: 0}\nttlSecondsAfterFinished: 0",
    ))
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(err.starts_with("operator config test.yaml: "), "{err}");
    assert!(
        err.contains("budgetCeilings.maxTokens: a ceiling of 0"),
        "{err}"
    );
    assert!(err.contains("fix: set at least 1"), "{err}");
    assert!(err.contains("ttlSecondsAfterFinished"), "{err}");
}

#[test]
fn deployment_limits_carry_ceilings_models_and_acting() {
    let config = parse(&with(
            "budgetCeilings: {maxTokens: 1000}\nallowedModels: [m]\ndefaultModel: m\nactingRemotes: true",
        ))
        .expect("parses");
    let limits = config.deployment_limits();
    assert_eq!(limits.ceilings.max_tokens, 1000);
    assert_eq!(
        limits.ceilings.max_tool_calls,
        BudgetLimits::DEFAULT_CEILINGS.max_tool_calls
    );
    assert_eq!(
        limits.allowed_models,
        Some(BTreeSet::from(["m".to_owned()]))
    );
    assert_eq!(limits.default_model.as_deref(), Some("m"));
    assert!(limits.acting_remotes);
}

#[test]
fn an_allowlist_entry_covers_exact_names_and_addresses_in_its_network() {
    let cases = [
        ("vllm.ml.svc", "vllm.ml.svc", true),
        ("vllm.ml.svc", "VLLM.ml.svc", true),
        ("vllm.ml.svc", "other.ml.svc", false),
        ("vllm.ml.svc", "10.0.0.1", false),
        ("10.0.0.0/8", "10.2.3.4", true),
        ("10.0.0.0/8", "11.0.0.1", false),
        ("10.0.0.0/8", "ten.example", false),
        ("2001:db8::/32", "[2001:db8::7]", true),
        ("10.0.0.5", "10.0.0.5", true),
        ("10.96.12.7:8080", "10.96.12.7", true),
        ("10.96.12.7:8080", "10.96.12.8", false),
        ("10.96.12.7:8080", "tools.svc", false),
    ];
    for (entry, host, want) in cases {
        let parsed = AllowEntry::parse(entry).expect("a valid entry");
        assert_eq!(parsed.covers(host), want, "{entry} covers {host}");
    }
}

#[test]
fn quantities_and_images_follow_the_kubernetes_spelling() {
    for (q, ok) in [
        ("100m", true),
        ("1", true),
        ("0.5", true),
        ("512Mi", true),
        ("1Gi", true),
        ("1gi", false),
        ("", false),
        (".5", false),
        ("1..2", false),
        ("Mi", false),
    ] {
        assert_eq!(is_quantity(q), ok, "{q}");
    }
}
