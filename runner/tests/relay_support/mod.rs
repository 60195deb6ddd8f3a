//! A test sidecar keeping the approval relay's contract (`orrery_crds::relay`) with scripted
//! answers: it checks the run token on every call (401 without it) and the ask's digest
//! against the one the contract defines, records every ask, poll and settlement in the order
//! they came, answers asks with a scripted status first (then 201), and long polls with the
//! scripted replies in order, then holds them (nobody decides) until the poll's `waitSeconds`.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use orrery_crds::approval::ApprovalRequest;
use orrery_crds::relay::{
    ASK_ROUTE, DECISION_ROUTE, RelayedDecision, SETTLE_ROUTE, Settlement, approval_digest,
};
use orrery_crds::run::DecisionVerb;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the test sidecar answers to the next long poll.
#[derive(Clone, Debug)]
pub enum Reply {
    /// 204: no decision yet.
    Nothing,
    /// This status, no body.
    Status(u16),
    /// Approve with the digest the contract defines for the asked text.
    ApproveRight { index: usize },
    /// Approve naming `digest`.
    ApproveWith { index: usize, digest: String },
    /// Approve with the right digest and an answer (kind Input).
    Answer { index: usize, answer: String },
    /// Reject with a comment.
    Reject {
        index: usize,
        comment: Option<String>,
    },
}

/// One call, in the order calls came.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    /// An ask, and the status answered.
    Ask { id: String, status: u16 },
    /// A long poll started, with its `after` and `waitSeconds`.
    Poll {
        id: String,
        after: usize,
        wait_seconds: u64,
    },
    /// A long poll answered (with a status); one dropped by the client is never answered.
    Answered { id: String, status: u16 },
    /// A settlement.
    Settle { id: String, settlement: Settlement },
}

/// What the test sidecar saw and will answer.
#[derive(Default)]
pub struct Relay {
    pub run_uid: String,
    pub token: String,
    /// Statuses answered to asks before the contract's 201.
    pub ask_script: VecDeque<u16>,
    /// Replies to long polls, in order.
    pub poll_script: VecDeque<Reply>,
    /// Every ask taken (201).
    pub asks: Vec<ApprovalRequest>,
    /// Every call, in order.
    pub calls: Vec<Call>,
    /// Every `Authorization` header, one per call.
    pub authorizations: Vec<Option<String>>,
    /// Asks whose digest was not the contract's for their run, id and text.
    pub wrong_digests: Vec<String>,
    /// The texts asked, by id (to approve with the right digest).
    texts: HashMap<String, String>,
}

pub type Shared = Arc<Mutex<Relay>>;

impl Relay {
    pub fn new(run_uid: &str, token: &str) -> Shared {
        Arc::new(Mutex::new(Relay {
            run_uid: run_uid.into(),
            token: token.into(),
            ..Relay::default()
        }))
    }

    /// Every settlement, in order.
    pub fn settlements(&self) -> Vec<(String, Settlement)> {
        self.calls
            .iter()
            .filter_map(|c| match c {
                Call::Settle { id, settlement } => Some((id.clone(), settlement.clone())),
                _ => None,
            })
            .collect()
    }

    /// The `after` of every long poll, in order.
    pub fn polls_after(&self) -> Vec<usize> {
        self.calls
            .iter()
            .filter_map(|c| match c {
                Call::Poll { after, .. } => Some(*after),
                _ => None,
            })
            .collect()
    }

    /// Long polls started and not answered.
    pub fn polls_open(&self) -> usize {
        let started = self
            .calls
            .iter()
            .filter(|c| matches!(c, Call::Poll { .. }))
            .count();
        let answered = self
            .calls
            .iter()
            .filter(|c| matches!(c, Call::Answered { .. }))
            .count();
        started - answered
    }

    /// Long polls not answered when settlement `n` (from 0) came.
    pub fn polls_open_at_settlement(&self, n: usize) -> usize {
        let mut open = 0i64;
        let mut seen = 0;
        for call in &self.calls {
            match call {
                Call::Poll { .. } => open += 1,
                Call::Answered { .. } => open -= 1,
                Call::Settle { .. } => {
                    if seen == n {
                        return usize::try_from(open).unwrap();
                    }
                    seen += 1;
                }
                Call::Ask { .. } => {}
            }
        }
        panic!("no settlement {n}: {:?}", self.calls)
    }

    fn authorized(&mut self, headers: &HeaderMap, uid: &str) -> bool {
        let auth = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let ok = auth.as_deref() == Some(format!("Bearer {}", self.token).as_str())
            && uid == self.run_uid;
        self.authorizations.push(auth);
        ok
    }
}

