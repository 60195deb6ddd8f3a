#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::net::IpAddr;

use k8s_openapi::api::networking::v1::NetworkPolicy;
use serde_json::{Value, json};

use super::*;

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

fn port(name: &str, protocol: Protocol, port: u16) -> NamedPort {
    NamedPort {
        name: name.into(),
        protocol,
        port,
    }
}

/// The cluster of the tests: the runner's namespace `studio`, the sidecar in `orrery-system`,
/// the DNS in `kube-system`.
fn inventory() -> Inventory {
    Inventory::new()
        .namespace("studio", [("team", "agents")])
        .namespace("other", [("team", "web")])
        .pod(
            "studio",
            [("app", "runner"), ("orrery.dev/run-uid", "u1")],
            ip("10.213.0.2"),
            vec![port("metrics", Protocol::Tcp, 9090)],
        )
        .pod(
            "studio",
            [("app", "web")],
            ip("10.213.0.4"),
            vec![port("http", Protocol::Tcp, 80)],
        )
        .pod(
            "other",
            [("app", "web")],
            ip("10.213.0.5"),
            vec![port("http", Protocol::Tcp, 8080)],
        )
        .pod(
            "orrery-system",
            [("app.kubernetes.io/name", "orrery-sidecar")],
            ip("10.213.0.3"),
            vec![port("http", Protocol::Tcp, 8080)],
        )
        .pod(
            "kube-system",
            [("k8s-app", "kube-dns")],
            ip("10.213.0.53"),
            vec![
                port("dns", Protocol::Udp, 53),
                port("dns-tcp", Protocol::Tcp, 53),
            ],
        )
}

fn runner_labels() -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app".to_owned(), "runner".to_owned()),
        ("orrery.dev/run-uid".to_owned(), "u1".to_owned()),
    ])
}

fn policy(name: &str, spec: Value) -> NetworkPolicy {
    serde_json::from_value(json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": "studio"},
        "spec": spec,
    }))
    .expect("a NetworkPolicy")
}

fn runner_selector() -> Value {
    json!({"matchLabels": {"orrery.dev/run-uid": "u1"}})
}

/// The operator's run policy, as `operator/src/run/network.rs` builds it.
fn run_policy() -> NetworkPolicy {
    policy(
        "notes-1-egress",
        json!({
            "podSelector": runner_selector(),
            "policyTypes": ["Ingress", "Egress"],
            "egress": [
                {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                         "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
                 "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]},
                {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "orrery-system"}},
                         "podSelector": {"matchLabels": {"app.kubernetes.io/name": "orrery-sidecar"}}}],
                 "ports": [{"protocol": "TCP", "port": 8080}]},
                {"to": [{"ipBlock": {"cidr": "203.0.113.7/32"}}],
                 "ports": [{"protocol": "TCP", "port": 443}]}
            ]
        }),
    )
}

/// The allow rules of chain `chain` (their match part, comments left out), or None when the
/// ruleset has no such chain.
fn allows(text: &str, chain: &str) -> Option<Vec<String>> {
    let start = text.find(&format!("chain {chain} {{"))?;
    let body = &text[start..];
    let end = body.find("\n\t}").unwrap_or(body.len());
    Some(
        body[..end]
            .lines()
            .filter(|l| l.contains("accept comment"))
            .map(|l| {
                let l = l.trim();
                l[..l.find("accept comment").unwrap_or(l.len())]
                    .trim_end()
                    .to_owned()
            })
            .collect(),
    )
}

struct Row {
    name: &'static str,
    policies: Vec<NetworkPolicy>,
    /// The egress allows (None: egress not restricted).
    egress: Option<Vec<&'static str>>,
    /// The ingress allows (None: ingress not restricted).
    ingress: Option<Vec<&'static str>>,
    notes: usize,
}

