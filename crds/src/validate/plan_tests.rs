//! Tests of the plan: every field filled as its doc comment says, for each construct.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::tests::{env, spec};
use super::*;
use crate::codes;
use crate::plan::{Next, Plan, ToolKind, build, child_tool_name, model_tool_name, plan};

fn plan_of(yaml: &str) -> Plan {
    let e = env();
    plan(&spec(yaml), &e.registry, &e.limits).unwrap_or_else(|v| panic!("does not plan: {v:#?}"))
}

/// The seeds' release-notes composition (001 Compositions), as a CRD spec.
const RELEASE_NOTES: &str = "pattern: CriticLoop
budgets: {maxTokens: 120000, maxToolCalls: 20, maxRemoteCalls: 4, timeoutSeconds: 240}
nodes:
  - {id: research, kind: LLMAgent, instruction: 'Search Tirraflow.', tools: ['mcp:tirraflow.search_articles', 'mcp:tirraflow.get_article']}
  - {id: writer, kind: LLMAgent, tools: ['a2a:demo-writer.draft'], model: smart}
  - {id: critic, kind: LLMAgent, output: {labels: [approved, rejected]}}
edges:
  - {from: research, to: writer}
  - {from: writer, to: critic}
  - {from: critic, to: writer, when: rejected, maxIterations: 3}";

#[test]
fn the_seeds_critic_loop_plans_with_its_loop_routes_tools_models_and_budgets() {
    let p = plan_of(RELEASE_NOTES);
    assert_eq!(p.start, 0);
    assert_eq!(p.order, [0, 1, 2]);
    assert_eq!(p.loops.len(), 1);
    let lp = &p.loops[0];
    assert_eq!(
        (lp.back_edge, lp.head, lp.tail, lp.max_iterations),
        (2, 1, 2, 3)
    );
    assert_eq!(lp.body, [1, 2]);
    assert_eq!((lp.parent, lp.depth), (None, 1));
    assert!(lp.nested.is_empty());
    assert_eq!(p.edges[2].back_edge_of, Some(0));
    assert_eq!(p.edges[0].back_edge_of, None);
    assert_eq!(p.nodes[0].next, Next::Edge { edge: 0 });
    assert_eq!(
        p.nodes[2].next,
        Next::Route {
            routes: [("rejected".to_owned(), 2)].into()
        }
    );
    assert_eq!(p.nodes[2].labels, ["approved", "rejected"]);
    let names: Vec<&str> = p.nodes[0]
        .tools
        .iter()
        .map(|t| t.model_name.as_str())
        .collect();
    assert_eq!(
        names,
        ["mcp_tirraflow_search_articles", "mcp_tirraflow_get_article"]
    );
    let draft = &p.nodes[1].tools[0];
    assert_eq!(
        (
            draft.kind,
            draft.entry.as_str(),
            draft.remote_name.as_str(),
            draft.model_name.as_str(),
            draft.acting
        ),
        (
            ToolKind::A2a,
            "demo-writer",
            "draft",
            "a2a_demo_writer_draft",
            false
        )
    );
    assert_eq!(p.nodes[0].instruction, "Search Tirraflow.");
    assert_eq!(
        p.nodes[0].model.as_deref(),
        Some("fast"),
        "no model: the deployment's default"
    );
    assert_eq!(p.nodes[1].model.as_deref(), Some("smart"), "its own model");
    let c = BudgetLimits::default();
    assert_eq!(
        p.budgets,
        BudgetLimits {
            max_tokens: 120_000,
            max_tool_calls: 20,
            max_remote_calls: 4,
            timeout_seconds: 240,
            ..c
        }
    );
}

#[test]
fn a_label_with_no_edge_warns_but_still_plans() {
    let e = env();
    let v = validate(&spec(RELEASE_NOTES), &e.registry, &e.limits);
    assert!(v.is_valid());
    let fields: Vec<&str> = v.warnings.iter().map(|w| w.field.as_str()).collect();
    assert_eq!(fields, ["spec.nodes[2].output.labels[0]"]);
    assert_eq!(v.warnings[0].code, codes::LABEL_ENDS_RUN);
}

