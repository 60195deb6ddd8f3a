//! The unit tests of [`super`] (status.rs).

#![allow(clippy::expect_used)]
use super::*;
use crate::kstatus::find;
use orrery_crds::conditions::{READY, RECONCILING, STALLED};

fn config(extra: &str) -> Config {
    Config::parse(
        "t.yaml",
        &format!(
            "apiVersion: config.studio.orrery.dev/v1alpha1\nkind: OperatorConfig\n\
                 runner: {{image: 'o:1'}}\nsidecar: {{namespace: s, serviceName: s, port: 1}}\n\
                 runToken: {{signingKeyFile: k}}\n{extra}\n"
        ),
    )
    .expect("config")
}

fn entry(yaml: &str) -> RegistryEntry {
    let mut e: RegistryEntry = serde_yaml::from_str(&format!(
            "apiVersion: studio.orrery.dev/v1alpha1\nkind: RegistryEntry\nmetadata: {{name: e, generation: 4}}\n{yaml}"
        ))
        .expect("entry");
    e.metadata.generation = Some(4);
    e
}

fn secrets() -> SecretKeys {
    BTreeMap::from([(
        "keys".to_owned(),
        ReferencedSecret {
            keys: BTreeSet::from(["openai".to_owned()]),
            allowed_origins: None,
        },
    )])
}

fn fields(yaml: &str, config: &Config) -> Vec<String> {
    static_problems(&entry(yaml), config, &secrets())
        .into_iter()
        .map(|p| p.field)
        .collect()
}

#[test]
fn each_static_rule_refuses_its_case_and_passes_its_neighbour() {
    let plain = config("");
    let allow = config("privateNetworkAllowlist: [vllm.ml.svc, 10.20.0.0/16]");
    let names_only = config("privateNetworkAllowlist: [vllm.ml.svc]");
    let acting = config("actingRemotes: true");
    let cases: Vec<(&str, &Config, &[&str])> = vec![
        (
            "spec: {mcp: {url: 'https://t.example/mcp', tools: [a]}}",
            &plain,
            &[],
        ),
        (
            "spec: {mcp: {url: 'http://t.example/mcp', tools: [a]}}",
            &plain,
            &["spec.mcp.url"],
        ),
        (
            "spec: {mcp: {url: 'http://127.0.0.1:7801/mcp', tools: [a]}}",
            &plain,
            &[],
        ),
        (
            "spec: {a2a: {cardUrl: 'https://w/.well-known/agent-card.json', skills: [s], serviceOrigins: ['http://rpc:80']}}",
            &plain,
            &["spec.a2a.serviceOrigins[0]"],
        ),
        (
            "spec: {a2a: {cardUrl: 'https://w/agent.json', skills: [s]}}",
            &plain,
            &["spec.a2a.cardUrl"],
        ),
        (
            "spec: {a2a: {cardUrl: 'https://w/.well-known/agent-card.json', skills: [s], cardSignature: {jwks: '{\"keys\": [{\"kty\": \"oct\", \"kid\": \"k\", \"k\": \"AA\"}]}'}}}",
            &plain,
            &["spec.a2a.cardSignature.jwks"],
        ),
        (
            "spec: {a2a: {cardUrl: 'https://w/.well-known/agent-card.json', skills: [s], cardSignature: {allowJku: true}}}",
            &plain,
            &[],
        ),
        // private hosts
        (
            "spec: {model: {provider: OpenAI, model: m, baseUrl: 'https://vllm.ml.svc/v1', privateNetwork: true}}",
            &allow,
            &[],
        ),
        (
            "spec: {model: {provider: OpenAI, model: m, baseUrl: 'https://vllm.ml.svc/v1', privateNetwork: true}}",
            &plain,
            &["spec.model.baseUrl"],
        ),
        (
            "spec: {model: {provider: OpenAI, model: m, baseUrl: 'https://other.ml.svc/v1', privateNetwork: true}}",
            &names_only,
            &["spec.model.baseUrl"],
        ),
        (
            "spec: {model: {provider: OpenAI, model: m, baseUrl: 'https://other.ml.svc/v1', privateNetwork: true}}",
            &allow,
            &[],
        ),
        (
            "spec: {mcp: {url: 'https://10.20.1.2/mcp', tools: [a], privateNetwork: true}}",
            &allow,
            &[],
        ),
        (
            "spec: {mcp: {url: 'https://10.30.1.2/mcp', tools: [a], privateNetwork: true}}",
            &allow,
            &["spec.mcp.url"],
        ),
        (
            "spec: {mcp: {url: 'https://10.20.1.2/mcp', tools: [a]}}",
            &allow,
            &["spec.mcp.url"],
        ),
        (
            "spec: {mcp: {url: 'https://[fd00::5]/mcp', tools: [a]}}",
            &plain,
            &["spec.mcp.url"],
        ),
        (
            "spec: {mcp: {url: 'https://203.0.113.7/mcp', tools: [a]}}",
            &plain,
            &[],
        ),
        // acting
        (
            "spec: {a2a: {cardUrl: 'https://w/.well-known/agent-card.json', skills: [s], effect: Acting}}",
            &plain,
            &["spec.a2a.effect"],
        ),
        (
            "spec: {a2a: {cardUrl: 'https://w/.well-known/agent-card.json', skills: [s], effect: Acting}}",
            &acting,
            &[],
        ),
        // secrets
        (
            "spec: {model: {provider: OpenAI, model: m, apiKey: {secretKeyRef: {name: keys, key: openai}}}}",
            &plain,
            &[],
        ),
        (
            "spec: {model: {provider: OpenAI, model: m, apiKey: {secretKeyRef: {name: nokeys, key: openai}}}}",
            &plain,
            &["spec.model.apiKey.secretKeyRef"],
        ),
        (
            "spec: {mcp: {url: 'https://t/mcp', tools: [a], auth: {secretKeyRef: {name: keys, key: mcp}}}}",
            &plain,
            &["spec.mcp.auth.secretKeyRef"],
        ),
        ("spec: {}", &plain, &["spec"]),
    ];
    for (yaml, config, want) in cases {
        assert_eq!(fields(yaml, config), want, "{yaml}");
    }
}

