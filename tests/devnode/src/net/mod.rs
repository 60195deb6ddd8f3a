//! Pod networks for the dev node's container mode: every pod in a network namespace of its own,
//! with its own address on a Linux bridge the dev node owns.
//!
//! [`PodNetwork::create`] makes (idempotently) the bridge, e.g. `orrery0`, with the gateway
//! address (the subnet's first host address, `10.213.0.1/24` by default) and refuses a subnet
//! that overlaps an address already on the host. [`PodNetwork::add_pod`] gives a pod a named
//! namespace (`ip netns add orrery-<id>`), a veth pair (the host end on the bridge, the other
//! end moved into the namespace as `eth0`) with the next free address, `lo` up and a default
//! route via the gateway. Pods reach the host's services listening on the gateway address (or
//! 0.0.0.0) and each other across the bridge; nothing is forwarded or NATed to the outside and
//! no host firewall table is touched: a pod's NetworkPolicy rules live in its own namespace
//! ([`crate::netpol`]).
//!
//! [`PodNetwork::teardown`] (and `Drop`) removes the bridge and every namespace and veth whose
//! name has the network's prefixes, including those left by a crashed earlier run; `create`
//! clears such leftovers first, so two live dev nodes must use different bridge names
//! ([`NetworkConfig::named`]).
//!
//! Bridged traffic and the host's firewall: when `br_netfilter` hands bridged frames to the
//! host's ip hooks (`net.bridge.bridge-nf-call-iptables=1`), pod-to-pod traffic crosses the
//! host's forward chains; a forward policy of drop there would cut pods off from each other
//! (pod-to-gateway traffic takes the input hook instead). [`inspect_host_firewall`] reports this
//! without changing anything.
//!
//! The calls run `ip` (iproute2) and block; call them from `spawn_blocking` in async code. They
//! need root.

mod cmd;
mod error;
mod host;
mod ipam;
mod netns;

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

pub use ipnet::Ipv4Net;

pub use cmd::package_of;
pub(crate) use cmd::run;
pub use error::NetError;
pub use host::{
    ForwardChain, HostAddress, HostFirewall, host_addresses, inspect_host_firewall, overlapping,
};
pub use ipam::Ipam;
pub use netns::{enter, netns_path, run_in};

/// The longest name of a network interface (IFNAMSIZ - 1).
const IFNAME_MAX: usize = 15;

/// The default bridge.
pub const DEFAULT_BRIDGE: &str = "orrery0";
/// The default pod subnet.
pub const DEFAULT_SUBNET: &str = "10.213.0.0/24";
/// The default prefix of pod namespaces.
pub const DEFAULT_NETNS_PREFIX: &str = "orrery-";

/// Which bridge, subnet and names a [`PodNetwork`] uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkConfig {
    /// The bridge (at most 15 characters, and short enough for `<bridge>v<slot>` veth names).
    pub bridge: String,
    /// The pod subnet; the bridge holds its first host address (the gateway).
    pub subnet: Ipv4Net,
    /// Pod namespaces are `<prefix><pod id>`; teardown removes every namespace with it.
    pub netns_prefix: String,
}

impl Default for NetworkConfig {
    fn default() -> Self {
        NetworkConfig {
            bridge: DEFAULT_BRIDGE.into(),
            subnet: Ipv4Net::new(Ipv4Addr::new(10, 213, 0, 0), 24)
                .unwrap_or_else(|_| Ipv4Net::default()),
            netns_prefix: DEFAULT_NETNS_PREFIX.into(),
        }
    }
}

impl NetworkConfig {
    /// A network of its own (tests, a second dev node): bridge `bridge`, namespaces
    /// `<bridge>-<pod id>`.
    pub fn named(bridge: impl Into<String>, subnet: Ipv4Net) -> NetworkConfig {
        let bridge = bridge.into();
        NetworkConfig {
            netns_prefix: format!("{bridge}-"),
            bridge,
            subnet,
        }
    }

    /// The bridge's address (the subnet's first host address), where pods reach the host: known
    /// before the network exists, so a node can announce it as its own address.
    pub fn gateway(&self) -> Result<Ipv4Addr, NetError> {
        Ok(Ipam::new(self.subnet)?.gateway())
    }

