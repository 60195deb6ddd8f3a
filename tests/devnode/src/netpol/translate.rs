//! NetworkPolicies → one nftables ruleset for one pod (see the module docs for the semantics).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::net::IpAddr;

use ipnet::IpNet;
use k8s_openapi::api::networking::v1::{NetworkPolicy, NetworkPolicyPeer, NetworkPolicyPort};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::{
    NamedPort, Options, PeerPod, PeerQuery, PeerResolver, Protocol, Ruleset, ServiceRoute,
    TargetPod, TranslateError, selector,
};

/// The table every ruleset defines (family inet: IPv4 and IPv6 in one).
const TABLE_DECL: &str = "inet orrery";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Egress,
    Ingress,
}

impl Direction {
    fn name(self) -> &'static str {
        match self {
            Direction::Egress => "egress",
            Direction::Ingress => "ingress",
        }
    }
    fn hook(self) -> &'static str {
        match self {
            Direction::Egress => "output",
            Direction::Ingress => "input",
        }
    }
    fn addr(self) -> &'static str {
        match self {
            Direction::Egress => "daddr",
            Direction::Ingress => "saddr",
        }
    }
    fn lo(self) -> &'static str {
        match self {
            Direction::Egress => "oifname \"lo\"",
            Direction::Ingress => "iifname \"lo\"",
        }
    }
    fn policy_type(self) -> &'static str {
        match self {
            Direction::Egress => "Egress",
            Direction::Ingress => "Ingress",
        }
    }
}

/// Where a rule's traffic may go (egress) or come from (ingress).
#[derive(Debug, Clone, PartialEq, Eq)]
enum PeerMatch {
    Any,
    Net { net: IpNet, except: Vec<IpNet> },
    Addr(IpAddr),
}

/// A rule's port as written.
#[derive(Debug, Clone, PartialEq, Eq)]
enum PortSpec {
    Any,
    Proto(Protocol),
    Range(Protocol, u16, u16),
    Named(Protocol, String),
}

/// A port to match.
#[derive(Debug, Clone, PartialEq, Eq)]
enum PortMatch {
    Any,
    Proto(Protocol),
    Range(Protocol, u16, u16),
}

/// One rule's peers (`to` or `from`) and ports.
type RuleParts<'a> = (
    Option<&'a Vec<NetworkPolicyPeer>>,
    Option<&'a Vec<NetworkPolicyPort>>,
);

/// A resolved peer: what to match, and the named ports of the pod it is (if it is one).
struct Peer {
    matches: PeerMatch,
    pod_ports: Option<Vec<NamedPort>>,
}

struct Ctx<'a, R: PeerResolver + ?Sized> {
    pod: &'a TargetPod<'a>,
    resolver: &'a R,
    notes: Vec<String>,
}