fn rows() -> Vec<Row> {
    vec![
        Row {
            name: "no policy: nothing restricted",
            policies: vec![],
            egress: None,
            ingress: None,
            notes: 0,
        },
        Row {
            name: "a policy of another pod selects nothing here",
            policies: vec![policy(
                "web-only",
                json!({"podSelector": {"matchLabels": {"app": "web"}}, "policyTypes": ["Egress"]}),
            )],
            egress: None,
            ingress: None,
            notes: 0,
        },
        Row {
            name: "a policy of another namespace does not apply",
            policies: vec![{
                let mut p = policy(
                    "deny",
                    json!({"podSelector": {}, "policyTypes": ["Egress"]}),
                );
                p.metadata.namespace = Some("other".into());
                p
            }],
            egress: None,
            ingress: None,
            notes: 0,
        },
        Row {
            name: "egress deny-all: only loopback and return traffic",
            policies: vec![policy(
                "deny-egress",
                json!({"podSelector": {}, "policyTypes": ["Egress"]}),
            )],
            egress: Some(vec![]),
            ingress: None,
            notes: 0,
        },
        Row {
            name: "an egress rule with no to and no ports allows everything",
            policies: vec![policy(
                "all",
                json!({"podSelector": {}, "policyTypes": ["Egress"], "egress": [{}]}),
            )],
            egress: Some(vec![""]),
            ingress: None,
            notes: 0,
        },
        Row {
            name: "ipBlock with except, nested excepts folded",
            policies: vec![policy(
                "public",
                json!({"podSelector": runner_selector(), "policyTypes": ["Egress"],
                       "egress": [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0",
                                                       "except": ["10.0.0.0/8", "10.1.0.0/16", "192.168.0.0/16"]}},
                                          {"ipBlock": {"cidr": "172.16.0.0/12", "except": ["172.16.5.0/24"]}}],
                                   "ports": [{"port": 443}]}]}),
            )],
            egress: Some(vec![
                "meta nfproto ipv4 ip daddr != { 10.0.0.0/8, 192.168.0.0/16 } tcp dport 443",
                "ip daddr 172.16.0.0/12 ip daddr != 172.16.5.0/24 tcp dport 443",
            ]),
            ingress: None,
            notes: 0,
        },
        Row {
            name: "port ranges, protocols and a protocol with no port",
            policies: vec![policy(
                "ranges",
                json!({"podSelector": runner_selector(), "policyTypes": ["Egress"],
                       "egress": [{"to": [{"ipBlock": {"cidr": "198.51.100.0/24"}}],
                                   "ports": [{"protocol": "TCP", "port": 8000, "endPort": 8080},
                                             {"protocol": "UDP", "port": 5353},
                                             {"protocol": "SCTP", "port": 9000, "endPort": 9001},
                                             {"protocol": "UDP"}]}]}),
            )],
            egress: Some(vec![
                "ip daddr 198.51.100.0/24 tcp dport 8000-8080",
                "ip daddr 198.51.100.0/24 udp dport 5353",
                "ip daddr 198.51.100.0/24 sctp dport 9000-9001",
                "ip daddr 198.51.100.0/24 meta l4proto udp",
            ]),
            ingress: None,
            notes: 0,
        },
        Row {
            name: "the operator's run policy: DNS and sidecar pods resolved, the endpoint, no ingress",
            policies: vec![run_policy()],
            egress: Some(vec![
                "ip daddr 10.213.0.53 udp dport 53",
                "ip daddr 10.213.0.53 tcp dport 53",
                "ip daddr 10.213.0.3 tcp dport 8080",
                "ip daddr 203.0.113.7 tcp dport 443",
            ]),
            ingress: Some(vec!["ip saddr 10.213.0.1"]),
            notes: 0,
        },
        Row {
            name: "podSelector alone is the policy's namespace; namespaceSelector alone every pod there",
            policies: vec![policy(
                "selectors",
                json!({"podSelector": runner_selector(), "policyTypes": ["Egress"],
                       "egress": [{"to": [{"podSelector": {"matchLabels": {"app": "web"}}},
                                          {"namespaceSelector": {"matchExpressions": [
                                              {"key": "team", "operator": "In", "values": ["web"]}]}}]}]}),
            )],
            egress: Some(vec!["ip daddr 10.213.0.4", "ip daddr 10.213.0.5"]),
            ingress: None,
            notes: 0,
        },
        Row {
            name: "a selector matching no pod allows nothing",
            policies: vec![policy(
                "nobody",
                json!({"podSelector": runner_selector(), "policyTypes": ["Egress"],
                       "egress": [{"to": [{"podSelector": {"matchLabels": {"app": "ghost"}}}]}]}),
            )],
            egress: Some(vec![]),
            ingress: None,
            notes: 0,
        },
        Row {
            name: "two policies are unioned, in name order",
            policies: vec![
                policy(
                    "b-sidecar",
                    json!({"podSelector": runner_selector(), "policyTypes": ["Egress"],
                           "egress": [{"to": [{"ipBlock": {"cidr": "10.213.0.1/32"}}], "ports": [{"port": 8080}]}]}),
                ),
                policy(
                    "a-registry",
                    json!({"podSelector": {"matchLabels": {"app": "runner"}}, "policyTypes": ["Egress"],
                           "egress": [{"to": [{"ipBlock": {"cidr": "10.213.0.4/32"}}], "ports": [{"port": 7801}]}]}),
                ),
            ],
            egress: Some(vec![
                "ip daddr 10.213.0.4 tcp dport 7801",
                "ip daddr 10.213.0.1 tcp dport 8080",
            ]),
            ingress: None,
            notes: 0,
        },
        Row {
            name: "an Ingress-only policy does not restrict egress",
            policies: vec![policy(
                "ingress-only",
                json!({"podSelector": {}, "policyTypes": ["Ingress"],
                       "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "web"}}}],
                                    "ports": [{"port": "metrics"}]}]}),
            )],
            egress: None,
            ingress: Some(vec![
                "ip saddr 10.213.0.1",
                "ip saddr 10.213.0.4 tcp dport 9090",
            ]),
            notes: 0,
        },
        Row {
            name: "without policyTypes: Ingress always, Egress because of egress rules",
            policies: vec![policy(
                "implicit",
                json!({"podSelector": {}, "egress": [{"ports": [{"protocol": "UDP", "port": 53}]}]}),
            )],
            egress: Some(vec!["udp dport 53"]),
            ingress: Some(vec!["ip saddr 10.213.0.1"]),
            notes: 0,
        },
        Row {
            name: "IPv6 cidrs in the inet table",
            policies: vec![policy(
                "v6",
                json!({"podSelector": {}, "policyTypes": ["Egress"],
                       "egress": [{"to": [{"ipBlock": {"cidr": "::/0", "except": ["fc00::/7", "fe80::/10"]}},
                                          {"ipBlock": {"cidr": "2001:db8::/32"}},
                                          {"ipBlock": {"cidr": "2001:db8::7/128"}}],
                                   "ports": [{"port": 443}]}]}),
            )],
            egress: Some(vec![
                "meta nfproto ipv6 ip6 daddr != { fc00::/7, fe80::/10 } tcp dport 443",
                "ip6 daddr 2001:db8::/32 tcp dport 443",
                "ip6 daddr 2001:db8::7 tcp dport 443",
            ]),
            ingress: None,
            notes: 0,
        },
        Row {
            name: "named ports resolve against the destination pods; unknown ones are noted",
            policies: vec![policy(
                "named",
                json!({"podSelector": {}, "policyTypes": ["Egress"],
                       "egress": [{"to": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"app": "web"}}}],
                                   "ports": [{"port": "http"}, {"port": "grpc"}]},
                                  {"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}], "ports": [{"port": "http"}]},
                                  {"ports": [{"protocol": "UDP", "port": "dns"}]}]}),
            )],
            egress: Some(vec![
                "ip daddr 10.213.0.4 tcp dport 80",
                "ip daddr 10.213.0.5 tcp dport 8080",
                "ip daddr 10.213.0.53 udp dport 53",
            ]),
            ingress: None,
            notes: 2,
        },
    ]
}

