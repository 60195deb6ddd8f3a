#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;

fn policy(private_network: bool, loopback: bool, allow: &[&str]) -> GuardPolicy {
    GuardPolicy {
        private_allow: allow.iter().map(|a| AllowRule::parse(a).unwrap()).collect(),
        private_network,
        loopback,
        ..GuardPolicy::default()
    }
}

fn url(text: &str) -> Url {
    Url::parse(text).unwrap()
}

fn embedded_loopback() -> Rule {
    Rule::EmbeddedNonPublic {
        v4: "127.0.0.1".parse().unwrap(),
        class: AddrClass::Loopback,
    }
}

fn rule_of(result: Result<Route, GuardError>) -> Option<Rule> {
    match result {
        Err(GuardError::Refused { rule, .. }) => Some(rule),
        Err(other) => panic!("unexpected error {other}"),
        Ok(_) => None,
    }
}

#[test]
fn literal_urls_are_refused_or_allowed_by_the_rules() {
    use Rule::*;
    let public = policy(false, false, &[]);
    let loopback_entry = policy(false, true, &[]);
    let private = policy(true, false, &["10.0.0.0/8", "internal.example"]);
    let allowlisted_but_not_private = policy(false, false, &["10.0.0.0/8"]);
    let cases: Vec<(&str, &GuardPolicy, Option<Rule>)> = vec![
        // anchor 6
        (
            "https://169.254.169.254/",
            &public,
            Some(LinkLocalOrMetadata),
        ),
        (
            "https://[fd00:ec2::254]/",
            &public,
            Some(LinkLocalOrMetadata),
        ),
        (
            "https://100.100.100.200/",
            &private,
            Some(LinkLocalOrMetadata),
        ),
        ("https://169.254.10.1/", &private, Some(LinkLocalOrMetadata)),
        ("https://[fe80::1]/", &private, Some(LinkLocalOrMetadata)),
        // anchor 7: every spelling of 127.0.0.1, refused for a non-loopback entry
        ("https://2130706433/", &public, Some(LoopbackNotAllowed)),
        ("https://0x7f.1/", &public, Some(LoopbackNotAllowed)),
        ("https://0177.0.0.1/", &public, Some(LoopbackNotAllowed)),
        ("https://127.1/", &public, Some(LoopbackNotAllowed)),
        ("https://①②⑦.0.0.1/", &public, Some(LoopbackNotAllowed)),
        ("http://2130706433:8080/", &loopback_entry, None),
        ("http://127.0.0.1:8080/", &loopback_entry, None),
        ("http://[::1]:8080/", &loopback_entry, None),
        // anchor 8: embedded and tunnel forms
        (
            "https://[::ffff:127.0.0.1]/",
            &loopback_entry,
            Some(embedded_loopback()),
        ),
        (
            "https://[::ffff:7f00:1]/",
            &loopback_entry,
            Some(embedded_loopback()),
        ),
        (
            "https://[::127.0.0.1]/",
            &loopback_entry,
            Some(embedded_loopback()),
        ),
        (
            "https://[::ffff:169.254.169.254]/",
            &public,
            Some(LinkLocalOrMetadata),
        ),
        (
            "https://[0:0:0:0:0:ffff:a9fe:a9fe]/",
            &public,
            Some(LinkLocalOrMetadata),
        ),
        (
            "https://[64:ff9b::a9fe:a9fe]/",
            &public,
            Some(LinkLocalOrMetadata),
        ),
        (
            "https://[64:ff9b:1::1]/",
            &public,
            Some(NotUnicast(AddrClass::Reserved)),
        ),
        ("https://[2002:a9fe:a9fe::]/", &public, Some(Tunnel)),
        ("https://[2001:0::1]/", &public, Some(Tunnel)),
        (
            "https://[::5efe:10.0.0.1]/",
            &private,
            Some(NotUnicast(AddrClass::Reserved)),
        ),
        ("https://[::ffff:8.8.8.8]/", &public, None),
        // anchor 9
        (
            "https://0.0.0.0/",
            &loopback_entry,
            Some(NotUnicast(AddrClass::Unspecified)),
        ),
        (
            "http://0/",
            &loopback_entry,
            Some(PlainHttpOffLoopback(Some(AddrClass::Unspecified))),
        ),
        (
            "https://0/",
            &loopback_entry,
            Some(NotUnicast(AddrClass::Unspecified)),
        ),
        (
            "https://[::]/",
            &loopback_entry,
            Some(NotUnicast(AddrClass::Unspecified)),
        ),
        // anchor 19: node IP, pod CIDR, service CIDR
        (
            "https://192.168.1.10:10250/",
            &public,
            Some(PrivateNotAllowed),
        ),
        ("https://10.244.0.5/", &public, Some(PrivateNotAllowed)),
        ("https://10.96.0.1/", &public, Some(PrivateNotAllowed)),
        // private: only privateNetwork entries, only allowlisted
        ("https://10.1.2.3/", &private, None),
        ("https://172.16.0.1/", &private, Some(PrivateNotAllowed)),
        (
            "https://10.1.2.3/",
            &allowlisted_but_not_private,
            Some(PrivateNotAllowed),
        ),
        ("https://127.0.0.1/", &private, Some(LoopbackNotAllowed)),
        // public
        ("https://93.184.216.34/", &public, None),
        ("https://93.184.216.34/", &private, None),
        // scheme, userinfo
        (
            "http://93.184.216.34/",
            &public,
            Some(PlainHttpOffLoopback(Some(AddrClass::Public))),
        ),
        (
            "http://internal.example/",
            &private,
            Some(PlainHttpOffLoopback(None)),
        ),
        (
            "ftp://127.0.0.1/",
            &loopback_entry,
            Some(Scheme("ftp".into())),
        ),
        ("https://u:p@api.example.com/", &public, Some(Userinfo)),
        // anchor 5: the parser's idea of the host is what is checked
        (
            "https://user@127.0.0.1:80@evil.com/",
            &public,
            Some(Userinfo),
        ),
        ("https://api.example.com/", &public, None),
    ];
    for (text, policy, want) in cases {
        assert_eq!(rule_of(policy.check_url(&url(text))), want, "{text}");
    }
}