/// The ruleset for `pod` under `policies` (all of the cluster's or the pod's namespace's:
/// those of other namespaces and those not selecting the pod are skipped). Peers' selectors
/// go through `resolver`. See the module docs.
pub fn translate<R: PeerResolver + ?Sized>(
    pod: &TargetPod<'_>,
    policies: &[NetworkPolicy],
    resolver: &R,
    options: &Options,
) -> Result<Ruleset, TranslateError> {
    let mut selected: Vec<(String, &NetworkPolicy)> = Vec::new();
    for policy in policies {
        let namespace = policy
            .metadata
            .namespace
            .as_deref()
            .unwrap_or(pod.namespace);
        let id = format!(
            "{namespace}/{}",
            policy.metadata.name.as_deref().unwrap_or_default()
        );
        if namespace != pod.namespace {
            continue;
        }
        let pod_selector = policy
            .spec
            .as_ref()
            .and_then(|s| s.pod_selector.clone())
            .unwrap_or_default();
        let selects =
            selector::matches(&pod_selector, pod.labels).map_err(|problem| TranslateError {
                policy: id.clone(),
                problem: format!("spec.podSelector: {problem}"),
                fix: "correct the selector".into(),
            })?;
        if selects {
            selected.push((id, policy));
        }
    }
    selected.sort_by(|a, b| a.0.cmp(&b.0));

    let mut ctx = Ctx {
        pod,
        resolver,
        notes: Vec::new(),
    };
    let mut chains = String::new();
    let mut isolated = [false, false];
    for (i, dir) in [Direction::Egress, Direction::Ingress]
        .into_iter()
        .enumerate()
    {
        let affecting: Vec<&(String, &NetworkPolicy)> = selected
            .iter()
            .filter(|(_, p)| policy_types(p).contains(&dir.policy_type()))
            .collect();
        if affecting.is_empty() {
            continue;
        }
        isolated[i] = true;
        let mut lines: Vec<(String, String)> = Vec::new();
        if dir == Direction::Ingress {
            let mut nodes = options.node_addresses.clone();
            nodes.sort();
            nodes.dedup();
            for addr in nodes {
                lines.push((
                    render_match(dir, &PeerMatch::Addr(addr), &PortMatch::Any),
                    "the node".into(),
                ));
            }
        }
        for (id, policy) in affecting {
            let spec = policy.spec.as_ref();
            let rules: Vec<RuleParts<'_>> = match dir {
                Direction::Egress => spec
                    .and_then(|s| s.egress.as_ref())
                    .into_iter()
                    .flatten()
                    .map(|r| (r.to.as_ref(), r.ports.as_ref()))
                    .collect(),
                Direction::Ingress => spec
                    .and_then(|s| s.ingress.as_ref())
                    .into_iter()
                    .flatten()
                    .map(|r| (r.from.as_ref(), r.ports.as_ref()))
                    .collect(),
            };
            for (n, (peers, ports)) in rules.into_iter().enumerate() {
                let comment = format!("{id} {}[{n}]", dir.name());
                let namespace = id.split('/').next().unwrap_or_default();
                for (peer, port) in ctx.rule(dir, id, namespace, &comment, peers, ports)? {
                    lines.push((render_match(dir, &peer, &port), comment.clone()));
                }
            }
        }
        chains.push_str(&render_chain(dir, lines));
    }
    chains.push_str(&render_services(&options.services));
    let mut text =
        format!("table {TABLE_DECL}\ndelete table {TABLE_DECL}\ntable {TABLE_DECL} {{\n");
    text.push_str(&chains);
    text.push_str("}\n");
    Ok(Ruleset {
        text,
        policies: selected.iter().map(|(id, _)| id.clone()).collect(),
        egress_isolated: isolated[0],
        ingress_isolated: isolated[1],
        notes: ctx.notes,
    })
}

/// `spec.policyTypes`, or its default: Ingress, and Egress when there are egress rules.
fn policy_types(policy: &NetworkPolicy) -> Vec<&str> {
    let spec = policy.spec.as_ref();
    match spec.and_then(|s| s.policy_types.as_ref()) {
        Some(types) => types.iter().map(String::as_str).collect(),
        None => {
            let mut types = vec!["Ingress"];
            if spec.is_some_and(|s| s.egress.is_some()) {
                types.push("Egress");
            }
            types
        }
    }
}

fn err(policy: &str, problem: String, fix: &str) -> TranslateError {
    TranslateError {
        policy: policy.to_owned(),
        problem,
        fix: fix.to_owned(),
    }
}

fn parse_net(policy: &str, field: &str, text: &str) -> Result<IpNet, TranslateError> {
    text.parse::<IpNet>().map(|n| n.trunc()).map_err(|e| {
        err(
            policy,
            format!("{field} {text:?} is not a CIDR: {e}"),
            "write it as address/prefix, e.g. 10.0.0.0/8 or 2001:db8::/32",
        )
    })
}

