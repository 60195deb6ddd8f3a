//! One host classifier for validation and the runtime guard (rules 5.6, 5.22–5.24; anchors
//! 6–9, 19): whether a URL's host is loopback, and the class of an IP address. Pure: no DNS,
//! no sockets. `orrery validate` (plain http only to loopback) and the runner's network guard
//! (`runner/src/net`) both call it, so they read every host alike: the URL parser (WHATWG, the
//! runtime's) turns `127.1`, `0x7f000001`, `017700000001` and `2130706433` into 127.0.0.1,
//! and `LOCALHOST` into `localhost`.
//!
//! Our own address table (std's `is_global` is unstable and misses CGNAT, NAT64, 6to4 …). IPv6
//! forms that embed an IPv4 address (mapped `::ffff:a.b.c.d`, SIIT `::ffff:0:a.b.c.d`,
//! compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`) are unwrapped and classified as the embedded
//! address; 6to4 (`2002::/16`) and Teredo (`2001::/32`) are tunnel forms and refused outright.

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use serde::Serialize;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;
use url::Host;

/// What kind of address an IP is, for the guard's rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AddrClass {
    /// Globally routable unicast.
    Public,
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// RFC 1918 and IPv6 unique-local `fc00::/7`.
    Private,
    /// Carrier-grade NAT shared space `100.64.0.0/10` (RFC 6598): not public, and reached as
    /// private addresses are (a `privateNetwork` entry on the deployment's allowlist).
    Shared,
    /// `169.254.0.0/16`, `fe80::/10`: never reachable.
    LinkLocal,
    /// Cloud metadata services (`169.254.169.254`, `fd00:ec2::254`, `100.100.100.200`): never
    /// reachable.
    Metadata,
    /// `0.0.0.0/8`, `::` (Linux connects these to the local host).
    Unspecified,
    /// `224.0.0.0/4`, `ff00::/8`.
    Multicast,
    /// `255.255.255.255`.
    Broadcast,
    /// `192.0.2.0/24`, `198.51.100.0/24`, `203.0.113.0/24`, `2001:db8::/32`, `3fff::/20`.
    Documentation,
    /// Reserved or special-purpose space that is not ordinary unicast (`240.0.0.0/4`,
    /// `192.0.0.0/24`, `198.18.0.0/15`, the rest of `::/8`, `64:ff9b:1::/48`, `100::/64`,
    /// `2001::/23` outside Teredo, `fec0::/10`, anything outside `2000::/3` …).
    Reserved,
    /// 6to4 (`2002::/16`) and Teredo (`2001::/32`): tunnels to another address.
    Tunnel,
}

impl AddrClass {
    /// A short human name, used in refusal messages.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Public => "public",
            Self::Loopback => "loopback",
            Self::Private => "private",
            Self::Shared => "carrier-grade NAT shared",
            Self::LinkLocal => "link-local",
            Self::Metadata => "cloud metadata",
            Self::Unspecified => "unspecified",
            Self::Multicast => "multicast",
            Self::Broadcast => "broadcast",
            Self::Documentation => "documentation",
            Self::Reserved => "reserved",
            Self::Tunnel => "6to4/Teredo tunnel",
        }
    }

    /// The short name with its indefinite article ("a private", "an unspecified"), for
    /// messages that say "… is an unspecified address".
    pub fn with_article(self) -> String {
        let name = self.describe();
        let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        };
        format!("{article} {name}")
    }

    /// Whether the guard reaches this class only for a `privateNetwork` entry whose host or
    /// address is on the deployment's allowlist.
    pub fn is_private(self) -> bool {
        matches!(self, Self::Private | Self::Shared)
    }
}

/// The class of an address, and the IPv4 address it embeds if it is an embedding IPv6 form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Classified {
    /// The class (of the embedded IPv4 address when `embedded` is set).
    pub class: AddrClass,
    /// The IPv4 address inside a mapped, SIIT, compatible or NAT64 IPv6 address.
    pub embedded: Option<Ipv4Addr>,
}

