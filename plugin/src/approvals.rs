//! A run's approvals from the terminal: `approvals RUN`, `approve`, `reject` and `answer`.
//!
//! The text under review comes from the sidecar (it never reaches etcd); the plugin computes its
//! digest itself ([`approval_digest`] over the run's UID, the approval's id and the exact text)
//! and checks it against the digest in the run's status, which is what the API server's
//! admission policy compares a decision with. The text is shown with control and invisible
//! characters made visible, so what is read is what is approved.
//!
//! A decision is appended to the run's `status.decisions` as a JSON patch with the person's own
//! credentials: the same write as a hand-written `kubectl patch --subresource=status`, so RBAC
//! and the admission policies decide, and a refusal is printed as the API server words it.

use crate::{PluginError, whoami};
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use orrery_crds::StudioRun;
use orrery_crds::approval::{
    ApprovalKind, ApprovalList, ApprovalState, ApprovalView, Decision, DecisionVerb,
    PendingApproval,
};
use orrery_crds::events::{visible, visible_inline};
use orrery_crds::relay::approval_digest;
use std::time::Duration;

/// How long a decision waits for the run to take it up before saying it has not yet.
pub const TAKE_UP_WAIT: Duration = Duration::from_secs(30);

/// A pending approval as the terminal shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    /// From the run's status (what the API server checks a decision against).
    pub pending: PendingApproval,
    /// From the sidecar, when it was read (the text and the question).
    pub view: Option<ApprovalView>,
    /// The digest computed here from the exact text, when it was read.
    pub computed: Option<String>,
}

impl Shown {
    /// Whether the text read hashes to the digest in the run's status.
    pub fn digest_checked(&self) -> bool {
        self.computed
            .as_deref()
            .is_some_and(|d| d.eq_ignore_ascii_case(&self.pending.digest))
    }
}

/// The run, from the API server.
pub async fn run_of(api: &Client, namespace: &str, name: &str) -> Result<StudioRun, PluginError> {
    Api::<StudioRun>::namespaced(api.clone(), namespace)
        .get(name)
        .await
        .map_err(|e| PluginError::of(format!("reading studiorun {name} in {namespace}"), e))
}

/// Joins the run's pending approvals (status) with the sidecar's approvals (text), computing
/// each text's digest.
pub fn join(run: &StudioRun, list: Option<&ApprovalList>) -> Vec<Shown> {
    let uid = run.metadata.uid.clone().unwrap_or_default();
    let pending = run
        .status
        .as_ref()
        .map(|s| s.pending_approvals.clone())
        .unwrap_or_default();
    pending
        .into_iter()
        .map(|p| {
            let view = list
                .and_then(|l| l.items.iter().find(|v| v.id == p.id))
                .filter(|v| v.state == ApprovalState::Pending)
                .cloned();
            let computed = view
                .as_ref()
                .map(|v| approval_digest(&uid, &v.id, &v.exact_text));
            Shown {
                pending: p,
                view,
                computed,
            }
        })
        .collect()
}

fn kind_name(kind: ApprovalKind) -> &'static str {
    match kind {
        ApprovalKind::Approval => "Approval",
        ApprovalKind::Input => "Input",
        ApprovalKind::Action => "Action",
    }
}

/// How long until `expires_at`, as kubectl writes ages, or `expired`.
pub fn expires_in(expires_at: &str, now: jiff::Timestamp) -> String {
    match expires_at.parse::<jiff::Timestamp>() {
        Ok(at) => {
            let seconds = at.duration_since(now).as_secs();
            if seconds <= 0 {
                "expired".to_owned()
            } else {
                format!("in {}", crate::short_age(seconds.unsigned_abs()))
            }
        }
        Err(_) => format!("at {}", visible_inline(expires_at).text),
    }
}

