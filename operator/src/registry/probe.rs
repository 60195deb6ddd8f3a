//! The probe of a RegistryEntry, as objects: the probe Pod (the runner image running `orrery
//! probe`, as restricted as a runner pod, owned by the entry) and its NetworkPolicy (no
//! ingress; egress only to DNS and the entry's ports on public addresses, or the egress proxy).
//!
//! The entry reaches the pod through the pod's own annotation ([`PROBE_ENTRY_ANNOTATION`],
//! the [`ProbeRequest`] as JSON), which a downward-API volume turns into the file `orrery
//! probe --entry` reads: no Secret or ConfigMap to create, own, garbage-collect and grant RBAC
//! for, and nothing secret in it (a spec holds only references to Secrets; those are mounted as
//! in a runner pod).

use crate::config::{AllowEntry, Config};
use crate::endpoints::{is_private, reached, secret_refs};
use crate::error::{Error, Result};
use crate::sandbox::network::{dns_egress, ip_block, proxy_egress, sandbox_network_policy, tcp};
use crate::sandbox::{SandboxedPod, TERMINATION_MESSAGE_PATH, sandboxed_pod};
use ipnet::IpNet;
use k8s_openapi::api::core::v1::{
    DownwardAPIVolumeFile, DownwardAPIVolumeSource, ObjectFieldSelector, Pod, Volume,
};
use k8s_openapi::api::networking::v1::{NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyPeer};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Resource;
use orrery_crds::probe::ProbeRequest;
use orrery_crds::registry::RegistryEntry;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

/// Label on a probe pod and selector of its NetworkPolicy: the entry's UID.
pub const ENTRY_UID_LABEL: &str = "studio.orrery.dev/entry-uid";
/// Annotation on a probe pod: the entry's name, for people.
pub const ENTRY_NAME_ANNOTATION: &str = "studio.orrery.dev/registry-entry";
/// Annotation on a probe pod holding the [`ProbeRequest`] (JSON) its downward-API volume
/// writes to [`ENTRY_FILE`].
pub const PROBE_ENTRY_ANNOTATION: &str = "studio.orrery.dev/probe-entry";
/// `app.kubernetes.io/name` of probe pods.
pub const PROBE_APP: &str = "orrery-probe";
/// Where the entry file is mounted.
pub const PROBE_DIR: &str = "/etc/orrery/probe";
/// The entry file's name in [`PROBE_DIR`].
pub const ENTRY_FILE: &str = "entry.json";
/// `activeDeadlineSeconds` of a probe pod: a backstop past the probe's own timeout.
pub const PROBE_DEADLINE_SECONDS: i64 = 120;
/// The probe's own timeout (`orrery probe --timeout`), under the deadline.
pub const PROBE_TIMEOUT_SECONDS: u64 = 90;

/// Address space a probe never reaches on the public rule: private, shared, loopback,
/// link-local (metadata) and unspecified.
const NOT_PUBLIC: [&str; 11] = [
    "10.0.0.0/8",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "0.0.0.0/8",
    "fc00::/7",
    "fe80::/10",
    "::1/128",
    "::/128",
];

fn missing(entry: &RegistryEntry, field: &'static str) -> Error {
    Error::MissingMetadata {
        kind: "RegistryEntry",
        name: entry.metadata.name.clone().unwrap_or_default(),
        field,
    }
}

/// The entry as the probe reads it: name, generation, spec.
pub fn probe_request(entry: &RegistryEntry) -> Result<ProbeRequest> {
    Ok(ProbeRequest {
        name: entry
            .metadata
            .name
            .clone()
            .ok_or_else(|| missing(entry, "name"))?,
        generation: entry
            .metadata
            .generation
            .ok_or_else(|| missing(entry, "generation"))?,
        spec: entry.spec.clone(),
    })
}

/// The name of the probe pod for the entry as it stands: `<entry>-probe-<generation>-<8 hex>`,
/// the hex from the spec and the time of the last recorded probe, so a spec change and each
/// interval's probe get a pod of their own and a repeat reconcile finds the same one.
pub fn probe_pod_name(entry: &RegistryEntry) -> Result<String> {
    let request = probe_request(entry)?;
    let spec = serde_json::to_vec(&request.spec).map_err(|e| Error::json("entry spec", e))?;
    let mut hash = Sha256::new();
    hash.update(&spec);
    hash.update(b"\n");
    let last = entry
        .status
        .as_ref()
        .and_then(|s| s.last_probe_time.as_deref())
        .unwrap_or("");
    hash.update(last.as_bytes());
    let hex = hex::encode(hash.finalize());
    let tag = hex.get(..8).unwrap_or(&hex);
    Ok(crate::names::suffixed(
        &request.name,
        &format!("-probe-{}-{tag}", request.generation),
    ))
}

