//! The unit tests of [`super`] (probe.rs).

#![allow(clippy::expect_used, clippy::panic)]
use super::*;
use crate::sandbox::{self, SECRETS_DIR};
use crate::testing::config;
use pretty_assertions::assert_eq;
use serde_json::json;

pub(crate) fn entry(spec: &str) -> RegistryEntry {
    let mut e: RegistryEntry = serde_yaml::from_str(&format!(
        "apiVersion: studio.orrery.dev/v1alpha1\nkind: RegistryEntry\n\
             metadata: {{name: writer, namespace: team, uid: uid-writer}}\nspec: {spec}"
    ))
    .expect("entry");
    e.metadata.generation = Some(2);
    e
}

fn writer() -> RegistryEntry {
    entry(
        "{a2a: {cardUrl: 'https://writer.example/.well-known/agent-card.json', skills: [draft], auth: {secretKeyRef: {name: writer-token, key: token}}}}",
    )
}

#[test]
fn the_probe_pod_runs_orrery_probe_on_the_entry_from_its_own_annotation() {
    let config = config("privateNetworkAllowlist: [vllm.ml.svc, 10.0.0.0/8]");
    let pod = probe_pod(&writer(), &config).expect("pod");
    let name = pod.metadata.name.clone().expect("name");
    assert!(name.starts_with("writer-probe-2-"), "{name}");
    assert_eq!(name.len(), "writer-probe-2-".len() + 8);
    let annotations = pod.metadata.annotations.clone().expect("annotations");
    let request: ProbeRequest =
        serde_json::from_str(&annotations[PROBE_ENTRY_ANNOTATION]).expect("request");
    assert_eq!(request, probe_request(&writer()).expect("request"));
    assert_eq!(annotations[ENTRY_NAME_ANNOTATION], "writer");
    assert_eq!(
        pod.metadata
            .labels
            .as_ref()
            .map(|l| l[ENTRY_UID_LABEL].as_str()),
        Some("uid-writer")
    );
    let owner = &pod.metadata.owner_references.as_deref().expect("owner")[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
        ("RegistryEntry", "uid-writer", Some(true))
    );
    let spec = pod.spec.as_ref().expect("spec");
    assert_eq!(spec.active_deadline_seconds, Some(PROBE_DEADLINE_SECONDS));
    let c = &spec.containers[0];
    assert_eq!(c.image.as_deref(), Some("ghcr.io/example/orrery:0.1.0"));
    assert_eq!(
        c.args.clone().expect("args"),
        [
            "probe",
            "--entry",
            "/etc/orrery/probe/entry.json",
            "--termination-log",
            "/dev/termination-log",
            "--timeout",
            "90"
        ]
    );
    assert_eq!(c.termination_message_policy.as_deref(), Some("File"));
    let volumes = serde_json::to_value(&spec.volumes).expect("json");
    assert_eq!(
        volumes[0],
        json!({"name": "entry", "downwardAPI": {"defaultMode": 0o440, "items": [
                {"path": "entry.json", "fieldRef": {"fieldPath": "metadata.annotations['studio.orrery.dev/probe-entry']"}}]}})
    );
    let mounts: Vec<(&str, bool)> = c
        .volume_mounts
        .iter()
        .flatten()
        .map(|m| (m.mount_path.as_str(), m.read_only == Some(true)))
        .collect();
    assert_eq!(
        mounts,
        [
            ("/etc/orrery/probe", true),
            ("/tmp", false),
            ("/var/run/orrery/secrets/writer-token", true)
        ]
    );
    let env: BTreeMap<&str, &str> = c
        .env
        .iter()
        .flatten()
        .map(|e| (e.name.as_str(), e.value.as_deref().unwrap_or("")))
        .collect();
    assert_eq!(env.get("ORRERY_SECRETS_DIR"), Some(&SECRETS_DIR));
    assert_eq!(
        env.get("ORRERY_A2A_PRIVATE_ALLOW"),
        Some(&"vllm.ml.svc,10.0.0.0/8")
    );
}

#[test]
fn a_models_api_key_is_not_mounted_into_its_probe_pod() {
    let gpt = entry(
        "{model: {provider: OpenAI, model: m, apiKey: {secretKeyRef: {name: keys, key: openai}}}}",
    );
    let pod = probe_pod(&gpt, &config("")).expect("pod");
    let spec = pod.spec.expect("spec");
    assert!(
        spec.volumes.iter().flatten().all(|v| v.secret.is_none()),
        "{:?}",
        spec.volumes
    );
}

