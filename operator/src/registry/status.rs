//! A RegistryEntry's status. First its static checks (before any probe): https unless
//! loopback, private hosts only on the deployment's allowlist, acting only if allowed, every
//! secretKeyRef naming a key that exists; they set `Ready`/`Pinned` with reasons. Then its
//! probe ([`probe_status`]): the probe pod's report fills in the pins, a changed pin waits for
//! a person's acceptance, and the next probe is due on a spec change or after the interval.
//!
//! Longer than most modules on purpose: the static checks and the probe's result set the same
//! two conditions (`Ready`, `Pinned`) through the same helpers; apart, one condition's rules
//! would be read in two files. Its tests are in `status_tests.rs`.

use crate::config::{AllowEntry, Config};
use crate::endpoints::{
    ALLOWED_ORIGINS_ANNOTATION, entry_urls, is_private, is_secure_url, scheme_and_host, secret_refs,
};
use crate::kstatus::{self, Health, find};
use crate::sandbox::PodState;
use ipnet::IpNet;
use k8s_openapi::jiff::Timestamp;
use orrery_crds::common::{ConditionStatus, set_condition};
use orrery_crds::conditions::{PINNED, READY, reasons};
use orrery_crds::plan_document::EntryPins;
use orrery_crds::probe::{ProbeOutcome, ProbeReport, parse_report, pins_digest};
use orrery_crds::registry::{
    Effect, ModelProvider, ProposedPins, RegistryEntry, RegistryEntryStatus,
};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::IpAddr;

/// What the static checks read of one Secret an entry references.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReferencedSecret {
    /// The keys of its data.
    pub keys: BTreeSet<String>,
    /// Its [`ALLOWED_ORIGINS_ANNOTATION`], when it has one.
    pub allowed_origins: Option<String>,
}

/// The Secrets the entry references that exist, by name.
pub type SecretKeys = BTreeMap<String, ReferencedSecret>;

/// One static problem of an entry, at its field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecProblem {
    /// The field, e.g. `spec.mcp.url`.
    pub field: String,
    /// What is wrong.
    pub problem: String,
    /// How to fix it.
    pub fix: String,
}

impl fmt::Display for SpecProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}; fix: {}", self.field, self.problem, self.fix)
    }
}

/// Address space that is never a public endpoint: an entry reaching a literal address in it
/// must be `privateNetwork` and allowlisted.
const NON_PUBLIC: [&str; 9] = [
    "10.0.0.0/8",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "100.64.0.0/10",
    "169.254.0.0/16",
    "0.0.0.0/8",
    "fc00::/7",
    "fe80::/10",
    "::/128",
];

fn is_non_public(addr: IpAddr) -> bool {
    NON_PUBLIC
        .iter()
        .filter_map(|n| n.parse::<IpNet>().ok())
        .any(|n| n.contains(&addr))
}