#[test]
fn resolved_addresses_follow_the_rules_for_the_host() {
    use Rule::*;
    let public = policy(false, false, &[]);
    let loopback_entry = policy(false, true, &[]);
    let private = policy(true, false, &["internal.example", "192.168.5.0/24"]);
    let ip = |s: &str| -> IpAddr { s.parse().unwrap() };
    let cases: Vec<(&str, Vec<IpAddr>, &GuardPolicy, Option<Rule>)> = vec![
        ("api.example.com", vec![ip("93.184.216.34")], &public, None),
        // anchor 10: one bad address refuses the whole name
        (
            "api.example.com",
            vec![ip("93.184.216.34"), ip("169.254.169.254")],
            &public,
            Some(LinkLocalOrMetadata),
        ),
        (
            "api.example.com",
            vec![ip("93.184.216.34"), ip("10.0.0.1")],
            &public,
            Some(PrivateNotAllowed),
        ),
        // a name resolving to loopback is refused, even for loopback entries
        (
            "app.test",
            vec![ip("127.0.0.1")],
            &public,
            Some(LoopbackNotAllowed),
        ),
        (
            "app.test",
            vec![ip("127.0.0.1")],
            &loopback_entry,
            Some(LoopbackNotAllowed),
        ),
        (
            "localhost",
            vec![ip("127.0.0.1"), ip("::1")],
            &loopback_entry,
            None,
        ),
        // anchor 18
        (
            "localhost",
            vec![ip("93.184.216.34")],
            &loopback_entry,
            Some(LoopbackHostNotLoopback),
        ),
        (
            "localhost",
            vec![ip("10.0.0.1")],
            &loopback_entry,
            Some(LoopbackHostNotLoopback),
        ),
        (
            "localhost.",
            vec![ip("127.0.0.1")],
            &loopback_entry,
            Some(LoopbackNotAllowed),
        ),
        (
            "localhost.attacker.tld",
            vec![ip("127.0.0.1")],
            &loopback_entry,
            Some(LoopbackNotAllowed),
        ),
        // private network: host allowlisted, or address in an allowlisted network
        ("internal.example", vec![ip("10.9.9.9")], &private, None),
        ("other.example", vec![ip("192.168.5.7")], &private, None),
        (
            "other.example",
            vec![ip("192.168.6.7")],
            &private,
            Some(PrivateNotAllowed),
        ),
        // rule 5.24: an allowlisted host never reaches loopback
        (
            "internal.example",
            vec![ip("127.0.0.1")],
            &private,
            Some(LoopbackNotAllowed),
        ),
        (
            "internal.example",
            vec![ip("169.254.169.254")],
            &private,
            Some(LinkLocalOrMetadata),
        ),
        (
            "api.example.com",
            vec![ip("::ffff:10.0.0.1")],
            &private,
            Some(EmbeddedNonPublic {
                v4: "10.0.0.1".parse().unwrap(),
                class: AddrClass::Private,
            }),
        ),
    ];
    for (host, addrs, policy, want) in cases {
        let host = Host::Domain(host);
        let got = match policy.check_resolved(&host, &addrs) {
            Ok(()) => None,
            Err(GuardError::Refused { rule, .. }) => Some(rule),
            Err(e) => panic!("{e}"),
        };
        assert_eq!(got, want, "{host} -> {addrs:?}");
    }
}