fn options() -> Options {
    Options {
        node_addresses: vec![ip("10.213.0.1")],
        services: vec![],
    }
}

fn translate_row(policies: &[NetworkPolicy]) -> Ruleset {
    let labels = runner_labels();
    let ports = [port("metrics", Protocol::Tcp, 9090)];
    let pod = TargetPod {
        namespace: "studio",
        labels: &labels,
        ports: &ports,
    };
    translate(&pod, policies, &inventory(), &options()).expect("translates")
}

#[test]
fn each_policy_shape_becomes_the_expected_allow_rules() {
    for row in rows() {
        let rs = translate_row(&row.policies);
        let want = |v: &Option<Vec<&str>>| {
            v.as_ref()
                .map(|v| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
        };
        assert_eq!(
            allows(&rs.text, "egress"),
            want(&row.egress),
            "{}:\n{}",
            row.name,
            rs.text
        );
        assert_eq!(
            allows(&rs.text, "ingress"),
            want(&row.ingress),
            "{}:\n{}",
            row.name,
            rs.text
        );
        assert_eq!(rs.egress_isolated, row.egress.is_some(), "{}", row.name);
        assert_eq!(rs.ingress_isolated, row.ingress.is_some(), "{}", row.name);
        assert_eq!(rs.notes.len(), row.notes, "{}: {:?}", row.name, rs.notes);
    }
}

#[test]
fn the_run_policy_gives_this_exact_ruleset() {
    let rs = translate_row(&[run_policy()]);
    let want = r#"table inet orrery
delete table inet orrery
table inet orrery {
	chain egress {
		type filter hook output priority filter; policy drop;
		oifname "lo" accept
		ct state established,related accept
		icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert, nd-router-solicit, nd-router-advert } accept
		ip daddr 10.213.0.53 udp dport 53 accept comment "studio/notes-1-egress egress[0]"
		ip daddr 10.213.0.53 tcp dport 53 accept comment "studio/notes-1-egress egress[0]"
		ip daddr 10.213.0.3 tcp dport 8080 accept comment "studio/notes-1-egress egress[1]"
		ip daddr 203.0.113.7 tcp dport 443 accept comment "studio/notes-1-egress egress[2]"
		meta l4proto tcp reject with tcp reset
		reject with icmpx type admin-prohibited
	}
	chain ingress {
		type filter hook input priority filter; policy drop;
		iifname "lo" accept
		ct state established,related accept
		icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert, nd-router-solicit, nd-router-advert } accept
		ip saddr 10.213.0.1 accept comment "the node"
		meta l4proto tcp reject with tcp reset
		reject with icmpx type admin-prohibited
	}
}
"#;
    assert_eq!(rs.text, want);
    assert_eq!(rs.policies, vec!["studio/notes-1-egress".to_owned()]);
}