/// One approval as `approvals` prints it: id, kind, node, expiry, the question, the text made
/// visible between rules, and the digest with whether it matched the run's status.
pub fn render(shown: &Shown, now: jiff::Timestamp) -> String {
    let p = &shown.pending;
    let mut out = format!(
        "{}  {}  node {}  expires {} ({})\n",
        visible_inline(&p.id).text,
        kind_name(p.kind),
        visible_inline(&p.node).text,
        expires_in(&p.expires_at, now),
        visible_inline(&p.expires_at).text,
    );
    match &shown.view {
        None => {
            out.push_str(&format!(
                "  digest {}  ({} bytes; the text was not read)\n",
                p.digest, p.size
            ));
        }
        Some(view) => {
            let prompt = visible_inline(&view.prompt);
            out.push_str(&format!("  asks: {}\n", prompt.text));
            let text = visible(&view.exact_text);
            out.push_str(&format!("  ---- the text ({} bytes) ----\n", p.size));
            for line in text.text.lines() {
                out.push_str("  | ");
                out.push_str(line);
                out.push('\n');
            }
            out.push_str("  ----\n");
            for refused in &view.refused {
                out.push_str(&format!(
                    "  not taken: the decision at status.decisions[{}]: {}\n",
                    refused.index,
                    visible_inline(&refused.reason).text
                ));
            }
            if let Some(note) = text.note() {
                out.push_str(&format!("  {note}\n"));
            }
            if !p.complete {
                out.push_str("  The text is over 128 KiB and only part of it is shown: it can only be rejected.\n");
            }
            if shown.digest_checked() {
                out.push_str(&format!(
                    "  digest {}  (computed from this text; matches the run's status)\n",
                    p.digest
                ));
            } else {
                out.push_str(&format!(
                    "  DIGEST MISMATCH: this text hashes to {}, the run's status says {}. Do not approve it.\n",
                    shown.computed.as_deref().unwrap_or("?"),
                    p.digest
                ));
            }
        }
    }
    out
}

/// Picks the approval a decision is about: `id` when given, else the only pending one.
pub fn pick<'a>(shown: &'a [Shown], run: &str, id: Option<&str>) -> Result<&'a Shown, PluginError> {
    match id {
        Some(id) => shown.iter().find(|s| s.pending.id == id).ok_or_else(|| {
            PluginError::Approval(format!(
                "studiorun {run} has no pending approval {id}{}",
                waiting_list(shown)
            ))
        }),
        None => match shown {
            [one] => Ok(one),
            [] => Err(PluginError::Approval(format!(
                "studiorun {run} has no approval waiting"
            ))),
            _ => Err(PluginError::Approval(format!(
                "studiorun {run} waits on {} approvals; name one{}",
                shown.len(),
                waiting_list(shown)
            ))),
        },
    }
}

fn waiting_list(shown: &[Shown]) -> String {
    if shown.is_empty() {
        " (none is waiting)".to_owned()
    } else {
        let ids: Vec<String> = shown
            .iter()
            .map(|s| visible_inline(&s.pending.id).text.into_owned())
            .collect();
        format!(" (waiting: {})", ids.join(", "))
    }
}

/// A decision about to be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionRequest {
    /// The approval.
    pub id: String,
    /// Approve or reject.
    pub verb: DecisionVerb,
    /// The digest approved (required to approve).
    pub digest: Option<String>,
    /// A comment.
    pub comment: Option<String>,
    /// An answer (an Input approval).
    pub answer: Option<String>,
}

/// The decision appended for `person`, at `at` (RFC 3339).
pub fn decision_of(request: &DecisionRequest, person: &str, at: &str) -> Decision {
    Decision {
        approval_id: request.id.clone(),
        decision: request.verb,
        digest: request.digest.clone(),
        comment: request.comment.clone(),
        answer: request.answer.clone(),
        decided_by: Some(person.to_owned()),
        decided_at: Some(at.to_owned()),
    }
}

/// The JSON patch appending `decision` to `status.decisions` (rule 4.24: one, at the end).
pub fn append_patch(decision: &Decision) -> serde_json::Value {
    serde_json::json!([{"op": "add", "path": "/status/decisions/-", "value": decision}])
}

/// What became of a decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TakenUp {
    /// The approval left the run's pending list; the run is now in this phase.
    Yes(String),
    /// Recorded; the run has not taken it up within [`TAKE_UP_WAIT`].
    NotYet,
    /// Recorded, and not taken: why (the sidecar's words).
    Refused(String),
}

/// Why the decision at `index` on approval `id` was not taken, if it was not: read from the
/// sidecar's approvals (its `refused`). `None` also when the list cannot be read.
pub fn refusal_in(list: &ApprovalList, id: &str, index: u64) -> Option<String> {
    list.items
        .iter()
        .find(|a| a.id == id)?
        .refused
        .iter()
        .find(|r| r.index == index)
        .map(|r| visible_inline(&r.reason).text.into_owned())
}

