//! What the host has: its addresses (a pod subnet must not overlap them) and, read only, what its
//! firewall does to bridged traffic. Nothing here changes the host.

use std::net::IpAddr;

use ipnet::{IpNet, Ipv4Net};

use super::NetError;
use super::cmd;

/// One address of a host interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostAddress {
    pub interface: String,
    pub net: IpNet,
}

/// Every address on the host's interfaces (`ip -j addr show`).
pub fn host_addresses() -> Result<Vec<HostAddress>, NetError> {
    let args = ["-j", "addr", "show"];
    let value = cmd::ip_json(&args, "check that iproute2 works (`ip addr show`)")?;
    let mut out = Vec::new();
    for link in value.as_array().into_iter().flatten() {
        let interface = link["ifname"].as_str().unwrap_or_default().to_owned();
        for info in link["addr_info"].as_array().into_iter().flatten() {
            let (Some(local), Some(prefix)) = (info["local"].as_str(), info["prefixlen"].as_u64())
            else {
                continue;
            };
            let Ok(addr) = local.parse::<IpAddr>() else {
                continue;
            };
            let Ok(prefix) = u8::try_from(prefix) else {
                continue;
            };
            if let Ok(net) = IpNet::new(addr, prefix) {
                out.push(HostAddress {
                    interface: interface.clone(),
                    net,
                });
            }
        }
    }
    Ok(out)
}

/// The first host address (on an interface other than `own_bridge`) whose network overlaps
/// `subnet`.
pub fn overlapping<'a>(
    subnet: Ipv4Net,
    own_bridge: &str,
    addresses: &'a [HostAddress],
) -> Option<&'a HostAddress> {
    addresses.iter().find(|a| {
        a.interface != own_bridge
            && match a.net {
                IpNet::V4(net) => {
                    let net = net.trunc();
                    net.contains(&subnet.network()) || subnet.contains(&net.network())
                }
                IpNet::V6(_) => false,
            }
    })
}

/// A base chain of the host's ruleset on the forward hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForwardChain {
    pub family: String,
    pub table: String,
    pub chain: String,
    pub policy: String,
}

/// What the host's firewall does to traffic between pods on the bridge, read without changing
/// anything: whether bridged IPv4/IPv6 frames are passed to the host's ip/ip6 hooks
/// (`br_netfilter`'s `net.bridge.bridge-nf-call-iptables`), and the host's forward base chains
/// (ip, ip6, inet, and bridge: a bridge-family chain sees bridged frames in any case).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostFirewall {
    /// `net.bridge.bridge-nf-call-iptables` (None: `br_netfilter` is not loaded).
    pub bridge_calls_iptables: Option<bool>,
    /// `net.bridge.bridge-nf-call-ip6tables`.
    pub bridge_calls_ip6tables: Option<bool>,
    /// The host's base chains on the forward hook (from `nft -j list chains`); None when the
    /// ruleset could not be read.
    pub forward_chains: Option<Vec<ForwardChain>>,
}

impl HostFirewall {
    /// Whether pod-to-pod IPv4 traffic on the bridge may be dropped by the host's firewall: the
    /// bridge hands it to the host's forward hook and a forward chain drops by default. (Rules
    /// inside such a chain may drop it too; [`HostFirewall::describe`] names the chains.)
    pub fn may_drop_bridged_traffic(&self) -> bool {
        let chains = self.forward_chains.as_deref().unwrap_or_default();
        let drops = |family: &str| {
            chains
                .iter()
                .any(|c| c.family == family && c.policy == "drop")
        };
        // A bridge-family forward chain sees bridged frames whatever br_netfilter says.
        drops("bridge")
            || (self.bridge_calls_iptables == Some(true) && (drops("ip") || drops("inet")))
    }

    /// One paragraph for a log or an error.
    pub fn describe(&self) -> String {
        let sysctl = |v: Option<bool>| match v {
            Some(true) => "1 (bridged frames go through the host's hooks)",
            Some(false) => "0 (bridged frames skip the host's hooks)",
            None => "absent (br_netfilter not loaded: bridged frames skip the host's hooks)",
        };
        let chains = match &self.forward_chains {
            None => "the host's ruleset could not be read".to_owned(),
            Some(c) if c.is_empty() => "the host has no forward base chain".to_owned(),
            Some(c) => c
                .iter()
                .map(|c| format!("{} {} {} policy {}", c.family, c.table, c.chain, c.policy))
                .collect::<Vec<_>>()
                .join(", "),
        };
        let verdict = if self.may_drop_bridged_traffic() {
            "pod-to-pod traffic on the bridge is DROPPED by the host's forward policy; pods still \
             reach the gateway (the input hook). Fix it on the host, not here: an accept for the \
             bridge in the host's own forward chain, or net.bridge.bridge-nf-call-iptables=0"
        } else {
            "the host's firewall does not drop bridged pod-to-pod traffic by policy"
        };
        format!(
            "bridge-nf-call-iptables: {}; bridge-nf-call-ip6tables: {}; forward chains: {}; {}",
            sysctl(self.bridge_calls_iptables),
            sysctl(self.bridge_calls_ip6tables),
            chains,
            verdict
        )
    }
}