/// Every static problem of `entry` under `config`, given the Secrets of its namespace.
pub fn static_problems(
    entry: &RegistryEntry,
    config: &Config,
    secrets: &SecretKeys,
) -> Vec<SpecProblem> {
    let spec = &entry.spec;
    let mut out = Vec::new();
    let mut problem = |field: &str, problem: String, fix: &str| {
        out.push(SpecProblem {
            field: field.to_owned(),
            problem,
            fix: fix.to_owned(),
        });
    };
    if spec.kind().is_none() {
        problem(
            "spec",
            "the entry sets none or several of mcp, a2a and model".into(),
            "set exactly one of spec.mcp, spec.a2a or spec.model",
        );
    }
    let private = is_private(spec);
    let allowlist = config.allowlist();
    for url in entry_urls(spec) {
        if !is_secure_url(&url.url) {
            problem(
                &url.field,
                format!(
                    "{:?} is not https (plain http is allowed only to localhost, 127.0.0.1 or [::1])",
                    url.url
                ),
                "use an https URL",
            );
            continue;
        }
        let Some((_, host)) = scheme_and_host(&url.url) else {
            continue;
        };
        let loopback = crate::endpoints::LOOPBACK_HOSTS.contains(&host.as_str());
        let literal = host.parse::<IpAddr>().ok();
        if private && !loopback {
            let named = allowlist.iter().any(|a| a.covers(&host));
            // A name may still resolve into an allowlisted network: the probe decides.
            let may_resolve_in = literal.is_none()
                && allowlist
                    .iter()
                    .any(|a| matches!(a, AllowEntry::Net(_) | AllowEntry::Socket(_)));
            if !named && !may_resolve_in {
                problem(
                    &url.field,
                    format!(
                        "the private host {host} is not on the deployment's privateNetworkAllowlist"
                    ),
                    "ask the platform team to add the host (or its network) to privateNetworkAllowlist in the operator config, or use a public endpoint",
                );
            }
        } else if !private
            && let Some(addr) = literal.filter(|a| !a.is_loopback() && is_non_public(*a))
        {
            problem(
                &url.field,
                format!("{addr} is a private address but the entry is not privateNetwork"),
                "set privateNetwork: true and have the address put on the deployment's privateNetworkAllowlist",
            );
        }
    }
    if let Some(a2a) = &spec.a2a {
        if let Some(why) = orrery_crds::registry::card_path_problem(&a2a.card_url) {
            problem(
                "spec.a2a.cardUrl",
                why,
                "point cardUrl at the agent's /.well-known/agent-card.json",
            );
        }
        if let Some(jwks) = a2a.card_signature.as_ref().and_then(|s| s.jwks.as_ref())
            && let Err(e) = orrery_crds::jwks::parse_jwks(jwks.as_bytes())
        {
            problem(
                "spec.a2a.cardSignature.jwks",
                e.to_string(),
                "give the agent's public key set as JSON ({\"keys\": [...]}), each key with a unique kid",
            );
        }
    }
    if let Some(a2a) = &spec.a2a
        && a2a.effect == Effect::Acting
        && !config.acting_remotes
    {
        problem(
            "spec.a2a.effect",
            "this deployment does not allow acting remotes".into(),
            "use effect: ReadOnly, or ask the platform team to set actingRemotes: true in the operator config",
        );
    }
    for (field, reference) in secret_refs(spec) {
        match secrets.get(&reference.name) {
            None => problem(
                &field,
                format!(
                    "Secret {:?} does not exist in this namespace",
                    reference.name
                ),
                "create the Secret (kubectl create secret generic NAME --from-literal=KEY=VALUE) or fix the name",
            ),
            Some(secret) if !secret.keys.contains(&reference.key) => problem(
                &field,
                format!("Secret {:?} has no key {:?}", reference.name, reference.key),
                "add the key to the Secret or fix secretKeyRef.key",
            ),
            Some(secret) => {
                if let Some((problem_text, fix)) =
                    secret_origin_problem(&reference.name, secret, spec, config)
                {
                    problem(&field, problem_text, &fix);
                }
            }
        }
    }
    out
}

