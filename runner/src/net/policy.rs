//! The guard's policy and its rules (rules 5.22–5.24, 5.31, 5.33–5.38, 5.42).
//!
//! One [`GuardPolicy`] describes one registry entry's network (or the model providers'): whether
//! the entry is `privateNetwork`, whether it is a loopback entry, the deployment's private
//! allowlist, the optional egress proxy, byte caps and timeouts. The checks are pure functions
//! of the policy, the URL host and an address, so they are tested without sockets.

use super::classify::{AddrClass, classify, is_loopback_host, never_allowlistable};
use super::error::{GuardError, Rule};
use ipnet::IpNet;
use reqwest::Url;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;
use url::Host;

/// One entry of the private-network allowlist (`ORRERY_A2A_PRIVATE_ALLOW`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AllowRule {
    /// An exact host name (lowercase, as the URL parser gives it).
    Host(String),
    /// An address or network the resolved address must fall in.
    Net(IpNet),
    /// One exact address and port (`10.96.12.7:8080`, `[fd00::7]:8080`): that address on that
    /// port alone, and the only form that reaches inside the cluster's ranges (anchor 19).
    Socket(SocketAddr),
}

impl AllowRule {
    /// Parses `host`, `10.0.0.5`, `10.0.0.0/8` or `10.96.12.7:8080`. Refuses networks that are
    /// too broad or cover link-local, metadata, unspecified or loopback space (anchor 4).
    pub fn parse(text: &str) -> Result<Self, GuardError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(GuardError::Config(
                "an empty private-network allowlist entry".into(),
            ));
        }
        if let Ok(socket) = text.parse::<SocketAddr>() {
            if let Some(why) = never_allowlistable(&IpNet::from(socket.ip())) {
                return Err(GuardError::Config(format!("allowlist entry {text}: {why}")));
            }
            return Ok(Self::Socket(socket));
        }
        let net = if let Ok(net) = text.parse::<IpNet>() {
            Some(net)
        } else if let Ok(ip) = text.trim_matches(['[', ']']).parse::<IpAddr>() {
            Some(IpNet::from(ip))
        } else {
            None
        };
        if let Some(net) = net {
            if let Some(why) = never_allowlistable(&net) {
                return Err(GuardError::Config(format!("allowlist entry {text}: {why}")));
            }
            return Ok(Self::Net(net));
        }
        let host = text.to_ascii_lowercase();
        let valid = host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
            && !host.starts_with('.')
            && !host.ends_with('.');
        if !valid || host == "localhost" {
            return Err(GuardError::Config(format!(
                "allowlist entry {text:?} is neither a host name, an address nor a network"
            )));
        }
        Ok(Self::Host(host))
    }

    /// Parses a comma- or whitespace-separated list.
    pub fn parse_list(text: &str) -> Result<Vec<Self>, GuardError> {
        text.split([',', ' ', '\n', '\t'])
            .filter(|s| !s.trim().is_empty())
            .map(Self::parse)
            .collect()
    }
}

/// Byte caps and timeouts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Default cap on a reply body, in bytes (callers pass tighter caps for cards).
    pub max_body_bytes: u64,
    /// Cap on one SSE event, in bytes.
    pub max_sse_event_bytes: u64,
    /// Timeout for establishing a connection (TCP, proxy tunnel and TLS).
    pub connect_timeout: Duration,
    /// Timeout for a whole request including its body; `None` for long-lived streams.
    pub request_timeout: Option<Duration>,
    /// Timeout between two reads of a reply.
    pub read_timeout: Option<Duration>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_body_bytes: 1024 * 1024,
            max_sse_event_bytes: 256 * 1024,
            connect_timeout: Duration::from_secs(10),
            request_timeout: Some(Duration::from_secs(120)),
            read_timeout: Some(Duration::from_secs(60)),
        }
    }
}