/// The probe pod is restricted exactly as a runner pod: the same security contexts, the
/// same sandbox fields.
#[test]
fn the_probe_pod_is_as_restricted_as_a_runner_pod() {
    let config = config("");
    let pod = probe_pod(&writer(), &config).expect("pod");
    let spec = pod.spec.expect("spec");
    assert_eq!(spec.security_context, Some(sandbox::pod_security_context()));
    assert_eq!(
        spec.containers[0].security_context,
        Some(sandbox::container_security_context())
    );
    let sc = sandbox::container_security_context();
    assert_eq!(
        (
            sc.run_as_non_root,
            sc.allow_privilege_escalation,
            sc.read_only_root_filesystem
        ),
        (Some(true), Some(false), Some(true))
    );
    assert_eq!(
        sc.capabilities.and_then(|c| c.drop),
        Some(vec!["ALL".to_owned()])
    );
    assert_eq!(
        sc.seccomp_profile.map(|s| s.type_),
        Some("RuntimeDefault".to_owned())
    );
    assert_eq!(spec.automount_service_account_token, Some(false));
    assert_eq!(spec.enable_service_links, Some(false));
    assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
    assert!(spec.host_network.is_none() && spec.host_pid.is_none());
    assert!(
        spec.volumes.iter().flatten().all(|v| v.host_path.is_none()),
        "no hostPath"
    );
}

/// A private entry's CA in `runner.trustedCertificates` is what its probe verifies against:
/// the same annotation, file and `SSL_CERT_DIR` as a runner pod.
#[test]
fn the_probe_pod_trusts_the_configured_certificates_like_a_runner_pod() {
    let pem = crate::testing::TEST_PEM;
    let config = crate::testing::trusting_config();
    let pod = probe_pod(&writer(), &config).expect("pod");
    let annotations = pod.metadata.annotations.expect("annotations");
    assert_eq!(
        annotations
            .get(sandbox::TRUSTED_CERTIFICATES_ANNOTATION)
            .map(String::as_str),
        Some(pem)
    );
    assert!(annotations.contains_key(PROBE_ENTRY_ANNOTATION));
    let spec = pod.spec.expect("spec");
    let container = &spec.containers[0];
    assert!(
        container
            .volume_mounts
            .iter()
            .flatten()
            .any(|m| m.name == "trust"
                && m.mount_path == sandbox::TRUST_DIR
                && m.read_only == Some(true))
    );
    assert!(spec.volumes.iter().flatten().any(|v| v.name == "trust"));
    assert!(
        container
            .env
            .iter()
            .flatten()
            .any(|e| e.name == "SSL_CERT_DIR"
                && e.value.as_deref() == Some("/etc/ssl/certs:/etc/orrery/trust"))
    );
}

#[test]
fn the_pod_name_changes_with_the_spec_and_each_recorded_probe_and_not_otherwise() {
    let a = probe_pod_name(&writer()).expect("name");
    assert_eq!(probe_pod_name(&writer()).expect("name"), a, "stable");
    let mut probed = writer();
    probed.status = Some(orrery_crds::RegistryEntryStatus {
        last_probe_time: Some("2026-12-01T00:00:00Z".into()),
        ..Default::default()
    });
    assert_ne!(probe_pod_name(&probed).expect("name"), a);
    let mut edited = writer();
    if let Some(a2a) = edited.spec.a2a.as_mut() {
        a2a.skills.push("summarise".into());
    }
    assert_ne!(probe_pod_name(&edited).expect("name"), a);
    let mut unread = writer();
    unread.metadata.uid = None;
    assert!(matches!(
        probe_pod(&unread, &config("")),
        Err(Error::MissingMetadata { field: "uid", .. })
    ));
}