/// Why the entry may not send Secret `name` where it would (rules 5.46/5.47): the Secret's
/// [`ALLOWED_ORIGINS_ANNOTATION`] does not list an origin the entry reaches, cannot be read,
/// or is missing while the deployment requires it. The problem and its fix.
fn secret_origin_problem(
    name: &str,
    secret: &ReferencedSecret,
    spec: &orrery_crds::RegistryEntrySpec,
    config: &Config,
) -> Option<(String, String)> {
    let destinations = crate::endpoints::secret_destinations(spec);
    let annotate = |origins: &[String]| {
        format!(
            "someone who may edit Secret {name:?} allows it: kubectl annotate secret {name} {ALLOWED_ORIGINS_ANNOTATION}={:?} --overwrite",
            origins.join(",")
        )
    };
    let Some(annotation) = &secret.allowed_origins else {
        return config.require_secret_origins.then(|| {
            (
                format!(
                    "Secret {name:?} does not say which origins it may be sent to, and this deployment requires it (requireSecretOrigins)"
                ),
                annotate(&destinations),
            )
        });
    };
    let allowed = match crate::endpoints::allowed_origins(annotation) {
        Ok(allowed) => allowed,
        Err(item) => {
            return Some((
                format!(
                    "Secret {name:?} has {ALLOWED_ORIGINS_ANNOTATION} {annotation:?}, and {item:?} in it is not an origin (scheme://host[:port])"
                ),
                annotate(&destinations),
            ));
        }
    };
    let outside: Vec<&String> = destinations
        .iter()
        .filter(|d| !allowed.contains(d))
        .collect();
    if outside.is_empty() {
        return None;
    }
    let mut widened = allowed.clone();
    widened.extend(outside.iter().map(|o| (*o).clone()));
    Some((
        format!(
            "Secret {name:?} may be sent only to {} ({ALLOWED_ORIGINS_ANNOTATION}), but this entry would send it to {}; the entry is not used until the Secret allows it",
            allowed.join(", "),
            outside
                .iter()
                .map(|o| o.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        format!(
            "point the entry back at an allowed origin, or, if the new one is meant, have {}",
            annotate(&widened)
        ),
    ))
}

/// Whether the entry reaches no network (a Scripted model), so nothing is probed or pinned.
pub fn needs_no_probe(entry: &RegistryEntry) -> bool {
    entry
        .spec
        .model
        .as_ref()
        .is_some_and(|m| m.provider == ModelProvider::Scripted)
}

/// The status every path starts from: the stored one with the entry's kind and generation,
/// and `Pinned=Unknown` (reason `Probing`) when there is no `Pinned` yet. Pins already in the
/// status are kept.
fn base_status(entry: &RegistryEntry, now: Timestamp) -> RegistryEntryStatus {
    let generation = entry.metadata.generation;
    let mut status = entry.status.clone().unwrap_or_default();
    status.kind = entry.spec.kind();
    status.observed_generation = generation;
    if !status.conditions.iter().any(|c| c.r#type == PINNED) {
        set_condition(
            &mut status.conditions,
            kstatus::condition(
                PINNED,
                ConditionStatus::Unknown,
                reasons::PROBING,
                "not probed yet",
                generation,
                now,
            ),
        );
    }
    status
}

/// The entry's status after its static checks: with problems, `Ready=False` (reason
/// `SpecRefused`, every problem in the message) and `Stalled`; a Scripted model is `Ready` and
/// `Pinned` at once (reason `NothingToProbe`); otherwise the probe runs next (`Ready=Unknown`,
/// reason `Probing`, `Reconciling`). Pins already in the status are kept.
pub fn static_status(
    entry: &RegistryEntry,
    problems: &[SpecProblem],
    now: Timestamp,
) -> RegistryEntryStatus {
    let generation = entry.metadata.generation;
    let mut status = base_status(entry, now);
    let health = if !problems.is_empty() {
        let list: Vec<String> = problems.iter().map(ToString::to_string).collect();
        let message = format!("refused: {}", list.join("; "));
        status.last_error = Some(message.clone());
        Health::Stalled {
            reason: reasons::SPEC_REFUSED,
            message,
        }
    } else if needs_no_probe(entry) {
        status.last_error = None;
        set_condition(
            &mut status.conditions,
            kstatus::condition(
                PINNED,
                ConditionStatus::True,
                reasons::NOTHING_TO_PROBE,
                "a Scripted model reaches no network: nothing to pin",
                generation,
                now,
            ),
        );
        Health::Ready {
            reason: reasons::NOTHING_TO_PROBE,
            message: "a Scripted model reaches no network: ready without a probe".into(),
        }
    } else {
        probing()
    };
    kstatus::set_health(&mut status.conditions, &health, generation, now);
    status
}

fn probing() -> Health {
    Health::Reconciling {
        reason: reasons::PROBING,
        message: "the static checks passed; the probe pod checks the endpoint and pins it".into(),
    }
}

/// The annotation a person sets to accept the pins a probe proposed: its value is
/// `status.proposedPins.digest`.
pub const ACCEPT_PINS_ANNOTATION: &str = "studio.orrery.dev/accept-pins";

/// The annotation a person sets to a new value (any text, e.g. a timestamp) to probe the entry
/// now rather than at the next interval; `status.lastReprobe` keeps the value acted on.
pub const REPROBE_ANNOTATION: &str = "studio.orrery.dev/reprobe";

/// Longest [`REPROBE_ANNOTATION`] value kept in the status (a longer one is acted on once, by
/// its first bytes).
const REPROBE_VALUE_MAX: usize = 128;

/// Seconds before a failed probe is tried again (at most the probe interval).
pub const PROBE_RETRY_SECONDS: u64 = 60;

/// What the reconciler found of the probe pod for the entry as it stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProbeObservation {
    /// No such pod.
    NoPod,
    /// Created and not ended yet.
    Running,
    /// Ended with this report (or why there is none).
    Ended(Result<ProbeReport, ProbeEnded>),
}

/// Why an ended probe pod left no report.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProbeEnded {
    /// The runner ended without a report it could write (a crash, a bad termination message).
    #[error("the probe pod ended (exit code {exit_code}, {reason}) without a report: {problem}")]
    NoReport {
        /// The runner's exit code.
        exit_code: i32,
        /// The kubelet's reason, or `no reason`.
        reason: String,
        /// Why the termination message is no report.
        problem: String,
    },
    /// The pod was stopped (its deadline, an eviction) before the runner reported.
    #[error(
        "the probe pod was stopped before it reported ({reason}{detail}); the probe is tried again"
    )]
    Stopped {
        /// The pod's reason, or `no reason`.
        reason: String,
        /// `: ` and the pod's message, or nothing.
        detail: String,
    },
}