impl<R: PeerResolver + ?Sized> Ctx<'_, R> {
    /// The (peer, port) pairs one rule allows.
    fn rule(
        &mut self,
        dir: Direction,
        policy: &str,
        namespace: &str,
        comment: &str,
        peers: Option<&Vec<NetworkPolicyPeer>>,
        ports: Option<&Vec<NetworkPolicyPort>>,
    ) -> Result<Vec<(PeerMatch, PortMatch)>, TranslateError> {
        let peers = match peers {
            Some(list) if !list.is_empty() => {
                let mut out = Vec::new();
                for (i, p) in list.iter().enumerate() {
                    out.extend(self.peer(policy, namespace, &format!("{comment} peer {i}"), p)?);
                }
                out
            }
            _ => vec![Peer {
                matches: PeerMatch::Any,
                pod_ports: None,
            }],
        };
        let ports = match ports {
            Some(list) if !list.is_empty() => list
                .iter()
                .map(|p| port_spec(policy, p))
                .collect::<Result<Vec<_>, _>>()?,
            _ => vec![PortSpec::Any],
        };
        let mut out = Vec::new();
        for port in &ports {
            let mut named = Vec::new();
            for peer in &peers {
                match port {
                    PortSpec::Any => out.push((peer.matches.clone(), PortMatch::Any)),
                    PortSpec::Proto(p) => out.push((peer.matches.clone(), PortMatch::Proto(*p))),
                    PortSpec::Range(p, lo, hi) => {
                        out.push((peer.matches.clone(), PortMatch::Range(*p, *lo, *hi)));
                    }
                    PortSpec::Named(proto, name) => {
                        named.extend(self.named(dir, comment, peer, *proto, name));
                    }
                }
            }
            if let PortSpec::Named(proto, name) = port {
                let pods = peers
                    .iter()
                    .any(|p| !matches!(p.matches, PeerMatch::Net { .. }));
                if named.is_empty() && pods {
                    self.note(format!(
                        "{comment}: named port {name:?} ({}) matches no known container port; \
                         left out",
                        proto.nft()
                    ));
                }
                out.extend(named);
            }
        }
        Ok(out)
    }

    /// A peer's addresses.
    fn peer(
        &mut self,
        policy: &str,
        namespace: &str,
        what: &str,
        peer: &NetworkPolicyPeer,
    ) -> Result<Vec<Peer>, TranslateError> {
        let has_selector = peer.pod_selector.is_some() || peer.namespace_selector.is_some();
        if let Some(block) = &peer.ip_block {
            if has_selector {
                return Err(err(
                    policy,
                    format!("{what}: ipBlock together with a selector"),
                    "put the ipBlock in a peer of its own",
                ));
            }
            let net = parse_net(policy, "ipBlock.cidr", &block.cidr)?;
            let mut except = Vec::new();
            for text in block.except.iter().flatten() {
                let e = parse_net(policy, "ipBlock.except", text)?;
                if !net.contains(&e) {
                    return Err(err(
                        policy,
                        format!("{what}: except {e} is not inside cidr {net}"),
                        "list only parts of the cidr under except",
                    ));
                }
                except.push(e);
            }
            return Ok(vec![Peer {
                matches: PeerMatch::Net {
                    net,
                    except: minimal_excepts(except),
                },
                pod_ports: None,
            }]);
        }
        if !has_selector {
            return Err(err(
                policy,
                format!("{what}: neither ipBlock, podSelector nor namespaceSelector"),
                "give the peer one of them",
            ));
        }
        for (field, sel) in [
            ("podSelector", &peer.pod_selector),
            ("namespaceSelector", &peer.namespace_selector),
        ] {
            if let Some(sel) = sel {
                selector::validate(sel).map_err(|problem| {
                    err(
                        policy,
                        format!("{what}: {field}: {problem}"),
                        "correct the selector",
                    )
                })?;
            }
        }
        let query = PeerQuery {
            policy_namespace: namespace,
            namespace_selector: peer.namespace_selector.as_ref(),
            pod_selector: peer.pod_selector.as_ref(),
        };
        Ok(self.pods(&query))
    }

    /// The pods `query` resolves to, sorted by address, one peer each.
    fn pods(&self, query: &PeerQuery<'_>) -> Vec<Peer> {
        let mut pods: Vec<PeerPod> = self.resolver.resolve(query);
        pods.sort_by_key(|p| p.address);
        pods.dedup_by(|a, b| a.address == b.address);
        pods.into_iter()
            .map(|p| Peer {
                matches: PeerMatch::Addr(p.address),
                pod_ports: Some(p.ports),
            })
            .collect()
    }

    /// A named port: against the pod's own ports (ingress) or the destination pods' (egress).
    fn named(
        &mut self,
        dir: Direction,
        comment: &str,
        peer: &Peer,
        proto: Protocol,
        name: &str,
    ) -> Vec<(PeerMatch, PortMatch)> {
        let lookup = |ports: &[NamedPort]| -> Vec<u16> {
            let mut found: Vec<u16> = ports
                .iter()
                .filter(|p| p.name == name && p.protocol == proto)
                .map(|p| p.port)
                .collect();
            found.sort_unstable();
            found.dedup();
            found
        };
        let out: Vec<(PeerMatch, PortMatch)> = match (dir, &peer.matches) {
            (Direction::Ingress, m) => lookup(self.pod.ports)
                .into_iter()
                .map(|n| (m.clone(), PortMatch::Range(proto, n, n)))
                .collect(),
            (Direction::Egress, PeerMatch::Addr(_)) => {
                lookup(peer.pod_ports.as_deref().unwrap_or_default())
                    .into_iter()
                    .map(|n| (peer.matches.clone(), PortMatch::Range(proto, n, n)))
                    .collect()
            }
            (Direction::Egress, PeerMatch::Any) => {
                // Every destination: every known pod that has the port.
                let all = LabelSelector::default();
                let query = PeerQuery {
                    policy_namespace: "",
                    namespace_selector: Some(&all),
                    pod_selector: Some(&all),
                };
                self.pods(&query)
                    .into_iter()
                    .flat_map(|p| {
                        lookup(p.pod_ports.as_deref().unwrap_or_default())
                            .into_iter()
                            .map(move |n| (p.matches.clone(), PortMatch::Range(proto, n, n)))
                    })
                    .collect()
            }
            (Direction::Egress, PeerMatch::Net { .. }) => {
                self.note(format!(
                    "{comment}: named port {name:?} on an ipBlock peer left out (the addresses \
                     of a block have no container ports); use a port number"
                ));
                Vec::new()
            }
        };
        out
    }

    fn note(&mut self, note: String) {
        if !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }
}

