//! People deciding a runner pod's requests through the sidecar's approval relay
//! (`orrery_runner::approval::SidecarDecisions` speaking `orrery_crds::relay`), against a test
//! sidecar keeping the contract with scripted answers: ask, long-poll the decision, settle;
//! the run token on every call; the digest bound to the run, the approval and the text (rules
//! 4.6, 4.8, 4.12–4.15, 10.15).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod relay_support;

use orrery_crds::budget::BudgetLimits;
use orrery_crds::relay::{MAX_WAIT_SECONDS, Settlement, approval_digest};
use orrery_crds::run::ApprovalKind;
use orrery_runner::approval::{People, Settled, SidecarDecisions, SidecarDecisionsOptions};
use orrery_runner::events::{EventBody, MemorySink, Trace, TraceOptions};
use orrery_runner::ledger::Ledger;
use relay_support::{Call, Relay, Reply};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const RUN: &str = "uid-relay-1";
const TOKEN: &str = "eyJhbGciOiJFZERTQSJ9.run-token.sig";
const TEXT: &str = "Release notes: typo fixes only.";

/// Quick retries and polls: the tests wait on state, never on these.
fn options() -> SidecarDecisionsOptions {
    SidecarDecisionsOptions {
        backoff_base: Duration::from_millis(10),
        backoff_max: Duration::from_millis(50),
        min_poll_interval: Duration::from_millis(10),
        ..SidecarDecisionsOptions::default()
    }
}

struct Asker {
    people: Arc<People>,
    relay: Arc<SidecarDecisions>,
    sink: Arc<MemorySink>,
}

fn asker(url: &str, timeout: Duration) -> Asker {
    let relay = Arc::new(
        SidecarDecisions::new(
            url,
            RUN,
            TOKEN,
            options(),
            &tokio::runtime::Handle::current(),
        )
        .expect("a relay client"),
    );
    let sink = Arc::new(MemorySink::new());
    let trace = Trace::new(TraceOptions::new(RUN), vec![sink.clone()]);
    let ledger = Arc::new(Ledger::new(BudgetLimits::default()));
    let people = Arc::new(People::new(relay.clone(), trace, ledger, timeout));
    Asker {
        people,
        relay,
        sink,
    }
}

impl Asker {
    async fn ask(&self, cancel: &CancellationToken) -> Settled {
        self.people
            .ask(ApprovalKind::Approval, "review", "Publish?", TEXT, cancel)
            .await
            .expect("asked")
    }

    /// Waits for every settlement to reach the sidecar.
    async fn settled(&self) {
        assert!(
            self.relay.wait(Duration::from_secs(20)).await,
            "the settlements reached the sidecar"
        );
    }
}

/// Every call carried the run token.
fn assert_token_on_every_call(relay: &Relay) {
    assert!(!relay.authorizations.is_empty());
    let bearer = format!("Bearer {TOKEN}");
    assert!(
        relay
            .authorizations
            .iter()
            .all(|a| a.as_deref() == Some(bearer.as_str())),
        "{:?}",
        relay.authorizations
    );
}

#[tokio::test]
async fn an_approval_naming_the_right_digest_is_settled_approved_at_its_index_and_the_run_goes_on()
{
    let relay = Relay::new(RUN, TOKEN);
    relay.lock().unwrap().poll_script = [
        Reply::Nothing,
        Reply::Nothing,
        Reply::ApproveRight { index: 0 },
    ]
    .into();
    let url = relay_support::start(relay.clone()).await;
    let a = asker(&url, Duration::from_secs(600));
    let got = a.ask(&CancellationToken::new()).await;
    assert_eq!(got, Settled::Approved { answer: None });
    a.settled().await;

    let r = relay.lock().unwrap();
    assert_token_on_every_call(&r);
    assert_eq!(r.asks.len(), 1, "asked once");
    let asked = &r.asks[0];
    assert_eq!(
        (asked.id.as_str(), asked.kind, asked.node.as_str()),
        ("approval-1", ApprovalKind::Approval, "review")
    );
    assert_eq!(
        (asked.prompt.as_str(), asked.text.as_str()),
        ("Publish?", TEXT)
    );
    assert_eq!(asked.digest, approval_digest(RUN, "approval-1", TEXT));
    assert_eq!((asked.size, asked.complete), (TEXT.len() as u64, true));
    assert!(r.wrong_digests.is_empty());
    // What the sidecar shows is what the trace says was asked.
    let requested = a
        .sink
        .events()
        .into_iter()
        .find_map(|e| match e.body {
            EventBody::ApprovalRequested {
                digest, expires_at, ..
            } => Some((digest, expires_at)),
            _ => None,
        })
        .expect("approval.requested");
    assert_eq!(requested, (asked.digest.clone(), asked.expires_at.clone()));
    // 204 twice, then the decision: every poll waits from the start, for the contract's
    // longest wait.
    assert_eq!(r.polls_after(), [0, 0, 0]);
    assert!(r.calls.iter().all(|c| match c {
        Call::Poll { wait_seconds, .. } => *wait_seconds == MAX_WAIT_SECONDS,
        _ => true,
    }));
    assert_eq!(
        r.settlements(),
        [("approval-1".into(), Settlement::Approved { index: 0 })]
    );
    assert_eq!(
        a.sink.types(),
        ["approval.requested", "approval.decided"],
        "decided once"
    );
}