fn nets(list: &[&str]) -> Vec<IpNet> {
    list.iter().filter_map(|s| s.parse().ok()).collect()
}

/// IPv4 table, first match wins (exact metadata addresses before their ranges).
static V4_TABLE: LazyLock<Vec<(Vec<IpNet>, AddrClass)>> = LazyLock::new(|| {
    vec![
        (
            nets(&["169.254.169.254/32", "100.100.100.200/32"]),
            AddrClass::Metadata,
        ),
        (nets(&["0.0.0.0/8"]), AddrClass::Unspecified),
        (nets(&["127.0.0.0/8"]), AddrClass::Loopback),
        (nets(&["169.254.0.0/16"]), AddrClass::LinkLocal),
        (
            nets(&["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"]),
            AddrClass::Private,
        ),
        (nets(&["100.64.0.0/10"]), AddrClass::Shared),
        (
            nets(&["192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"]),
            AddrClass::Documentation,
        ),
        (nets(&["255.255.255.255/32"]), AddrClass::Broadcast),
        (nets(&["224.0.0.0/4"]), AddrClass::Multicast),
        (
            nets(&[
                "192.0.0.0/24",
                "192.88.99.0/24",
                "198.18.0.0/15",
                "240.0.0.0/4",
            ]),
            AddrClass::Reserved,
        ),
    ]
});

/// IPv6 table for addresses that embed nothing, first match wins.
static V6_TABLE: LazyLock<Vec<(Vec<IpNet>, AddrClass)>> = LazyLock::new(|| {
    vec![
        (nets(&["fd00:ec2::254/128"]), AddrClass::Metadata),
        (nets(&["::/128"]), AddrClass::Unspecified),
        (nets(&["::1/128"]), AddrClass::Loopback),
        (nets(&["2001::/32", "2002::/16"]), AddrClass::Tunnel),
        (
            nets(&["2001:db8::/32", "3fff::/20"]),
            AddrClass::Documentation,
        ),
        (nets(&["fe80::/10"]), AddrClass::LinkLocal),
        (nets(&["fc00::/7"]), AddrClass::Private),
        (nets(&["ff00::/8"]), AddrClass::Multicast),
        (
            nets(&[
                "::/8",
                "64:ff9b:1::/48",
                "100::/64",
                "2001::/23",
                "fec0::/10",
            ]),
            AddrClass::Reserved,
        ),
        (nets(&["2000::/3"]), AddrClass::Public),
    ]
});

static NAT64: LazyLock<Option<Ipv6Net>> = LazyLock::new(|| "64:ff9b::/96".parse().ok());

fn lookup(table: &[(Vec<IpNet>, AddrClass)], ip: IpAddr) -> Option<AddrClass> {
    table
        .iter()
        .find(|(nets, _)| nets.iter().any(|n| n.contains(&ip)))
        .map(|(_, class)| *class)
}

/// Classifies an IPv4 address.
pub fn classify_v4(ip: Ipv4Addr) -> AddrClass {
    lookup(&V4_TABLE, IpAddr::V4(ip)).unwrap_or(AddrClass::Public)
}

/// The IPv4 address embedded in a mapped, SIIT, compatible or NAT64 (`64:ff9b::/96`) address.
pub fn embedded_ipv4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let tail = Ipv4Addr::new(
        (s[6] >> 8) as u8,
        (s[6] & 0xff) as u8,
        (s[7] >> 8) as u8,
        (s[7] & 0xff) as u8,
    );
    let head_zero = s[..4].iter().all(|x| *x == 0);
    // ::ffff:a.b.c.d (mapped) and ::ffff:0:a.b.c.d (SIIT)
    if head_zero && ((s[4] == 0 && s[5] == 0xffff) || (s[4] == 0xffff && s[5] == 0)) {
        return Some(tail);
    }
    // ::a.b.c.d (compatible; :: and ::1 are not)
    if head_zero && s[4] == 0 && s[5] == 0 && u32::from(tail) > 1 {
        return Some(tail);
    }
    if NAT64.as_ref().is_some_and(|n| n.contains(&ip)) {
        return Some(tail);
    }
    None
}