/// Drops excepts that lie inside another except, sorted: the set nft gets has no overlaps.
fn minimal_excepts(mut except: Vec<IpNet>) -> Vec<IpNet> {
    except.sort();
    except.dedup();
    let all = except.clone();
    except.retain(|e| !all.iter().any(|o| o != e && o.contains(e)));
    except
}

fn port_spec(policy: &str, port: &NetworkPolicyPort) -> Result<PortSpec, TranslateError> {
    let text = port.protocol.as_deref().unwrap_or("TCP");
    let proto = Protocol::parse(text).ok_or_else(|| {
        err(
            policy,
            format!("port protocol {text:?} is not TCP, UDP or SCTP"),
            "use TCP, UDP or SCTP",
        )
    })?;
    let number = |n: i32, field: &str| -> Result<u16, TranslateError> {
        u16::try_from(n).ok().filter(|n| *n > 0).ok_or_else(|| {
            err(
                policy,
                format!("{field} {n} is not a port (1-65535)"),
                "use a port from 1 to 65535",
            )
        })
    };
    match (&port.port, port.end_port) {
        (None, _) => Ok(PortSpec::Proto(proto)),
        (Some(IntOrString::Int(n)), None) => {
            let n = number(*n, "port")?;
            Ok(PortSpec::Range(proto, n, n))
        }
        (Some(IntOrString::Int(n)), Some(end)) => {
            let lo = number(*n, "port")?;
            let hi = number(end, "endPort")?;
            if hi < lo {
                return Err(err(
                    policy,
                    format!("endPort {hi} is below port {lo}"),
                    "make endPort at least port",
                ));
            }
            Ok(PortSpec::Range(proto, lo, hi))
        }
        (Some(IntOrString::String(name)), None) => Ok(PortSpec::Named(proto, name.clone())),
        (Some(IntOrString::String(name)), Some(_)) => Err(err(
            policy,
            format!("endPort with the named port {name:?}"),
            "endPort needs a numeric port",
        )),
    }
}

fn family(ip: IpAddr) -> &'static str {
    match ip {
        IpAddr::V4(_) => "ip",
        IpAddr::V6(_) => "ip6",
    }
}

fn net_text(net: &IpNet) -> String {
    if net.prefix_len() == net.max_prefix_len() {
        net.addr().to_string()
    } else {
        net.to_string()
    }
}

/// The match part of one rule (before `accept`).
fn render_match(dir: Direction, peer: &PeerMatch, port: &PortMatch) -> String {
    let mut parts: Vec<String> = Vec::new();
    match peer {
        PeerMatch::Any => {}
        PeerMatch::Addr(ip) => parts.push(format!("{} {} {ip}", family(*ip), dir.addr())),
        PeerMatch::Net { net, except } => {
            let fam = family(net.addr());
            if net.prefix_len() == 0 {
                let nf = if fam == "ip" { "ipv4" } else { "ipv6" };
                parts.push(format!("meta nfproto {nf}"));
            } else {
                parts.push(format!("{fam} {} {}", dir.addr(), net_text(net)));
            }
            match except.as_slice() {
                [] => {}
                [one] => parts.push(format!("{fam} {} != {}", dir.addr(), net_text(one))),
                many => parts.push(format!(
                    "{fam} {} != {{ {} }}",
                    dir.addr(),
                    many.iter().map(net_text).collect::<Vec<_>>().join(", ")
                )),
            }
        }
    }
    match port {
        PortMatch::Any => {}
        PortMatch::Proto(p) => parts.push(format!("meta l4proto {}", p.nft())),
        PortMatch::Range(p, lo, hi) if lo == hi => parts.push(format!("{} dport {lo}", p.nft())),
        PortMatch::Range(p, lo, hi) => parts.push(format!("{} dport {lo}-{hi}", p.nft())),
    }
    parts.join(" ")
}

/// A comment nft accepts: no quotes, at most 120 bytes.
fn comment_text(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c == '"' || c == '\\' || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .take(120)
        .collect()
}