/// What the reconciler does after writing the status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProbeNext {
    /// Create the probe pod (and apply its NetworkPolicy).
    CreatePod,
    /// Wait for the running probe pod.
    Wait,
    /// The result is recorded: delete the pod; the next probe is due in this many seconds.
    DeletePod {
        /// Seconds until the next probe.
        due_in: u64,
    },
    /// Nothing to do for this many seconds.
    Idle {
        /// Seconds until the next probe.
        due_in: u64,
    },
}

/// Reads what the probe pod says (see [`crate::sandbox::pod_state`]).
pub fn observe(state: &PodState) -> ProbeObservation {
    match state {
        PodState::Absent => ProbeObservation::NoPod,
        PodState::Starting | PodState::Running { .. } => ProbeObservation::Running,
        PodState::Terminated {
            exit_code,
            reason,
            message,
            ..
        } => ProbeObservation::Ended(parse_report(message.as_deref().unwrap_or("")).map_err(|e| {
            ProbeEnded::NoReport {
                exit_code: *exit_code,
                reason: reason.as_deref().unwrap_or("no reason").to_owned(),
                problem: e.to_string(),
            }
        })),
        PodState::Killed { reason, message } => ProbeObservation::Ended(Err(ProbeEnded::Stopped {
            reason: reason.as_deref().unwrap_or("no reason").to_owned(),
            detail: message
                .as_deref()
                .map(|m| format!(": {m}"))
                .unwrap_or_default(),
        })),
    }
}