/// The name of the entry's probe NetworkPolicy (one per entry, selecting all its probe pods).
pub fn probe_network_policy_name(entry: &str) -> String {
    crate::names::suffixed(entry, "-probe-egress")
}

/// The labels of an entry's probe pods.
pub fn probe_labels(uid: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (ENTRY_UID_LABEL.to_owned(), uid.to_owned()),
        ("app.kubernetes.io/name".to_owned(), PROBE_APP.to_owned()),
        (
            "app.kubernetes.io/managed-by".to_owned(),
            crate::FIELD_MANAGER.to_owned(),
        ),
    ])
}

/// The label selector of an entry's probe pods (for listing them).
pub fn probe_selector(uid: &str) -> String {
    format!("{ENTRY_UID_LABEL}={uid}")
}

fn owner(entry: &RegistryEntry) -> Result<OwnerReference> {
    entry
        .controller_owner_ref(&())
        .ok_or_else(|| missing(entry, "uid"))
}

fn meta(entry: &RegistryEntry, name: String, extra: Option<(&str, String)>) -> Result<ObjectMeta> {
    let uid = entry
        .metadata
        .uid
        .clone()
        .ok_or_else(|| missing(entry, "uid"))?;
    let mut annotations = BTreeMap::from([(
        ENTRY_NAME_ANNOTATION.to_owned(),
        entry.metadata.name.clone().unwrap_or_default(),
    )]);
    if let Some((k, v)) = extra {
        annotations.insert(k.to_owned(), v);
    }
    Ok(ObjectMeta {
        name: Some(name),
        namespace: Some(
            entry
                .metadata
                .namespace
                .clone()
                .ok_or_else(|| missing(entry, "namespace"))?,
        ),
        labels: Some(probe_labels(&uid)),
        annotations: Some(annotations),
        owner_references: Some(vec![owner(entry)?]),
        ..ObjectMeta::default()
    })
}

/// The probe Pod of the entry as it stands ([`probe_pod_name`]): the runner image running
/// `orrery probe --entry <file> --termination-log /dev/termination-log`, restricted exactly as
/// a runner pod ([`crate::sandbox`]), never restarted, a deadline backstop, no service-account
/// token, no service links, the entry's bearer token (never a model's API key: the probe calls
/// no model) mounted read-only where the runner reads it,
/// owned by the entry (controller) and labelled with its UID.
pub fn probe_pod(entry: &RegistryEntry, config: &Config) -> Result<Pod> {
    let request = probe_request(entry)?;
    let json = serde_json::to_string(&request).map_err(|e| Error::json("probe request", e))?;
    let input = Volume {
        name: "entry".into(),
        downward_api: Some(DownwardAPIVolumeSource {
            items: Some(vec![DownwardAPIVolumeFile {
                path: ENTRY_FILE.to_owned(),
                field_ref: Some(ObjectFieldSelector {
                    api_version: None,
                    field_path: format!("metadata.annotations['{PROBE_ENTRY_ANNOTATION}']"),
                }),
                mode: None,
                resource_field_ref: None,
            }]),
            default_mode: Some(0o440),
        }),
        ..Volume::default()
    };
    // Only the bearer tokens the probe sends; a model's API key stays out (nothing is called).
    let mut secrets: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (_, reference) in secret_refs(&entry.spec)
        .into_iter()
        .filter(|(field, _)| !field.starts_with("spec.model."))
    {
        secrets
            .entry(reference.name.clone())
            .or_default()
            .insert(reference.key.clone());
    }
    let metadata = meta(
        entry,
        probe_pod_name(entry)?,
        Some((PROBE_ENTRY_ANNOTATION, json)),
    )?;
    Ok(sandboxed_pod(
        SandboxedPod {
            metadata,
            args: vec![
                "probe".to_owned(),
                "--entry".to_owned(),
                format!("{PROBE_DIR}/{ENTRY_FILE}"),
                "--termination-log".to_owned(),
                TERMINATION_MESSAGE_PATH.to_owned(),
                "--timeout".to_owned(),
                PROBE_TIMEOUT_SECONDS.to_string(),
            ],
            input,
            input_dir: PROBE_DIR,
            secrets,
            active_deadline_seconds: PROBE_DEADLINE_SECONDS,
        },
        config,
    ))
}

