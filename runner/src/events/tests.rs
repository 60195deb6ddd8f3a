#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use std::sync::Arc;

fn trace(capture: bool, max_events: u64, cap: usize) -> (Trace, Arc<MemorySink>) {
    let sink = Arc::new(MemorySink::new());
    let options = TraceOptions {
        run_id: "run-1".into(),
        capture_content: capture,
        content_cap_bytes: cap,
        max_events,
        redact: Default::default(),
    };
    (Trace::new(options, vec![sink.clone()]), sink)
}

fn route(n: u32) -> EventBody {
    EventBody::RouteTaken {
        node_id: format!("n{n}"),
        label: "go".into(),
        to: None,
    }
}

fn run_end(dropped: u64) -> EventBody {
    EventBody::RunEnd {
        outcome: Outcome::Succeeded,
        error: None,
        totals: Default::default(),
        dropped,
        output_size: 0,
        output: None,
    }
}

#[test]
fn every_event_has_type_seq_run_id_and_a_millisecond_rfc3339_timestamp() {
    let (t, sink) = trace(false, MAX_EVENTS, 1024);
    t.emit(route(1));
    t.emit(route(2));
    let events = sink.events();
    let json = serde_json::to_value(&events[1]).unwrap();
    assert_eq!(json["type"], "route.taken");
    assert_eq!(json["seq"], 2);
    assert_eq!(json["runId"], "run-1");
    let ts = json["ts"].as_str().unwrap();
    assert_eq!(ts.len(), "2026-11-29T23:01:02.345Z".len(), "{ts}");
    assert!(ts.ends_with('Z') && ts.as_bytes()[19] == b'.', "{ts}");
    assert!(ts.parse::<jiff::Timestamp>().is_ok(), "{ts}");
}

#[test]
fn timestamps_are_written_as_jiffs_format_string_writes_them_over_every_kind_of_date() {
    let jiff_text = |ts: jiff::Timestamp| ts.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
    let mut seconds: Vec<i64> = vec![
        0,
        59,
        86_399,
        86_400,
        951_782_400,   // 2000-02-29 (a leap day of a year divisible by 400)
        951_868_800,   // 2000-03-01
        1_709_164_800, // 2024-02-29
        1_798_761_599, // 2026-12-31T23:59:59
        4_107_542_400, // 2100-03-01 (2100 is not a leap year)
        jiff::Timestamp::MAX.as_second(), // in 9999, the last time jiff has
        -1,            // 1969-12-31T23:59:59: through jiff
    ];
    // A day of every month over four centuries, at a varying time of day.
    seconds.extend((0..4800).map(|i| i * 2_629_746 + (i * 7919) % 86_400));
    for s in seconds {
        for nanos in [0, 1, 999_999, 1_000_000, 345_678_901, 999_999_999] {
            // jiff wants the seconds and the nanoseconds of the same sign.
            let Ok(ts) = jiff::Timestamp::new(s, if s < 0 { -nanos } else { nanos }) else {
                continue; // past jiff's last nanosecond
            };
            assert_eq!(super::format_rfc3339(ts), jiff_text(ts), "{s}s {nanos}ns");
        }
    }
}

#[test]
fn past_the_cap_ordinary_events_are_dropped_but_reserved_slots_remain() {
    let (t, sink) = trace(false, MAX_EVENTS, 1024);
    for i in 0..2500 {
        t.emit(route(i));
    }
    let ordinary = MAX_EVENTS - RESERVED_SLOTS;
    assert_eq!(t.emitted(), ordinary);
    assert_eq!(t.dropped(), 2500 - ordinary);
    // The reserved kinds still get through, up to the hard cap.
    assert!(t.emit(EventBody::BudgetHit {
        budget: orrery_crds::budget::BudgetKey::Tokens,
        limit: 1,
        used: 2,
        node_id: None
    }));
    assert!(t.emit(run_end(t.dropped())));
    let events = sink.events();
    assert_eq!(events.last().unwrap().kind(), "run.end");
    assert_eq!(events.last().unwrap().seq, ordinary + 2);
    match &events.last().unwrap().body {
        EventBody::RunEnd { dropped, .. } => assert_eq!(*dropped, 2500 - ordinary),
        other => panic!("{other:?}"),
    }
    // Seq numbers have no gaps.
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.seq, i as u64 + 1);
    }
}