fn dns() -> serde_json::Value {
    json!({"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                       "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
               "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]})
}

fn public(port: u16) -> serde_json::Value {
    json!({"to": [
            {"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",
                "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "0.0.0.0/8"]}},
            {"ipBlock": {"cidr": "::/0", "except": ["fc00::/7", "fe80::/10", "::1/128", "::/128"]}}],
            "ports": [{"protocol": "TCP", "port": port}]})
}

#[test]
fn the_probe_policy_allows_dns_and_the_entrys_port_on_public_addresses_only() {
    let np = serde_json::to_value(probe_network_policy(&writer(), &config("")).expect("np"))
        .expect("json");
    assert_eq!(np["metadata"]["name"], "writer-probe-egress");
    assert_eq!(
        np["metadata"]["ownerReferences"][0]["kind"],
        "RegistryEntry"
    );
    assert_eq!(
        np["spec"]["podSelector"],
        json!({"matchLabels": {"studio.orrery.dev/entry-uid": "uid-writer"}})
    );
    assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
    assert!(np["spec"].get("ingress").is_none(), "no ingress rule: {np}");
    assert_eq!(np["spec"]["egress"], json!([dns(), public(443)]));
}

#[test]
fn a_private_entry_also_reaches_the_allowlisted_networks() {
    let vllm = entry(
        "{model: {provider: OpenAI, model: m, baseUrl: 'https://vllm.ml.svc:8443/v1', privateNetwork: true}}",
    );
    let config = config("privateNetworkAllowlist: [vllm.ml.svc, 10.20.0.0/16]");
    let np = serde_json::to_value(probe_network_policy(&vllm, &config).expect("np")).expect("json");
    assert_eq!(
        np["spec"]["egress"],
        json!([dns(), public(8443),
                   {"to": [{"ipBlock": {"cidr": "10.20.0.0/16"}}], "ports": [{"protocol": "TCP", "port": 8443}]}])
    );
}

#[test]
fn a_probes_allowlisted_networks_leave_out_the_clusters_ranges_and_an_exact_address_keeps_its_port_anchor_19()
 {
    let vllm = entry(
        "{model: {provider: OpenAI, model: m, baseUrl: 'https://vllm.ml.svc:8443/v1', privateNetwork: true}}",
    );
    let config = config(
        "privateNetworkAllowlist: [10.0.0.0/8, 10.96.0.0/16, '10.96.12.7:8080', '10.1.0.5:10250']\n\
         clusterRanges: [10.96.0.0/12, 10.1.0.0/16, 192.168.1.10]",
    );
    let np = serde_json::to_value(probe_network_policy(&vllm, &config).expect("np")).expect("json");
    let egress = np["spec"]["egress"].as_array().expect("egress").clone();
    // The /8 without the cluster's ranges inside it; the /16 inside a range is gone.
    assert_eq!(
        egress[2],
        json!({"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.96.0.0/12", "10.1.0.0/16"]}}],
               "ports": [{"protocol": "TCP", "port": 8443}]})
    );
    // The exact Service address on its own port; the kubelet never.
    assert_eq!(
        egress[3],
        json!({"to": [{"ipBlock": {"cidr": "10.96.12.7/32"}}], "ports": [{"protocol": "TCP", "port": 8080}]})
    );
    assert_eq!(egress.len(), 4, "{egress:?}");
    // A cluster range in public space is left out of the public addresses too.
    let public = egress[1]["to"][0]["ipBlock"]["except"].clone();
    assert!(
        public
            .as_array()
            .is_some_and(|e| e.iter().any(|c| c == "192.168.1.10/32")
                || e.iter().any(|c| c == "192.168.0.0/16")),
        "{public}"
    );
    let pod = probe_pod(&vllm, &config).expect("pod");
    let env: BTreeMap<String, String> = pod.spec.expect("spec").containers[0]
        .env
        .iter()
        .flatten()
        .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
        .collect();
    assert_eq!(
        env.get("ORRERY_CLUSTER_RANGES").map(String::as_str),
        Some("10.96.0.0/12,10.1.0.0/16,192.168.1.10")
    );
}

#[test]
fn with_an_egress_proxy_the_probe_reaches_only_the_proxy_and_a_loopback_entry_nothing() {
    let config = config(
        "egressProxy: {url: 'http://proxy.net.svc:3128', addresses: [203.0.113.1], pods: {namespace: net, matchLabels: {app: proxy}}}",
    );
    let np =
        serde_json::to_value(probe_network_policy(&writer(), &config).expect("np")).expect("json");
    assert_eq!(
        np["spec"]["egress"],
        json!([dns(), {"to": [{"ipBlock": {"cidr": "203.0.113.1/32"}},
                                  {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "net"}},
                                   "podSelector": {"matchLabels": {"app": "proxy"}}}],
                           "ports": [{"protocol": "TCP", "port": 3128}]}])
    );
    let local = entry("{mcp: {url: 'http://127.0.0.1:7801/mcp', tools: [a], readOnly: [a]}}");
    let np = serde_json::to_value(
        probe_network_policy(&local, &crate::testing::config("")).expect("np"),
    )
    .expect("json");
    assert_eq!(np["spec"]["egress"], json!([dns()]));
}