/// Appends the decision as the caller (refusing a service account first), then waits for the
/// run to take it up, asking `refused` (with the decision's index in `status.decisions`)
/// whether it was refused meanwhile: a decision written while the admission policies are not
/// in place is not honoured (attack 46), and says so at once rather than after the wait.
pub async fn decide(
    api: &Client,
    namespace: &str,
    run: &str,
    request: &DecisionRequest,
    refused: impl AsyncFn(u64) -> Option<String>,
) -> Result<TakenUp, PluginError> {
    let person = whoami(api).await?;
    if person.starts_with("system:serviceaccount:") || person.starts_with("system:") {
        return Err(PluginError::ServiceAccount { user: person });
    }
    let at = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let decision = decision_of(request, &person, &at);
    let runs: Api<StudioRun> = Api::namespaced(api.clone(), namespace);
    let patch: json_patch::Patch = serde_json::from_value(append_patch(&decision))
        .map_err(|e| PluginError::Approval(format!("cannot write the decision as a patch: {e}")))?;
    let written = runs
        .patch_status(run, &PatchParams::default(), &Patch::Json::<()>(patch))
        .await
        .map_err(|e| {
            PluginError::of(
                format!(
                    "{} approval {} of studiorun {run} in {namespace}",
                    match request.verb {
                        DecisionVerb::Approve => "approving",
                        DecisionVerb::Reject => "rejecting",
                    },
                    request.id
                ),
                e,
            )
        })?;
    let index = written
        .status
        .as_ref()
        .and_then(|s| {
            s.decisions
                .iter()
                .rposition(|d| d.approval_id == request.id)
        })
        .map(|i| i as u64);
    let deadline = tokio::time::Instant::now() + TAKE_UP_WAIT;
    loop {
        if let Some(index) = index
            && let Some(why) = refused(index).await
        {
            return Ok(TakenUp::Refused(why));
        }
        if let Ok(now) = runs.get(run).await {
            let status = now.status.clone().unwrap_or_default();
            if !status.pending_approvals.iter().any(|p| p.id == request.id) {
                let phase = status
                    .phase
                    .map(|p| format!("{p:?}"))
                    .unwrap_or_else(|| "Pending".to_owned());
                return Ok(TakenUp::Yes(phase));
            }
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok(TakenUp::NotYet);
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use orrery_crds::run::StudioRunStatus;

    const UID: &str = "uid-7";
    const TEXT: &str = "Publish v2.4?\n\u{1b}[31mrm -rf /\u{202e}evil";

    fn pending(id: &str, digest: &str) -> PendingApproval {
        PendingApproval {
            id: id.into(),
            node: "review".into(),
            kind: ApprovalKind::Approval,
            digest: digest.into(),
            size: TEXT.len() as u64,
            complete: true,
            expires_at: "2026-12-06T10:15:00Z".into(),
        }
    }

    fn view(id: &str, text: &str) -> ApprovalView {
        ApprovalView {
            id: id.into(),
            kind: ApprovalKind::Approval,
            node: "review".into(),
            prompt: "Publish these notes?".into(),
            text: "(the sidecar's rendering, not used)".into(),
            text_note: None,
            exact_text: text.into(),
            digest: approval_digest(UID, id, text),
            size: text.len() as u64,
            complete: true,
            expires_at: "2026-12-06T10:15:00Z".into(),
            state: ApprovalState::Pending,
            refused: Vec::new(),
        }
    }

    fn run_with(pending: Vec<PendingApproval>) -> StudioRun {
        let mut run = crate::run_for(&crate::StartRequest::default(), "alice");
        run.metadata.uid = Some(UID.into());
        run.status = Some(StudioRunStatus {
            pending_approvals: pending,
            ..StudioRunStatus::default()
        });
        run
    }

    fn now() -> jiff::Timestamp {
        "2026-12-06T10:03:00Z".parse().unwrap_or_default()
    }

    #[test]
    fn the_text_is_shown_with_escapes_visible_and_its_digest_checked_against_the_status() {
        let run = run_with(vec![pending("a-1", &approval_digest(UID, "a-1", TEXT))]);
        let list = ApprovalList {
            items: vec![view("a-1", TEXT)],
        };
        let shown = join(&run, Some(&list));
        assert!(shown[0].digest_checked());
        let out = render(&shown[0], now());
        assert!(
            out.starts_with("a-1  Approval  node review  expires in 12m (2026-12-06T10:15:00Z)\n"),
            "{out}"
        );
        assert!(out.contains("  asks: Publish these notes?\n"), "{out}");
        assert!(out.contains("  | Publish v2.4?\n"), "{out}");
        assert!(out.contains("\\x1b"), "{out}");
        assert!(
            !out.contains('\u{1b}') && !out.contains('\u{202e}'),
            "{out}"
        );
        assert!(out.contains("matches the run's status"), "{out}");
        assert!(!out.contains("sidecar's rendering"), "{out}");
    }

    #[test]
    fn a_decision_not_taken_is_shown_with_the_sidecars_reason_and_found_by_its_index() {
        let run = run_with(vec![pending("a-1", &approval_digest(UID, "a-1", TEXT))]);
        let mut refused = view("a-1", TEXT);
        refused.refused = vec![orrery_crds::approval::RefusedDecision {
            index: 3,
            reason: "the admission policies that check who writes status.decisions are not all in place\u{1b}[2J".into(),
        }];
        let list = ApprovalList {
            items: vec![refused],
        };
        let out = render(&join(&run, Some(&list))[0], now());
        assert!(
            out.contains(
                "  not taken: the decision at status.decisions[3]: the admission policies"
            ) && !out.contains('\u{1b}'),
            "{out}"
        );
        let why = refusal_in(&list, "a-1", 3).unwrap_or_default();
        assert!(
            why.starts_with("the admission policies") && !why.contains('\u{1b}'),
            "{why}"
        );
        assert_eq!(refusal_in(&list, "a-1", 2), None);
        assert_eq!(refusal_in(&list, "a-2", 3), None);
    }

    #[test]
    fn a_text_that_does_not_hash_to_the_status_digest_is_flagged_not_to_approve() {
        let run = run_with(vec![pending(
            "a-1",
            &approval_digest(UID, "a-1", "the text reviewed"),
        )]);
        let list = ApprovalList {
            items: vec![view("a-1", TEXT)],
        };
        let shown = join(&run, Some(&list));
        assert!(!shown[0].digest_checked());
        assert!(render(&shown[0], now()).contains("DIGEST MISMATCH"));
    }

    #[test]
    fn a_settled_approval_from_the_sidecar_is_not_joined_to_a_pending_one() {
        let run = run_with(vec![pending("a-1", "d")]);
        let mut settled = view("a-1", TEXT);
        settled.state = ApprovalState::Approved;
        let shown = join(
            &run,
            Some(&ApprovalList {
                items: vec![settled],
            }),
        );
        assert!(shown[0].view.is_none() && !shown[0].digest_checked());
        assert!(render(&shown[0], now()).contains("the text was not read"));
    }

    #[test]
    fn the_approval_decided_is_the_named_one_or_the_only_one_waiting() {
        let one = join(&run_with(vec![pending("a-1", "d")]), None);
        assert_eq!(
            pick(&one, "r", None).map(|s| s.pending.id.as_str()).ok(),
            Some("a-1")
        );
        let two = join(
            &run_with(vec![pending("a-1", "d"), pending("a-2", "e")]),
            None,
        );
        let err = pick(&two, "r", None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(
            err,
            "studiorun r waits on 2 approvals; name one (waiting: a-1, a-2)"
        );
        let err = pick(&two, "r", Some("a-9"))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(
            err,
            "studiorun r has no pending approval a-9 (waiting: a-1, a-2)"
        );
        let none = join(&run_with(Vec::new()), None);
        assert!(pick(&none, "r", None).is_err());
    }

    #[test]
    fn a_decision_is_one_append_to_status_decisions_in_the_persons_name() {
        let request = DecisionRequest {
            id: "a-1".into(),
            verb: DecisionVerb::Approve,
            digest: Some("abc".into()),
            comment: None,
            answer: None,
        };
        let patch = append_patch(&decision_of(&request, "alice", "2026-12-06T10:04:00Z"));
        assert_eq!(
            patch,
            serde_json::json!([{"op": "add", "path": "/status/decisions/-", "value": {
                "approvalId": "a-1", "decision": "Approve", "digest": "abc",
                "decidedBy": "alice", "decidedAt": "2026-12-06T10:04:00Z"}}])
        );
        assert!(serde_json::from_value::<json_patch::Patch>(patch).is_ok());
    }

    #[test]
    fn expiry_reads_as_a_countdown_or_expired() {
        assert_eq!(expires_in("2026-12-06T10:03:45Z", now()), "in 45s");
        assert_eq!(expires_in("2026-12-06T10:00:00Z", now()), "expired");
    }
}