async fn ask(
    State(relay): State<Shared>,
    Path(uid): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let mut r = relay.lock().unwrap();
    if !r.authorized(&headers, &uid) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let request: ApprovalRequest = serde_json::from_slice(&body).expect("an ApprovalRequest");
    if let Some(status) = r.ask_script.pop_front() {
        r.calls.push(Call::Ask {
            id: request.id.clone(),
            status,
        });
        return StatusCode::from_u16(status).unwrap().into_response();
    }
    if request.digest != approval_digest(&uid, &request.id, &request.text) {
        r.wrong_digests.push(request.id.clone());
    }
    r.calls.push(Call::Ask {
        id: request.id.clone(),
        status: 201,
    });
    r.texts.insert(request.id.clone(), request.text.clone());
    r.asks.push(request);
    StatusCode::CREATED.into_response()
}

async fn decision(
    State(relay): State<Shared>,
    Path((uid, id)): Path<(String, String)>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let after: usize = query
        .get("after")
        .expect("after")
        .parse()
        .expect("a number");
    let wait_seconds: u64 = query
        .get("waitSeconds")
        .expect("waitSeconds")
        .parse()
        .expect("a number");
    let reply = {
        let mut r = relay.lock().unwrap();
        if !r.authorized(&headers, &uid) {
            return StatusCode::UNAUTHORIZED.into_response();
        }
        r.calls.push(Call::Poll {
            id: id.clone(),
            after,
            wait_seconds,
        });
        r.poll_script.pop_front()
    };
    let Some(reply) = reply else {
        // Nobody decides: hold the poll its whole wait, then 204.
        tokio::time::sleep(Duration::from_secs(wait_seconds)).await;
        relay
            .lock()
            .unwrap()
            .calls
            .push(Call::Answered { id, status: 204 });
        return StatusCode::NO_CONTENT.into_response();
    };
    let mut r = relay.lock().unwrap();
    let right =
        |r: &Relay| approval_digest(&uid, &id, r.texts.get(&id).expect("asked before polled"));
    let relayed = |index, decision, digest, comment, answer| RelayedDecision {
        index,
        decision,
        digest,
        comment,
        answer,
        decided_by: Some("jane@example.com".into()),
    };
    let decided = match reply {
        Reply::Nothing => {
            r.calls.push(Call::Answered { id, status: 204 });
            return StatusCode::NO_CONTENT.into_response();
        }
        Reply::Status(status) => {
            r.calls.push(Call::Answered { id, status });
            return StatusCode::from_u16(status).unwrap().into_response();
        }
        Reply::ApproveRight { index } => {
            relayed(index, DecisionVerb::Approve, Some(right(&r)), None, None)
        }
        Reply::ApproveWith { index, digest } => {
            relayed(index, DecisionVerb::Approve, Some(digest), None, None)
        }
        Reply::Answer { index, answer } => relayed(
            index,
            DecisionVerb::Approve,
            Some(right(&r)),
            None,
            Some(answer),
        ),
        Reply::Reject { index, comment } => {
            relayed(index, DecisionVerb::Reject, None, comment, None)
        }
    };
    assert!(decided.index >= after, "a decision before `after`");
    r.calls.push(Call::Answered { id, status: 200 });
    axum::Json(decided).into_response()
}

async fn settle(
    State(relay): State<Shared>,
    Path((uid, id)): Path<(String, String)>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let mut r = relay.lock().unwrap();
    if !r.authorized(&headers, &uid) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let settlement: Settlement = serde_json::from_slice(&body).expect("a Settlement");
    r.calls.push(Call::Settle { id, settlement });
    StatusCode::NO_CONTENT.into_response()
}

/// The relay's routes on `relay`.
pub fn router(relay: Shared) -> Router {
    Router::new()
        .route(ASK_ROUTE, post(ask))
        .route(DECISION_ROUTE, get(decision))
        .route(SETTLE_ROUTE, post(settle))
        .with_state(relay)
}

/// Serves `app` on `listener`.
pub fn serve(listener: tokio::net::TcpListener, app: Router) {
    tokio::spawn(async move { axum::serve(listener, app).await });
}

/// Starts a test sidecar serving the relay; its base URL.
pub async fn start(relay: Shared) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    serve(listener, router(relay));
    url
}

/// Waits (bounded, generously) until `relay` satisfies `ready`.
pub async fn until(relay: &Shared, ready: impl Fn(&Relay) -> bool) {
    for _ in 0..2000 {
        if ready(&relay.lock().unwrap()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!(
        "the test sidecar never got there: {:?}",
        relay.lock().unwrap().calls
    );
}