#[test]
fn the_ruleset_does_not_depend_on_the_order_of_the_policies() {
    let mut policies: Vec<NetworkPolicy> = rows().into_iter().flat_map(|r| r.policies).collect();
    let forward = translate_row(&policies);
    policies.reverse();
    assert_eq!(translate_row(&policies), forward);
}

#[test]
fn a_closure_is_a_resolver() {
    let labels = runner_labels();
    let pod = TargetPod {
        namespace: "studio",
        labels: &labels,
        ports: &[],
    };
    let resolver = |q: &PeerQuery<'_>| {
        assert_eq!(q.policy_namespace, "studio");
        vec![PeerPod {
            address: ip("10.213.0.1"),
            ports: vec![],
        }]
    };
    let rs = translate(&pod, &[run_policy()], &resolver, &Options::default()).unwrap();
    assert_eq!(
        allows(&rs.text, "egress").unwrap()[..3],
        [
            "ip daddr 10.213.0.1 udp dport 53".to_owned(),
            "ip daddr 10.213.0.1 tcp dport 53".to_owned(),
            "ip daddr 10.213.0.1 tcp dport 8080".to_owned(),
        ]
    );
    assert_eq!(allows(&rs.text, "ingress"), Some(vec![]));
}

#[test]
fn a_policy_the_translator_cannot_read_is_an_error_naming_it_and_the_fix() {
    let bad = [
        (
            json!({"egress": [{"ports": [{"protocol": "ICMP", "port": 1}]}]}),
            "ICMP",
        ),
        (
            json!({"egress": [{"ports": [{"port": 90, "endPort": 80}]}]}),
            "endPort 80",
        ),
        (json!({"egress": [{"ports": [{"port": 0}]}]}), "port 0"),
        (
            json!({"egress": [{"ports": [{"port": "http", "endPort": 90}]}]}),
            "named port",
        ),
        (
            json!({"egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}}]}]}),
            "together",
        ),
        (
            json!({"egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/33"}}]}]}),
            "not a CIDR",
        ),
        (
            json!({"egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["11.0.0.0/16"]}}]}]}),
            "not inside",
        ),
        (json!({"egress": [{"to": [{}]}]}), "neither"),
        (
            json!({"podSelector": {"matchExpressions": [{"key": "app", "operator": "Is"}]}}),
            "Is",
        ),
    ];
    for (spec, needle) in bad {
        let mut spec = spec;
        if spec.get("podSelector").is_none() {
            spec["podSelector"] = json!({});
        }
        let labels = runner_labels();
        let pod = TargetPod {
            namespace: "studio",
            labels: &labels,
            ports: &[],
        };
        let err =
            translate(&pod, &[policy("broken", spec)], &inventory(), &options()).expect_err(needle);
        let text = err.to_string();
        assert!(
            text.contains("studio/broken") && text.contains(needle),
            "{text}"
        );
    }
}