/// The entry's [`REPROBE_ANNOTATION`] value (trimmed, at most [`REPROBE_VALUE_MAX`] bytes at a
/// character boundary), if set and not empty.
fn reprobe_request(entry: &RegistryEntry) -> Option<String> {
    let value = entry
        .metadata
        .annotations
        .as_ref()?
        .get(REPROBE_ANNOTATION)?
        .trim();
    if value.is_empty() {
        return None;
    }
    let mut end = value.len().min(REPROBE_VALUE_MAX);
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    Some(value[..end].to_owned())
}

/// The pins the status holds (what runs are checked against).
pub fn pinned(status: &RegistryEntryStatus) -> EntryPins {
    EntryPins {
        card_sha256: status.card_sha256.clone(),
        skills: status.skills.clone(),
        tools: status.tools.clone(),
        resolved_addresses: status.resolved_addresses.clone(),
    }
}

fn has_pins(status: &RegistryEntryStatus) -> bool {
    status.card_sha256.is_some()
        || !status.tools.is_empty()
        || find(&status.conditions, PINNED).is_some_and(|c| c.status != ConditionStatus::Unknown)
}

fn short(digest: &str) -> &str {
    digest.get(..12).unwrap_or(digest)
}

/// What changed between the pins held and the pins a probe found, in words, or `None` when
/// nothing pinned changed. A card digest that differs is a change (with the skills added and
/// removed); a tool pinned in both whose description, schema or annotations differ is a change.
/// A tool only the probe found (the entry allows a new tool) is pinned on first sight, and one
/// it no longer lists (the entry stopped allowing it) is dropped: neither needs a person.
pub fn pin_changes(old: &EntryPins, new: &EntryPins) -> Option<String> {
    let mut changes = Vec::new();
    if let (Some(a), Some(b)) = (&old.card_sha256, &new.card_sha256)
        && !a.eq_ignore_ascii_case(b)
    {
        let mut card = format!("card digest {}… → {}…", short(a), short(b));
        let before: BTreeSet<&String> = old.skills.iter().collect();
        let after: BTreeSet<&String> = new.skills.iter().collect();
        let added: Vec<&str> = after.difference(&before).map(|s| s.as_str()).collect();
        let removed: Vec<&str> = before.difference(&after).map(|s| s.as_str()).collect();
        if !added.is_empty() {
            card.push_str(&format!(", skills added: {}", added.join(", ")));
        }
        if !removed.is_empty() {
            card.push_str(&format!(", skills removed: {}", removed.join(", ")));
        }
        changes.push(card);
    }
    for tool in &new.tools {
        let Some(was) = old.tools.iter().find(|t| t.name == tool.name) else {
            continue;
        };
        let mut what = Vec::new();
        if !was
            .description_sha256
            .eq_ignore_ascii_case(&tool.description_sha256)
        {
            what.push("description");
        }
        if !was.schema_sha256.eq_ignore_ascii_case(&tool.schema_sha256) {
            what.push("input schema");
        }
        if !was
            .annotations_sha256
            .eq_ignore_ascii_case(&tool.annotations_sha256)
        {
            what.push("annotations");
        }
        if !what.is_empty() {
            changes.push(format!("tool {}: {} changed", tool.name, what.join(", ")));
        }
    }
    (!changes.is_empty()).then(|| changes.join("; "))
}

/// The one command that accepts the proposed pins of entry `name` in `namespace`.
pub fn accept_command(name: &str, namespace: &str, digest: &str) -> String {
    format!(
        "kubectl annotate registryentry {name} -n {namespace} {ACCEPT_PINS_ANNOTATION}={digest} --overwrite"
    )
}

fn adopt(status: &mut RegistryEntryStatus, pins: &EntryPins) {
    status.card_sha256 = pins.card_sha256.clone();
    status.skills = pins.skills.clone();
    status.tools = pins.tools.clone();
    status.proposed_pins = None;
}