/// Everything the guard needs to decide about one entry's traffic.
#[derive(Clone, Debug, Default)]
pub struct GuardPolicy {
    /// The deployment's private-network allowlist (hosts and networks).
    pub private_allow: Vec<AllowRule>,
    /// Whether the entry is `privateNetwork` (may reach allowlisted private addresses).
    pub private_network: bool,
    /// Whether the entry is a loopback entry (its endpoint host is loopback), so loopback hosts
    /// may reach loopback. See [`GuardPolicy::for_endpoint`].
    pub loopback: bool,
    /// Optional explicit egress proxy (`ORRERY_STUDIO_EGRESS_PROXY`, `http://host:port`): public
    /// https destinations go through it with CONNECT.
    pub egress_proxy: Option<Url>,
    /// Extra trusted root certificates, PEM (`ORRERY_A2A_CA_FILE` contents).
    pub extra_roots_pem: Vec<Vec<u8>>,
    /// Byte caps and timeouts.
    pub limits: Limits,
    /// The cluster's own ranges (`ORRERY_CLUSTER_RANGES`: its node, pod and service ranges and
    /// the API server's addresses): reached only at an allowlisted exact address and port,
    /// never on a component's port ([`orrery_crds::host::cluster_reach`]).
    pub cluster_ranges: Vec<IpNet>,
}

/// How a request reaches its destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// A direct connection to checked addresses.
    Direct,
    /// A CONNECT tunnel through the egress proxy (the proxy resolves the name).
    Proxy,
}

/// The host as text for messages (`[::1]` for IPv6).
pub(crate) fn host_text(host: &Host<&str>) -> String {
    match host {
        Host::Domain(d) => (*d).to_owned(),
        Host::Ipv4(ip) => ip.to_string(),
        Host::Ipv6(ip) => format!("[{ip}]"),
    }
}

impl GuardPolicy {
    /// A policy for an entry whose endpoint is `endpoint`: `loopback` is set when the endpoint
    /// host is a loopback host. The allowlist, proxy and limits are the deployment's.
    pub fn for_endpoint(endpoint: &Url, private_network: bool, deployment: &GuardPolicy) -> Self {
        let loopback = endpoint.host().is_some_and(|h| is_loopback_host(&h));
        Self {
            private_network,
            loopback,
            ..deployment.clone()
        }
    }

    /// Whether `host` (a name) or `addr` is on the private-network allowlist.
    pub fn allowlisted(&self, host: &Host<&str>, addr: Option<IpAddr>) -> bool {
        self.private_allow.iter().any(|rule| match rule {
            AllowRule::Host(h) => matches!(host, Host::Domain(d) if d.eq_ignore_ascii_case(h)),
            AllowRule::Net(net) => addr.is_some_and(|a| net.contains(&a)),
            AllowRule::Socket(socket) => addr.is_some_and(|a| a == socket.ip()),
        })
    }

    /// The allowlist's exact addresses and ports.
    fn exact_sockets(&self) -> Vec<SocketAddr> {
        self.private_allow
            .iter()
            .filter_map(|rule| match rule {
                AllowRule::Socket(socket) => Some(*socket),
                _ => None,
            })
            .collect()
    }

    /// Whether a connection for `host` may go to `addr` (an address and port) on the direct
    /// path: [`GuardPolicy::check_addr`], then the cluster's ranges with the port (anchor 19).
    pub fn check_socket(&self, host: &Host<&str>, addr: SocketAddr) -> Result<(), GuardError> {
        self.check_addr(host, addr.ip())?;
        // A private address the allowlist names only as an address and port is reached on
        // that port alone.
        let private = matches!(
            classify(addr.ip()).class,
            AddrClass::Private | AddrClass::Shared
        );
        let named_otherwise = self.private_allow.iter().any(|rule| match rule {
            AllowRule::Host(h) => matches!(host, Host::Domain(d) if d.eq_ignore_ascii_case(h)),
            AllowRule::Net(net) => net.contains(&addr.ip()),
            AllowRule::Socket(_) => false,
        });
        if private && !named_otherwise && !self.exact_sockets().contains(&addr) {
            return Err(GuardError::refused(
                host_text(host),
                Some(addr.ip()),
                Rule::PrivateNotAllowed,
            ));
        }
        orrery_crds::host::cluster_reach(addr, &self.cluster_ranges, &self.exact_sockets()).map_err(
            |why| {
                GuardError::refused(
                    host_text(host),
                    Some(addr.ip()),
                    Rule::ClusterRange(why.to_string()),
                )
            },
        )
    }