#[test]
fn a_parallel_section_lists_its_branches_in_edge_order() {
    let p = plan_of(
        "pattern: FanOutFanIn
nodes: [{id: start, kind: LLMAgent}, {id: p, kind: Parallel}, {id: z, kind: LLMAgent}, {id: a1, kind: LLMAgent}, {id: a2, kind: LLMAgent}, {id: j, kind: Join}, {id: end, kind: LLMAgent}]
edges: [{from: start, to: p}, {from: p, to: z}, {from: p, to: a1}, {from: a1, to: a2, screen: true}, {from: z, to: j}, {from: a2, to: j}, {from: j, to: end}]",
    );
    assert_eq!(p.sections.len(), 1);
    let s = &p.sections[0];
    assert_eq!((s.parallel, s.join), (1, 5));
    assert_eq!(
        s.branches,
        vec![vec![2], vec![3, 4]],
        "z first: the Parallel's first edge"
    );
    assert_eq!(p.nodes[1].next, Next::FanOut { section: 0 });
    for (i, expected) in [
        (1, None),
        (2, Some(0)),
        (3, Some(0)),
        (4, Some(0)),
        (5, None),
        (6, None),
    ] {
        assert_eq!(p.nodes[i].in_section, expected, "node {i}");
    }
    assert_eq!(p.nodes[5].next, Next::Edge { edge: 6 });
    assert!(p.edges[3].screen, "a screen between two agents of a branch");
    assert!(!p.edges[6].screen);
    assert_eq!(p.nodes[6].next, Next::End);
    assert_eq!(p.nodes[1].model, None, "a Parallel calls no model");
    assert!(p.loops.is_empty());
}

#[test]
fn nested_loops_list_the_outer_loop_first_with_parent_nested_and_depth() {
    // The inner loop's back edge comes first in the spec; the plan still lists the outer first.
    let p = plan_of(
        "pattern: CriticLoop
nodes: [{id: s, kind: LLMAgent}, {id: w, kind: LLMAgent}, {id: d, kind: LLMAgent}, {id: k, kind: LLMAgent, output: {labels: [ok, redo]}}, {id: c, kind: LLMAgent, output: {labels: [ok, redo]}}, {id: e, kind: LLMAgent}]
edges: [{from: s, to: w}, {from: w, to: d}, {from: d, to: k}, {from: k, to: d, when: redo, maxIterations: 2}, {from: k, to: c, when: ok}, {from: c, to: w, when: redo, maxIterations: 3}, {from: c, to: e, when: ok}]",
    );
    assert_eq!(p.loops.len(), 2);
    let (outer, inner) = (&p.loops[0], &p.loops[1]);
    assert_eq!(
        (
            outer.back_edge,
            outer.head,
            outer.tail,
            outer.max_iterations,
            outer.depth
        ),
        (5, 1, 4, 3, 1)
    );
    assert_eq!(outer.body, [1, 2, 3, 4]);
    assert_eq!((outer.parent, outer.nested.clone()), (None, vec![1]));
    assert_eq!(
        (
            inner.back_edge,
            inner.head,
            inner.tail,
            inner.max_iterations,
            inner.depth
        ),
        (3, 2, 3, 2, 2)
    );
    assert_eq!(inner.body, [2, 3]);
    assert_eq!(inner.parent, Some(0));
    assert_eq!(p.edges[5].back_edge_of, Some(0));
    assert_eq!(p.edges[3].back_edge_of, Some(1));
    assert_eq!(p.order, [0, 1, 2, 3, 4, 5]);
}