/// Whether `nft` runs here.
fn nft_installed() -> bool {
    std::process::Command::new("nft")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn every_generated_ruleset_is_valid_nftables() {
    if !nft_installed() {
        eprintln!("nft is not installed (apt-get install nftables): syntax check skipped");
        return;
    }
    for row in rows() {
        let rs = translate_row(&row.policies);
        check_syntax(&rs.text).unwrap_or_else(|e| panic!("{}: {e}\n{}", row.name, rs.text));
    }
    let err =
        check_syntax("table inet orrery {\n\tchain c {\n\t\tip daddr 10.0.0.300 accept\n\t}\n}\n")
            .expect_err("a bad address is refused");
    assert!(err.to_string().contains("nft"), "{err}");
}

fn route(
    service: &str,
    cluster: &str,
    protocol: Protocol,
    port: u16,
    backends: &[(&str, u16)],
) -> ServiceRoute {
    ServiceRoute {
        service: service.into(),
        cluster_ip: ip(cluster),
        protocol,
        port,
        backends: backends.iter().map(|(a, p)| (ip(a), *p)).collect(),
    }
}

fn service_routes() -> Vec<ServiceRoute> {
    vec![
        route(
            "default/kubernetes:443",
            "10.96.0.1",
            Protocol::Tcp,
            443,
            &[("10.213.0.1", 6443)],
        ),
        route(
            "studio/sidecar:8080",
            "10.96.0.20",
            Protocol::Tcp,
            8080,
            &[
                ("10.213.0.6", 8080),
                ("10.213.0.5", 8080),
                ("fd00::5", 8080),
            ],
        ),
        route("studio/empty:53", "10.96.0.30", Protocol::Udp, 53, &[]),
    ]
}

fn translate_with_services(policies: &[NetworkPolicy], services: Vec<ServiceRoute>) -> Ruleset {
    let labels = runner_labels();
    let pod = TargetPod {
        namespace: "studio",
        labels: &labels,
        ports: &[],
    };
    let options = Options {
        services,
        ..options()
    };
    translate(&pod, policies, &inventory(), &options).unwrap()
}

#[test]
fn a_service_is_sent_to_its_one_endpoint_or_to_one_of_several_at_random_and_refused_without_any() {
    let rs = translate_with_services(&[], service_routes());
    let text = &rs.text;
    for want in [
        "type nat hook output priority -100; policy accept;",
        "ip daddr 10.96.0.1 tcp dport 443 dnat ip to 10.213.0.1:6443 comment \"default/kubernetes:443\"",
        "ip daddr 10.96.0.20 tcp dport 8080 numgen random mod 2 vmap { 0 : goto svc_1_0, 1 : goto svc_1_1 }",
        "chain svc_1_0 {\n\t\tmeta l4proto tcp dnat ip to 10.213.0.5:8080\n\t}",
        "chain svc_1_1 {\n\t\tmeta l4proto tcp dnat ip to 10.213.0.6:8080\n\t}",
        "ip daddr 10.96.0.30 udp dport 53 reject with icmpx type port-unreachable comment \"studio/empty:53: no ready endpoint\"",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    assert!(
        !text.contains("fd00::5"),
        "an IPv6 endpoint of an IPv4 service is left out:\n{text}"
    );
    assert!(
        rs.policies.is_empty() && !rs.egress_isolated,
        "routing restricts nothing"
    );
    let mut reversed = service_routes();
    reversed.reverse();
    for r in &mut reversed {
        r.backends.reverse();
    }
    assert_eq!(
        translate_with_services(&[], reversed).text,
        rs.text,
        "deterministic"
    );
    assert!(
        !translate_with_services(&[], vec![])
            .text
            .contains("chain services"),
        "no services, no chains"
    );
}

#[test]
fn routed_services_sit_beside_the_policy_chains_and_the_whole_is_valid_nftables() {
    let policies = [policy(
        "egress",
        json!({"podSelector": {}, "policyTypes": ["Egress"],
               "egress": [{"to": [{"ipBlock": {"cidr": "10.213.0.5/32"}}], "ports": [{"port": 8080}]}]}),
    )];
    let rs = translate_with_services(&policies, service_routes());
    assert!(rs.egress_isolated, "{}", rs.text);
    assert!(
        rs.text.contains("chain egress") && rs.text.contains("chain services"),
        "{}",
        rs.text
    );
    if !nft_installed() {
        eprintln!("nft is not installed (apt-get install nftables): syntax check skipped");
        return;
    }
    check_syntax(&rs.text).unwrap_or_else(|e| panic!("{e}\n{}", rs.text));
}

#[test]
fn a_service_with_the_longest_names_still_makes_a_valid_ruleset() {
    let long = format!("{}/{}:65535", "n".repeat(63), "s".repeat(63));
    let rs = translate_with_services(
        &[],
        vec![
            route(&long, "10.96.0.40", Protocol::Tcp, 65535, &[]),
            route(
                &long,
                "10.96.0.41",
                Protocol::Tcp,
                65535,
                &[("10.213.0.5", 80)],
            ),
        ],
    );
    for line in rs.text.lines().filter(|l| l.contains("comment \"")) {
        let comment = line.split("comment \"").nth(1).unwrap_or_default();
        assert!(
            comment.len() <= 121,
            "nft takes comments of at most 128 bytes: {line}"
        );
    }
    if !nft_installed() {
        eprintln!("nft is not installed (apt-get install nftables): syntax check skipped");
        return;
    }
    check_syntax(&rs.text).unwrap_or_else(|e| panic!("{e}\n{}", rs.text));
}