/// Classifies an address, unwrapping IPv6 forms that embed an IPv4 address.
pub fn classify(ip: IpAddr) -> Classified {
    match ip {
        IpAddr::V4(v4) => Classified {
            class: classify_v4(v4),
            embedded: None,
        },
        IpAddr::V6(v6) => match embedded_ipv4(v6) {
            Some(v4) => Classified {
                class: classify_v4(v4),
                embedded: Some(v4),
            },
            None => Classified {
                class: lookup(&V6_TABLE, IpAddr::V6(v6)).unwrap_or(AddrClass::Reserved),
                embedded: None,
            },
        },
    }
}

/// Whether `host` is a loopback host: `127.0.0.0/8`, `::1` or exactly `localhost` (`localhost.`
/// and `localhost.example` are not). An IPv6 form embedding 127.0.0.1 (`::ffff:127.0.0.1`) is
/// not a loopback host: the guard refuses it as an embedded non-public address.
pub fn is_loopback_host(host: &Host<&str>) -> bool {
    match host {
        Host::Domain(d) => d.eq_ignore_ascii_case("localhost"),
        Host::Ipv4(ip) => ip.is_loopback(),
        Host::Ipv6(ip) => ip.is_loopback(),
    }
}

/// Whether the URL `text` parses (as the runtime parses it) with a loopback host.
pub fn is_loopback_url(text: &str) -> bool {
    url::Url::parse(text)
        .ok()
        .is_some_and(|u| u.host().is_some_and(|h| is_loopback_host(&h)))
}

/// The hosts plain http may reach, written exactly so (the CRD's CEL rule).
pub const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// The scheme (lower-case) and the host of a URL as it is written, the way the apiserver's URL
/// library reads it: after any `user@`, before any `:port`, IPv6 without its brackets. `None`
/// when the text is not a URL with a host.
pub fn scheme_and_host(text: &str) -> Option<(String, String)> {
    url::Url::parse(text).ok()?;
    let (scheme, rest) = text.split_once(':')?;
    let after_slashes = rest.strip_prefix("//")?;
    let authority = after_slashes
        .split(['/', '?', '#'])
        .next()
        .unwrap_or_default();
    let host_port = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host_port)| host_port);
    let host = if let Some(bracketed) = host_port.strip_prefix('[') {
        bracketed.split_once(']').map_or("", |(host, _)| host)
    } else {
        host_port
            .rsplit_once(':')
            .map_or(host_port, |(host, _)| host)
    };
    (!host.is_empty()).then(|| (scheme.to_ascii_lowercase(), host.to_owned()))
}

/// What is wrong with the URL `text` when its host reaches loopback as the runtime parses it
/// ([`is_loopback_url`]: `127.1`, `0x7f000001`, `017700000001`, `2130706433`, `127.0.0.1.`,
/// `127.0.0.2`, `LOCALHOST`, `[0:0:0:0:0:0:0:1]` …) but is not written exactly as one of
/// [`LOOPBACK_HOSTS`], which is all the apiserver's rule and the guard accept for loopback
/// (rule 5.24): the end of a message, or `None` when the URL is not loopback or is written
/// exactly. One check and one wording for `orrery validate` and the network guard.
pub fn loopback_spelling_problem(text: &str) -> Option<String> {
    if !is_loopback_url(text) {
        return None;
    }
    let written = scheme_and_host(text).map(|(_, host)| host);
    if written
        .as_deref()
        .is_some_and(|host| LOOPBACK_HOSTS.contains(&host))
    {
        return None;
    }
    Some(format!(
        "its host {} reaches loopback, but is not written exactly as localhost, 127.0.0.1 or [::1] (the apiserver reads the host as written, the runtime as parsed); write one of those",
        written.map_or_else(|| "(unreadable)".to_owned(), |host| format!("{host:?}"))
    ))
}