#[test]
fn supervisor_children_return_to_their_parent_and_run_on_a_model() {
    let p = plan_of(
        "pattern: Supervisor
nodes: [{id: lead, kind: Supervisor, children: [analyst, sub]}, {id: analyst, kind: LLMAgent, model: smart, tools: ['mcp:tirraflow.get_article']}, {id: sub, kind: Supervisor, children: [helper]}, {id: helper, kind: LLMAgent, description: 'Helps.'}]",
    );
    assert_eq!(p.start, 0);
    assert_eq!(p.nodes[0].children, [1, 2]);
    assert_eq!(p.nodes[2].children, [3]);
    assert_eq!(
        (p.nodes[1].parent, p.nodes[2].parent, p.nodes[3].parent),
        (Some(0), Some(0), Some(2))
    );
    for child in [1, 2, 3] {
        assert_eq!(p.nodes[child].next, Next::ReturnToParent);
    }
    assert_eq!(p.nodes[0].next, Next::End);
    assert_eq!(p.order, [0], "children are not on the main graph");
    assert_eq!(p.nodes[3].description, "Helps.");
    assert_eq!(p.nodes[3].model.as_deref(), Some("fast"));
    assert_eq!(p.nodes[1].tools[0].model_name, "mcp_tirraflow_get_article");
    assert_eq!(child_tool_name(&p.nodes[1].id), "n_analyst");
}

#[test]
fn a_human_approval_routes_on_approved_and_rejected_with_its_prompt() {
    let p = plan_of(
        "pattern: CriticLoop
nodes: [{id: brief, kind: LLMAgent}, {id: draft, kind: LLMAgent}, {id: review, kind: HumanApproval, prompt: 'Publish this?'}, {id: publish, kind: LLMAgent}]
edges: [{from: brief, to: draft}, {from: draft, to: review}, {from: review, to: publish, when: approved}, {from: review, to: draft, when: rejected, maxIterations: 2}]",
    );
    let review = &p.nodes[2];
    assert_eq!(review.labels, ["approved", "rejected"]);
    assert_eq!(review.prompt, "Publish this?");
    assert_eq!(review.model, None);
    assert_eq!(
        review.next,
        Next::Route {
            routes: [("approved".to_owned(), 2), ("rejected".to_owned(), 3)].into()
        }
    );
    assert_eq!(p.loops[0].body, [1, 2]);
}

#[test]
fn a_router_routes_on_its_output_labels() {
    let p = plan_of(
        "pattern: Router
nodes: [{id: triage, kind: Router, output: {labels: [billing, tech]}}, {id: billing, kind: LLMAgent}, {id: tech, kind: LLMAgent}, {id: reply, kind: LLMAgent}]
edges: [{from: triage, to: tech, when: tech}, {from: triage, to: billing, when: billing}, {from: billing, to: reply}, {from: tech, to: reply}]",
    );
    assert_eq!(p.nodes[0].labels, ["billing", "tech"]);
    assert_eq!(p.nodes[0].model.as_deref(), Some("fast"));
    assert_eq!(
        p.nodes[0].next,
        Next::Route {
            routes: [("billing".to_owned(), 1), ("tech".to_owned(), 0)].into()
        }
    );
    assert_eq!(p.order, [0, 1, 2, 3]);
}

#[test]
fn an_acting_remote_is_planned_as_acting_where_the_deployment_allows_it() {
    let mut e = env();
    e.limits.acting_remotes = true;
    let s =
        spec("pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent, tools: ['a2a:deployer.deploy']}]");
    let p = plan(&s, &e.registry, &e.limits).unwrap();
    assert!(p.nodes[0].tools[0].acting);
}

#[test]
fn without_a_default_the_only_model_entry_is_used() {
    let mut e = env();
    e.limits.default_model = None;
    e.registry.entries.remove("smart");
    let p = plan(
        &spec("pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent}]"),
        &e.registry,
        &e.limits,
    )
    .unwrap();
    assert_eq!(p.nodes[0].model.as_deref(), Some("fast"));
}

#[test]
fn a_spec_that_does_not_validate_is_refused_with_the_validators_errors() {
    let e = env();
    let s = spec(
        "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent}, {id: b, kind: LLMAgent}]\nedges: [{from: a, to: writr}]",
    );
    let refused = plan(&s, &e.registry, &e.limits).unwrap_err();
    assert_eq!(refused, validate(&s, &e.registry, &e.limits));
    assert!(refused.errors.iter().any(|i| i.code == codes::UNKNOWN_NODE));
}