    fn validate(&self, ipam: &Ipam) -> Result<(), NetError> {
        let name_ok = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        };
        let digits = ipam.max_slot().to_string().len();
        if !name_ok(&self.bridge) || self.bridge.len() + 1 + digits > IFNAME_MAX {
            return Err(NetError::Config {
                problem: format!(
                    "the bridge name {:?} is empty, has characters other than letters, digits, \
                     '-' and '_', or is too long for its veth names (<bridge>v<slot> must fit \
                     in {IFNAME_MAX} characters; slots here have up to {digits} digits)",
                    self.bridge
                ),
                fix: format!(
                    "use a name of at most {} characters",
                    IFNAME_MAX.saturating_sub(1 + digits)
                ),
            });
        }
        if !name_ok(&self.netns_prefix) {
            return Err(NetError::Config {
                problem: format!(
                    "the namespace prefix {:?} is not a plain name",
                    self.netns_prefix
                ),
                fix: "use letters, digits, '-' and '_' only, e.g. \"orrery-\"".into(),
            });
        }
        Ok(())
    }

    fn host_veth(&self, slot: u32) -> String {
        format!("{}v{slot}", self.bridge)
    }

    fn pod_veth_outside(&self, slot: u32) -> String {
        format!("{}p{slot}", self.bridge)
    }

    /// Whether `ifname` is one of this network's veth ends (`<bridge>v<digits>` or
    /// `<bridge>p<digits>`).
    fn owns_veth(&self, ifname: &str) -> bool {
        ifname
            .strip_prefix(self.bridge.as_str())
            .and_then(|rest| rest.strip_prefix('v').or_else(|| rest.strip_prefix('p')))
            .is_some_and(|digits| !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()))
    }
}

/// One pod's network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodNet {
    /// The pod's id as given to [`PodNetwork::add_pod`].
    pub id: String,
    /// The network namespace (`ip netns` name).
    pub netns: String,
    /// The pod's address on the bridge.
    pub address: Ipv4Addr,
    pub prefix_len: u8,
    pub gateway: Ipv4Addr,
    /// The host end of the veth pair (on the bridge).
    pub host_veth: String,
}

impl PodNet {
    /// `/run/netns/<netns>`.
    pub fn netns_path(&self) -> PathBuf {
        netns_path(&self.netns)
    }

    /// `ip netns exec <netns> <program>`: a command to run inside the pod's namespace.
    pub fn command(&self, program: &str) -> std::process::Command {
        let mut cmd = std::process::Command::new("ip");
        cmd.args(["netns", "exec", &self.netns, program]);
        cmd
    }

    /// Runs `f` on a thread inside the pod's namespace.
    pub fn run_in<T, F>(&self, f: F) -> Result<T, NetError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        run_in(&self.netns, f)
    }
}

struct State {
    ipam: Ipam,
    pods: BTreeMap<String, PodNet>,
}

/// The dev node's pod network: the bridge, the address book and the pods' namespaces. See the
/// module docs.
pub struct PodNetwork {
    config: NetworkConfig,
    gateway: Ipv4Addr,
    state: Mutex<State>,
    torn_down: bool,
}

impl std::fmt::Debug for PodNetwork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PodNetwork")
            .field("config", &self.config)
            .field("gateway", &self.gateway)
            .finish_non_exhaustive()
    }
}

const BRIDGE_FIX: &str = "check that the bridge can be made by hand (`ip link add NAME type bridge`) \
                          and that no other program owns an interface of that name";
const POD_FIX: &str = "remove leftovers with PodNetwork::teardown_leftovers and try again";