fn pinned_summary(status: &RegistryEntryStatus) -> String {
    let mut parts = Vec::new();
    if let Some(card) = &status.card_sha256 {
        parts.push(format!(
            "card digest {}… with skills {}",
            short(card),
            status.skills.join(", ")
        ));
    }
    if !status.tools.is_empty() {
        let names: Vec<&str> = status.tools.iter().map(|t| t.name.as_str()).collect();
        parts.push(format!("tools {}", names.join(", ")));
    }
    if parts.is_empty() {
        parts.push("the endpoint".into());
    }
    parts.join("; ")
}

fn set_pinned(
    status: &mut RegistryEntryStatus,
    ok: bool,
    reason: &str,
    message: &str,
    generation: Option<i64>,
    now: Timestamp,
) {
    let value = if ok {
        ConditionStatus::True
    } else {
        ConditionStatus::False
    };
    set_condition(
        &mut status.conditions,
        kstatus::condition(PINNED, value, reason, message, generation, now),
    );
}

fn seconds_since(time: Option<&str>, now: Timestamp) -> Option<u64> {
    let then: Timestamp = time?.parse().ok()?;
    let secs = now.as_second().saturating_sub(then.as_second());
    Some(u64::try_from(secs).unwrap_or(0))
}

/// Records the pins a probe found: adopted when the entry has none or the same, else proposed
/// (`PinChanged`, with the one command that accepts them); the health they give the entry.
fn record_pins(
    status: &mut RegistryEntryStatus,
    found: &EntryPins,
    (name, namespace): (&str, &str),
    generation: Option<i64>,
    now: Timestamp,
) -> Health {
    status.last_error = None;
    status.resolved_addresses = found.resolved_addresses.clone();
    let change = if has_pins(status) {
        pin_changes(&pinned(status), found)
    } else {
        None
    };
    match change {
        None => {
            adopt(status, found);
            let message = format!("pinned {}", pinned_summary(status));
            set_pinned(status, true, reasons::PROBED, &message, generation, now);
            Health::Ready {
                reason: reasons::PROBED,
                message,
            }
        }
        Some(what) => {
            let digest = pins_digest(found);
            status.proposed_pins = Some(ProposedPins {
                digest: digest.clone(),
                card_sha256: found.card_sha256.clone(),
                skills: found.skills.clone(),
                tools: found.tools.clone(),
            });
            let message = format!(
                "the endpoint now serves other pins than the entry's: {what}; runs refuse the entry until a person accepts them: {}",
                accept_command(name, namespace, &digest)
            );
            set_pinned(
                status,
                false,
                reasons::PIN_CHANGED,
                &message,
                generation,
                now,
            );
            Health::Stalled {
                reason: reasons::PIN_CHANGED,
                message,
            }
        }
    }
}