    /// A URL's literal address, with its port when the URL has one.
    fn check_literal(
        &self,
        host: &Host<&str>,
        addr: IpAddr,
        port: Option<u16>,
    ) -> Result<(), GuardError> {
        match port {
            Some(port) => self.check_socket(host, SocketAddr::new(addr, port)),
            None => self.check_addr(host, addr),
        }
    }

    /// Whether a connection for `host` may go to `addr` on the direct path. Inside the
    /// cluster's ranges only an address the allowlist names with a port passes here; the port
    /// is checked at connect ([`GuardPolicy::check_socket`]).
    pub fn check_addr(&self, host: &Host<&str>, addr: IpAddr) -> Result<(), GuardError> {
        let refuse = |rule| Err(GuardError::refused(host_text(host), Some(addr), rule));
        if let Err(why) =
            orrery_crds::host::cluster_address(addr, &self.cluster_ranges, &self.exact_sockets())
        {
            return refuse(Rule::ClusterRange(why.to_string()));
        }
        let classified = classify(addr);
        if let Some(v4) = classified.embedded
            && classified.class != AddrClass::Public
        {
            if matches!(classified.class, AddrClass::LinkLocal | AddrClass::Metadata) {
                return refuse(Rule::LinkLocalOrMetadata);
            }
            return refuse(Rule::EmbeddedNonPublic {
                v4,
                class: classified.class,
            });
        }
        let loopback_host = is_loopback_host(host);
        match classified.class {
            AddrClass::LinkLocal | AddrClass::Metadata => refuse(Rule::LinkLocalOrMetadata),
            AddrClass::Tunnel => refuse(Rule::Tunnel),
            class @ (AddrClass::Unspecified
            | AddrClass::Multicast
            | AddrClass::Broadcast
            | AddrClass::Documentation
            | AddrClass::Reserved) => refuse(Rule::NotUnicast(class)),
            AddrClass::Loopback => {
                if loopback_host && self.loopback {
                    Ok(())
                } else {
                    refuse(Rule::LoopbackNotAllowed)
                }
            }
            _ if loopback_host => refuse(Rule::LoopbackHostNotLoopback),
            AddrClass::Private | AddrClass::Shared => {
                if self.private_network && self.allowlisted(host, Some(addr)) {
                    Ok(())
                } else {
                    refuse(Rule::PrivateNotAllowed)
                }
            }
            AddrClass::Public => {
                if self.egress_proxy.is_some() {
                    refuse(Rule::PublicOnDirectPathWithProxy)
                } else {
                    Ok(())
                }
            }
        }
    }

    /// Checks every address a name resolved to: one refused address refuses the name.
    pub fn check_resolved(&self, host: &Host<&str>, addrs: &[IpAddr]) -> Result<(), GuardError> {
        if addrs.is_empty() {
            return Err(GuardError::Resolve {
                host: host_text(host),
                message: "no addresses".into(),
            });
        }
        addrs.iter().try_for_each(|a| self.check_addr(host, *a))
    }