#[test]
fn an_empty_answer_is_a_resolution_error() {
    let err = policy(false, false, &[]).check_resolved(&Host::Domain("x.example"), &[]);
    assert!(matches!(err, Err(GuardError::Resolve { .. })));
}

#[test]
fn the_egress_proxy_carries_only_public_https_of_ordinary_entries() {
    let proxy = Some(url("http://egress.internal:3128"));
    let ordinary = GuardPolicy {
        egress_proxy: proxy.clone(),
        ..policy(false, true, &["svc.internal"])
    };
    let private = GuardPolicy {
        egress_proxy: proxy,
        ..policy(true, false, &["10.0.0.0/8"])
    };
    let cases: Vec<(&str, &GuardPolicy, Route)> = vec![
        ("https://api.example.com/", &ordinary, Route::Proxy),
        ("https://93.184.216.34/", &ordinary, Route::Proxy),
        ("http://localhost:8080/", &ordinary, Route::Direct),
        ("https://localhost:8443/", &ordinary, Route::Direct),
        ("https://svc.internal/", &ordinary, Route::Direct),
        ("https://10.1.1.1/", &ordinary, Route::Direct),
        ("https://api.example.com/", &private, Route::Direct),
    ];
    for (text, policy, want) in cases {
        assert_eq!(policy.route(&url(text)), want, "{text}");
    }
    // rule 5.38: no IPv6 literals through the proxy
    assert_eq!(
        rule_of(ordinary.check_url(&url("https://[2606:4700::1111]/"))),
        Some(Rule::Ipv6LiteralViaProxy)
    );
    // rule 5.37: with a proxy, the direct path refuses public addresses
    let got = private.check_resolved(
        &Host::Domain("api.example.com"),
        &["93.184.216.34".parse().unwrap()],
    );
    assert!(
        matches!(
            got,
            Err(GuardError::Refused {
                rule: Rule::PublicOnDirectPathWithProxy,
                ..
            })
        ),
        "{got:?}"
    );
}

