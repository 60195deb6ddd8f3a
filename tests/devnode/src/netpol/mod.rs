//! Kubernetes NetworkPolicies enforced with nftables inside a pod's own network namespace.
//!
//! [`translate`] is pure: from the pod (namespace, labels, its container ports), the
//! NetworkPolicies of the cluster and a [`PeerResolver`] (which turns a peer's pod and
//! namespace selectors into the current pods' addresses), it writes ONE ruleset, a table
//! `inet orrery`, deterministic for the same inputs. [`apply`] loads it into the pod's
//! namespace atomically (`ip netns exec <ns> nft -f -`; the text deletes and re-creates the
//! table in one transaction), and [`Enforcer`] does so only when the text changes. Nothing is
//! ever written to the host's own tables.
//!
//! The semantics are those of the API:
//! - a policy selects a pod of its own namespace whose labels match `spec.podSelector`
//!   (`matchLabels` and `matchExpressions`; empty or absent: every pod);
//! - `policyTypes` absent means `Ingress`, plus `Egress` when the policy has egress rules;
//! - a pod selected by no policy with `Egress` sends anywhere; once selected by one, only what
//!   the union of the egress rules of all policies selecting it allows (ingress likewise, with
//!   the input hook);
//! - a rule without `to` (`from`) or with an empty list matches every address; without `ports`
//!   every port;
//! - peers: `ipBlock` (`cidr` minus `except`), `podSelector` (pods of the policy's namespace),
//!   `namespaceSelector` (every pod of matching namespaces), both (matching pods of matching
//!   namespaces), resolved through the [`PeerResolver`];
//! - ports: `TCP` (default), `UDP`, `SCTP`; a number, a range with `endPort`, no number (every
//!   port of the protocol), or a named port, resolved against the container ports of the
//!   destination pods (egress) or of the pod itself (ingress); a named port with no known pod
//!   port, or on an `ipBlock` peer, is left out with a note in [`Ruleset::notes`];
//! - return traffic of allowed connections (`ct state established,related`) and loopback are
//!   always allowed, and so is IPv6 neighbour discovery; ingress from the node's addresses
//!   ([`Options::node_addresses`], the kubelet's probes) too;
//! - anything else a restricted direction sends is refused at once: TCP with a reset, other
//!   protocols with an ICMP admin-prohibited, so a blocked connect fails fast instead of timing
//!   out.
//!
//! Services ([`Options::services`]) are routed inside the same table: a `nat` chain on the
//! output hook sends a connection to a cluster IP on to one ready endpoint (DNAT, so the egress
//! chain, which runs after it, judges the endpoint's address and port as a cluster's CNI
//! does), and a connection to a Service without endpoints is refused at once.
//!
//! Egress to the node (the gateway) is NOT exempt: on the dev node the sidecar and the
//! registry fleet listen on the gateway, standing in for pods, so a policy must allow them as
//! it would those pods. DNS needs nothing special: rules for port 53 work as written.

mod apply;
mod inventory;
pub mod selector;
mod translate;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::net::IpAddr;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

pub use apply::{Enforcer, TABLE, apply, check_syntax, remove};
pub use inventory::{Inventory, InventoryPod};
pub use translate::translate;

/// A transport protocol of a NetworkPolicy port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protocol {
    Tcp,
    Udp,
    Sctp,
}

impl Protocol {
    /// `TCP`, `UDP` or `SCTP` as the API writes them.
    pub fn parse(text: &str) -> Option<Protocol> {
        match text {
            "TCP" => Some(Protocol::Tcp),
            "UDP" => Some(Protocol::Udp),
            "SCTP" => Some(Protocol::Sctp),
            _ => None,
        }
    }

    /// The nftables name.
    pub fn nft(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
            Protocol::Sctp => "sctp",
        }
    }
}

/// A named container port (`containerPort` with a `name`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NamedPort {
    pub name: String,
    pub protocol: Protocol,
    pub port: u16,
}

/// The pod whose ruleset is made.
#[derive(Debug, Clone, Copy)]
pub struct TargetPod<'a> {
    pub namespace: &'a str,
    pub labels: &'a BTreeMap<String, String>,
    /// Its own named container ports (named ports of ingress rules).
    pub ports: &'a [NamedPort],
}

/// A peer's selectors, to resolve into pods: pods matching `pod_selector` in the namespaces
/// matching `namespace_selector`; no `namespace_selector` means the policy's own namespace;
/// no `pod_selector` (with a namespace selector) every pod of those namespaces.
#[derive(Debug, Clone, Copy)]
pub struct PeerQuery<'a> {
    pub policy_namespace: &'a str,
    pub namespace_selector: Option<&'a LabelSelector>,
    pub pod_selector: Option<&'a LabelSelector>,
}

/// A pod a peer resolved to: its address and its named container ports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerPod {
    pub address: IpAddr,
    pub ports: Vec<NamedPort>,
}

/// Turns a peer's selectors into the current pods (the caller knows pods and namespaces; the
/// translator stays pure). A closure `Fn(&PeerQuery) -> Vec<PeerPod>` is one; so is
/// [`Inventory`].
pub trait PeerResolver {
    fn resolve(&self, query: &PeerQuery<'_>) -> Vec<PeerPod>;
}

impl<F> PeerResolver for F
where
    F: Fn(&PeerQuery<'_>) -> Vec<PeerPod>,
{
    fn resolve(&self, query: &PeerQuery<'_>) -> Vec<PeerPod> {
        self(query)
    }
}

/// Choices of the node, not of the policies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// Ingress from these addresses is always allowed (the node: the kubelet's probes).
    pub node_addresses: Vec<IpAddr>,
    /// The cluster's Services as this pod reaches them (see [`ServiceRoute`]).
    pub services: Vec<ServiceRoute>,
}

/// One port of a Service as the node routes it, the way kube-proxy does: a connection the pod
/// opens to `cluster_ip:port` is sent (DNAT, in the pod's own namespace, before the egress
/// policy sees it) to one of `backends`, picked at random per connection; with no backend it is
/// refused at once. Egress policies therefore judge the endpoint, never the cluster IP, as in a
/// cluster.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServiceRoute {
    /// `namespace/name:port` (a comment on the rules).
    pub service: String,
    pub cluster_ip: IpAddr,
    pub protocol: Protocol,
    pub port: u16,
    /// Each ready endpoint's address and port (the other family's are left out).
    pub backends: Vec<(IpAddr, u16)>,
}

/// A pod's ruleset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ruleset {
    /// The `nft -f` text: replaces the table `inet orrery` as a whole.
    pub text: String,
    /// The policies selecting the pod, as `namespace/name`, sorted.
    pub policies: Vec<String>,
    /// Whether egress is restricted (some selecting policy has `Egress`).
    pub egress_isolated: bool,
    /// Whether ingress is restricted.
    pub ingress_isolated: bool,
    /// What was left out and why (named ports that resolve to nothing, …).
    pub notes: Vec<String>,
}

/// A policy the translator cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("NetworkPolicy {policy}: {problem}; {fix}")]
pub struct TranslateError {
    /// `namespace/name`.
    pub policy: String,
    pub problem: String,
    pub fix: String,
}