fn budget_hit() -> EventBody {
    EventBody::BudgetHit {
        budget: orrery_crds::budget::BudgetKey::Tokens,
        limit: 1,
        used: 2,
        node_id: None,
    }
}

#[test]
fn the_hard_cap_holds_even_for_reserved_events() {
    let (t, _) = trace(false, 4, 1024);
    for _ in 0..10 {
        t.emit(budget_hit());
    }
    assert_eq!(t.emitted(), 4);
    assert_eq!(t.dropped(), 6);
}

#[test]
fn nothing_follows_run_end() {
    let (t, sink) = trace(false, MAX_EVENTS, 1024);
    assert!(t.emit(route(1)));
    assert!(t.emit(run_end(0)));
    assert!(!t.emit(route(2)), "a late event after run.end is not sent");
    assert!(!t.emit(budget_hit()));
    assert_eq!(sink.types(), ["route.taken", "run.end"]);
}

/// A sink that blocks on every event until the test opens its gate.
struct BlockedSink {
    gate: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
    open: std::sync::atomic::AtomicBool,
    seen: MemorySink,
}

impl EventSink for BlockedSink {
    fn emit(&self, event: &TraceEvent) {
        if !self.open.load(std::sync::atomic::Ordering::SeqCst) {
            let _ = self.gate.lock().unwrap().recv();
            self.open.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        self.seen.emit(event);
    }
}

#[tokio::test]
async fn a_blocked_sink_never_holds_up_the_emitter_and_reserved_events_still_arrive_in_order() {
    let (open_gate, gate) = std::sync::mpsc::channel();
    let sink = Arc::new(BlockedSink {
        gate: std::sync::Mutex::new(gate),
        open: std::sync::atomic::AtomicBool::new(false),
        seen: MemorySink::new(),
    });
    let t = Trace::buffered(TraceOptions::new("run-1"), vec![sink.clone()], 3);
    // The emits run on their own thread while the sink stays blocked (the gate opens only
    // below): an emitter that waited for the sink would never report back. The bound only
    // turns that hang into a failure; it measures nothing.
    let (done, emitted) = std::sync::mpsc::channel();
    {
        let t = t.clone();
        std::thread::spawn(move || {
            for i in 0..50 {
                t.emit(route(i));
            }
            t.emit(budget_hit());
            t.emit(run_end(t.dropped()));
            done.send(()).unwrap();
        });
    }
    emitted
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("emitting never waits for a sink: every emit returned while it was blocked");
    assert!(
        !sink.open.load(std::sync::atomic::Ordering::SeqCst),
        "the sink was still blocked"
    );
    // At most the queue's capacity of ordinary events waits (one more may be in the sink's
    // hands); the rest were dropped and counted.
    assert!(t.emitted() <= 6, "{}", t.emitted());
    assert_eq!(t.dropped() + t.emitted(), 52);
    assert!(
        !t.drain(std::time::Duration::from_millis(100)).await,
        "the sink is still blocked: the drain gives up in time"
    );
    open_gate.send(()).unwrap();
    assert!(t.drain(std::time::Duration::from_secs(5)).await);
    let seen = sink.seen.events();
    assert_eq!(seen.len() as u64, t.emitted());
    assert_eq!(seen.last().unwrap().kind(), "run.end");
    assert!(seen.iter().any(|e| e.kind() == "budget.hit"));
    for (i, e) in seen.iter().enumerate() {
        assert_eq!(e.seq, i as u64 + 1, "no gaps: dropped events get no number");
    }
}

/// A sink that panics at its first event.
struct PanickingSink;

impl EventSink for PanickingSink {
    fn emit(&self, _event: &TraceEvent) {
        panic!("a sink that panics (this panic is the test's)");
    }
}

#[tokio::test]
async fn a_sink_that_panics_ends_its_own_writer_only_and_the_run_goes_on() {
    let t = Trace::buffered(TraceOptions::new("run-1"), vec![Arc::new(PanickingSink)], 3);
    assert!(t.emit(route(0)));
    // The drain ends as soon as the writer is gone (its acknowledgement is dropped), not at
    // its timeout; its answer is that the sinks do not have everything.
    let waited = std::time::Instant::now();
    assert!(!t.drain(std::time::Duration::from_secs(30)).await);
    assert!(waited.elapsed() < std::time::Duration::from_secs(20));
    // A gone writer never fills: the run's events are taken (and written nowhere), not
    // counted as dropped, well past the queue's capacity of 3.
    for i in 1..20 {
        assert!(t.emit(route(i)), "event {i}");
    }
    assert!(t.emit(run_end(t.dropped())));
    assert_eq!(t.dropped(), 0);
    assert_eq!(t.emitted(), 21);

    // The next trace of the process gets a writer that works.
    let sink = Arc::new(MemorySink::new());
    let next = Trace::buffered(TraceOptions::new("run-2"), vec![sink.clone()], 3);
    assert!(next.emit(route(0)));
    assert!(next.emit(run_end(0)));
    assert!(next.drain(std::time::Duration::from_secs(30)).await);
    assert_eq!(sink.events().len(), 2);
}

#[test]
fn without_capture_no_content_is_recorded() {
    let (t, _) = trace(false, MAX_EVENTS, 1024);
    assert_eq!(t.content("secret text"), None);
}

#[test]
fn captured_content_is_redacted_and_cut_to_two_kilobytes() {
    let (t, _) = trace(true, MAX_EVENTS, DEFAULT_CONTENT_CAP_BYTES);
    let text = format!("mail alice@example.com {}", "é".repeat(3000));
    let got = t.content(&text).unwrap();
    assert!(!got.contains("alice@example.com"), "{got}");
    assert!(got.contains("[REDACTED_EMAIL]"));
    assert!(got.len() <= CONTENT_CUT_BYTES, "{}", got.len());
    assert!(got.ends_with('…'));
}

#[test]
fn the_per_run_content_cap_stops_capture() {
    let (t, _) = trace(true, MAX_EVENTS, 100);
    assert!(t.content(&"a".repeat(60)).is_some());
    assert!(t.content(&"b".repeat(60)).is_none(), "over the cap");
    assert!(t.content("c").is_none(), "later events carry none");
}

#[test]
fn the_schema_names_every_event_type() {
    let schema = schema();
    let text = schema.to_string();
    for kind in EVENT_TYPES {
        assert!(text.contains(&format!("\"{kind}\"")), "schema lacks {kind}");
    }
    assert!(text.contains("runId") && text.contains("seq") && text.contains("\"ts\""));
}

#[test]
fn an_event_round_trips_through_json() {
    let body = EventBody::NodeExit {
        node_id: "a".into(),
        kind: "LLMAgent".into(),
        entry: 3,
        depth: 1,
        status: NodeStatus::Ok,
        tokens: 10,
        model_calls: 1,
        calls: Vec::new(),
        duration_ms: 4,
        label: Some("approved".into()),
        answer_size: 2,
        error: None,
        answer: None,
    };
    let event = TraceEvent {
        seq: 1,
        run_id: "r".into(),
        ts: now_rfc3339(),
        body,
    };
    let json = serde_json::to_string(&event).unwrap();
    assert!(
        !json.contains("\"answer\""),
        "content fields are absent without capture: {json}"
    );
    let back: TraceEvent = serde_json::from_str(&json).unwrap();
    assert_eq!(back, event);
}
