//! A [`PeerResolver`] over a list of namespaces and pods: what the dev node knows, and what
//! tests write by hand.

use std::collections::BTreeMap;
use std::net::IpAddr;

use super::{NamedPort, PeerPod, PeerQuery, PeerResolver, selector};

/// The label every namespace carries with its name.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// A pod the inventory knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InventoryPod {
    pub namespace: String,
    pub labels: BTreeMap<String, String>,
    pub address: IpAddr,
    pub ports: Vec<NamedPort>,
}

/// Namespaces (with their labels) and pods; resolves selectors as the API defines them. A
/// namespace gets `kubernetes.io/metadata.name: <name>` as the API server gives it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inventory {
    namespaces: BTreeMap<String, BTreeMap<String, String>>,
    pods: Vec<InventoryPod>,
}

impl Inventory {
    pub fn new() -> Inventory {
        Inventory::default()
    }

    /// Adds (or relabels) namespace `name`.
    pub fn namespace<'a>(
        mut self,
        name: &str,
        labels: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Self {
        let entry = self.namespace_entry(name);
        for (k, v) in labels {
            entry.insert(k.to_owned(), v.to_owned());
        }
        self
    }

    fn namespace_entry(&mut self, name: &str) -> &mut BTreeMap<String, String> {
        self.namespaces
            .entry(name.to_owned())
            .or_insert_with(|| BTreeMap::from([(NAMESPACE_NAME_LABEL.to_owned(), name.to_owned())]))
    }

    /// Adds a pod (its namespace too, if new).
    pub fn pod<'a>(
        mut self,
        namespace: &str,
        labels: impl IntoIterator<Item = (&'a str, &'a str)>,
        address: IpAddr,
        ports: Vec<NamedPort>,
    ) -> Self {
        self.namespace_entry(namespace);
        self.pods.push(InventoryPod {
            namespace: namespace.to_owned(),
            labels: labels
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
            address,
            ports,
        });
        self
    }

    /// The pods.
    pub fn pods(&self) -> &[InventoryPod] {
        &self.pods
    }
}

impl PeerResolver for Inventory {
    fn resolve(&self, query: &PeerQuery<'_>) -> Vec<PeerPod> {
        let namespace_ok = |ns: &str| match query.namespace_selector {
            None => ns == query.policy_namespace,
            Some(sel) => self
                .namespaces
                .get(ns)
                .is_some_and(|labels| selector::matches(sel, labels).unwrap_or(false)),
        };
        self.pods
            .iter()
            .filter(|p| namespace_ok(&p.namespace))
            .filter(|p| match query.pod_selector {
                None => true,
                Some(sel) => selector::matches(sel, &p.labels).unwrap_or(false),
            })
            .map(|p| PeerPod {
                address: p.address,
                ports: p.ports.clone(),
            })
            .collect()
    }
}