/// The entry's status from its probe, and what to do next: a result is recorded (first pins
/// → `Pinned`/`Ready` reason `Probed`; a failed probe → `Ready=False` reason `ProbeFailed`,
/// tried again after [`PROBE_RETRY_SECONDS`]; pins that differ → `Ready=False` reason
/// `PinChanged`, the change and the one command that accepts it in the message, the pins found
/// kept in `proposedPins`); an [`ACCEPT_PINS_ANNOTATION`] naming the proposed digest adopts
/// exactly them; a probe pod is created for a new generation or when the interval has passed.
/// The entry must have passed its static checks.
pub fn probe_status(
    entry: &RegistryEntry,
    observation: &ProbeObservation,
    interval_seconds: u64,
    now: Timestamp,
) -> (RegistryEntryStatus, ProbeNext) {
    let generation = entry.metadata.generation;
    let name = entry.metadata.name.clone().unwrap_or_default();
    let namespace = entry.metadata.namespace.clone().unwrap_or_default();
    let mut status = base_status(entry, now);
    let retry = PROBE_RETRY_SECONDS.min(interval_seconds);
    let mut health: Option<Health> = None;
    let mut recorded = false;
    if let ProbeObservation::Ended(result) = observation {
        let result = match result {
            // A pod of an older generation: not this generation's result.
            Ok(report) if report.entry == name && Some(report.generation) != generation => None,
            // A probe that could not even read its entry reports on no entry.
            Ok(report) if report.entry != name => Some(Err(format!(
                "the probe reported on entry {:?} (generation {}), not on this one{}",
                report.entry,
                report.generation,
                match &report.outcome {
                    ProbeOutcome::Error { message } => format!(": {message}"),
                    ProbeOutcome::Ok => String::new(),
                }
            ))),
            Ok(report) => Some(match &report.outcome {
                ProbeOutcome::Ok => Ok(&report.pins),
                ProbeOutcome::Error { message } => Err(message.clone()),
            }),
            Err(why) => Some(Err(why.to_string())),
        };
        if let Some(result) = result {
            recorded = true;
            status.last_probe_time = Some(kstatus::rfc3339(now));
            status.probed_generation = generation;
            match result {
                Err(message) => {
                    let message =
                        format!("the probe failed: {message}; it is tried again in {retry} s");
                    status.last_error = Some(message.clone());
                    health = Some(Health::Stalled {
                        reason: reasons::PROBE_FAILED,
                        message,
                    });
                }
                Ok(found) => {
                    health = Some(record_pins(
                        &mut status,
                        found,
                        (&name, &namespace),
                        generation,
                        now,
                    ));
                }
            }
        }
    }
    let accepted = entry
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ACCEPT_PINS_ANNOTATION));
    if let Some(proposed) = status.proposed_pins.clone()
        && accepted.is_some_and(|a| a.trim().eq_ignore_ascii_case(&proposed.digest))
    {
        let pins = EntryPins {
            card_sha256: proposed.card_sha256.clone(),
            skills: proposed.skills.clone(),
            tools: proposed.tools.clone(),
            resolved_addresses: status.resolved_addresses.clone(),
        };
        adopt(&mut status, &pins);
        let message = format!(
            "pins {} accepted ({ACCEPT_PINS_ANNOTATION}): pinned {}",
            proposed.digest,
            pinned_summary(&status)
        );
        set_pinned(
            &mut status,
            true,
            reasons::PROBED,
            &message,
            generation,
            now,
        );
        health = Some(Health::Ready {
            reason: reasons::PROBED,
            message,
        });
    }
    let probed_now = status.probed_generation == generation;
    let current = find(&status.conditions, READY).map(|c| c.reason.as_str());
    let from_probe = matches!(
        current,
        Some(reasons::PROBED | reasons::PROBE_FAILED | reasons::PIN_CHANGED)
    );
    if health.is_none() && !(probed_now && from_probe) {
        health = Some(probing());
    }
    if let Some(health) = &health {
        kstatus::set_health(&mut status.conditions, health, generation, now);
    }
    let failed = find(&status.conditions, READY).is_some_and(|c| c.reason == reasons::PROBE_FAILED);
    let wait = if failed { retry } else { interval_seconds };
    let due_in = if probed_now {
        seconds_since(status.last_probe_time.as_deref(), now)
            .map_or(0, |since| wait.saturating_sub(since))
    } else {
        0
    };
    let reprobe = reprobe_request(entry).filter(|r| status.last_reprobe.as_deref() != Some(r));
    let next = match observation {
        ProbeObservation::Ended(_) if recorded => ProbeNext::DeletePod { due_in: wait },
        // A report of another generation or entry: the pod is obsolete.
        ProbeObservation::Ended(_) => ProbeNext::DeletePod { due_in },
        ProbeObservation::Running => ProbeNext::Wait,
        ProbeObservation::NoPod if due_in == 0 || reprobe.is_some() => {
            // Acted on once: the status (written before the pod is made) keeps the value.
            if reprobe.is_some() {
                status.last_reprobe = reprobe;
            }
            ProbeNext::CreatePod
        }
        ProbeObservation::NoPod => ProbeNext::Idle { due_in },
    };
    (status, next)
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
