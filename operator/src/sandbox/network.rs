//! The NetworkPolicy of a sandboxed pod: no ingress, egress only by the rules given; and the
//! rules both kinds of pod share (the cluster DNS, the egress proxy, address blocks, TCP
//! ports).

use k8s_openapi::api::networking::v1::{
    IPBlock, NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyPeer, NetworkPolicyPort,
    NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;

/// The namespace label every namespace carries (`kubernetes.io/metadata.name`).
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";
/// Where the cluster DNS runs.
pub const DNS_NAMESPACE: &str = "kube-system";
/// The label of the cluster DNS pods.
pub const DNS_POD_LABEL: (&str, &str) = ("k8s-app", "kube-dns");

/// A TCP port of a NetworkPolicy rule.
pub fn tcp(port: u16) -> NetworkPolicyPort {
    NetworkPolicyPort {
        protocol: Some("TCP".to_owned()),
        port: Some(IntOrString::Int(i32::from(port))),
        end_port: None,
    }
}

fn match_labels(pairs: impl IntoIterator<Item = (String, String)>) -> Option<LabelSelector> {
    Some(LabelSelector {
        match_labels: Some(pairs.into_iter().collect()),
        match_expressions: None,
    })
}

/// Pods with `pod_labels` in namespace `namespace`: ONE peer holding both selectors (both must
/// match; two peers would mean either).
pub fn pods_in(namespace: &str, pod_labels: &BTreeMap<String, String>) -> NetworkPolicyPeer {
    NetworkPolicyPeer {
        namespace_selector: match_labels([(NAMESPACE_NAME_LABEL.to_owned(), namespace.to_owned())]),
        pod_selector: match_labels(pod_labels.clone()),
        ip_block: None,
    }
}

/// The egress rule to the cluster DNS (53 over UDP and TCP), first in every policy.
pub fn dns_egress() -> NetworkPolicyEgressRule {
    NetworkPolicyEgressRule {
        to: Some(vec![pods_in(
            DNS_NAMESPACE,
            &BTreeMap::from([(DNS_POD_LABEL.0.to_owned(), DNS_POD_LABEL.1.to_owned())]),
        )]),
        ports: Some(vec![
            NetworkPolicyPort {
                protocol: Some("UDP".to_owned()),
                port: Some(IntOrString::Int(53)),
                end_port: None,
            },
            tcp(53),
        ]),
    }
}

/// A label selector matching exactly `pairs`.
pub fn selector(pairs: BTreeMap<String, String>) -> Option<LabelSelector> {
    match_labels(pairs)
}

/// The egress rule to the configured egress proxy: its addresses (or networks) and its pods,
/// on the proxy URL's port.
pub fn proxy_egress(
    proxy: &crate::config::EgressProxy,
) -> crate::error::Result<NetworkPolicyEgressRule> {
    let port =
        crate::endpoints::url_port(&proxy.url).ok_or_else(|| crate::error::Error::Endpoint {
            entry: "egressProxy".into(),
            problem: format!("the proxy URL {:?} has no port", proxy.url),
            fix: "write egressProxy.url as http://host:port".into(),
        })?;
    let mut to: Vec<NetworkPolicyPeer> = proxy
        .addresses
        .iter()
        .filter_map(|a| {
            a.parse::<ipnet::IpNet>()
                .ok()
                .or_else(|| a.parse::<std::net::IpAddr>().ok().map(ipnet::IpNet::from))
        })
        .map(|net| ip_block(net.to_string(), None))
        .collect();
    if let Some(pods) = &proxy.pods {
        to.push(pods_in(&pods.namespace, &pods.match_labels));
    }
    Ok(NetworkPolicyEgressRule {
        to: Some(to),
        ports: Some(vec![tcp(port)]),
    })
}

/// A peer of one address block (`cidr`, less the blocks of `except`).
pub fn ip_block(cidr: String, except: Option<Vec<String>>) -> NetworkPolicyPeer {
    NetworkPolicyPeer {
        ip_block: Some(IPBlock { cidr, except }),
        ..NetworkPolicyPeer::default()
    }
}

/// `net` as an ipBlock that leaves out the cluster's `ranges` (anchor 19): `None` when a range
/// holds all of it, else the block with the ranges inside it as `except` (CIDRs nest or are
/// apart, so nothing else overlaps).
pub fn block_outside(net: ipnet::IpNet, ranges: &[ipnet::IpNet]) -> Option<NetworkPolicyPeer> {
    if ranges.iter().any(|r| r.contains(&net)) {
        return None;
    }
    let except: Vec<String> = ranges
        .iter()
        .filter(|r| net.contains(*r))
        .map(ToString::to_string)
        .collect();
    Some(ip_block(
        net.to_string(),
        (!except.is_empty()).then_some(except),
    ))
}

/// The NetworkPolicy of a sandboxed pod: selects the pods labelled `pod_label`;
/// `policyTypes: [Ingress, Egress]` with no ingress rule (nothing reaches the pod) and exactly
/// the `egress` rules given (the cluster DNS first, [`dns_egress`]).
pub fn sandbox_network_policy(
    metadata: ObjectMeta,
    pod_label: (&str, String),
    egress: Vec<NetworkPolicyEgressRule>,
) -> NetworkPolicy {
    NetworkPolicy {
        metadata,
        spec: Some(NetworkPolicySpec {
            pod_selector: selector(BTreeMap::from([(pod_label.0.to_owned(), pod_label.1)])),
            policy_types: Some(vec!["Ingress".to_owned(), "Egress".to_owned()]),
            ingress: None,
            egress: Some(egress),
        }),
    }
}
