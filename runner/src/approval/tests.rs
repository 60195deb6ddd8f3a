#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use crate::events::{MemorySink, TraceOptions};
use orrery_crds::budget::BudgetLimits;
use sha2::Digest as _;
use std::time::Instant;

fn people(
    source: Arc<dyn DecisionSource>,
    timeout: Duration,
) -> (People, Arc<MemorySink>, Arc<Ledger>) {
    let sink = Arc::new(MemorySink::new());
    let trace = Trace::new(TraceOptions::new("r"), vec![sink.clone()]);
    let ledger = Arc::new(Ledger::new(BudgetLimits::default()));
    (
        People::new(source, trace, ledger.clone(), timeout),
        sink,
        ledger,
    )
}

/// The digest `People` gives `text` as approval `id` of the run the tests' trace belongs to.
fn digest_of(id: &str, text: &str) -> String {
    approval_digest("r", id, text)
}

#[tokio::test]
async fn the_digest_binds_the_run_the_approval_id_and_the_text_rule_4_6() {
    let ask = |run: &'static str, texts: &'static [&'static str]| async move {
        let source = Arc::new(ScriptedDecisions::new(
            texts.iter().map(|_| ScriptedDecision::Approve),
        ));
        let trace = Trace::new(TraceOptions::new(run), vec![]);
        let ledger = Arc::new(Ledger::new(BudgetLimits::default()));
        let p = People::new(source.clone(), trace, ledger, Duration::from_secs(5));
        for text in texts {
            p.ask(
                ApprovalKind::Approval,
                "gate",
                "",
                text,
                &CancellationToken::new(),
            )
            .await
            .unwrap();
        }
        source
            .requests()
            .into_iter()
            .map(|r| r.digest)
            .collect::<Vec<_>>()
    };
    let one = ask("run-1", &["ship it", "ship it"]).await;
    let other = ask("run-2", &["ship it"]).await;
    // SHA-256 over the run's id, the approval's id and the text, each length-prefixed.
    assert_eq!(one[0], approval_digest("run-1", "approval-1", "ship it"));
    assert_eq!(one[0].len(), 64);
    assert_ne!(
        one[0], one[1],
        "the same text in another approval of the run"
    );
    assert_ne!(one[0], other[0], "the same text and id in another run");
    assert_ne!(
        one[0],
        hex::encode(sha2::Sha256::digest(b"ship it")),
        "never the text's own SHA-256, which any run shares"
    );
}