impl PodNetwork {
    /// Clears what a crashed earlier run with the same names left, then makes the bridge with
    /// the gateway address (reused if it is already there). Refuses a subnet overlapping an
    /// address on another host interface.
    pub fn create(config: NetworkConfig) -> Result<PodNetwork, NetError> {
        let ipam = Ipam::new(config.subnet)?;
        config.validate(&ipam)?;
        let subnet = ipam.subnet();
        let gateway = ipam.gateway();
        let addresses = host_addresses()?;
        if let Some(a) = overlapping(subnet, &config.bridge, &addresses) {
            return Err(NetError::Overlap {
                subnet: subnet.to_string(),
                address: a.net.to_string(),
                interface: a.interface.clone(),
            });
        }
        teardown_namespaces_and_veths(&config)?;
        match link_kind(&config.bridge)? {
            None => {
                cmd::ip(
                    &["link", "add", &config.bridge, "type", "bridge"],
                    BRIDGE_FIX,
                )?;
            }
            Some(kind) if kind == "bridge" => {}
            Some(kind) => {
                return Err(NetError::Config {
                    problem: format!(
                        "the host already has an interface {:?} of kind {kind:?}, not a bridge",
                        config.bridge
                    ),
                    fix: "choose another bridge name (NetworkConfig::bridge)".into(),
                });
            }
        }
        let gw = format!("{gateway}/{}", subnet.prefix_len());
        cmd::ip(&["addr", "replace", &gw, "dev", &config.bridge], BRIDGE_FIX)?;
        cmd::ip(&["link", "set", &config.bridge, "up"], BRIDGE_FIX)?;
        Ok(PodNetwork {
            config,
            gateway,
            state: Mutex::new(State {
                ipam,
                pods: BTreeMap::new(),
            }),
            torn_down: false,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &NetworkConfig {
        &self.config
    }

    /// The bridge's address, the pods' default route; host services listening on it are what
    /// pods reach on the node.
    pub fn gateway(&self) -> Ipv4Addr {
        self.gateway
    }

    /// The pod subnet.
    pub fn subnet(&self) -> Ipv4Net {
        self.config.subnet.trunc()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The namespace name of pod `id`: the prefix and `id` kept to letters, digits and '-'
    /// (at most 32 of them).
    pub fn netns_name(&self, id: &str) -> String {
        let clean: String = id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .take(32)
            .collect();
        format!("{}{clean}", self.config.netns_prefix)
    }

    /// Gives pod `id` its namespace, veth pair and address (see the module docs). On a failure
    /// half-way, what was made is removed again.
    pub fn add_pod(&self, id: &str) -> Result<PodNet, NetError> {
        let mut state = self.state();
        if state.pods.contains_key(id) {
            return Err(NetError::PodExists(id.to_owned()));
        }
        let netns = self.netns_name(id);
        if state.pods.values().any(|p| p.netns == netns) {
            return Err(NetError::PodExists(id.to_owned()));
        }
        let address = state.ipam.allocate()?;
        let slot = state.ipam.slot(address);
        let pod = PodNet {
            id: id.to_owned(),
            netns,
            address,
            prefix_len: self.subnet().prefix_len(),
            gateway: self.gateway,
            host_veth: self.config.host_veth(slot),
        };
        match self.plumb(&pod, slot) {
            Ok(()) => {
                state.pods.insert(id.to_owned(), pod.clone());
                Ok(pod)
            }
            Err(e) => {
                let _ = remove_netns_and_veth(
                    &pod.netns,
                    &[&pod.host_veth, &self.config.pod_veth_outside(slot)],
                );
                state.ipam.release(address);
                Err(e)
            }
        }
    }

    fn plumb(&self, pod: &PodNet, slot: u32) -> Result<(), NetError> {
        let ns = pod.netns.as_str();
        let outside = self.config.pod_veth_outside(slot);
        let addr = format!("{}/{}", pod.address, pod.prefix_len);
        let gw = pod.gateway.to_string();
        cmd::ip(&["netns", "add", ns], POD_FIX)?;
        cmd::ip(
            &[
                "link",
                "add",
                &pod.host_veth,
                "type",
                "veth",
                "peer",
                "name",
                &outside,
            ],
            POD_FIX,
        )?;
        cmd::ip(
            &["link", "set", &pod.host_veth, "master", &self.config.bridge],
            POD_FIX,
        )?;
        cmd::ip(&["link", "set", &pod.host_veth, "up"], POD_FIX)?;
        cmd::ip(&["link", "set", &outside, "netns", ns], POD_FIX)?;
        cmd::ip(
            &["-n", ns, "link", "set", &outside, "name", "eth0"],
            POD_FIX,
        )?;
        cmd::ip(&["-n", ns, "addr", "add", &addr, "dev", "eth0"], POD_FIX)?;
        cmd::ip(&["-n", ns, "link", "set", "eth0", "up"], POD_FIX)?;
        cmd::ip(&["-n", ns, "link", "set", "lo", "up"], POD_FIX)?;
        cmd::ip(
            &[
                "-n", ns, "route", "add", "default", "via", &gw, "dev", "eth0",
            ],
            POD_FIX,
        )?;
        Ok(())
    }

    /// Pod `id`'s network, if it has one.
    pub fn pod(&self, id: &str) -> Option<PodNet> {
        self.state().pods.get(id).cloned()
    }

    /// Every pod's network, by id.
    pub fn pods(&self) -> Vec<PodNet> {
        self.state().pods.values().cloned().collect()
    }

    /// Removes pod `id`'s namespace and veth pair and frees its address.
    pub fn remove_pod(&self, id: &str) -> Result<(), NetError> {
        let mut state = self.state();
        let pod = state
            .pods
            .get(id)
            .cloned()
            .ok_or_else(|| NetError::UnknownPod(id.to_owned()))?;
        remove_netns_and_veth(&pod.netns, &[&pod.host_veth])?;
        state.pods.remove(id);
        state.ipam.release(pod.address);
        Ok(())
    }

    /// Removes every pod namespace and veth with this network's names (this run's and any
    /// left over), then the bridge.
    pub fn teardown(mut self) -> Result<(), NetError> {
        self.torn_down = true;
        self.teardown_inner()
    }

    fn teardown_inner(&self) -> Result<(), NetError> {
        let mut state = self.state();
        state.pods.clear();
        if let Ok(ipam) = Ipam::new(self.config.subnet) {
            state.ipam = ipam;
        }
        PodNetwork::teardown_leftovers(&self.config)
    }

    /// Removes what a network with `config`'s names left behind (namespaces with the prefix,
    /// veths named after the bridge, the bridge), with no [`PodNetwork`] at hand.
    /// Every step is tried even when one fails; the first failure is returned.
    pub fn teardown_leftovers(config: &NetworkConfig) -> Result<(), NetError> {
        let pods = teardown_namespaces_and_veths(config);
        let bridge = match link_kind(&config.bridge) {
            Ok(Some(_)) => delete_link(&config.bridge, BRIDGE_FIX),
            Ok(None) => Ok(()),
            Err(e) => Err(e),
        };
        pods.and(bridge)
    }
}

impl Drop for PodNetwork {
    fn drop(&mut self) {
        if !self.torn_down {
            let _ = self.teardown_inner();
        }
    }
}

/// The kind of link `name` (`bridge`, `veth`, … or "" for a plain device), None if it does not
/// exist.
fn link_kind(name: &str) -> Result<Option<String>, NetError> {
    let links = cmd::ip_json(
        &["-j", "-d", "link", "show"],
        "check that iproute2 works (`ip link show`)",
    )?;
    Ok(links
        .as_array()
        .into_iter()
        .flatten()
        .find(|l| l["ifname"].as_str() == Some(name))
        .map(|l| {
            l["linkinfo"]["info_kind"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        }))
}

/// The names of the host's network namespaces (`ip -j netns list`).
pub fn list_netns() -> Result<Vec<String>, NetError> {
    let value = cmd::ip_json(
        &["-j", "netns", "list"],
        "check that iproute2 works (`ip netns list`)",
    )?;
    Ok(value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n["name"].as_str().map(str::to_owned))
        .collect())
}

/// The host's interface names.
fn list_links() -> Result<Vec<String>, NetError> {
    let value = cmd::ip_json(
        &["-j", "link", "show"],
        "check that iproute2 works (`ip link show`)",
    )?;
    Ok(value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n["ifname"].as_str().map(str::to_owned))
        .collect())
}

/// Removes the namespaces and veths with `config`'s names; tries them all, returns the first
/// failure.
fn teardown_namespaces_and_veths(config: &NetworkConfig) -> Result<(), NetError> {
    let mut first = Ok(());
    for ns in list_netns()? {
        if ns.starts_with(&config.netns_prefix) {
            first = first.and(remove_netns_and_veth(&ns, &[]));
        }
    }
    for link in list_links()? {
        if config.owns_veth(&link) {
            first = first.and(delete_link(&link, "delete the link by hand"));
        }
    }
    first
}

/// Whether a failed `ip` command failed only because its object is already gone (a veth whose
/// namespace was deleted goes away asynchronously, so it may be listed and then vanish). `ip`
/// says so in several words: "Cannot find device" when it looks the name up itself, the
/// kernel's "RTNETLINK answers: No such device" when the link vanished between the lookup and
/// the delete, "No such file" for a namespace.
fn already_gone(result: &Result<String, NetError>) -> bool {
    matches!(result, Err(NetError::Command { stderr, .. })
        if ["Cannot find device", "No such device", "No such file"]
            .iter()
            .any(|gone| stderr.contains(gone)))
}

/// `ip link del name`; a link already gone is fine.
fn delete_link(name: &str, fix: &str) -> Result<(), NetError> {
    let result = cmd::ip(&["link", "del", name], fix);
    if already_gone(&result) {
        return Ok(());
    }
    result.map(drop)
}

/// Deletes namespace `netns` (if named and present; the veth end inside goes with it, and its
/// peer with that) and the links `veths` that are still there.
fn remove_netns_and_veth(netns: &str, veths: &[&str]) -> Result<(), NetError> {
    if !netns.is_empty() && netns_path(netns).exists() {
        let result = cmd::ip(
            &["netns", "del", netns],
            "a process may still hold the namespace; stop the pod's processes first",
        );
        if !already_gone(&result) {
            result?;
        }
    }
    let links = if veths.is_empty() {
        Vec::new()
    } else {
        list_links()?
    };
    for veth in veths {
        if links.iter().any(|l| l == veth) {
            delete_link(veth, "delete the link by hand")?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn a_link_or_namespace_that_vanished_under_the_delete_counts_as_gone_and_other_failures_do_not()
    {
        let failed = |stderr: &str| -> Result<String, NetError> {
            Err(NetError::Command {
                command: "ip link del orxnt1v3".into(),
                status: "exit status: 2".into(),
                stderr: stderr.into(),
                fix: "delete the link by hand".into(),
            })
        };
        for gone in [
            "Cannot find device \"orxnt1v3\"",
            "RTNETLINK answers: No such device",
            "Cannot remove namespace file \"/run/netns/x\": No such file or directory",
        ] {
            assert!(already_gone(&failed(gone)), "{gone}");
        }
        assert!(!already_gone(&failed(
            "RTNETLINK answers: Operation not permitted"
        )));
        assert!(!already_gone(&Ok(String::new())));
    }

    #[test]
    fn veth_names_fit_the_kernel_limit_or_the_config_is_refused() {
        let ok = NetworkConfig::default();
        ok.validate(&Ipam::new(ok.subnet).unwrap()).unwrap();
        assert_eq!(ok.host_veth(254), "orrery0v254");
        let long = NetworkConfig::named("orrery-bridge", "10.213.0.0/24".parse().unwrap());
        let err = long.validate(&Ipam::new(long.subnet).unwrap()).unwrap_err();
        assert!(err.to_string().contains("at most 11 characters"), "{err}");
        let bad = NetworkConfig::named("a b", "10.213.0.0/24".parse().unwrap());
        assert!(bad.validate(&Ipam::new(bad.subnet).unwrap()).is_err());
    }

    #[test]
    fn the_gateway_is_the_subnets_first_host_address_before_the_network_exists() {
        assert_eq!(
            NetworkConfig::default().gateway().unwrap(),
            Ipv4Addr::new(10, 213, 0, 1)
        );
        let c = NetworkConfig::named("orx1", "10.9.8.77/25".parse().unwrap());
        assert_eq!(c.gateway().unwrap(), Ipv4Addr::new(10, 9, 8, 1));
        let tiny = NetworkConfig::named("orx1", "10.9.8.1/31".parse().unwrap());
        assert!(tiny.gateway().is_err());
    }

    #[test]
    fn only_this_networks_veths_are_its_own() {
        let c = NetworkConfig::named("orx1", "10.213.0.0/24".parse().unwrap());
        assert!(c.owns_veth("orx1v12"));
        assert!(c.owns_veth("orx1p3"));
        assert!(!c.owns_veth("orx1"));
        assert!(!c.owns_veth("orx1v"));
        assert!(!c.owns_veth("orx12v3x"));
        assert!(!c.owns_veth("eth0"));
        assert_eq!(c.netns_prefix, "orx1-");
    }
}