fn read_flag(path: &str) -> Option<bool> {
    std::fs::read_to_string(path).ok().map(|s| s.trim() != "0")
}

/// Reads the host's firewall as it concerns bridged traffic; changes nothing (`nft -j list
/// chains` and two sysctl files).
pub fn inspect_host_firewall() -> HostFirewall {
    let forward_chains = cmd::run("nft", &["-j", "list", "chains"], None, "")
        .ok()
        .and_then(|out| serde_json::from_str::<serde_json::Value>(&out).ok())
        .map(|v| forward_chains(&v));
    HostFirewall {
        bridge_calls_iptables: read_flag("/proc/sys/net/bridge/bridge-nf-call-iptables"),
        bridge_calls_ip6tables: read_flag("/proc/sys/net/bridge/bridge-nf-call-ip6tables"),
        forward_chains,
    }
}

fn forward_chains(value: &serde_json::Value) -> Vec<ForwardChain> {
    value["nftables"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|item| item.get("chain"))
        .filter(|c| c["hook"].as_str() == Some("forward"))
        .filter(|c| matches!(c["family"].as_str(), Some("ip" | "ip6" | "inet" | "bridge")))
        .map(|c| ForwardChain {
            family: c["family"].as_str().unwrap_or_default().to_owned(),
            table: c["table"].as_str().unwrap_or_default().to_owned(),
            chain: c["name"].as_str().unwrap_or_default().to_owned(),
            policy: c["policy"].as_str().unwrap_or("accept").to_owned(),
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn addr(interface: &str, net: &str) -> HostAddress {
        HostAddress {
            interface: interface.into(),
            net: net.parse().unwrap(),
        }
    }

    #[test]
    fn a_subnet_overlapping_a_host_address_is_found_and_the_own_bridge_is_not() {
        let host = [
            addr("lo", "127.0.0.1/8"),
            addr("eth0", "192.0.2.2/24"),
            addr("eth0", "fd00::2/64"),
            addr("orrery0", "10.213.0.1/24"),
        ];
        let cases = [
            ("10.213.0.0/24", None),
            ("192.0.2.128/25", Some("eth0")),
            ("192.0.0.0/16", Some("eth0")),
            ("127.5.0.0/24", Some("lo")),
            ("10.214.0.0/24", None),
        ];
        for (subnet, want) in cases {
            let got = overlapping(subnet.parse().unwrap(), "orrery0", &host);
            assert_eq!(got.map(|a| a.interface.as_str()), want, "{subnet}");
        }
        let other_bridge = overlapping("10.213.0.0/24".parse().unwrap(), "orx1", &host);
        assert_eq!(other_bridge.map(|a| a.interface.as_str()), Some("orrery0"));
    }

    #[test]
    fn forward_chains_with_a_drop_policy_mean_bridged_traffic_may_be_dropped() {
        let json: serde_json::Value = serde_json::from_str(
            r#"{"nftables":[{"metainfo":{}},
              {"chain":{"family":"ip","table":"filter","name":"FORWARD","hook":"forward","policy":"drop"}},
              {"chain":{"family":"ip","table":"nat","name":"POSTROUTING","hook":"postrouting","policy":"accept"}},
              {"chain":{"family":"bridge","table":"b","name":"f","hook":"forward","policy":"drop"}}]}"#,
        )
        .unwrap();
        let chains: Vec<ForwardChain> = forward_chains(&json)
            .into_iter()
            .filter(|c| c.family != "bridge")
            .collect();
        assert_eq!(chains.len(), 1);
        assert_eq!(forward_chains(&json).len(), 2);
        let mut fw = HostFirewall {
            bridge_calls_iptables: Some(true),
            bridge_calls_ip6tables: Some(true),
            forward_chains: Some(chains),
        };
        assert!(fw.may_drop_bridged_traffic());
        assert!(fw.describe().contains("DROPPED"), "{}", fw.describe());
        fw.bridge_calls_iptables = None;
        assert!(!fw.may_drop_bridged_traffic());
        fw.bridge_calls_iptables = Some(true);
        fw.forward_chains = Some(Vec::new());
        assert!(!fw.may_drop_bridged_traffic());
        fw.bridge_calls_iptables = Some(false);
        fw.forward_chains = Some(forward_chains(&json));
        assert!(
            fw.may_drop_bridged_traffic(),
            "a bridge-family chain sees bridged frames"
        );
    }
}