#[tokio::test]
async fn an_approval_naming_the_digest_is_approved() {
    let source = Arc::new(ScriptedDecisions::new([ScriptedDecision::Approve]));
    let (p, sink, _) = people(source.clone(), Duration::from_secs(5));
    let got = p
        .ask(
            ApprovalKind::Approval,
            "gate",
            "ok?",
            "draft",
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(got, Settled::Approved { answer: None });
    assert_eq!(sink.types(), vec!["approval.requested", "approval.decided"]);
    assert_eq!(
        source.requests()[0].digest,
        digest_of("approval-1", "draft")
    );
}

#[tokio::test]
async fn a_wrong_digest_is_refused_and_reported_and_the_request_stays_open() {
    let source = Arc::new(ScriptedDecisions::new([
        ScriptedDecision::ApproveDigest("0".repeat(64)),
        ScriptedDecision::Reject(Some("no".into())),
    ]));
    let (p, _, _) = people(source.clone(), Duration::from_secs(5));
    let got = p
        .ask(
            ApprovalKind::Approval,
            "gate",
            "",
            "draft",
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        got,
        Settled::Rejected {
            comment: Some("no".into())
        }
    );
    assert_eq!(source.refusals().len(), 1);
    assert!(source.refusals()[0].contains("does not match"));
}

#[tokio::test]
async fn an_undecided_request_expires() {
    let source = Arc::new(ScriptedDecisions::new([]));
    let (p, _, _) = people(source, Duration::from_millis(50));
    let got = p
        .ask(
            ApprovalKind::Approval,
            "gate",
            "",
            "draft",
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(got, Settled::Expired);
}

#[tokio::test]
async fn nobody_lets_a_request_expire_at_once() {
    let (p, _, _) = people(Arc::new(Nobody::quiet()), Duration::from_secs(600));
    let got = p
        .ask(
            ApprovalKind::Approval,
            "gate",
            "",
            "x",
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(got, Settled::Expired);
}

#[tokio::test]
async fn a_cancel_settles_a_waiting_request() {
    let (p, _, _) = people(
        Arc::new(ScriptedDecisions::new([])),
        Duration::from_secs(600),
    );
    let cancel = CancellationToken::new();
    cancel.cancel();
    let got = p
        .ask(ApprovalKind::Approval, "gate", "", "x", &cancel)
        .await
        .unwrap();
    assert_eq!(got, Settled::Cancelled);
}

#[tokio::test]
async fn text_over_128_kib_can_only_be_rejected() {
    let source = Arc::new(ScriptedDecisions::new([
        ScriptedDecision::Approve,
        ScriptedDecision::Reject(None),
    ]));
    let (p, _, _) = people(source.clone(), Duration::from_secs(5));
    let big = "x".repeat(MAX_COMPLETE_BYTES + 1);
    let got = p
        .ask(
            ApprovalKind::Approval,
            "gate",
            "",
            &big,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(got, Settled::Rejected { comment: None });
    assert!(!source.requests()[0].complete);
    assert!(source.refusals()[0].contains("only be rejected"));
}

#[tokio::test]
async fn a_run_asks_at_most_twelve_times() {
    let decisions = std::iter::repeat_n(ScriptedDecision::Approve, 13);
    let (p, _, _) = people(
        Arc::new(ScriptedDecisions::new(decisions)),
        Duration::from_secs(5),
    );
    let cancel = CancellationToken::new();
    for _ in 0..MAX_APPROVALS_PER_RUN {
        assert!(
            p.ask(ApprovalKind::Approval, "g", "", "t", &cancel)
                .await
                .is_ok()
        );
    }
    assert_eq!(
        p.ask(ApprovalKind::Input, "g", "", "t", &cancel).await,
        Err(AskError::LimitReached(MAX_APPROVALS_PER_RUN))
    );
}

/// A source that records whether the run's deadline was paused while it was asked, then never
/// answers.
struct SeesThePause {
    ledger: std::sync::OnceLock<Arc<Ledger>>,
    paused_when_asked: std::sync::Mutex<Vec<bool>>,
}

#[async_trait::async_trait]
impl DecisionSource for SeesThePause {
    async fn decide(&self, _: &ApprovalRequest, _: &CancellationToken) -> Option<Decision> {
        let paused = self.ledger.get().is_some_and(|l| l.is_paused());
        self.paused_when_asked.lock().unwrap().push(paused);
        std::future::pending().await
    }
}

#[tokio::test]
async fn the_deadline_is_paused_while_a_person_decides() {
    let source = Arc::new(SeesThePause {
        ledger: std::sync::OnceLock::new(),
        paused_when_asked: std::sync::Mutex::new(Vec::new()),
    });
    let (p, _, ledger) = people(source.clone(), Duration::from_millis(300));
    source.ledger.set(ledger.clone()).unwrap();
    let got = p
        .ask(
            ApprovalKind::Approval,
            "g",
            "",
            "t",
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(got, Settled::Expired);
    assert_eq!(*source.paused_when_asked.lock().unwrap(), [true]);
    assert!(
        !ledger.is_paused(),
        "the deadline runs again after the decision"
    );
    // The whole 300 ms wait is left out of run time (read in this order, whatever the
    // scheduler did), and counted in wall time.
    let active = ledger.active_elapsed();
    let wall = ledger.totals().wall_time_ms;
    assert!(
        wall >= u64::try_from(active.as_millis()).unwrap() + 300,
        "{wall} ms wall, {active:?} run"
    );
}

#[tokio::test]
async fn an_enormous_timeout_is_cut_to_one_day_and_never_overflows_rule_4_13() {
    let (p, sink, _) = people(Arc::new(Nobody::quiet()), Duration::MAX);
    assert_eq!(p.timeout(), MAX_APPROVAL_TIMEOUT);
    let got = p
        .ask(
            ApprovalKind::Approval,
            "gate",
            "",
            "x",
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(got, Settled::Expired);
    let expires = sink
        .events()
        .iter()
        .find_map(|e| match &e.body {
            EventBody::ApprovalRequested { expires_at, .. } => Some(expires_at.clone()),
            _ => None,
        })
        .unwrap();
    let expires: jiff::Timestamp = expires.parse().unwrap();
    let left = expires.duration_since(jiff::Timestamp::now());
    assert!(
        left <= jiff::SignedDuration::from_secs(86_400),
        "expires within a day: {left:?}"
    );
}

#[tokio::test]
async fn a_request_whose_wait_is_dropped_is_still_decided_cancelled_rules_4_14_4_15() {
    let (p, sink, ledger) = people(
        Arc::new(ScriptedDecisions::new([ScriptedDecision::Wait])),
        Duration::from_secs(600),
    );
    // The caller gives up without cancelling the token (a tool call cut short).
    let never = CancellationToken::new();
    let wait = p.ask(ApprovalKind::Action, "writer", "", "deploy", &never);
    assert!(
        tokio::time::timeout(Duration::from_millis(50), wait)
            .await
            .is_err()
    );
    assert_eq!(sink.types(), ["approval.requested", "approval.decided"]);
    match &sink.events()[1].body {
        EventBody::ApprovalDecided { decision, kind, .. } => {
            assert_eq!(*decision, DecisionKind::Cancelled);
            assert_eq!(*kind, ApprovalKind::Action);
        }
        other => panic!("{other:?}"),
    }
    assert!(!ledger.is_paused(), "the deadline runs again");
}

/// A writer the tests read back.
#[derive(Clone, Default)]
struct Screen(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Screen {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Screen {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

fn request(id: &str, text: &str) -> ApprovalRequest {
    ApprovalRequest {
        id: id.into(),
        kind: ApprovalKind::Approval,
        node: "gate".into(),
        prompt: "Publish?".into(),
        text: text.into(),
        digest: digest_of(id, text),
        size: text.len() as u64,
        complete: true,
        expires_at: "2026-01-01T00:00:00.000Z".into(),
    }
}

fn typed(tx: &tokio::sync::mpsc::UnboundedSender<(Instant, String)>, lines: &[&str]) {
    for line in lines {
        tx.send((Instant::now(), (*line).to_owned())).unwrap();
    }
}

#[tokio::test]
async fn typed_ahead_and_pasted_lines_never_answer_a_new_request_rules_4_8_4_26() {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let prompt = Arc::new(TerminalPrompt::with_io(rx, Box::new(Screen::default())));
    let cancel = CancellationToken::new();
    // Typed before the first request is shown: it must not approve it.
    typed(&tx, &["a"]);
    let first = {
        let prompt = prompt.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move { prompt.decide(&request("approval-1", "one"), &cancel).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    // A multi-line paste: reject with a comment, and one line too many.
    typed(&tx, &["r", "needs sources", "a"]);
    assert_eq!(
        first.await.unwrap(),
        Some(Decision::Reject {
            comment: Some("needs sources".into())
        })
    );
    // The pasted "a" was typed before the second request was shown: it does not approve it.
    let second = {
        let prompt = prompt.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move { prompt.decide(&request("approval-2", "two"), &cancel).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!second.is_finished(), "still waiting for the person");
    typed(&tx, &["r", ""]);
    assert_eq!(
        second.await.unwrap(),
        Some(Decision::Reject { comment: None })
    );
}

#[tokio::test]
async fn escapes_in_the_text_under_review_are_shown_visibly_and_flagged_rule_4_7() {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let screen = Screen::default();
    let prompt = Arc::new(TerminalPrompt::with_io(rx, Box::new(screen.clone())));
    let raw = "Run: rm -rf / on all prod hosts\x1b[2K\rRelease notes: typo fixes only. \u{202e}";
    let waiting = {
        let prompt = prompt.clone();
        tokio::spawn(async move {
            prompt
                .decide(&request("approval-1", raw), &CancellationToken::new())
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    typed(&tx, &["a"]);
    let decision = waiting.await.unwrap();
    let shown = screen.text();
    assert!(
        !shown.contains('\x1b') && !shown.contains('\r') && !shown.contains('\u{202e}'),
        "{shown:?}"
    );
    assert!(
        shown.contains(
            "Run: rm -rf / on all prod hosts\\x1b[2K\\rRelease notes: typo fixes only. \\u{202e}"
        ),
        "{shown}"
    );
    assert!(
        shown.contains("⚠ this text contains 3 control or invisible characters"),
        "{shown}"
    );
    assert!(shown.contains(&digest_of("approval-1", raw)));
    // The approval names the digest of the exact text, not of what was shown.
    assert_eq!(
        decision,
        Some(Decision::Approve {
            digest: digest_of("approval-1", raw),
            answer: None
        })
    );
}

/// Waits (bounded, generously) until `screen` shows `needle`.
async fn until_shown(screen: &Screen, needle: &str) {
    for _ in 0..2000 {
        if screen.text().contains(needle) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("never shown: {needle:?} in {:?}", screen.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trace_so_far_comes_before_the_prompt_and_nothing_writes_over_a_waiting_prompt() {
    use crate::events::{PrinterOptions, TerminalHold, TerminalPrinter};
    // One terminal: the trace (through its writer thread) and the prompt write to it.
    let screen = Screen::default();
    let hold = TerminalHold::new(Box::new(screen.clone()));
    let printer = Arc::new(TerminalPrinter::new(
        Box::new(hold.writer()),
        PrinterOptions::default(),
    ));
    let trace = Trace::buffered(TraceOptions::new("r"), vec![printer], 1024);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let prompt = TerminalPrompt::with_io(rx, Box::new(screen.clone())).holding(hold.clone());
    let ledger = Arc::new(Ledger::new(BudgetLimits::default()));
    let people = Arc::new(People::new(
        Arc::new(prompt),
        trace.clone(),
        ledger,
        Duration::from_secs(600),
    ));
    let route = |node: &str| EventBody::RouteTaken {
        node_id: node.into(),
        label: "go".into(),
        to: None,
    };
    // A node that ran before the approval.
    trace.emit(route("before"));
    let asking = {
        let people = people.clone();
        tokio::spawn(async move {
            people
                .ask(
                    ApprovalKind::Approval,
                    "gate",
                    "Publish?",
                    "the text",
                    &CancellationToken::new(),
                )
                .await
        })
    };
    until_shown(&screen, "[a]pprove").await;
    // A parallel branch goes on while the person reads: its line waits for the answer.
    trace.emit(route("during"));
    assert!(trace.drain(Duration::from_secs(10)).await);
    assert!(hold.is_held());
    assert!(
        !screen.text().contains("during"),
        "nothing writes over a waiting prompt: {}",
        screen.text()
    );
    typed(&tx, &["a"]);
    assert_eq!(
        asking.await.unwrap().unwrap(),
        Settled::Approved { answer: None }
    );
    assert!(trace.drain(Duration::from_secs(10)).await);
    let text = screen.text();
    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} missing from {text}"))
    };
    assert!(at("before") < at("waiting for a person"), "{text}");
    assert!(at("waiting for a person") < at("approval needed"), "{text}");
    assert!(at("approval needed") < at("[a]pprove"), "{text}");
    assert!(at("[a]pprove") < at("during"), "{text}");
}

/// Every settlement a source was told of, as (id, outcome, decision taken).
fn settlements_of(source: &ScriptedDecisions) -> Vec<(String, Settled, Option<Decision>)> {
    source.settlements()
}

#[tokio::test]
async fn the_source_is_told_once_how_each_request_was_settled_and_which_decision_was_taken() {
    let source = Arc::new(ScriptedDecisions::new([
        ScriptedDecision::ApproveDigest("0".repeat(64)),
        ScriptedDecision::Answer("42".into()),
        ScriptedDecision::Reject(Some("no".into())),
    ]));
    let (p, _, _) = people(source.clone(), Duration::from_millis(300));
    let cancel = CancellationToken::new();
    let approved = p
        .ask(ApprovalKind::Input, "asker", "", "how many?", &cancel)
        .await
        .unwrap();
    let rejected = p
        .ask(ApprovalKind::Approval, "gate", "", "draft", &cancel)
        .await
        .unwrap();
    // The script ran out: nobody decides, the request expires.
    let expired = p
        .ask(ApprovalKind::Approval, "gate", "", "draft 2", &cancel)
        .await
        .unwrap();
    cancel.cancel();
    let cancelled = p
        .ask(ApprovalKind::Action, "writer", "", "deploy", &cancel)
        .await
        .unwrap();
    assert_eq!(
        [&approved, &rejected, &expired, &cancelled],
        [
            &Settled::Approved {
                answer: Some("42".into())
            },
            &Settled::Rejected {
                comment: Some("no".into())
            },
            &Settled::Expired,
            &Settled::Cancelled,
        ]
    );
    // The wrong digest was refused (the request stayed open), not settled.
    assert_eq!(source.refusals().len(), 1);
    assert_eq!(
        settlements_of(&source),
        [
            (
                "input-1".to_owned(),
                approved,
                Some(Decision::Approve {
                    digest: digest_of("input-1", "how many?"),
                    answer: Some("42".into())
                })
            ),
            (
                "approval-2".to_owned(),
                rejected,
                Some(Decision::Reject {
                    comment: Some("no".into())
                })
            ),
            ("approval-3".to_owned(), expired, None),
            ("action-4".to_owned(), cancelled, None),
        ]
    );
}

#[tokio::test]
async fn a_request_whose_wait_is_dropped_is_settled_cancelled_with_the_source_rule_4_15() {
    let source = Arc::new(ScriptedDecisions::new([ScriptedDecision::Wait]));
    let (p, _, _) = people(source.clone(), Duration::from_secs(600));
    let never = CancellationToken::new();
    let wait = p.ask(ApprovalKind::Action, "writer", "", "deploy", &never);
    assert!(
        tokio::time::timeout(Duration::from_millis(50), wait)
            .await
            .is_err()
    );
    assert_eq!(
        settlements_of(&source),
        [("action-1".to_owned(), Settled::Cancelled, None)]
    );
}