#[test]
fn a_missing_secret_and_a_missing_key_say_which() {
    let problems = |yaml: &str| {
        static_problems(&entry(yaml), &config(""), &secrets())
            .into_iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let no_secret = problems(
        "spec: {model: {provider: OpenAI, model: m, apiKey: {secretKeyRef: {name: nokeys, key: openai}}}}",
    );
    assert!(
        no_secret.contains("Secret \"nokeys\" does not exist"),
        "{no_secret}"
    );
    let no_key = problems(
        "spec: {model: {provider: OpenAI, model: m, apiKey: {secretKeyRef: {name: keys, key: anthropic}}}}",
    );
    assert!(
        no_key.contains("Secret \"keys\" has no key \"anthropic\""),
        "{no_key}"
    );
}

#[test]
fn the_status_says_refused_probing_or_ready_with_reasons() {
    let refused_problem = SpecProblem {
        field: "spec.a2a.effect".into(),
        problem: "this deployment does not allow acting remotes".into(),
        fix: "use effect: ReadOnly".into(),
    };
    let at = Timestamp::from_second(1_800_000_000).unwrap_or(Timestamp::UNIX_EPOCH);
    let mcp = entry("spec: {mcp: {url: 'https://t/mcp', tools: [a]}}");
    let scripted = entry("spec: {model: {provider: Scripted, model: s, script: {}}}");
    // (entry, problems, Ready status, Ready reason, Pinned status, abnormal)
    let cases = [
        (
            &mcp,
            vec![refused_problem],
            ConditionStatus::False,
            reasons::SPEC_REFUSED,
            ConditionStatus::Unknown,
            Some(STALLED),
        ),
        (
            &mcp,
            vec![],
            ConditionStatus::Unknown,
            reasons::PROBING,
            ConditionStatus::Unknown,
            Some(RECONCILING),
        ),
        (
            &scripted,
            vec![],
            ConditionStatus::True,
            reasons::NOTHING_TO_PROBE,
            ConditionStatus::True,
            None,
        ),
    ];
    for (e, problems, ready, reason, pinned, abnormal) in cases {
        let status = static_status(e, &problems, at);
        let ready_c = find(&status.conditions, READY).expect("Ready");
        assert_eq!(
            (ready_c.status, ready_c.reason.as_str()),
            (ready, reason),
            "{problems:?}"
        );
        assert_eq!(
            find(&status.conditions, PINNED).map(|c| c.status),
            Some(pinned)
        );
        for t in [RECONCILING, STALLED] {
            assert_eq!(
                find(&status.conditions, t).is_some(),
                abnormal == Some(t),
                "{t}"
            );
        }
        assert_eq!(status.observed_generation, Some(4));
        assert_eq!(status.kind, e.spec.kind());
        if !problems.is_empty() {
            assert!(ready_c.message.contains("spec.a2a.effect: this deployment does not allow acting remotes; fix: use effect: ReadOnly"), "{}", ready_c.message);
            assert_eq!(status.last_error.as_deref(), Some(ready_c.message.as_str()));
        }
    }
}

#[test]
fn pins_already_in_the_status_survive_the_static_checks() {
    let mut e =
        entry("spec: {a2a: {cardUrl: 'https://w/.well-known/agent-card.json', skills: [s]}}");
    e.status = Some(RegistryEntryStatus {
        card_sha256: Some("ab".repeat(32)),
        skills: vec!["s".into()],
        ..RegistryEntryStatus::default()
    });
    let status = static_status(&e, &[], Timestamp::UNIX_EPOCH);
    assert_eq!(status.card_sha256, Some("ab".repeat(32)));
    assert_eq!(status.skills, ["s"]);
}

mod probing {
    use super::*;
    use orrery_crds::registry::PinnedTool;

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + second).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    fn writer() -> RegistryEntry {
        let mut e = entry(
            "spec: {a2a: {cardUrl: 'https://w/.well-known/agent-card.json', skills: [draft]}}",
        );
        e.metadata.namespace = Some("team".into());
        e
    }

    fn tool(name: &str, description: &str) -> PinnedTool {
        PinnedTool {
            name: name.into(),
            description_sha256: description.repeat(64),
            schema_sha256: "5".repeat(64),
            annotations_sha256: "a".repeat(64),
            read_only_hint: Some(true),
        }
    }

    fn card(digest: &str, skills: &[&str]) -> EntryPins {
        EntryPins {
            card_sha256: Some(digest.repeat(64)),
            skills: skills.iter().map(|s| (*s).to_owned()).collect(),
            tools: Vec::new(),
            resolved_addresses: vec!["203.0.113.7".into()],
        }
    }

    fn ok(pins: EntryPins) -> ProbeObservation {
        ProbeObservation::Ended(Ok(ProbeReport::ok("e", 4, pins)))
    }

    fn ready(status: &RegistryEntryStatus) -> (ConditionStatus, String, String) {
        let c = find(&status.conditions, READY).expect("Ready");
        (c.status, c.reason.clone(), c.message.clone())
    }

    /// `entry` with `status`, as the next reconcile reads it.
    fn with(mut e: RegistryEntry, status: RegistryEntryStatus) -> RegistryEntry {
        e.status = Some(status);
        e
    }

    #[test]
    fn the_first_pins_are_adopted_then_an_equal_probe_keeps_ready_and_its_transition_time() {
        let (status, next) = probe_status(&writer(), &ok(card("c", &["draft"])), 3600, at(0));
        assert_eq!(next, ProbeNext::DeletePod { due_in: 3600 });
        let (s, reason, message) = ready(&status);
        assert_eq!(
            (s, reason.as_str()),
            (ConditionStatus::True, reasons::PROBED)
        );
        assert!(message.contains("card digest cccccccccccc"), "{message}");
        assert_eq!(
            find(&status.conditions, PINNED).map(|c| (c.status, c.reason.as_str())),
            Some((ConditionStatus::True, reasons::PROBED))
        );
        assert_eq!(status.card_sha256, Some("c".repeat(64)));
        assert_eq!(status.skills, ["draft"]);
        assert_eq!(status.resolved_addresses, ["203.0.113.7"]);
        assert_eq!(status.probed_generation, Some(4));
        assert_eq!(
            status.last_probe_time.as_deref(),
            Some("2027-01-15T08:00:00Z")
        );
        // Within the interval nothing is due; past it a new probe pod.
        let e = with(writer(), status.clone());
        assert_eq!(
            probe_status(&e, &ProbeObservation::NoPod, 3600, at(600)).1,
            ProbeNext::Idle { due_in: 3000 }
        );
        let (same, next) = probe_status(&e, &ProbeObservation::NoPod, 3600, at(3600));
        assert_eq!(next, ProbeNext::CreatePod);
        assert_eq!(
            same, status,
            "a due probe changes nothing before it reports"
        );
        let (running, _) = probe_status(&e, &ProbeObservation::Running, 3600, at(3601));
        assert_eq!(
            running, status,
            "Ready does not flap while the interval's probe runs"
        );
        let mut moved = card("c", &["draft"]);
        moved.resolved_addresses = vec!["198.51.100.2".into()];
        let (again, _) = probe_status(&e, &ok(moved), 3600, at(3700));
        assert_eq!(
            again.resolved_addresses,
            ["198.51.100.2"],
            "addresses follow DNS"
        );
        let before = find(&status.conditions, READY).and_then(|c| c.last_transition_time.clone());
        let after = find(&again.conditions, READY).and_then(|c| c.last_transition_time.clone());
        assert_eq!(before, after);
    }

    #[test]
    fn a_changed_card_waits_for_the_one_command_and_the_annotation_adopts_exactly_the_proposal() {
        let first = probe_status(&writer(), &ok(card("c", &["draft"])), 3600, at(0)).0;
        let e = with(writer(), first);
        let (changed, _) = probe_status(&e, &ok(card("d", &["draft", "polish"])), 3600, at(10));
        let (s, reason, message) = ready(&changed);
        assert_eq!(
            (s, reason.as_str()),
            (ConditionStatus::False, reasons::PIN_CHANGED)
        );
        assert!(
            message.contains("card digest cccccccccccc… → dddddddddddd…, skills added: polish"),
            "{message}"
        );
        let proposed = changed.proposed_pins.clone().expect("proposed pins");
        let command = accept_command("e", "team", &proposed.digest);
        assert!(message.ends_with(&command), "{message}");
        assert_eq!(
            command,
            format!(
                "kubectl annotate registryentry e -n team studio.orrery.dev/accept-pins={} --overwrite",
                proposed.digest
            )
        );
        assert_eq!(
            changed.card_sha256,
            Some("c".repeat(64)),
            "the old pin stays"
        );
        assert_eq!(proposed.card_sha256, Some("d".repeat(64)));
        assert!(find(&changed.conditions, orrery_crds::conditions::STALLED).is_some());
        assert_eq!(
            find(&changed.conditions, PINNED).map(|c| c.status),
            Some(ConditionStatus::False)
        );
        // A wrong digest accepts nothing; the right one adopts the proposal.
        let mut wrong = with(writer(), changed.clone());
        wrong.metadata.annotations = Some(BTreeMap::from([(
            ACCEPT_PINS_ANNOTATION.to_owned(),
            "0123456789abcdef".to_owned(),
        )]));
        let (still, _) = probe_status(&wrong, &ProbeObservation::NoPod, 3600, at(20));
        assert_eq!(ready(&still).1, reasons::PIN_CHANGED);
        let mut right = with(writer(), changed);
        right.metadata.annotations = Some(BTreeMap::from([(
            ACCEPT_PINS_ANNOTATION.to_owned(),
            proposed.digest.clone(),
        )]));
        let (accepted, next) = probe_status(&right, &ProbeObservation::NoPod, 3600, at(20));
        assert_eq!(next, ProbeNext::Idle { due_in: 3590 });
        let (s, reason, message) = ready(&accepted);
        assert_eq!(
            (s, reason.as_str()),
            (ConditionStatus::True, reasons::PROBED)
        );
        assert!(message.contains(&proposed.digest), "{message}");
        assert_eq!(accepted.card_sha256, Some("d".repeat(64)));
        assert_eq!(accepted.skills, ["draft", "polish"]);
        assert!(accepted.proposed_pins.is_none());
        // The next probe finding the accepted pins stays Ready.
        let e = with(writer(), accepted);
        let (later, _) = probe_status(&e, &ok(card("d", &["draft", "polish"])), 3600, at(4000));
        assert_eq!(ready(&later).1, reasons::PROBED);
    }

    #[test]
    fn a_changed_tool_is_named_and_an_added_or_dropped_tool_is_not_a_change() {
        let pins = |tools: Vec<PinnedTool>| EntryPins {
            tools,
            ..EntryPins::default()
        };
        let old = pins(vec![tool("get", "1"), tool("search", "1")]);
        let cases: Vec<(EntryPins, Option<&str>)> = vec![
            (old.clone(), None),
            (
                pins(vec![
                    tool("get", "1"),
                    tool("search", "1"),
                    tool("new", "1"),
                ]),
                None,
            ),
            (pins(vec![tool("get", "1")]), None),
            (
                pins(vec![tool("get", "1"), tool("search", "2")]),
                Some("tool search: description changed"),
            ),
            (
                pins(vec![
                    PinnedTool {
                        schema_sha256: "6".repeat(64),
                        annotations_sha256: String::new(),
                        ..tool("get", "1")
                    },
                    tool("search", "1"),
                ]),
                Some("tool get: input schema, annotations changed"),
            ),
        ];
        for (new, want) in cases {
            assert_eq!(pin_changes(&old, &new).as_deref(), want, "{new:?}");
        }
        assert_eq!(
            pin_changes(&card("c", &["a", "b"]), &card("d", &["b"])).as_deref(),
            Some("card digest cccccccccccc… → dddddddddddd…, skills removed: a")
        );
        assert_eq!(pin_changes(&EntryPins::default(), &card("d", &["b"])), None);
    }

    #[test]
    fn a_failed_probe_is_probe_failed_and_tried_again_after_the_retry() {
        let failed = ProbeObservation::Ended(Ok(ProbeReport::error("e", 4, "HTTP 503")));
        let (status, next) = probe_status(&writer(), &failed, 3600, at(0));
        assert_eq!(
            next,
            ProbeNext::DeletePod {
                due_in: PROBE_RETRY_SECONDS
            }
        );
        let (s, reason, message) = ready(&status);
        assert_eq!(
            (s, reason.as_str()),
            (ConditionStatus::False, reasons::PROBE_FAILED)
        );
        assert!(message.contains("HTTP 503"), "{message}");
        assert_eq!(status.last_error.as_deref(), Some(message.as_str()));
        assert_eq!(
            find(&status.conditions, PINNED).map(|c| c.status),
            Some(ConditionStatus::Unknown),
            "nothing pinned yet"
        );
        let e = with(writer(), status);
        assert_eq!(
            probe_status(&e, &ProbeObservation::NoPod, 3600, at(30)).1,
            ProbeNext::Idle { due_in: 30 }
        );
        assert_eq!(
            probe_status(&e, &ProbeObservation::NoPod, 3600, at(60)).1,
            ProbeNext::CreatePod
        );
        // A pod that ended without a report is a failed probe too.
        let unread = ProbeObservation::Ended(Ok(ProbeReport::error(
            "",
            0,
            "entry.json: cannot read the entry",
        )));
        let (status, next) = probe_status(&writer(), &unread, 3600, at(0));
        assert_eq!(
            next,
            ProbeNext::DeletePod {
                due_in: PROBE_RETRY_SECONDS
            }
        );
        assert!(
            ready(&status).2.contains("cannot read the entry"),
            "recorded, not looped on"
        );
        let crashed = ProbeObservation::Ended(Err(ProbeEnded::NoReport {
            exit_code: 139,
            reason: "Error".into(),
            problem: "no termination message".into(),
        }));
        let (status, _) = probe_status(&writer(), &crashed, 3600, at(0));
        assert!(ready(&status).2.contains("exit code 139"));
    }

    #[test]
    fn a_new_generation_is_probed_at_once_and_a_stale_report_is_only_deleted() {
        let first = probe_status(&writer(), &ok(card("c", &["draft"])), 3600, at(0)).0;
        let mut edited = with(writer(), first);
        edited.metadata.generation = Some(5);
        let (status, next) = probe_status(&edited, &ProbeObservation::NoPod, 3600, at(10));
        assert_eq!(next, ProbeNext::CreatePod);
        let (s, reason, _) = ready(&status);
        assert_eq!(
            (s, reason.as_str()),
            (ConditionStatus::Unknown, reasons::PROBING)
        );
        assert_eq!(
            status.card_sha256,
            Some("c".repeat(64)),
            "pins kept meanwhile"
        );
        // The report of generation 4 is not this generation's result.
        let (stale, next) = probe_status(&edited, &ok(card("x", &["draft"])), 3600, at(11));
        assert_eq!(next, ProbeNext::DeletePod { due_in: 0 });
        assert_eq!(stale.card_sha256, Some("c".repeat(64)));
        assert_eq!(stale.probed_generation, Some(4));
    }

    #[test]
    fn a_new_reprobe_value_probes_now_once_and_waits_for_a_running_probe() {
        let first = probe_status(&writer(), &ok(card("c", &["draft"])), 3600, at(0)).0;
        let annotated = |value: &str, status: RegistryEntryStatus| {
            let mut e = with(writer(), status);
            e.metadata.annotations = Some(BTreeMap::from([(
                REPROBE_ANNOTATION.to_owned(),
                value.to_owned(),
            )]));
            e
        };
        // Well within the interval, a new value makes the probe pod at once.
        let (status, next) = probe_status(
            &annotated(" 1700000000 ", first.clone()),
            &ProbeObservation::NoPod,
            3600,
            at(60),
        );
        assert_eq!(next, ProbeNext::CreatePod);
        assert_eq!(status.last_reprobe.as_deref(), Some("1700000000"));
        assert_eq!(ready(&status), ready(&first), "Ready stays as it was");
        // The same value again is done: the interval rules.
        let (_, next) = probe_status(
            &annotated("1700000000", status.clone()),
            &ProbeObservation::NoPod,
            3600,
            at(61),
        );
        assert_eq!(next, ProbeNext::Idle { due_in: 3539 });
        // A new value while a probe runs waits for it (and is not marked done).
        let (running, next) = probe_status(
            &annotated("1700000100", status.clone()),
            &ProbeObservation::Running,
            3600,
            at(62),
        );
        assert_eq!(next, ProbeNext::Wait);
        assert_eq!(running.last_reprobe.as_deref(), Some("1700000000"));
        // Empty or blank is no request; a huge value is kept by its first 128 bytes.
        for blank in ["", "   "] {
            let (_, next) = probe_status(
                &annotated(blank, first.clone()),
                &ProbeObservation::NoPod,
                3600,
                at(60),
            );
            assert_eq!(next, ProbeNext::Idle { due_in: 3540 }, "{blank:?}");
        }
        let (long, next) = probe_status(
            &annotated(&"é".repeat(100), first.clone()),
            &ProbeObservation::NoPod,
            3600,
            at(60),
        );
        assert_eq!(next, ProbeNext::CreatePod);
        assert_eq!(long.last_reprobe, Some("é".repeat(64)));
    }

    #[test]
    fn a_pod_without_a_report_or_killed_reads_as_a_failure_with_the_reason() {
        let ended = |message: Option<&str>| PodState::Terminated {
            exit_code: 2,
            reason: Some("Error".into()),
            message: message.map(str::to_owned),
            started_at: None,
            finished_at: None,
        };
        assert!(matches!(
            observe(&ended(Some("garbage"))),
            ProbeObservation::Ended(Err(m)) if m.to_string().contains("exit code 2, Error") && m.to_string().contains("not a probe report")
        ));
        let report = ProbeReport::error("e", 4, "down");
        assert_eq!(
            observe(&ended(Some(&report.to_message()))),
            ProbeObservation::Ended(Ok(report))
        );
        assert!(matches!(
            observe(&PodState::Killed { reason: Some("DeadlineExceeded".into()), message: None }),
            ProbeObservation::Ended(Err(m)) if m.to_string().contains("DeadlineExceeded")
        ));
        assert_eq!(observe(&PodState::Absent), ProbeObservation::NoPod);
        assert_eq!(observe(&PodState::Starting), ProbeObservation::Running);
    }
}