    /// Checks a URL before any connection and decides its route: scheme (https, or http to a
    /// loopback host), no userinfo, IP literals classified, proxy eligibility. Names are checked
    /// again at every connect on the addresses they resolve to. A parsed URL no longer shows how
    /// its host was spelled: text becomes a URL through [`super::parse_url`], which refuses a
    /// loopback host not written exactly (rule 5.24).
    pub fn check_url(&self, url: &Url) -> Result<Route, GuardError> {
        let host = url
            .host()
            .ok_or_else(|| GuardError::refused(url.as_str(), None, Rule::NoHost))?;
        let text = host_text(&host);
        let scheme = url.scheme();
        if scheme != "https" && scheme != "http" {
            return Err(GuardError::refused(
                text,
                None,
                Rule::Scheme(scheme.to_owned()),
            ));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(GuardError::refused(text, None, Rule::Userinfo));
        }
        let loopback_host = is_loopback_host(&host);
        if scheme == "http" && !loopback_host {
            // A literal address is named by its class, in the validator's words (issue 29).
            let class = match host {
                Host::Domain(_) => None,
                Host::Ipv4(ip) => Some(classify(IpAddr::V4(ip)).class),
                Host::Ipv6(ip) => Some(classify(IpAddr::V6(ip)).class),
            };
            return Err(GuardError::refused(
                text,
                None,
                Rule::PlainHttpOffLoopback(class),
            ));
        }
        let route = self.route(url);
        match (&host, route) {
            (Host::Ipv4(ip), Route::Direct) => {
                self.check_literal(&host, IpAddr::V4(*ip), url.port_or_known_default())?;
            }
            (Host::Ipv6(ip), Route::Direct) => {
                self.check_literal(&host, IpAddr::V6(*ip), url.port_or_known_default())?;
            }
            (Host::Ipv4(ip), Route::Proxy) => {
                // Only public literals are proxied (see `route`); check them all the same.
                let unproxied = GuardPolicy {
                    egress_proxy: None,
                    ..self.clone()
                };
                unproxied.check_addr(&host, IpAddr::V4(*ip))?;
            }
            (Host::Ipv6(_), Route::Proxy) => {
                return Err(GuardError::refused(text, None, Rule::Ipv6LiteralViaProxy));
            }
            (Host::Domain(_), _) => {}
        }
        Ok(route)
    }

    /// The route for `url`: through the egress proxy for https to public destinations of
    /// non-`privateNetwork` entries; direct for loopback hosts, private literals, allowlisted
    /// hosts, `privateNetwork` entries, plain http, and when no proxy is configured (rule 5.36).
    pub fn route(&self, url: &Url) -> Route {
        if self.egress_proxy.is_none() || url.scheme() != "https" || self.private_network {
            return Route::Direct;
        }
        let Some(host) = url.host() else {
            return Route::Direct;
        };
        if is_loopback_host(&host) || self.allowlisted(&host, None) {
            return Route::Direct;
        }
        match host {
            Host::Domain(_) => Route::Proxy,
            Host::Ipv4(ip) => {
                if classify(IpAddr::V4(ip)).class == AddrClass::Public {
                    Route::Proxy
                } else {
                    Route::Direct
                }
            }
            Host::Ipv6(ip) => {
                if classify(IpAddr::V6(ip)).class == AddrClass::Public {
                    Route::Proxy
                } else {
                    Route::Direct
                }
            }
        }
    }

    /// Validates the policy itself: the proxy URL must be `http://host:port` without path.
    pub fn validate(&self) -> Result<(), GuardError> {
        if let Some(proxy) = &self.egress_proxy
            && (proxy.scheme() != "http" || proxy.host().is_none() || proxy.path() != "/")
        {
            return Err(GuardError::Config(format!(
                "egress proxy {proxy} must be http://host:port (CONNECT is used for https destinations)"
            )));
        }
        Ok(())
    }
}

/// A scheme, host and port: where an entry's secrets may go (rule 5.42).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Origin {
    /// `http` or `https`.
    pub scheme: String,
    /// The host as the URL parser normalises it (lowercase names, `[v6]` literals).
    pub host: String,
    /// The port, or the scheme's default.
    pub port: u16,
}

impl Origin {
    /// The origin of `url`.
    pub fn of(url: &Url) -> Result<Self, GuardError> {
        let host = url
            .host()
            .ok_or_else(|| GuardError::refused(url.as_str(), None, Rule::NoHost))?;
        let port = url
            .port_or_known_default()
            .ok_or_else(|| GuardError::InvalidUrl {
                url: url.to_string(),
                reason: "no port and no default port for its scheme".into(),
            })?;
        Ok(Self {
            scheme: url.scheme().to_owned(),
            host: host_text(&host),
            port,
        })
    }

    /// Parses a URL or origin string (`https://api.example.com[:port][/…]`).
    pub fn parse(text: &str) -> Result<Self, GuardError> {
        Self::of(&super::written::parse_url(text)?)
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}:{}", self.scheme, self.host, self.port)
    }
}

/// Whether credentials may be attached to a request for `request_url`: only when its origin is
/// exactly one of the entry's origins. Callers check this before adding any secret.
pub fn authorize(request_url: &Url, entry_origins: &[Origin]) -> bool {
    Origin::of(request_url).is_ok_and(|o| entry_origins.contains(&o))
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
