//! `orrery schema` prints the published documents the console and tools build against.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

fn schema(args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .arg("schema")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_composition_schema_names_every_node_kind_and_pattern() {
    let text = schema(&["composition"]).to_string();
    for word in [
        "LLMAgent",
        "HumanApproval",
        "Supervisor",
        "CriticLoop",
        "maxIterations",
    ] {
        assert!(
            text.contains(word),
            "{word} missing from the composition schema"
        );
    }
}

#[test]
fn the_events_schema_describes_every_event_type() {
    let text = schema(&["events"]).to_string();
    for event in orrery_runner::events::EVENT_TYPES {
        assert!(
            text.contains(event),
            "{event} missing from the events schema"
        );
    }
}

#[test]
fn the_capabilities_carry_the_seed_limits_and_the_acting_flag() {
    let caps = schema(&["capabilities"]);
    assert_eq!(caps["limits"]["maxNodes"], 30);
    assert_eq!(caps["limits"]["maxParallelBranches"], 6);
    assert_eq!(caps["actingRemotes"], false);
    assert_eq!(
        schema(&["capabilities", "--acting-remotes"])["actingRemotes"],
        true
    );
}