/// The CRD's URL rule, mirrored, on the runtime's reading of the host: a URL whose scheme is
/// https, or http to a host that is loopback to the runtime's guard ([`is_loopback_url`]) and
/// written exactly as one of [`LOOPBACK_HOSTS`], as the CEL rule requires. So
/// `http://localhost.evil.example/` and `http://localhost@evil.example/` are not loopback, and
/// plain http passes only where both the apiserver and the guard accept it. The one check
/// `orrery validate` and the operator's RegistryEntry controller apply.
pub fn is_secure_url(text: &str) -> bool {
    match scheme_and_host(text) {
        Some((scheme, _)) if scheme == "https" => true,
        Some((scheme, host)) if scheme == "http" => {
            LOOPBACK_HOSTS.contains(&host.as_str()) && is_loopback_url(text)
        }
        _ => false,
    }
}

/// Why the guard will never connect to the literal address in the URL `text`, for an entry
/// with `private_network` as its flag: `None` when the host is a name (only its resolved
/// addresses can tell), a public address, a loopback address, or a private one on a
/// `privateNetwork` entry (the deployment's allowlist decides that at run time). The same
/// table as the guard's connect-time check, so `orrery validate` refuses before a run what
/// the guard would refuse during it.
pub fn literal_address_refusal(text: &str, private_network: bool) -> Option<String> {
    let url = url::Url::parse(text).ok()?;
    let ip = match url.host()? {
        Host::Domain(_) => return None,
        Host::Ipv4(ip) => IpAddr::V4(ip),
        Host::Ipv6(ip) => IpAddr::V6(ip),
    };
    let classified = classify(ip);
    if let Some(v4) = classified.embedded
        && classified.class != AddrClass::Public
    {
        return Some(format!(
            "{ip} embeds the {} address {v4}, which the network guard never connects to",
            classified.class.describe()
        ));
    }
    match classified.class {
        AddrClass::Public | AddrClass::Loopback => None,
        class if class.is_private() && private_network => None,
        class if class.is_private() => Some(format!(
            "{ip} is {} address, which only a privateNetwork entry on the deployment's allowlist may reach; set privateNetwork: true (and ask for the host to be allowlisted) or use a public address",
            class.with_article()
        )),
        class => Some(format!(
            "{ip} is {} address, which the network guard never connects to",
            class.with_article()
        )),
    }
}

/// Whether `net` covers an address that can never be allowlisted (link-local, metadata,
/// unspecified), or is too broad to be an allowlist entry (anchor 4): IPv4 shorter than /8,
/// IPv6 shorter than /32.
pub fn never_allowlistable(net: &IpNet) -> Option<&'static str> {
    let too_broad = match net {
        IpNet::V4(n) => n.prefix_len() < 8,
        IpNet::V6(n) => n.prefix_len() < 32,
    };
    if too_broad {
        return Some("it is too broad to be a private-network allowlist entry");
    }
    let forbidden = nets(&[
        "169.254.0.0/16",
        "100.100.100.200/32",
        "0.0.0.0/8",
        "fe80::/10",
        "fd00:ec2::254/128",
        "::/128",
    ]);
    let overlaps = |a: &IpNet, b: &IpNet| a.contains(&b.network()) || b.contains(&a.network());
    if forbidden.iter().any(|f| overlaps(f, net)) {
        return Some("link-local, metadata and unspecified addresses can never be allowlisted");
    }
    if let IpNet::V4(n) = net
        && Ipv4Net::new(Ipv4Addr::new(127, 0, 0, 0), 8).is_ok_and(|lo| lo.contains(n))
    {
        return Some("loopback is reached through loopback hosts, not the allowlist");
    }
    None
}

/// Ports of the cluster's own components that no run reaches, even at an address the
/// allowlist names exactly: the kubelet (10250 API, 10255 read-only, 10248 health), kube-proxy
/// (10249 metrics, 10256 health) and etcd (2379 clients, 2380 peers) (anchor 19).
pub const CLUSTER_COMPONENT_PORTS: [u16; 7] = [10248, 10249, 10250, 10255, 10256, 2379, 2380];