#[test]
fn allowlist_entries_are_parsed_and_dangerous_ones_refused() {
    assert_eq!(
        AllowRule::parse("Internal.Example").unwrap(),
        AllowRule::Host("internal.example".into())
    );
    assert!(matches!(
        AllowRule::parse("10.0.0.5").unwrap(),
        AllowRule::Net(_)
    ));
    assert!(matches!(
        AllowRule::parse("[fd12::5]").unwrap(),
        AllowRule::Net(_)
    ));
    for bad in [
        "0.0.0.0/0",
        "::/0",
        "169.254.169.254",
        "fe80::/10",
        "localhost",
        "a b",
        "",
        "bad_host!",
    ] {
        assert!(AllowRule::parse(bad).is_err(), "{bad:?}");
    }
    assert_eq!(
        AllowRule::parse_list("a.example, 10.0.0.0/8")
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn the_proxy_url_must_be_plain_http_host_and_port() {
    for bad in ["https://p.example:3128", "http://p.example:3128/path"] {
        let p = GuardPolicy {
            egress_proxy: Some(url(bad)),
            ..GuardPolicy::default()
        };
        assert!(p.validate().is_err(), "{bad}");
    }
    let ok = GuardPolicy {
        egress_proxy: Some(url("http://p.example:3128")),
        ..GuardPolicy::default()
    };
    assert!(ok.validate().is_ok());
}

#[test]
fn a_policy_for_a_loopback_endpoint_may_reach_loopback() {
    let deployment = GuardPolicy::default();
    assert!(GuardPolicy::for_endpoint(&url("http://127.0.0.1:9/"), false, &deployment).loopback);
    assert!(GuardPolicy::for_endpoint(&url("http://localhost:9/"), false, &deployment).loopback);
    assert!(!GuardPolicy::for_endpoint(&url("https://localhost.:9/"), false, &deployment).loopback);
    assert!(
        !GuardPolicy::for_endpoint(&url("https://api.example.com/"), false, &deployment).loopback
    );
}

#[test]
fn secrets_go_only_to_the_entry_origins() {
    let origins = vec![Origin::parse("https://agent.example.com").unwrap()];
    let cases = [
        ("https://agent.example.com/rpc", true),
        ("https://AGENT.example.com:443/x", true),
        ("https://agent.example.com:8443/rpc", false),
        ("http://agent.example.com/rpc", false),
        ("https://agent.example.com.evil.tld/rpc", false),
        ("https://evil.tld/?u=https://agent.example.com", false),
    ];
    for (text, want) in cases {
        assert_eq!(authorize(&url(text), &origins), want, "{text}");
    }
    assert_eq!(origins[0].to_string(), "https://agent.example.com:443");
    assert_eq!(Origin::parse("http://[::1]:8080/a").unwrap().host, "[::1]");
}

/// What `orrery validate` says of an MCP entry at `url`: (refused, the message).
fn validator_verdict(url: &str) -> (bool, String) {
    use orrery_crds::manifest::{Format, ManifestSet, check};
    let yaml = format!(
        "apiVersion: studio.orrery.dev/v1alpha1\nkind: RegistryEntry\nmetadata: {{name: e}}\nspec: {{mcp: {{url: '{url}', tools: [a]}}}}\n"
    );
    let mut set = ManifestSet::default();
    set.add_text(std::path::Path::new("e.yaml"), &yaml, Format::Yaml)
        .unwrap();
    let report = check(&set, &orrery_crds::validate::DeploymentLimits::default());
    let found: Vec<String> = report
        .findings
        .iter()
        .filter(|f| f.issue.code == "insecure_url")
        .map(|f| f.issue.message.clone())
        .collect();
    (!found.is_empty(), found.join("; "))
}

/// One host classifier for both: for every plain-http URL, the validator reads the host as
/// loopback exactly when the guard's parsed URL is loopback (for the entry that URL makes),
/// and both accept it only when it is also written as the apiserver's rule reads it: the guard
/// refuses a spelled loopback host when it reads the text (`parse_url`, issue 29).
#[test]
fn the_validator_and_the_guard_read_every_tricky_host_alike() {
    // (url, loopback to both, written as the apiserver's rule accepts it)
    #[rustfmt::skip]
    let cases: &[(&str, bool, bool)] = &[
        ("http://127.0.0.1:7801/mcp", true, true),
        ("http://localhost:8080/mcp", true, true),
        ("http://[::1]:9/mcp", true, true),
        ("http://127.1/mcp", true, false),
        ("http://0x7f000001/mcp", true, false),
        ("http://017700000001/mcp", true, false),
        ("http://2130706433/mcp", true, false),
        ("http://0x7f.1/mcp", true, false),
        ("http://0177.0.0.1/mcp", true, false),
        ("http://127.0.0.2/mcp", true, false),
        ("http://LOCALHOST/mcp", true, false),
        ("http://[0:0:0:0:0:0:0:1]/mcp", true, false),
        ("http://[::ffff:127.0.0.1]/mcp", false, false),
        ("http://[::ffff:7f00:1]/mcp", false, false),
        ("http://[::127.0.0.1]/mcp", false, false),
        ("http://localhost./mcp", false, false),
        ("http://localhost.evil.example/mcp", false, false),
        ("http://localhost@evil.example/mcp", false, false),
        ("http://10.0.0.1/mcp", false, false),
        ("http://0.0.0.0/mcp", false, false),
        ("http://example.com/mcp", false, false),
    ];
    let deployment = GuardPolicy::default();
    for (text, loopback, canonical) in cases {
        let parsed = url(text);
        let entry = GuardPolicy::for_endpoint(&parsed, false, &deployment);
        let guard_allows = super::super::parse_url(text)
            .and_then(|written| entry.check_url(&written))
            .is_ok();
        let validator_loopback = orrery_crds::host::is_loopback_url(text);
        let (refused, message) = validator_verdict(text);
        assert_eq!(
            entry.loopback, *loopback,
            "{text}: the guard's loopback entry"
        );
        assert_eq!(guard_allows, *loopback && *canonical, "{text}: the guard");
        assert_eq!(
            validator_loopback, *loopback,
            "{text}: the validator's reading"
        );
        assert_eq!(refused, !(*loopback && *canonical), "{text}: {message}");
        if refused && *loopback {
            assert!(message.contains("reaches loopback"), "{text}: {message}");
        }
    }
}

/// One address table for both: for https URLs with a literal address, `orrery validate`
/// refuses exactly the addresses the guard refuses for that entry (rules 5.22, 5.27), except
/// a private address on a privateNetwork entry, which the deployment's allowlist decides.
#[test]
fn the_validator_refuses_exactly_the_literal_addresses_the_guard_refuses() {
    #[rustfmt::skip]
    let cases: &[&str] = &[
        "https://93.184.215.14/mcp",
        "https://[2606:4700::1111]/mcp",
        "https://127.0.0.1/mcp",
        "https://[::1]/mcp",
        "https://169.254.169.254/mcp",
        "https://[fd00:ec2::254]/mcp",
        "https://100.100.100.200/mcp",
        "https://169.254.1.1/mcp",
        "https://[fe80::1]/mcp",
        "https://0.0.0.0/mcp",
        "https://[::]/mcp",
        "https://224.0.0.1/mcp",
        "https://255.255.255.255/mcp",
        "https://192.0.2.10/mcp",
        "https://[2001:db8::1]/mcp",
        "https://240.0.0.1/mcp",
        "https://[2002:c000:204::1]/mcp",
        "https://[::ffff:127.0.0.1]/mcp",
        "https://[::ffff:169.254.169.254]/mcp",
        "https://[::ffff:10.0.0.1]/mcp",
        "https://10.0.0.1/mcp",
        "https://192.168.1.20/mcp",
        "https://[fd12:3456::1]/mcp",
        "https://tools.example.com/mcp",
    ];
    let deployment = GuardPolicy::default();
    for text in cases {
        let parsed = url(text);
        let entry = GuardPolicy::for_endpoint(&parsed, false, &deployment);
        let guard_refuses = entry.check_url(&parsed).is_err();
        let validator_refuses = orrery_crds::host::literal_address_refusal(text, false).is_some();
        assert_eq!(validator_refuses, guard_refuses, "{text}");
    }
    assert!(
        orrery_crds::host::literal_address_refusal("https://10.0.0.1/mcp", true).is_none(),
        "a private address on a privateNetwork entry is the allowlist's to decide"
    );
    let (refused, message) = {
        use orrery_crds::manifest::{Format, ManifestSet, check};
        let yaml = "apiVersion: studio.orrery.dev/v1alpha1\nkind: RegistryEntry\nmetadata: {name: e}\nspec: {mcp: {url: 'https://169.254.169.254/mcp', tools: [a]}}\n";
        let mut set = ManifestSet::default();
        set.add_text(std::path::Path::new("e.yaml"), yaml, Format::Yaml)
            .unwrap();
        let report = check(&set, &orrery_crds::validate::DeploymentLimits::default());
        let found: Vec<String> = report
            .findings
            .iter()
            .filter(|f| f.issue.code == "unreachable_address")
            .map(|f| {
                format!(
                    "{} {}",
                    orrery_crds::loc_to_string(&f.issue.loc),
                    f.issue.message
                )
            })
            .collect();
        (!found.is_empty(), found.join("; "))
    };
    assert!(
        refused && message.contains("spec.mcp.url") && message.contains("cloud metadata"),
        "{message}"
    );
}

#[test]
fn inside_the_clusters_ranges_a_network_on_the_allowlist_is_not_enough_and_a_kubelet_is_never_reached_anchor_19()
 {
    let mut guard = policy(
        true,
        false,
        &[
            "10.0.0.0/8",
            "10.96.12.7:8080",
            "10.0.0.5:10250",
            "tools.internal",
        ],
    );
    guard.cluster_ranges = vec![
        "10.0.0.0/16".parse().unwrap(),
        "10.96.0.0/12".parse().unwrap(),
    ];
    let host = Host::Domain("tools.internal");
    let at =
        |text: &str| -> Result<(), GuardError> { guard.check_socket(&host, text.parse().unwrap()) };
    let refused_as_cluster = |r: Result<(), GuardError>| {
        matches!(
            r,
            Err(GuardError::Refused {
                rule: Rule::ClusterRange(_),
                ..
            })
        )
    };
    // The allowlist's /8 still reaches private addresses outside the cluster's ranges.
    assert!(at("10.200.0.5:443").is_ok());
    // A node's kubelet inside the /8: refused, even named exactly.
    assert!(refused_as_cluster(at("10.0.0.5:10250")));
    assert!(refused_as_cluster(at("10.0.9.9:443")));
    // A Service address named with its port: reached, and only on that port.
    assert!(at("10.96.12.7:8080").is_ok());
    assert!(refused_as_cluster(at("10.96.12.7:9090")));
    // However the address is written (a mapped form is refused as such, too).
    assert!(at("[::ffff:10.0.0.5]:10250").is_err());
    assert!(
        orrery_crds::host::cluster_range_of(
            "::ffff:10.0.0.5".parse().unwrap(),
            &guard.cluster_ranges
        )
        .is_some()
    );
    // A name resolving into the ranges is refused before any connection, unless the allowlist
    // names the address with a port.
    assert!(matches!(
        guard.check_resolved(&host, &["10.96.0.1".parse().unwrap()]),
        Err(GuardError::Refused {
            rule: Rule::ClusterRange(_),
            ..
        })
    ));
    assert!(
        guard
            .check_resolved(&host, &["10.96.12.7".parse().unwrap()])
            .is_ok()
    );
    // A literal URL in the ranges is refused at the URL check too.
    assert!(matches!(
        rule_of(guard.check_url(&url("https://10.0.0.5:10250/pods"))),
        Some(Rule::ClusterRange(_))
    ));
    let why = at("10.0.9.9:443").unwrap_err().to_string();
    assert!(
        why.contains("10.0.0.0/16") && why.contains("exact address"),
        "{why}"
    );
}

#[test]
fn a_private_address_named_with_a_port_is_reached_on_that_port_alone() {
    let guard = policy(true, false, &["10.1.2.3:8080", "10.9.0.0/16"]);
    let host = Host::Domain("svc.internal");
    assert!(
        guard
            .check_socket(&host, "10.1.2.3:8080".parse().unwrap())
            .is_ok()
    );
    assert!(matches!(
        guard.check_socket(&host, "10.1.2.3:22".parse().unwrap()),
        Err(GuardError::Refused {
            rule: Rule::PrivateNotAllowed,
            ..
        })
    ));
    // A network on the allowlist still opens every port of its addresses.
    assert!(
        guard
            .check_socket(&host, "10.9.1.1:22".parse().unwrap())
            .is_ok()
    );
}

#[test]
fn an_exact_address_and_port_is_an_allowlist_entry_and_a_dangerous_one_is_refused() {
    assert_eq!(
        AllowRule::parse("10.96.12.7:8080").unwrap(),
        AllowRule::Socket("10.96.12.7:8080".parse().unwrap())
    );
    assert_eq!(
        AllowRule::parse("[fd00::7]:8080").unwrap(),
        AllowRule::Socket("[fd00::7]:8080".parse().unwrap())
    );
    assert!(AllowRule::parse("169.254.169.254:80").is_err());
    assert!(AllowRule::parse("127.0.0.1:8080").is_err());
}