#[tokio::test]
async fn a_wrong_digest_is_refused_with_a_settlement_and_the_next_decision_is_awaited_after_it_rule_4_8()
 {
    let relay = Relay::new(RUN, TOKEN);
    relay.lock().unwrap().poll_script = [
        Reply::ApproveWith {
            index: 0,
            digest: "0".repeat(64),
        },
        Reply::Nothing,
        Reply::ApproveRight { index: 1 },
    ]
    .into();
    let url = relay_support::start(relay.clone()).await;
    let a = asker(&url, Duration::from_secs(600));
    assert_eq!(
        a.ask(&CancellationToken::new()).await,
        Settled::Approved { answer: None }
    );
    a.settled().await;
    let r = relay.lock().unwrap();
    assert_token_on_every_call(&r);
    assert_eq!(r.polls_after(), [0, 1, 1], "waits after the refused one");
    let settlements = r.settlements();
    assert_eq!(settlements.len(), 2, "{settlements:?}");
    match &settlements[0] {
        (id, Settlement::Refused { index: 0, reason }) if id == "approval-1" => {
            assert!(reason.contains("does not match"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        settlements[1],
        ("approval-1".into(), Settlement::Approved { index: 1 })
    );
}

#[tokio::test]
async fn a_rejection_carries_its_comment_and_is_settled_rejected_at_its_index_rule_4_10() {
    let relay = Relay::new(RUN, TOKEN);
    relay.lock().unwrap().poll_script = [Reply::Reject {
        index: 3,
        comment: Some("needs sources".into()),
    }]
    .into();
    let url = relay_support::start(relay.clone()).await;
    let a = asker(&url, Duration::from_secs(600));
    assert_eq!(
        a.ask(&CancellationToken::new()).await,
        Settled::Rejected {
            comment: Some("needs sources".into())
        }
    );
    a.settled().await;
    let r = relay.lock().unwrap();
    assert_token_on_every_call(&r);
    assert_eq!(
        r.settlements(),
        [("approval-1".into(), Settlement::Rejected { index: 3 })]
    );
}

#[tokio::test]
async fn nobody_deciding_settles_the_request_expired_at_its_expiry_without_waiting_for_the_long_poll_rule_4_13()
 {
    let relay = Relay::new(RUN, TOKEN);
    let url = relay_support::start(relay.clone()).await;
    let a = asker(&url, Duration::from_millis(300));
    assert_eq!(a.ask(&CancellationToken::new()).await, Settled::Expired);
    a.settled().await;
    let r = relay.lock().unwrap();
    assert_token_on_every_call(&r);
    assert_eq!(
        r.settlements(),
        [("approval-1".into(), Settlement::Expired)]
    );
    assert_eq!(
        r.polls_open_at_settlement(0),
        1,
        "settled while the sidecar still held the poll: {:?}",
        r.calls
    );
}

#[tokio::test]
async fn a_cancel_while_a_person_decides_settles_cancelled_at_once_rules_4_14_10_15() {
    let relay = Relay::new(RUN, TOKEN);
    let url = relay_support::start(relay.clone()).await;
    let a = Arc::new(asker(&url, Duration::from_secs(600)));
    let cancel = CancellationToken::new();
    let asking = {
        let (a, cancel) = (a.clone(), cancel.clone());
        tokio::spawn(async move { a.ask(&cancel).await })
    };
    relay_support::until(&relay, |r| r.polls_open() == 1).await;
    cancel.cancel();
    assert_eq!(asking.await.unwrap(), Settled::Cancelled);
    a.settled().await;
    let r = relay.lock().unwrap();
    assert_token_on_every_call(&r);
    assert_eq!(
        r.settlements(),
        [("approval-1".into(), Settlement::Cancelled)]
    );
    assert_eq!(
        r.polls_open_at_settlement(0),
        1,
        "the cancel did not wait for the long poll: {:?}",
        r.calls
    );
}

#[tokio::test]
async fn a_sidecar_down_for_a_while_then_up_still_relays_the_decision() {
    // Nothing listens on the port at first: the ask is refused at the connection.
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let a = Arc::new(asker(&url, Duration::from_secs(600)));
    let asking = {
        let a = a.clone();
        tokio::spawn(async move { a.ask(&CancellationToken::new()).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!asking.is_finished(), "still trying");
    // Then up, but unavailable for two asks and one poll.
    let relay = Relay::new(RUN, TOKEN);
    {
        let mut r = relay.lock().unwrap();
        r.ask_script = [503, 503].into();
        r.poll_script = [Reply::Status(503), Reply::ApproveRight { index: 0 }].into();
    }
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .expect("the port is still free");
    relay_support::serve(listener, relay_support::router(relay.clone()));
    assert_eq!(asking.await.unwrap(), Settled::Approved { answer: None });
    a.settled().await;
    let r = relay.lock().unwrap();
    assert_token_on_every_call(&r);
    let asks: Vec<u16> = r
        .calls
        .iter()
        .filter_map(|c| match c {
            Call::Ask { status, .. } => Some(*status),
            _ => None,
        })
        .collect();
    assert_eq!(asks, [503, 503, 201]);
    assert_eq!(r.polls_after(), [0, 0]);
    assert_eq!(
        r.settlements(),
        [("approval-1".into(), Settlement::Approved { index: 0 })]
    );
}

#[tokio::test]
async fn a_digest_of_another_run_or_another_approval_does_not_approve_rule_4_8() {
    let relay = Relay::new(RUN, TOKEN);
    relay.lock().unwrap().poll_script = [
        // The same text and approval id, in another run.
        Reply::ApproveWith {
            index: 0,
            digest: approval_digest("uid-other-run", "approval-1", TEXT),
        },
        // The same text in this run, as another approval.
        Reply::ApproveWith {
            index: 1,
            digest: approval_digest(RUN, "approval-2", TEXT),
        },
        Reply::Reject {
            index: 2,
            comment: None,
        },
    ]
    .into();
    let url = relay_support::start(relay.clone()).await;
    let a = asker(&url, Duration::from_secs(600));
    assert_eq!(
        a.ask(&CancellationToken::new()).await,
        Settled::Rejected { comment: None }
    );
    a.settled().await;
    let r = relay.lock().unwrap();
    let outcomes: Vec<Settlement> = r
        .settlements()
        .into_iter()
        .map(|(_, s)| match s {
            Settlement::Refused { index, .. } => Settlement::Refused {
                index,
                reason: String::new(),
            },
            s => s,
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            Settlement::Refused {
                index: 0,
                reason: String::new()
            },
            Settlement::Refused {
                index: 1,
                reason: String::new()
            },
            Settlement::Rejected { index: 2 },
        ]
    );
    assert_eq!(r.polls_after(), [0, 1, 2]);
}

#[tokio::test]
async fn an_ask_the_sidecar_holds_with_another_digest_cannot_be_decided_and_expires_at_once() {
    let relay = Relay::new(RUN, TOKEN);
    relay.lock().unwrap().ask_script = [409].into();
    let url = relay_support::start(relay.clone()).await;
    // A day to decide: only the 409 can end the wait this soon.
    let a = asker(&url, Duration::from_secs(86_400));
    assert_eq!(a.ask(&CancellationToken::new()).await, Settled::Expired);
    a.settled().await;
    let r = relay.lock().unwrap();
    assert!(r.polls_after().is_empty(), "never waited for a decision");
    assert_eq!(
        r.settlements(),
        [("approval-1".into(), Settlement::Expired)]
    );
}

#[tokio::test]
async fn a_question_is_answered_through_the_relay() {
    let relay = Relay::new(RUN, TOKEN);
    relay.lock().unwrap().poll_script = [Reply::Answer {
        index: 0,
        answer: "Friday".into(),
    }]
    .into();
    let url = relay_support::start(relay.clone()).await;
    let a = asker(&url, Duration::from_secs(600));
    let got = a
        .people
        .ask(
            ApprovalKind::Input,
            "writer",
            "",
            "Which day?",
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        got,
        Settled::Approved {
            answer: Some("Friday".into())
        }
    );
    a.settled().await;
    let r = relay.lock().unwrap();
    assert_eq!(r.asks[0].id, "input-1");
    assert_eq!(r.asks[0].kind, ApprovalKind::Input);
    assert_eq!(
        r.settlements(),
        [("input-1".into(), Settlement::Approved { index: 0 })]
    );
}