/// Why a run may not reach an address inside the cluster's own ranges.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClusterRefusal {
    /// The port is one of [`CLUSTER_COMPONENT_PORTS`].
    #[error(
        "{addr} is inside the cluster's range {range} and port {port} is a cluster component's \
         (kubelet, kube-proxy, etcd), which no run may reach"
    )]
    ComponentPort {
        /// The address and port.
        addr: std::net::SocketAddr,
        /// The range it is in.
        range: IpNet,
        /// The port.
        port: u16,
    },
    /// Inside a range, and the allowlist names no port of this address (checked before the
    /// port is known: a URL's literal host, a name's resolved addresses).
    #[error(
        "{addr} is inside the cluster's range {range} (its nodes, pods, services or API server), \
         which a run reaches only when the private-network allowlist names that exact address \
         with its port (e.g. {addr}:8080); a network or host on the allowlist is not enough"
    )]
    AddressNotNamed {
        /// The address.
        addr: IpAddr,
        /// The range it is in.
        range: IpNet,
    },
    /// Inside a range, and the allowlist does not name this address and port exactly.
    #[error(
        "{addr} is inside the cluster's range {range} (its nodes, pods, services or API server), \
         which a run reaches only when the private-network allowlist names that exact address and \
         port (e.g. {addr}); a network or host on the allowlist is not enough"
    )]
    NotExact {
        /// The address and port.
        addr: std::net::SocketAddr,
        /// The range it is in.
        range: IpNet,
    },
}

/// The IPv4 address an IPv6 form carries (mapped `::ffff:a.b.c.d`), else the address itself:
/// a range is matched however the address is written.
fn unmapped(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(addr, IpAddr::V4),
        IpAddr::V4(_) => addr,
    }
}

/// The cluster range (of `ranges`) that holds `addr`, if one does.
pub fn cluster_range_of(addr: IpAddr, ranges: &[IpNet]) -> Option<IpNet> {
    let plain = unmapped(addr);
    ranges
        .iter()
        .copied()
        .find(|r| r.contains(&addr) || r.contains(&plain))
}

/// Whether a run may reach `addr` (anchor 19): anywhere outside the cluster's `ranges` (its
/// node, pod and service ranges and the API server's addresses); inside them only at an
/// address and port the allowlist names exactly (`exact`), and never on a cluster component's
/// port. The runner's guard checks it at every connect; the operator's NetworkPolicy builder
/// before it lets a run's pod out.
pub fn cluster_reach(
    addr: std::net::SocketAddr,
    ranges: &[IpNet],
    exact: &[std::net::SocketAddr],
) -> Result<(), ClusterRefusal> {
    let Some(range) = cluster_range_of(addr.ip(), ranges) else {
        return Ok(());
    };
    if CLUSTER_COMPONENT_PORTS.contains(&addr.port()) {
        return Err(ClusterRefusal::ComponentPort {
            addr,
            range,
            port: addr.port(),
        });
    }
    let plain = unmapped(addr.ip());
    let named = exact
        .iter()
        .any(|e| e.port() == addr.port() && unmapped(e.ip()) == plain);
    if named {
        Ok(())
    } else {
        Err(ClusterRefusal::NotExact { addr, range })
    }
}

/// [`cluster_reach`] before the port is known: an address inside the cluster's `ranges` passes
/// only when `exact` names it with some port.
pub fn cluster_address(
    addr: IpAddr,
    ranges: &[IpNet],
    exact: &[std::net::SocketAddr],
) -> Result<(), ClusterRefusal> {
    let Some(range) = cluster_range_of(addr, ranges) else {
        return Ok(());
    };
    let plain = unmapped(addr);
    if exact.iter().any(|e| unmapped(e.ip()) == plain) {
        Ok(())
    } else {
        Err(ClusterRefusal::AddressNotNamed { addr, range })
    }
}