/// Every public address: `0.0.0.0/0` and `::/0`, each except the [`NOT_PUBLIC`] space of its
/// family.
fn public_blocks() -> Vec<NetworkPolicyPeer> {
    let nets: Vec<IpNet> = NOT_PUBLIC.iter().filter_map(|n| n.parse().ok()).collect();
    let except = |v4: bool| -> Vec<String> {
        nets.iter()
            .filter(|n| matches!(n, IpNet::V4(_)) == v4)
            .map(ToString::to_string)
            .collect()
    };
    vec![
        ip_block("0.0.0.0/0".into(), Some(except(true))),
        ip_block("::/0".into(), Some(except(false))),
    ]
}

/// The TCP ports the entry's URLs reach, loopback URLs left out (inside the pod).
fn entry_ports(entry: &RegistryEntry) -> Result<BTreeSet<u16>> {
    let name = entry.metadata.name.clone().unwrap_or_default();
    Ok(reached(&name, &entry.spec)?
        .into_iter()
        .map(|(_, port)| port)
        .collect())
}

/// The probe NetworkPolicy of the entry, owned by it: selects its probe pods by the entry's
/// UID; `policyTypes: [Ingress, Egress]` with no ingress rule; egress to the cluster DNS (53
/// UDP/TCP) and to the ports of the entry's URLs on every public address (`0.0.0.0/0` and
/// `::/0` except private, shared, loopback and link-local space), plus the allowlist's networks
/// when the entry is `privateNetwork`. With an egress proxy, only the proxy instead of the
/// public addresses (a private entry still reaches its allowlisted networks directly, as the
/// guard does).
pub fn probe_network_policy(entry: &RegistryEntry, config: &Config) -> Result<NetworkPolicy> {
    let name = entry
        .metadata
        .name
        .clone()
        .ok_or_else(|| missing(entry, "name"))?;
    let uid = entry
        .metadata
        .uid
        .clone()
        .ok_or_else(|| missing(entry, "uid"))?;
    let ports = entry_ports(entry)?;
    let mut egress = vec![dns_egress()];
    let to_ports = Some(ports.iter().copied().map(tcp).collect::<Vec<_>>());
    if !ports.is_empty() {
        match &config.egress_proxy {
            Some(proxy) => egress.push(proxy_egress(proxy)?),
            None => egress.push(NetworkPolicyEgressRule {
                to: Some(public_blocks()),
                ports: to_ports.clone(),
            }),
        }
        let private: Vec<NetworkPolicyPeer> = if is_private(&entry.spec) {
            config
                .allowlist()
                .iter()
                .filter_map(|a| match a {
                    AllowEntry::Net(net) => Some(ip_block(net.to_string(), None)),
                    AllowEntry::Host(_) => None,
                })
                .collect()
        } else {
            Vec::new()
        };
        if !private.is_empty() {
            egress.push(NetworkPolicyEgressRule {
                to: Some(private),
                ports: to_ports,
            });
        }
    }
    Ok(sandbox_network_policy(
        meta(entry, probe_network_policy_name(&name), None)?,
        (ENTRY_UID_LABEL, uid),
        egress,
    ))
}

#[cfg(test)]
mod tests {
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
        let np =
            serde_json::to_value(probe_network_policy(&vllm, &config).expect("np")).expect("json");
        assert_eq!(
            np["spec"]["egress"],
            json!([dns(), public(8443),
                   {"to": [{"ipBlock": {"cidr": "10.20.0.0/16"}}], "ports": [{"protocol": "TCP", "port": 8443}]}])
        );
    }

    #[test]
    fn with_an_egress_proxy_the_probe_reaches_only_the_proxy_and_a_loopback_entry_nothing() {
        let config = config(
            "egressProxy: {url: 'http://proxy.net.svc:3128', addresses: [203.0.113.1], pods: {namespace: net, matchLabels: {app: proxy}}}",
        );
        let np = serde_json::to_value(probe_network_policy(&writer(), &config).expect("np"))
            .expect("json");
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
}
