//! Fuzzing of the sidecar's parsers of outside input (issue 27 §3), property-based (proptest):
//! runners' event batches, the API's request bodies (starts, validations, saves, decisions)
//! and the spans a run's events become. Beyond "no panic": a body is taken or refused with 422
//! at a path, a batch the contract checks is numbered as it says, and however a run's events
//! come, every span is in the run's trace and ends after it starts.
//!
//! 256 cases a property (`cargo test -p orrery-operator --lib fuzz_tests`); more with
//! `ORRERY_FUZZ_CASES` (docs/reliability.md, "Fuzzing").
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::body::parse_body;
use super::otel::spans::{RunIdentity, RunSpans};
use axum::http::StatusCode;
use orrery_crds::events::TraceEvent;
use orrery_crds::events::ingest::EventBatch;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("ORRERY_FUZZ_CASES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(256),
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::WithSource("proptest-regressions"),
        )),
        ..ProptestConfig::default()
    }
}

/// Any JSON value, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(".{0,8}", inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// One event of a small run: the kinds, node ids, entries and call ids collide often.
fn event_body() -> impl Strategy<Value = Value> {
    let node = prop::sample::select(vec!["a", "b", "review"]);
    let call = prop::sample::select(vec!["c1", "c2"]);
    (
        0..12usize,
        node,
        call,
        0u64..4,
        0u64..5000,
        any::<bool>(),
        prop::option::of(0u64..4),
    )
        .prop_map(|(kind, node, call, entry, ms, flag, parent)| match kind {
            0 => json!({"type": "run.start", "composition": "c", "pattern": "Pipeline",
                        "nodes": 2, "budgets": {"maxTokens": 1, "maxToolCalls": 1,
                        "maxDelegations": 1, "maxRemoteCalls": 1, "timeoutSeconds": 1},
                        "captureContent": flag, "dryRunTools": false, "inputSize": 1,
                        "input": "in"}),
            1 => json!({"type": "node.enter", "nodeId": node, "kind": "LLMAgent",
                        "entry": entry, "depth": 0, "parentEntry": parent, "inputSize": 1}),
            2 => json!({"type": "node.exit", "nodeId": node, "kind": "LLMAgent",
                        "entry": entry, "depth": 0,
                        "status": if flag { "ok" } else { "failed" }, "tokens": ms,
                        "modelCalls": 1, "durationMs": ms, "answerSize": 1, "error": "e"}),
            3 => json!({"type": "tool.call", "nodeId": node, "entry": entry, "tool": "t",
                        "callId": call, "status": "ok", "durationMs": ms, "resultSize": 1}),
            4 => json!({"type": "mcp.call", "nodeId": node, "entry": "e", "tool": "t",
                        "callId": call, "status": "error", "durationMs": ms, "resultSize": 1}),
            5 => json!({"type": "a2a.message", "nodeId": node, "entry": "e", "skill": "s",
                        "callId": call, "direction": if flag { "outbound" } else { "inbound" },
                        "taskState": "failed", "size": 1}),
            6 => json!({"type": "approval.requested", "approvalId": call, "nodeId": node,
                        "kind": "Approval", "digest": "d", "size": 1, "complete": flag,
                        "expiresAt": "2026-12-08T00:00:00Z"}),
            7 => json!({"type": "approval.decided", "approvalId": call, "nodeId": node,
                        "kind": "Approval", "decision": "expired", "waitMs": ms}),
            8 => json!({"type": "route.taken", "nodeId": node, "label": "x"}),
            9 => json!({"type": "loop.iteration", "head": "a", "tail": "b", "iteration": 1,
                        "max": 2, "stopped": flag}),
            10 => json!({"type": "budget.hit", "budget": "maxTokens", "limit": 1, "used": ms}),
            _ => json!({"type": "run.end", "outcome": if flag { "Succeeded" } else { "Failed" },
                        "totals": {}, "dropped": 0, "outputSize": 0}),
        })
}

/// A run's events in order, each a second after the last (or at the same time).
fn run_events() -> impl Strategy<Value = Vec<TraceEvent>> {
    prop::collection::vec((event_body(), 0u64..3), 0..40).prop_map(|bodies| {
        let mut at = 1_000u64;
        bodies
            .into_iter()
            .enumerate()
            .map(|(i, (mut body, step))| {
                at += step;
                body["seq"] = json!(i + 1);
                body["runId"] = json!("r");
                body["ts"] = json!(orrery_crds::events::timestamp::format_epoch_millis(
                    1_800_000_000_000 + at * 1000
                ));
                serde_json::from_value(body).unwrap()
            })
            .collect()
    })
}

fn refused_or_taken<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<(), TestCaseError> {
    if let Err(problem) = parse_body::<T>(bytes) {
        prop_assert_eq!(problem.status, StatusCode::UNPROCESSABLE_ENTITY);
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_request_body_is_taken_or_refused_with_422_never_a_panic(
        value in json_value(),
        bytes in prop::collection::vec(any::<u8>(), 0..120),
    ) {
        let text = value.to_string();
        for body in [text.as_bytes(), &bytes[..]] {
            refused_or_taken::<super::api::StartRequest>(body)?;
            refused_or_taken::<super::api::ValidateRequest>(body)?;
            refused_or_taken::<super::compositions::save::SaveRequest>(body)?;
            refused_or_taken::<super::approvals::DecideRequest>(body)?;
        }
        // Shaped like each, with anything at its fields.
        for shaped in [
            json!({"decision": value, "digest": value, "comment": value}),
            json!({"composition": value, "input": value, "owner": value, "name": value}),
            json!({"spec": value, "name": value}),
        ] {
            let body = shaped.to_string();
            refused_or_taken::<super::api::StartRequest>(body.as_bytes())?;
            refused_or_taken::<super::approvals::DecideRequest>(body.as_bytes())?;
            refused_or_taken::<super::compositions::save::SaveRequest>(body.as_bytes())?;
        }
    }

    #[test]
    fn any_event_batch_is_read_and_checked_or_refused_never_a_panic(
        value in json_value(),
        events in run_events(),
        first in 0u64..3000,
    ) {
        let _ = serde_json::from_value::<EventBatch>(value.clone());
        let _ = serde_json::from_value::<EventBatch>(json!({"events": [value]}));
        let mut batch = EventBatch { events };
        for (i, event) in batch.events.iter_mut().enumerate() {
            event.seq = first + i as u64;
        }
        if let Ok((from, to)) = batch.check("r") {
            // What the contract checked: this run's events, consecutive, from `from`.
            prop_assert_eq!(from, first);
            prop_assert_eq!(to + 1 - from, batch.events.len() as u64);
            prop_assert!(batch.events.iter().all(|e| e.run_id == "r"));
        }
        prop_assert!(batch.check("another run").is_err() || batch.events.is_empty());
    }

    #[test]
    fn however_a_runs_events_come_every_span_is_in_its_trace_and_ends_after_it_starts(
        events in run_events(),
    ) {
        let run = RunIdentity {
            uid: "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b".into(),
            namespace: "ns".into(),
            name: "r".into(),
        };
        let trace = crate::otel::trace_id(&run.uid).to_vec();
        let mut spans = RunSpans::new(run, true);
        for event in &events {
            for span in spans.push(event) {
                prop_assert_eq!(&span.trace_id, &trace);
                prop_assert!(span.end_time_unix_nano >= span.start_time_unix_nano, "{:?}", span);
                prop_assert_eq!(span.span_id.len(), 8);
            }
        }
    }
}