/// Reads a cluster range as the deployment config and the runner's environment write it: a
/// network (`10.96.0.0/12`, `fd00:10::/108`) or one address (`10.0.0.1`, the API server's).
pub fn parse_cluster_range(text: &str) -> Option<IpNet> {
    let text = text.trim();
    text.parse::<IpNet>().ok().or_else(|| {
        text.trim_matches(['[', ']'])
            .parse::<IpAddr>()
            .ok()
            .map(IpNet::from)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use AddrClass::*;

    #[test]
    fn inside_the_clusters_ranges_only_an_exactly_allowlisted_address_and_port_is_reached_and_never_a_components_port_anchor_19()
     {
        let ranges: Vec<IpNet> = ["10.0.0.0/16", "10.96.0.0/12", "192.168.1.10"]
            .iter()
            .map(|r| parse_cluster_range(r).unwrap())
            .collect();
        let exact: Vec<std::net::SocketAddr> = vec![
            "10.96.12.7:8080".parse().unwrap(),
            "10.0.0.5:10250".parse().unwrap(),
        ];
        let cases: [(&str, Result<(), &str>); 9] = [
            // Outside every range: not this rule's business.
            ("10.200.0.5:443", Ok(())),
            ("203.0.113.7:10250", Ok(())),
            // A Service address the allowlist names with its port.
            ("10.96.12.7:8080", Ok(())),
            ("[::ffff:10.96.12.7]:8080", Ok(())),
            // The same address on another port, or a neighbour.
            ("10.96.12.7:8081", Err("exact")),
            ("10.96.12.8:8080", Err("exact")),
            // A node's kubelet, even named exactly; kube-proxy and etcd likewise.
            ("10.0.0.5:10250", Err("component")),
            ("10.0.0.9:2379", Err("component")),
            // The API server's own address, given alone.
            ("192.168.1.10:6443", Err("exact")),
        ];
        for (addr, expected) in cases {
            let got = cluster_reach(addr.parse().unwrap(), &ranges, &exact);
            match (expected, &got) {
                (Ok(()), Ok(())) => {}
                (Err("exact"), Err(ClusterRefusal::NotExact { .. }))
                | (Err("component"), Err(ClusterRefusal::ComponentPort { .. })) => {}
                _ => panic!("{addr}: expected {expected:?}, got {got:?}"),
            }
        }
        let why = cluster_reach("10.0.3.4:80".parse().unwrap(), &ranges, &exact)
            .unwrap_err()
            .to_string();
        assert!(
            why.contains("10.0.0.0/16") && why.contains("exact address and port"),
            "{why}"
        );
        // Before the port is known, an address the allowlist names with any port passes.
        assert!(cluster_address("10.96.12.7".parse().unwrap(), &ranges, &exact).is_ok());
        assert!(matches!(
            cluster_address("10.96.12.8".parse().unwrap(), &ranges, &exact),
            Err(ClusterRefusal::AddressNotNamed { .. })
        ));
        assert!(cluster_address("10.200.0.1".parse().unwrap(), &ranges, &exact).is_ok());
        assert_eq!(parse_cluster_range("not a range"), None);
        assert_eq!(
            parse_cluster_range("[fd00::1]"),
            Some("fd00::1/128".parse().unwrap())
        );
    }

    #[test]
    fn addresses_fall_in_the_expected_class() {
        let cases: &[(&str, AddrClass, Option<&str>)] = &[
            ("93.184.216.34", Public, None),
            ("8.8.8.8", Public, None),
            ("2606:4700::1111", Public, None),
            ("127.0.0.1", Loopback, None),
            ("127.255.0.9", Loopback, None),
            ("::1", Loopback, None),
            ("10.1.2.3", Private, None),
            ("172.16.0.1", Private, None),
            ("172.31.255.255", Private, None),
            ("192.168.1.10", Private, None),
            ("100.64.0.1", Shared, None),
            ("100.127.255.254", Shared, None),
            ("fd12:3456::1", Private, None),
            ("169.254.1.1", LinkLocal, None),
            ("fe80::1", LinkLocal, None),
            ("fe81::1", LinkLocal, None),
            ("169.254.169.254", Metadata, None),
            ("fd00:ec2::254", Metadata, None),
            ("100.100.100.200", Metadata, None),
            ("0.0.0.0", Unspecified, None),
            ("0.1.2.3", Unspecified, None),
            ("::", Unspecified, None),
            ("224.0.0.1", Multicast, None),
            ("ff02::1", Multicast, None),
            ("255.255.255.255", Broadcast, None),
            ("192.0.2.1", Documentation, None),
            ("198.51.100.7", Documentation, None),
            ("203.0.113.9", Documentation, None),
            ("2001:db8::1", Documentation, None),
            ("240.0.0.1", Reserved, None),
            ("192.0.0.1", Reserved, None),
            ("198.18.0.1", Reserved, None),
            ("64:ff9b:1::1", Reserved, None),
            ("::5efe:10.0.0.1", Reserved, None),
            ("100::1", Reserved, None),
            ("fec0::1", Reserved, None),
            ("2002:a9fe:a9fe::", Tunnel, None),
            ("2002:7f00:1::", Tunnel, None),
            ("2001:0::1", Tunnel, None),
            ("2001:0:4136:e378:8000:63bf:3fff:fdd2", Tunnel, None),
            // embedded IPv4
            ("::ffff:127.0.0.1", Loopback, Some("127.0.0.1")),
            ("::ffff:7f00:1", Loopback, Some("127.0.0.1")),
            ("::127.0.0.1", Loopback, Some("127.0.0.1")),
            (
                "0:0:0:0:0:ffff:a9fe:a9fe",
                Metadata,
                Some("169.254.169.254"),
            ),
            ("::ffff:169.254.169.254", Metadata, Some("169.254.169.254")),
            ("::ffff:0:10.0.0.1", Private, Some("10.0.0.1")),
            ("64:ff9b::a9fe:a9fe", Metadata, Some("169.254.169.254")),
            (
                "64:ff9b::169.254.169.254",
                Metadata,
                Some("169.254.169.254"),
            ),
            ("64:ff9b::808:808", Public, Some("8.8.8.8")),
            ("::ffff:8.8.8.8", Public, Some("8.8.8.8")),
        ];
        for (text, class, embedded) in cases {
            let ip: IpAddr = text.parse().unwrap();
            let got = classify(ip);
            assert_eq!(got.class, *class, "{text}");
            assert_eq!(got.embedded, embedded.map(|e| e.parse().unwrap()), "{text}");
        }
    }

    #[test]
    fn dangerous_or_broad_allowlist_entries_are_rejected() {
        let bad = [
            "0.0.0.0/0",
            "::/0",
            "169.254.0.0/16",
            "169.254.169.254/32",
            "fe80::/10",
            "fd00:ec2::/64",
            "100.64.0.0/9",
            "100.100.100.0/24",
            "100.64.0.0/10",
            "127.0.0.0/8",
            "10.0.0.0/7",
        ];
        for text in bad {
            let net: IpNet = text.parse().unwrap();
            assert!(never_allowlistable(&net).is_some(), "{text}");
        }
        for text in ["10.0.0.0/8", "192.168.3.0/24", "fd12::/48", "100.64.0.0/16"] {
            let net: IpNet = text.parse().unwrap();
            assert_eq!(never_allowlistable(&net), None, "{text}");
        }
    }

    /// Table: the URL rule, the same verdicts the apiserver's CEL rule gives (checked against
    /// a real kube-apiserver v1.36).
    #[test]
    fn a_url_is_secure_only_when_https_or_http_to_an_exact_loopback_host() {
        let cases = [
            ("https://tools.example.com/mcp", true),
            ("HTTPS://tools.example.com/mcp", true),
            ("http://localhost:8080/mcp", true),
            ("http://127.0.0.1:7801/mcp", true),
            ("http://[::1]:9/x", true),
            ("http://localhost.evil.example/mcp", false),
            ("http://localhost@evil.example/", false),
            ("http://127.0.0.2/", false),
            ("http://LOCALHOST/", false),
            ("http://tools.example.com/mcp", false),
            ("https:/x", false),
            ("https://", false),
            ("https://:443/", false),
            ("not a url", false),
            ("/relative", false),
            ("ftp://example.com/", false),
        ];
        for (url, secure) in cases {
            assert_eq!(is_secure_url(url), secure, "{url}");
        }
    }

    /// Table (issue 29): every spelling of loopback the URL parser accepts but the apiserver's
    /// rule does not is named, whatever the scheme; exact ones and non-loopback hosts are not.
    #[test]
    fn a_loopback_host_not_written_exactly_is_named_in_every_spelling_rule_5_24() {
        let misspelled = [
            "http://0x7f000001/mcp",
            "http://017700000001/mcp",
            "http://2130706433/mcp",
            "http://127.1/mcp",
            "http://0177.0.0.1/mcp",
            "http://0x7f.0.0.1/mcp",
            "http://0x7f.1/mcp",
            "http://127.0.1/mcp",
            "http://127.0.0.1./mcp",
            "http://127.0.0.2/mcp",
            "http://LOCALHOST/mcp",
            "http://LocalHost:8080/mcp",
            "http://[0:0:0:0:0:0:0:1]/mcp",
            "http://[::0001]/mcp",
            "https://0x7f000001/mcp",
            "https://127.1/mcp",
        ];
        for text in misspelled {
            let why = loopback_spelling_problem(text);
            assert!(
                why.as_deref()
                    .is_some_and(|w| w.contains("not written exactly")),
                "{text}: {why:?}"
            );
            // the apiserver's rule lets https anywhere: the spelling check is the guard's
            assert_eq!(is_secure_url(text), text.starts_with("https:"), "{text}");
        }
        let not_named = [
            "http://127.0.0.1/mcp",
            "http://localhost:8080/mcp",
            "http://[::1]:9/mcp",
            "https://127.0.0.1/mcp",
            // embedded and look-alike forms are not loopback hosts: other rules refuse them
            "http://[::ffff:127.0.0.1]/mcp",
            "http://localhost./mcp",
            "http://localhost.evil.example/mcp",
            "http://0.0.0.0/mcp",
            "https://tools.example.com/mcp",
            "not a url",
        ];
        for text in not_named {
            assert_eq!(loopback_spelling_problem(text), None, "{text}");
        }
    }

    /// Table (issue 29): the validator names every class with its article, and calls
    /// 100.64.0.0/10 carrier-grade NAT shared space, not private.
    #[test]
    fn a_refused_literal_is_named_by_its_class_in_plain_words() {
        let cases = [
            (
                "https://0.0.0.0/",
                false,
                "0.0.0.0 is an unspecified address",
            ),
            ("https://[::]/", false, ":: is an unspecified address"),
            (
                "https://169.254.1.1/",
                false,
                "169.254.1.1 is a link-local address",
            ),
            (
                "https://224.0.0.1/",
                false,
                "224.0.0.1 is a multicast address",
            ),
            (
                "https://255.255.255.255/",
                false,
                "255.255.255.255 is a broadcast address",
            ),
            (
                "https://192.0.2.1/",
                false,
                "192.0.2.1 is a documentation address",
            ),
            (
                "https://10.0.0.1/",
                false,
                "10.0.0.1 is a private address, which only a privateNetwork",
            ),
            (
                "https://100.64.0.1/",
                false,
                "100.64.0.1 is a carrier-grade NAT shared address, which only a privateNetwork",
            ),
        ];
        for (text, private_network, start) in cases {
            let why = literal_address_refusal(text, private_network).unwrap_or_default();
            assert!(why.starts_with(start), "{text}: {why}");
        }
        assert_eq!(literal_address_refusal("https://100.64.0.1/", true), None);
    }
}
