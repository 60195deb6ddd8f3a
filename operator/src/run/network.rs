//! The NetworkPolicy of a run: its runner pod only; no ingress; egress to DNS, the sidecar, and
//! exactly the endpoints the plan uses (their resolved addresses as `/32` or `/128` ipBlocks,
//! with their ports), or, with an egress proxy, the proxy instead of the public endpoints.

use super::builders::{
    PlanDocument, RUN_NAME_ANNOTATION, RUN_UID_LABEL, child_labels, child_names, identity, owner,
};
use crate::config::Config;
use crate::endpoints::{is_private, reached};
use crate::error::{Error, Result};
use crate::sandbox::network::{
    dns_egress, ip_block, pods_in, proxy_egress, sandbox_network_policy, tcp,
};
pub use crate::sandbox::{DNS_NAMESPACE, DNS_POD_LABEL, NAMESPACE_NAME_LABEL};
use ipnet::IpNet;
use k8s_openapi::api::networking::v1::{NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyPeer};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use orrery_crds::StudioRun;
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};

/// One endpoint a plan reaches: an entry's addresses and ports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// The entry's name.
    pub entry: String,
    /// The addresses its hosts resolved to (or address literals in its URLs).
    pub addresses: BTreeSet<IpAddr>,
    /// The TCP ports its URLs name.
    pub ports: BTreeSet<u16>,
    /// Whether the entry is `privateNetwork` (reached directly even with an egress proxy).
    pub private: bool,
}

/// Reads a resolved address as the probe writes it: `203.0.113.7`, `2001:db8::7`, or with a
/// port (`203.0.113.7:443`, `[2001:db8::7]:443`).
fn parse_address(text: &str) -> Option<IpAddr> {
    let text = text.trim();
    text.parse::<IpAddr>()
        .ok()
        .or_else(|| text.parse::<SocketAddr>().ok().map(|s| s.ip()))
}

/// The endpoints of the entries a plan uses. An entry reaching only loopback (inside the pod)
/// or no network (a Scripted model) has none. An entry whose hosts have no resolved address
/// yet is an error: its NetworkPolicy cannot be exact.
pub fn plan_endpoints(document: &PlanDocument) -> Result<Vec<Endpoint>> {
    let mut out = Vec::new();
    for entry in &document.entries {
        let mut ports = BTreeSet::new();
        let mut addresses = BTreeSet::new();
        let mut needs_resolution = false;
        for (host, port) in reached(&entry.name, &entry.spec)? {
            ports.insert(port);
            match host.parse::<IpAddr>() {
                Ok(addr) => {
                    addresses.insert(addr);
                }
                Err(_) => needs_resolution = true,
            }
        }
        if ports.is_empty() {
            continue;
        }
        if needs_resolution {
            let mut resolved = 0;
            for text in &entry.pins.resolved_addresses {
                let addr = parse_address(text).ok_or_else(|| Error::Endpoint {
                    entry: entry.name.clone(),
                    problem: format!("status.resolvedAddresses holds {text:?}, not an address"),
                    fix: "let the probe run again (it rewrites the status)".into(),
                })?;
                addresses.insert(addr);
                resolved += 1;
            }
            if resolved == 0 {
                return Err(Error::Endpoint {
                    entry: entry.name.clone(),
                    problem: "its host has no resolved address yet".into(),
                    fix:
                        "wait until the entry is Ready (the probe records status.resolvedAddresses)"
                            .into(),
                });
            }
        }
        out.push(Endpoint {
            entry: entry.name.clone(),
            addresses,
            ports,
            private: is_private(&entry.spec),
        });
    }
    Ok(out)
}

/// [`plan_endpoints`], each allowed into the cluster's ranges or an error naming its entry
/// ([`check_cluster_reach`]): what a run may be let out to. Preparing a run checks it (a run
/// whose endpoint is refused is refused with the reason), and its NetworkPolicy is built from it.
pub fn reachable_endpoints(document: &PlanDocument, config: &Config) -> Result<Vec<Endpoint>> {
    let endpoints = plan_endpoints(document)?;
    check_cluster_reach(&endpoints, config)?;
    Ok(endpoints)
}

/// Refuses an endpoint inside the cluster's own ranges (anchor 19) unless the allowlist names
/// each of its addresses there with each of its ports, and never on a cluster component's port:
/// a run's pod is not let out to a kubelet because an allowlisted network holds its node.
fn check_cluster_reach(endpoints: &[Endpoint], config: &Config) -> Result<()> {
    let (ranges, exact) = (config.cluster_ranges(), config.exact_sockets());
    if ranges.is_empty() {
        return Ok(());
    }
    for endpoint in endpoints {
        for addr in &endpoint.addresses {
            for port in &endpoint.ports {
                orrery_crds::host::cluster_reach(SocketAddr::new(*addr, *port), &ranges, &exact)
                    .map_err(|why| Error::Endpoint {
                        entry: endpoint.entry.clone(),
                        fix: match why {
                            orrery_crds::host::ClusterRefusal::ComponentPort { .. } => {
                                "point the entry at a service, not at a cluster component".into()
                            }
                            _ => format!(
                                "use an address outside the cluster's ranges, or ask the \
                                 platform team to add {} to privateNetworkAllowlist",
                                SocketAddr::new(*addr, *port)
                            ),
                        },
                        problem: why.to_string(),
                    })?;
            }
        }
    }
    Ok(())
}