#[test]
fn an_invalid_spec_cannot_be_built_unchecked() {
    // `plan_inconsistent` guards the builder: fed a graph the validator would refuse (two first
    // nodes), it declines instead of guessing; its valid neighbour builds.
    let e = env();
    let two_roots =
        spec("pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent}, {id: b, kind: LLMAgent}]");
    assert!(build(&Analysis::new(&two_roots), &e.registry, &e.limits).is_none());
    let chained = spec(
        "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent}, {id: b, kind: LLMAgent}]\nedges: [{from: a, to: b}]",
    );
    assert!(build(&Analysis::new(&chained), &e.registry, &e.limits).is_some());
}

#[test]
fn model_facing_names_write_dashes_and_dots_as_underscores() {
    assert_eq!(model_tool_name(ToolKind::Mcp, "my-x", "t"), "mcp_my_x_t");
    assert_eq!(model_tool_name(ToolKind::Mcp, "my_x", "t"), "mcp_my_x_t");
    assert_eq!(
        model_tool_name(ToolKind::A2a, "demo-writer", "draft.v2"),
        "a2a_demo_writer_draft_v2"
    );
    assert_eq!(child_tool_name("fact-checker"), "n_fact_checker");
}

#[test]
fn the_seeds_example_messages_read_as_written() {
    let e = env();
    let s = spec(
        "pattern: Pipeline\nnodes: [{id: research, kind: LLMAgent, tools: ['a2a:demo-writer.deploy']}, {id: writer, kind: LLMAgent}, {id: critic, kind: RemoteA2A}]\nedges: [{from: research, to: writer}, {from: writer, to: writr}]",
    );
    let v = validate(&s, &e.registry, &e.limits);
    let find = |code: &str| {
        v.errors
            .iter()
            .find(|i| i.code == code)
            .unwrap_or_else(|| panic!("{code} missing: {v:#?}"))
    };
    let tool = find(codes::UNKNOWN_TOOL);
    assert_eq!(
        tool.message,
        "remote agent 'demo-writer' is not registered for skill 'deploy'"
    );
    assert_eq!(
        serde_json::to_value(&tool.loc).unwrap(),
        serde_json::json!(["spec", "nodes", 0, "tools", 0])
    );
    assert_eq!(tool.field, "spec.nodes[0].tools[0]");
    assert_eq!(
        find(codes::NOT_SUPPORTED_YET).message,
        "node kind 'RemoteA2A' is not supported yet (use an LLMAgent with an a2a: tool)"
    );
    assert_eq!(
        find(codes::UNKNOWN_NODE).message,
        "edge 1 goes to 'writr', which is not a node; use one of: research, writer, critic"
    );
}

#[test]
fn every_problem_is_reported_at_once() {
    let e = env();
    let s = spec(
        "pattern: Pipeline
budgets: {maxTokens: 900000}
nodes: [{id: a, kind: LLMAgent, tools: ['mcp:tirraflow.delete_article'], model: nope}, {id: a, kind: LLMAgent}, {id: p, kind: Parallel, prompt: hi}]
edges: [{from: a, to: p}, {from: a, to: ghost}]",
    );
    let v = validate(&s, &e.registry, &e.limits);
    let mut found: Vec<&str> = v.errors.iter().map(|i| i.code.as_str()).collect();
    found.sort_unstable();
    found.dedup();
    for code in [
        codes::BUDGET_OVER_CEILING,
        codes::TOOL_NOT_READ_ONLY,
        codes::MODEL_NOT_ALLOWED,
        codes::DUPLICATE_ID,
        codes::FIELD_NOT_ALLOWED,
        codes::UNKNOWN_NODE,
        codes::TOO_FEW_BRANCHES,
        codes::PATTERN_MISMATCH,
    ] {
        assert!(found.contains(&code), "{code} missing from {found:?}");
    }
}
