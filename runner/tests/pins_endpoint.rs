//! Pins are keyed by the entry's endpoint (rule 5.19): for A2A the card URL, `cardSHA256`,
//! skills, service origins and network flag; for MCP the URL, transport and network flag. An
//! entry whose endpoint changed is fetched and pinned afresh, an entry still on the old
//! endpoint keeps its old pin (and never takes the new one), and an edit that leaves the
//! endpoint alone (the entry's description) keeps its pin (rule 5.20).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod remote_support;

use orrery_crds::plan::ToolKind;
use orrery_crds::registry::{A2aEntry, McpTransport, RegistryEntry};
use orrery_runner::pin::store::PinStore;
use remote_support::a2a_fixture::{A2aFixture, Behaviour, Setup};
use remote_support::mcp_fixture::{McpFixture, text_result, tool};
use remote_support::{Override, a2a_entry, build, factory, mcp_entry};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A change of an A2A entry's endpoint (given another agent's origin).
type EditEntry = fn(&mut A2aEntry, &str);

/// Builds `remote` of `entry` with a fresh factory (a new run) over `pins`.
async fn run(
    pins: &Arc<PinStore>,
    kind: ToolKind,
    entry: &RegistryEntry,
    remote: &str,
) -> Result<(), String> {
    build(&factory(pins.clone(), false, &[]), kind, entry, remote)
        .await
        .map(|_| ())
}

#[tokio::test]
async fn a_changed_card_url_skills_origins_or_network_flag_pins_the_card_afresh_rules_5_19_5_20() {
    let agent = A2aFixture::start(Setup::new(Behaviour::Echo)).await;
    let other = A2aFixture::start(Setup::new(Behaviour::Echo)).await;
    let pins = Arc::new(PinStore::in_memory());
    let old = a2a_entry("agent", &agent.card_url(), |_| {});
    run(&pins, ToolKind::A2a, &old, "draft").await.unwrap();

    // The agent's card changes a trust field: a skill is added.
    let mut changed = serde_json::to_value(&agent.card).unwrap();
    changed["skills"].as_array_mut().unwrap().push(
        json!({"id": "publish", "name": "Publish", "description": "Publishes", "tags": ["x"]}),
    );
    agent.serve_card(Some(Override::json(changed.to_string())));
    let refused = run(&pins, ToolKind::A2a, &old, "draft").await.unwrap_err();
    assert!(
        refused.contains("changed since the card was pinned"),
        "{refused}"
    );

    let edits: [(&str, EditEntry); 4] = [
        ("cardUrl", |a, _| a.card_url.push_str("?v=2")),
        ("skills", |a, _| {
            a.skills = vec!["draft".into(), "publish".into()]
        }),
        ("serviceOrigins", |a, other| {
            a.service_origins = vec![other.to_owned()]
        }),
        ("privateNetwork", |a, _| a.private_network = true),
    ];
    let before = agent.requests().len();
    for (field, edit) in edits {
        let origin = other.origin();
        let entry = a2a_entry("agent", &agent.card_url(), |a| edit(a, &origin));
        run(&pins, ToolKind::A2a, &entry, "draft")
            .await
            .unwrap_or_else(|e| panic!("a changed {field} pins afresh: {e}"));
    }
    assert!(
        agent.requests().len() >= before + 4,
        "each new endpoint fetched the card"
    );

    // The old endpoint kept its pin, and so does an edit that is not of the endpoint.
    let refused = run(&pins, ToolKind::A2a, &old, "draft").await.unwrap_err();
    assert!(
        refused.contains("changed since the card was pinned"),
        "the new endpoints never re-pinned the old one: {refused}"
    );
    let mut described = old.clone();
    described.spec.description = Some("A new description of the entry".into());
    let refused = run(&pins, ToolKind::A2a, &described, "draft")
        .await
        .unwrap_err();
    assert!(
        refused.contains("changed since the card was pinned"),
        "a description edit keeps the pin: {refused}"
    );
}

#[tokio::test]
async fn a_changed_mcp_url_transport_or_network_flag_pins_the_tools_afresh_rules_5_19_5_20() {
    let read_only = json!({"readOnlyHint": true});
    let server = McpFixture::start(
        vec![tool("lookup", "Looks a term up", read_only)],
        BTreeMap::from([("lookup".to_owned(), text_result("lookup: mcp"))]),
    )
    .await;
    let pins = Arc::new(PinStore::in_memory());
    let entry_for =
        |url: &str, transport| mcp_entry("docs", url, transport, &["lookup"], &["lookup"]);
    let old = entry_for(&server.url(), McpTransport::StreamableHttp);
    run(&pins, ToolKind::Mcp, &old, "lookup").await.unwrap();

    server.edit(|s| s.tools[0]["description"] = json!("Looks a term up, and more"));
    let refused = run(&pins, ToolKind::Mcp, &old, "lookup").await.unwrap_err();
    assert!(refused.contains("changed since it was pinned"), "{refused}");

    let fresh: [(&str, RegistryEntry); 3] = [
        (
            "url",
            entry_for(
                &format!("{}?v=2", server.url()),
                McpTransport::StreamableHttp,
            ),
        ),
        // The fixture serves the legacy transport at its own URL: both change here.
        ("transport", entry_for(&server.sse_url(), McpTransport::Sse)),
        ("privateNetwork", {
            let mut e = old.clone();
            e.spec.mcp.as_mut().unwrap().private_network = true;
            e
        }),
    ];
    for (field, entry) in &fresh {
        run(&pins, ToolKind::Mcp, entry, "lookup")
            .await
            .unwrap_or_else(|e| panic!("a changed {field} pins afresh: {e}"));
    }

    let refused = run(&pins, ToolKind::Mcp, &old, "lookup").await.unwrap_err();
    assert!(
        refused.contains("changed since it was pinned"),
        "the new endpoints never re-pinned the old one: {refused}"
    );
    let mut described = old.clone();
    described.spec.description = Some("A new description of the entry".into());
    assert!(
        run(&pins, ToolKind::Mcp, &described, "lookup")
            .await
            .unwrap_err()
            .contains("changed since it was pinned"),
        "a description edit keeps the pins"
    );
}