fn host_block(addr: IpAddr) -> NetworkPolicyPeer {
    ip_block(IpNet::from(addr).to_string(), None)
}

fn endpoint_rule(endpoint: &Endpoint) -> NetworkPolicyEgressRule {
    NetworkPolicyEgressRule {
        to: Some(endpoint.addresses.iter().copied().map(host_block).collect()),
        ports: Some(endpoint.ports.iter().copied().map(tcp).collect()),
    }
}

/// The run's NetworkPolicy, owned by the run: selects its runner pod by the run's UID;
/// `policyTypes: [Ingress, Egress]` with no ingress rule (nothing reaches the pod); egress to
/// the cluster DNS (53 UDP/TCP), the sidecar's pods on their port, and the plan's endpoints:
/// each entry's addresses as `/32` or `/128` with its ports. With an egress proxy, public
/// endpoints are replaced by the proxy (private, allowlisted ones are still reached directly,
/// as the runner's guard does).
pub fn network_policy(
    run: &StudioRun,
    document: &PlanDocument,
    config: &Config,
) -> Result<NetworkPolicy> {
    let id = identity(run)?;
    let endpoints = reachable_endpoints(document, config)?;
    let dns = dns_egress();
    let sidecar = NetworkPolicyEgressRule {
        to: Some(vec![pods_in(
            &config.sidecar.namespace,
            &config.sidecar.pod_labels,
        )]),
        ports: Some(vec![tcp(config.sidecar.pod_port())]),
    };
    let mut egress = vec![dns, sidecar];
    match &config.egress_proxy {
        Some(proxy) => {
            egress.push(proxy_egress(proxy)?);
            egress.extend(endpoints.iter().filter(|e| e.private).map(endpoint_rule));
        }
        None => egress.extend(endpoints.iter().map(endpoint_rule)),
    }
    let metadata = ObjectMeta {
        name: Some(child_names(&id.name).network_policy),
        namespace: Some(id.namespace.clone()),
        labels: Some(child_labels(&id)),
        annotations: Some(BTreeMap::from([(
            RUN_NAME_ANNOTATION.to_owned(),
            id.name.clone(),
        )])),
        owner_references: Some(vec![owner(run)?]),
        ..ObjectMeta::default()
    };
    Ok(sandbox_network_policy(
        metadata,
        (RUN_UID_LABEL, id.uid.clone()),
        egress,
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::run::builders::tests::{config, document, run};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn policy_json(extra: &str) -> serde_json::Value {
        let config = config(extra);
        let doc = document(&config);
        let np = network_policy(&run("notes-1"), &doc, &config).expect("policy");
        serde_json::to_value(&np).expect("json")
    }

    fn dns_and_sidecar() -> Vec<serde_json::Value> {
        vec![
            json!({"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                           "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
                   "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}),
            json!({"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "orrery-system"}},
                           "podSelector": {"matchLabels": {"app.kubernetes.io/name": "orrery-sidecar"}}}],
                   "ports": [{"protocol": "TCP", "port": 8080}]}),
        ]
    }

    #[test]
    fn the_policy_selects_only_the_runs_pod_and_denies_all_ingress() {
        let np = policy_json("");
        assert_eq!(np["metadata"]["name"], "notes-1-egress");
        assert_eq!(np["metadata"]["namespace"], "team");
        assert_eq!(np["metadata"]["ownerReferences"][0]["kind"], "StudioRun");
        assert_eq!(np["metadata"]["ownerReferences"][0]["uid"], "uid-notes-1");
        assert_eq!(
            np["spec"]["podSelector"],
            json!({"matchLabels": {"studio.orrery.dev/run-uid": "uid-notes-1"}})
        );
        assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
        assert!(
            np["spec"].get("ingress").is_none(),
            "no ingress rule at all: {np}"
        );
    }

    #[test]
    fn egress_is_dns_the_sidecar_and_exactly_the_plans_endpoints() {
        let np = policy_json("");
        let mut want = dns_and_sidecar();
        // gpt: api.openai.com:443 resolved to 198.51.100.9; tools: 8443 on v4 and v6; the unused
        // entry is not there.
        want.push(json!({"to": [{"ipBlock": {"cidr": "198.51.100.9/32"}}], "ports": [{"protocol": "TCP", "port": 443}]}));
        want.push(json!({"to": [{"ipBlock": {"cidr": "203.0.113.7/32"}}, {"ipBlock": {"cidr": "2001:db8::7/128"}}],
                         "ports": [{"protocol": "TCP", "port": 8443}]}));
        assert_eq!(np["spec"]["egress"], serde_json::Value::Array(want));
    }

    #[test]
    fn with_an_egress_proxy_only_the_proxy_is_reached_for_public_endpoints() {
        let mut config = config(
            "egressProxy: {url: 'http://proxy.net.svc:3128', addresses: [203.0.113.1], pods: {namespace: net, matchLabels: {app: proxy}}}",
        );
        // The Service listens on 80 and the sidecar pods on 8080: the policy opens the pod port.
        config.sidecar.port = 80;
        config.sidecar.target_port = Some(8080);
        let doc = document(&config);
        let np =
            serde_json::to_value(network_policy(&run("notes-1"), &doc, &config).expect("policy"))
                .expect("json");
        let mut want = dns_and_sidecar();
        want.push(json!({"to": [{"ipBlock": {"cidr": "203.0.113.1/32"}},
                                {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "net"}},
                                 "podSelector": {"matchLabels": {"app": "proxy"}}}],
                         "ports": [{"protocol": "TCP", "port": 3128}]}));
        assert_eq!(np["spec"]["egress"], serde_json::Value::Array(want));
    }

    #[test]
    fn a_private_endpoint_is_reached_directly_even_with_a_proxy() {
        let config = config(
            "privateNetworkAllowlist: [vllm.ml.svc]\negressProxy: {url: 'http://proxy:3128', addresses: [203.0.113.1]}",
        );
        let mut doc = document(&config);
        if let Some(model) = doc
            .entries
            .iter_mut()
            .find(|e| e.name == "gpt")
            .and_then(|e| e.spec.model.as_mut())
        {
            model.base_url = Some("https://vllm.ml.svc:8443/v1".into());
            model.private_network = true;
        }
        let np =
            serde_json::to_value(network_policy(&run("notes-1"), &doc, &config).expect("policy"))
                .expect("json");
        let egress = np["spec"]["egress"].as_array().cloned().unwrap_or_default();
        assert_eq!(
            egress.len(),
            4,
            "dns, sidecar, proxy, the private model: {egress:?}"
        );
        assert_eq!(
            egress[3],
            json!({"to": [{"ipBlock": {"cidr": "198.51.100.9/32"}}], "ports": [{"protocol": "TCP", "port": 8443}]})
        );
    }

    #[test]
    fn endpoints_skip_loopback_and_need_resolved_addresses_for_names() {
        let config = config("");
        let mut doc = document(&config);
        // A literal address needs no resolution; loopback is inside the pod.
        if let Some(mcp) = doc
            .entries
            .iter_mut()
            .find(|e| e.name == "tools")
            .and_then(|e| e.spec.mcp.as_mut())
        {
            mcp.url = "http://127.0.0.1:7801/mcp".into();
        }
        let endpoints = plan_endpoints(&doc).expect("endpoints");
        assert_eq!(
            endpoints
                .iter()
                .map(|e| e.entry.as_str())
                .collect::<Vec<_>>(),
            ["gpt"]
        );
        for e in doc.entries.iter_mut() {
            e.pins.resolved_addresses.clear();
        }
        match plan_endpoints(&doc) {
            Err(Error::Endpoint { entry, problem, .. }) => {
                assert_eq!(entry, "gpt");
                assert!(problem.contains("no resolved address"), "{problem}");
            }
            other => panic!("expected an endpoint error, got {other:?}"),
        }
    }

    #[test]
    fn resolved_addresses_are_read_with_or_without_a_port() {
        for (text, want) in [
            ("203.0.113.7", Some("203.0.113.7")),
            ("203.0.113.7:443", Some("203.0.113.7")),
            ("[2001:db8::7]:443", Some("2001:db8::7")),
            ("2001:db8::7", Some("2001:db8::7")),
            ("example.com", None),
        ] {
            assert_eq!(
                parse_address(text).map(|a| a.to_string()),
                want.map(str::to_owned),
                "{text}"
            );
        }
    }

    #[test]
    fn a_run_is_not_let_out_into_the_clusters_ranges_unless_the_allowlist_names_the_address_and_port_anchor_19()
     {
        // The tools entry resolves to 203.0.113.7 (and 2001:db8::7), port 8443.
        let ranged = config("clusterRanges: ['203.0.113.0/24']");
        let doc = document(&ranged);
        match network_policy(&run("notes-1"), &doc, &ranged) {
            Err(Error::Endpoint {
                entry,
                problem,
                fix,
            }) => {
                assert_eq!(entry, "tools");
                assert!(
                    problem.contains("203.0.113.0/24") && problem.contains("203.0.113.7:8443"),
                    "{problem}"
                );
                assert!(fix.contains("privateNetworkAllowlist"), "{fix}");
            }
            other => panic!("expected an endpoint error, got {other:?}"),
        }
        // Named exactly, with its port: let out to that address and port as before.
        let named = config(
            "clusterRanges: ['203.0.113.0/24']\nprivateNetworkAllowlist: ['203.0.113.7:8443']",
        );
        let np = serde_json::to_value(
            network_policy(&run("notes-1"), &document(&named), &named).expect("policy"),
        )
        .expect("json");
        assert!(
            np["spec"]["egress"].as_array().is_some_and(|rules| rules
                .iter()
                .any(|r| r["to"][0]["ipBlock"]["cidr"] == "203.0.113.7/32"
                    && r["ports"][0]["port"] == 8443)),
            "{np}"
        );
    }
}