fn render_chain(dir: Direction, lines: Vec<(String, String)>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\tchain {} {{", dir.name());
    let _ = writeln!(
        out,
        "\t\ttype filter hook {} priority filter; policy drop;",
        dir.hook()
    );
    let _ = writeln!(out, "\t\t{} accept", dir.lo());
    out.push_str("\t\tct state established,related accept\n");
    out.push_str(
        "\t\ticmpv6 type { nd-neighbor-solicit, nd-neighbor-advert, nd-router-solicit, \
         nd-router-advert } accept\n",
    );
    let mut seen = BTreeSet::new();
    for (matches, comment) in lines {
        if !seen.insert(matches.clone()) {
            continue;
        }
        let sep = if matches.is_empty() { "" } else { " " };
        let _ = writeln!(
            out,
            "\t\t{matches}{sep}accept comment \"{}\"",
            comment_text(&comment)
        );
    }
    out.push_str("\t\tmeta l4proto tcp reject with tcp reset\n");
    out.push_str("\t\treject with icmpx type admin-prohibited\n");
    out.push_str("\t}\n");
    out
}

/// The chains that route Services (see [`ServiceRoute`]): `services`, a `nat` chain on the
/// output hook (before the egress filter), DNATs each routed cluster IP and port to one
/// backend, at random per connection through a `numgen` verdict map when there are several;
/// `services_refused`, a filter chain, refuses a connection to a Service without endpoints at
/// once (TCP reset, else ICMP port unreachable) instead of letting it time out. Empty without
/// services; deterministic for the same routes in any order.
fn render_services(routes: &[ServiceRoute]) -> String {
    let mut routes: Vec<&ServiceRoute> = routes.iter().collect();
    routes.sort_by(|a, b| {
        (a.cluster_ip, a.protocol, a.port, &a.service).cmp(&(
            b.cluster_ip,
            b.protocol,
            b.port,
            &b.service,
        ))
    });
    routes
        .dedup_by(|a, b| (a.cluster_ip, a.protocol, a.port) == (b.cluster_ip, b.protocol, b.port));
    let mut nat = String::new();
    let mut targets = String::new();
    let mut refused = String::new();
    for (i, route) in routes.iter().enumerate() {
        let family = family(route.cluster_ip);
        let proto = route.protocol.nft();
        let matches = format!(
            "{family} daddr {} {proto} dport {}",
            route.cluster_ip, route.port
        );
        let comment = comment_text(&route.service);
        let refused_comment = comment_text(&format!("{}: no ready endpoint", route.service));
        let backends: Vec<&(IpAddr, u16)> = route
            .backends
            .iter()
            .filter(|(addr, _)| addr.is_ipv4() == route.cluster_ip.is_ipv4())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let to = |(addr, port): &(IpAddr, u16)| match addr {
            IpAddr::V4(a) => format!("dnat ip to {a}:{port}"),
            IpAddr::V6(a) => format!("dnat ip6 to [{a}]:{port}"),
        };
        match backends.as_slice() {
            [] => {
                let reject = match route.protocol {
                    Protocol::Tcp => "reject with tcp reset",
                    Protocol::Udp | Protocol::Sctp => "reject with icmpx type port-unreachable",
                };
                let _ = writeln!(
                    refused,
                    "\t\t{matches} {reject} comment \"{refused_comment}\""
                );
            }
            [one] => {
                let _ = writeln!(nat, "\t\t{matches} {} comment \"{comment}\"", to(one));
            }
            many => {
                let arms: Vec<String> = (0..many.len())
                    .map(|j| format!("{j} : goto svc_{i}_{j}"))
                    .collect();
                let _ = writeln!(
                    nat,
                    "\t\t{matches} numgen random mod {} vmap {{ {} }} comment \"{comment}\"",
                    many.len(),
                    arms.join(", ")
                );
                for (j, backend) in many.iter().enumerate() {
                    let _ = writeln!(
                        targets,
                        "\tchain svc_{i}_{j} {{\n\t\tmeta l4proto {proto} {}\n\t}}",
                        to(backend)
                    );
                }
            }
        }
    }
    let mut out = String::new();
    if !nat.is_empty() {
        out.push_str(
            "\tchain services {\n\t\ttype nat hook output priority -100; policy accept;\n",
        );
        out.push_str(&nat);
        out.push_str("\t}\n");
        out.push_str(&targets);
    }
    if !refused.is_empty() {
        out.push_str(
            "\tchain services_refused {\n\t\ttype filter hook output priority filter; policy accept;\n",
        );
        out.push_str(&refused);
        out.push_str("\t}\n");
    }
    out
}
