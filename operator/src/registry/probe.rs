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
use crate::sandbox::network::{
    block_outside, dns_egress, ip_block, proxy_egress, sandbox_network_policy, tcp,
};
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
            env: Vec::new(),
        },
        config,
    ))
}

/// Every public address: `0.0.0.0/0` and `::/0`, each except the [`NOT_PUBLIC`] space of its
/// family.
fn public_blocks(cluster: &[IpNet]) -> Vec<NetworkPolicyPeer> {
    let mut nets: Vec<IpNet> = NOT_PUBLIC.iter().filter_map(|n| n.parse().ok()).collect();
    // The cluster's ranges in public space (rare, but some clusters use them).
    let public_ranges: Vec<IpNet> = cluster
        .iter()
        .copied()
        .filter(|r| !nets.iter().any(|n| n.contains(r)))
        .collect();
    nets.extend(public_ranges);
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
                to: Some(public_blocks(&config.cluster_ranges())),
                ports: to_ports.clone(),
            }),
        }
        let ranges = config.cluster_ranges();
        let (mut private, mut sockets) = (Vec::new(), Vec::new());
        if is_private(&entry.spec) {
            for allowed in config.allowlist() {
                match allowed {
                    // The cluster's own ranges are left out of a network (anchor 19).
                    AllowEntry::Net(net) => private.extend(block_outside(net, &ranges)),
                    // An exact address and port: that port only, never a component's.
                    AllowEntry::Socket(socket)
                        if orrery_crds::host::cluster_reach(socket, &ranges, &[socket]).is_ok() =>
                    {
                        sockets.push(NetworkPolicyEgressRule {
                            to: Some(vec![ip_block(IpNet::from(socket.ip()).to_string(), None)]),
                            ports: Some(vec![tcp(socket.port())]),
                        });
                    }
                    AllowEntry::Socket(_) | AllowEntry::Host(_) => {}
                }
            }
        }
        if !private.is_empty() {
            egress.push(NetworkPolicyEgressRule {
                to: Some(private),
                ports: to_ports,
            });
        }
        egress.append(&mut sockets);
    }
    Ok(sandbox_network_policy(
        meta(entry, probe_network_policy_name(&name), None)?,
        (ENTRY_UID_LABEL, uid),
        egress,
    ))
}

#[cfg(test)]
#[path = "probe_tests.rs"]
mod tests;