/// Rules 5.46/5.47 (issue 27 §2): a Secret bound to origins is sent to no other; an entry whose
/// URL moved elsewhere is refused until someone who can edit the Secret allows the new origin;
/// with requireSecretOrigins, a Secret that names no origins is refused too.
#[test]
fn a_secret_goes_only_to_the_origins_its_annotation_lists() {
    let bound = |annotation: Option<&str>| -> SecretKeys {
        BTreeMap::from([(
            "keys".to_owned(),
            ReferencedSecret {
                keys: BTreeSet::from(["k".to_owned()]),
                allowed_origins: annotation.map(str::to_owned),
            },
        )])
    };
    let openai =
        "spec: {model: {provider: OpenAI, model: m, apiKey: {secretKeyRef: {name: keys, key: k}}}}";
    let moved = "spec: {model: {provider: OpenAI, model: m, baseUrl: 'https://collector.evil.example/v1', apiKey: {secretKeyRef: {name: keys, key: k}}}}";
    let agent = "spec: {a2a: {cardUrl: 'https://w.example/.well-known/agent-card.json', skills: [s], serviceOrigins: ['https://rpc.example:8443'], auth: {secretKeyRef: {name: keys, key: k}}}}";
    let required = config("requireSecretOrigins: true");
    let plain = config("");
    // (entry, annotation, config, refused with)
    let cases: [(&str, Option<&str>, &Config, Option<&str>); 9] = [
        (openai, None, &plain, None),
        (openai, Some("https://api.openai.com"), &plain, None),
        (openai, Some("HTTPS://API.OPENAI.COM:443/v1"), &plain, None),
        (
            moved,
            Some("https://api.openai.com"),
            &plain,
            Some(
                "may be sent only to https://api.openai.com (studio.orrery.dev/allowed-origins), but this entry would send it to https://collector.evil.example",
            ),
        ),
        (
            agent,
            Some("https://w.example, https://rpc.example:8443"),
            &plain,
            None,
        ),
        (
            agent,
            Some("https://w.example"),
            &plain,
            Some("would send it to https://rpc.example:8443"),
        ),
        (
            openai,
            Some("api.openai.com"),
            &plain,
            Some("\"api.openai.com\" in it is not an origin"),
        ),
        (
            openai,
            None,
            &required,
            Some("does not say which origins it may be sent to, and this deployment requires it"),
        ),
        (openai, Some("https://api.openai.com"), &required, None),
    ];
    for (yaml, annotation, config, refused) in cases {
        let problems = static_problems(&entry(yaml), config, &bound(annotation));
        match refused {
            None => assert!(problems.is_empty(), "{yaml} {annotation:?}: {problems:?}"),
            Some(text) => {
                assert_eq!(problems.len(), 1, "{yaml} {annotation:?}: {problems:?}");
                let shown = problems[0].to_string();
                assert!(shown.contains(text), "{shown}");
                assert!(
                    problems[0].field.ends_with("secretKeyRef"),
                    "{}",
                    problems[0].field
                );
                assert!(shown.contains("kubectl annotate secret keys"), "{shown}");
            }
        }
    }
}
