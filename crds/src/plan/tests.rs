//! Tests of the plan: every field filled as its doc comment says, for each construct; a critic
//! loop that starts at its head; and every spec the validator accepts plans (the passing
//! neighbours of the validator's table), while one it refuses is refused with its errors.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use crate::codes;
use crate::validate::fixtures::{HEAD_FIRST_LOOP, RELEASE_NOTES, brief, env, spec};
use crate::validate::validate;

fn plan_of(yaml: &str) -> Plan {
    let e = env();
    plan(&spec(yaml), &e.registry, &e.limits).unwrap_or_else(|v| panic!("does not plan: {v:#?}"))
}

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
fn a_critic_loop_may_start_at_its_head_and_plans_from_it() {
    // (what, spec, first node, loop heads outer first)
    #[rustfmt::skip]
    let cases: &[(&str, String, &str, &[&str])] = &[
        ("the canonical loop", HEAD_FIRST_LOOP.to_owned(), "draft", &["draft"]),
        ("the critic listed first", "pattern: CriticLoop\nnodes: [{id: review, kind: LLMAgent, output: {labels: [again, done]}}, {id: draft, kind: LLMAgent}]\nedges: [{from: draft, to: review}, {from: review, to: draft, when: again, maxIterations: 2}]".to_owned(), "draft", &["draft"]),
        ("a node after the loop", HEAD_FIRST_LOOP.replace("]\nedges: [", ", {id: publish, kind: LLMAgent}]\nedges: [{from: review, to: publish, when: done}, "), "draft", &["draft"]),
        ("a loop nested in it", "pattern: CriticLoop\nnodes: [{id: h, kind: LLMAgent}, {id: a, kind: LLMAgent}, {id: b, kind: LLMAgent, output: {labels: [redo, again, done]}}]\nedges: [{from: h, to: a}, {from: a, to: b}, {from: b, to: a, when: redo, maxIterations: 2}, {from: b, to: h, when: again, maxIterations: 3}]".to_owned(), "h", &["h", "a"]),
        ("a person sending the draft back", "pattern: CriticLoop\nnodes: [{id: draft, kind: LLMAgent}, {id: ok, kind: HumanApproval}, {id: send, kind: LLMAgent}]\nedges: [{from: draft, to: ok}, {from: ok, to: draft, when: rejected, maxIterations: 2}, {from: ok, to: send, when: approved}]".to_owned(), "draft", &["draft"]),
    ];
    let e = env();
    for (what, yaml, first, heads) in cases {
        let spec = spec(yaml);
        let v = validate(&spec, &e.registry, &e.limits);
        assert!(v.is_valid(), "{what}: {:?}", brief(&v.errors));
        let p = plan(&spec, &e.registry, &e.limits)
            .unwrap_or_else(|v| panic!("{what}: does not plan: {:?}", brief(&v.errors)));
        assert_eq!(p.nodes[p.start].id, *first, "{what}: first node");
        let got: Vec<&str> = p
            .loops
            .iter()
            .map(|l| p.nodes[l.head].id.as_str())
            .collect();
        assert_eq!(&got, heads, "{what}: loop heads");
        assert!(
            p.edges
                .iter()
                .filter(|e| e.to == p.start)
                .all(|e| e.back_edge_of.is_some()),
            "{what}: only back edges enter the first node"
        );
    }
}

#[test]
fn every_passing_neighbour_of_the_validators_table_plans() {
    // The validator's table (`every_case_fails_with_exactly_its_code_and_its_neighbour_passes`)
    // checks that each neighbour validates; a spec that validates always plans (rule 1.19).
    let neighbours = crate::validate::tests::passing_neighbours();
    assert!(
        neighbours.len() > 50,
        "the table has {} cases",
        neighbours.len()
    );
    let failures: Vec<String> = neighbours
        .into_iter()
        .filter_map(|(label, e, spec)| {
            plan(&spec, &e.registry, &e.limits).err().map(|v| {
                format!(
                    "{label}: passing neighbour does not plan: {:?}",
                    brief(&v.errors)
                )
            })
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} neighbour(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
