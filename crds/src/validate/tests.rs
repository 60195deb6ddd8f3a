//! Table-driven tests of the validator: for every code in [`crate::codes::ALL_CODES`], at least
//! one composition that fails with exactly that code at the expected field, and a passing
//! neighbour (a minimal change that makes it valid). The plan's tests plan every passing
//! neighbour ([`passing_neighbours`]).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::fixtures::{Env, HEAD_FIRST_LOOP, brief, env, set, spec};
use super::*;
use crate::codes::{self, ALL_CODES};
use crate::common::Severity;

struct Case {
    code: &'static str,
    name: &'static str,
    fail: String,
    loc: &'static str,
    pass: String,
    /// Applied to both cases.
    setup: fn(&mut Env),
    /// Applied to the passing neighbour only (after `setup`).
    pass_setup: fn(&mut Env),
}

fn case(code: &'static str, name: &'static str, fail: &str, loc: &'static str, pass: &str) -> Case {
    Case {
        code,
        name,
        fail: fail.to_owned(),
        loc,
        pass: pass.to_owned(),
        setup: |_| {},
        pass_setup: |_| {},
    }
}

fn with(mut c: Case, setup: fn(&mut Env)) -> Case {
    c.setup = setup;
    c
}

fn passing_with(mut c: Case, pass_setup: fn(&mut Env)) -> Case {
    c.pass_setup = pass_setup;
    c
}

/// A chain of `n` agents a0 → a1 → … .
fn chain(n: usize) -> String {
    let nodes: Vec<String> = (0..n)
        .map(|i| format!("{{id: a{i}, kind: LLMAgent}}"))
        .collect();
    let edges: Vec<String> = (1..n)
        .map(|i| format!("{{from: a{}, to: a{i}}}", i - 1))
        .collect();
    format!(
        "pattern: Pipeline\nnodes: [{}]\nedges: [{}]",
        nodes.join(", "),
        edges.join(", ")
    )
}

/// `n` routers, each routing to every later node (the last is a plain agent): n(n-1)/2 edges.
fn dense_routers(n: usize) -> String {
    let mut nodes = Vec::new();
    let mut edges = Vec::new();
    for i in 0..n {
        if i + 1 == n {
            nodes.push(format!("{{id: r{i}, kind: LLMAgent}}"));
            continue;
        }
        let labels: Vec<String> = (i + 1..n).map(|j| format!("to{j}")).collect();
        nodes.push(format!(
            "{{id: r{i}, kind: Router, output: {{labels: [{}]}}}}",
            labels.join(", ")
        ));
        for j in i + 1..n {
            edges.push(format!("{{from: r{i}, to: r{j}, when: to{j}}}"));
        }
    }
    format!(
        "pattern: Router\nnodes: [{}]\nedges: [{}]",
        nodes.join(", "),
        edges.join(", ")
    )
}

/// A Parallel `p` with `k` one-agent branches b0… closed by Join `j`.
fn fan(k: usize) -> String {
    let mut nodes = vec!["{id: p, kind: Parallel}".to_owned()];
    let mut edges = Vec::new();
    for i in 0..k {
        nodes.push(format!("{{id: b{i}, kind: LLMAgent}}"));
        edges.push(format!("{{from: p, to: b{i}}}"));
    }
    for i in 0..k {
        edges.push(format!("{{from: b{i}, to: j}}"));
    }
    nodes.push("{id: j, kind: Join}".to_owned());
    format!(
        "pattern: FanOutFanIn\nnodes: [{}]\nedges: [{}]",
        nodes.join(", "),
        edges.join(", ")
    )
}

const A: &str = "{id: a, kind: LLMAgent}";
const CRITIC_LOOP: &str = "pattern: CriticLoop
nodes: [{id: s, kind: LLMAgent}, {id: w, kind: LLMAgent}, {id: c, kind: LLMAgent, output: {labels: [ok, redo]}}, {id: d, kind: LLMAgent}]
edges: [{from: s, to: w}, {from: w, to: c}, {from: c, to: w, when: redo, maxIterations: 2}, {from: c, to: d, when: ok}]";

fn critic_loop_with(pattern: &str, back_edge: &str) -> String {
    CRITIC_LOOP
        .replace("pattern: CriticLoop", &format!("pattern: {pattern}"))
        .replace("{from: c, to: w, when: redo, maxIterations: 2}", back_edge)
}

fn tools_case(
    code: &'static str,
    name: &'static str,
    tools: &str,
    loc: &'static str,
    pass_tools: &str,
) -> Case {
    let node =
        |t: &str| format!("pattern: Pipeline\nnodes: [{{id: a, kind: LLMAgent, tools: [{t}]}}]");
    case(code, name, &node(tools), loc, &node(pass_tools))
}

fn pattern_case(name: &'static str, pattern: &str, pass_pattern: &str, body: &str) -> Case {
    case(
        codes::PATTERN_MISMATCH,
        name,
        &format!("pattern: {pattern}\n{body}"),
        "spec.pattern",
        &format!("pattern: {pass_pattern}\n{body}"),
    )
}

#[rustfmt::skip]
fn cases() -> Vec<Case> {
    let two = "nodes: [{id: a, kind: LLMAgent}, {id: b, kind: LLMAgent}]\nedges: [{from: a, to: b}]";
    vec![
        // ids, edges, graph (rules 1.23, 1.32–1.38, 1.43)
        case(codes::DUPLICATE_ID, "a second node with an id already used",
            "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent}, {id: b, kind: LLMAgent}, {id: b, kind: LLMAgent}]\nedges: [{from: a, to: b}]",
            "spec.nodes[2].id",
            "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent}, {id: b, kind: LLMAgent}, {id: c, kind: LLMAgent}]\nedges: [{from: a, to: b}, {from: b, to: c}]"),
        case(codes::INVALID_ID, "an uppercase node id",
            "pattern: Pipeline\nnodes: [{id: Writer, kind: LLMAgent}]", "spec.nodes[0].id",
            "pattern: Pipeline\nnodes: [{id: writer, kind: LLMAgent}]"),
        case(codes::INVALID_ID, "a label with a space",
            "pattern: Router\nnodes: [{id: a, kind: Router, output: {labels: ['go on']}}, {id: b, kind: LLMAgent}]\nedges: [{from: a, to: b, when: 'go on'}]",
            "spec.nodes[0].output.labels[0]",
            "pattern: Router\nnodes: [{id: a, kind: Router, output: {labels: [go-on]}}, {id: b, kind: LLMAgent}]\nedges: [{from: a, to: b, when: go-on}]"),
        // the CRD schema's bounds, which the apiserver enforces at apply time
        case(codes::TEXT_TOO_LONG, "a composition description over 2048 characters",
            &format!("pattern: Pipeline\ndescription: {}\nnodes: [{A}]", "d".repeat(2049)), "spec.description",
            &format!("pattern: Pipeline\ndescription: {}\nnodes: [{A}]", "d".repeat(2048))),
        case(codes::TEXT_TOO_LONG, "an instruction over 32768 characters",
            &format!("pattern: Pipeline\nnodes: [{{id: a, kind: LLMAgent, instruction: {}}}]", "i".repeat(32769)), "spec.nodes[0].instruction",
            &format!("pattern: Pipeline\nnodes: [{{id: a, kind: LLMAgent, instruction: {}}}]", "i".repeat(32768))),
        case(codes::TEXT_TOO_LONG, "an approval prompt over 4096 characters (counted in characters, not bytes)",
            &format!("pattern: Pipeline\nnodes: [{A}, {{id: h, kind: HumanApproval, prompt: {}}}]\nedges: [{{from: a, to: h}}]", "é".repeat(4097)), "spec.nodes[1].prompt",
            &format!("pattern: Pipeline\nnodes: [{A}, {{id: h, kind: HumanApproval, prompt: {}}}]\nedges: [{{from: a, to: h}}]", "é".repeat(4096))),
        case(codes::TOO_MANY_ITEMS, "17 labels on a router",
            &format!("pattern: Router\nnodes: [{{id: r, kind: Router, output: {{labels: [{}]}}}}, {A}]\nedges: [{{from: r, to: a, when: l0}}]", (0..17).map(|i| format!("l{i}")).collect::<Vec<_>>().join(", ")),
            "spec.nodes[0].output.labels",
            &format!("pattern: Router\nnodes: [{{id: r, kind: Router, output: {{labels: [{}]}}}}, {A}]\nedges: [{{from: r, to: a, when: l0}}]", (0..16).map(|i| format!("l{i}")).collect::<Vec<_>>().join(", "))),
        case(codes::TOO_MANY_ITEMS, "33 tools on one node",
            &format!("pattern: Pipeline\nnodes: [{{id: a, kind: LLMAgent, tools: [{}]}}]", (0..33).map(|i| format!("'mcp:wide.t{i}'")).collect::<Vec<_>>().join(", ")),
            "spec.nodes[0].tools",
            &format!("pattern: Pipeline\nnodes: [{{id: a, kind: LLMAgent, tools: [{}]}}]", (0..32).map(|i| format!("'mcp:wide.t{i}'")).collect::<Vec<_>>().join(", "))),
        case(codes::MISSING_FIELD, "output with an empty labels list",
            "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent, output: {labels: []}}]", "spec.nodes[0].output.labels",
            "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent}]"),
        // edge screens (rules 2.28, 4.18)
        case(codes::SCREEN_NOT_BETWEEN_AGENTS, "a screen on an edge leaving a human approval",
            "pattern: Router\nnodes: [{id: a, kind: LLMAgent}, {id: h, kind: HumanApproval}, {id: b, kind: LLMAgent}]\nedges: [{from: a, to: h}, {from: h, to: b, when: approved, screen: true}]",
            "spec.edges[1].screen",
            "pattern: Router\nnodes: [{id: a0, kind: LLMAgent}, {id: a, kind: LLMAgent}, {id: h, kind: HumanApproval}, {id: b, kind: LLMAgent}]\nedges: [{from: a0, to: a, screen: true}, {from: a, to: h}, {from: h, to: b, when: approved}]"),
        case(codes::SCREEN_NOT_BETWEEN_AGENTS, "a screen on an edge out of a join",
            &fan(2).replace("{id: j, kind: Join}", "{id: j, kind: Join}, {id: z, kind: LLMAgent}").replace("{from: b1, to: j}", "{from: b1, to: j}, {from: j, to: z, screen: true}"),
            "spec.edges[4].screen",
            &fan(2).replace("{id: j, kind: Join}", "{id: j, kind: Join}, {id: z, kind: LLMAgent}").replace("{from: b1, to: j}", "{from: b1, to: j}, {from: j, to: z}")),
        case(codes::EMPTY_COMPOSITION, "no nodes", "pattern: Pipeline\nnodes: []", "spec.nodes",
            &format!("pattern: Pipeline\nnodes: [{A}]")),
        case(codes::TOO_MANY_NODES, "31 nodes", &chain(31), "spec.nodes", &chain(30)),
        case(codes::TOO_MANY_EDGES, "136 edges", &dense_routers(17), "spec.edges", &dense_routers(16)),
        case(codes::UNKNOWN_NODE, "an edge to a misspelt node",
            "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent}, {id: b, kind: LLMAgent}]\nedges: [{from: a, to: b}, {from: b, to: bb}]",
            "spec.edges[1].to",
            &format!("pattern: Pipeline\n{two}")),
        case(codes::UNKNOWN_NODE, "a supervisor child that is not a node",
            "pattern: Supervisor\nnodes: [{id: s, kind: Supervisor, children: [helpr]}]",
            "spec.nodes[0].children[0]",
            "pattern: Supervisor\nnodes: [{id: s, kind: Supervisor, children: [helper]}, {id: helper, kind: LLMAgent}]"),
        case(codes::SELF_LOOP, "an edge from a node to itself",
            "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent}, {id: b, kind: LLMAgent}]\nedges: [{from: a, to: b}, {from: b, to: b}]",
            "spec.edges[1]", &format!("pattern: Pipeline\n{two}")),
        case(codes::DUPLICATE_EDGE, "the same edge twice",
            "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent}, {id: b, kind: LLMAgent}]\nedges: [{from: a, to: b}, {from: a, to: b}]",
            "spec.edges[1]", &format!("pattern: Pipeline\n{two}")),
        case(codes::UNREACHABLE_NODE, "a cycle no path enters",
            "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent}, {id: b, kind: LLMAgent}, {id: c, kind: LLMAgent}, {id: d, kind: LLMAgent}]\nedges: [{from: a, to: b}, {from: c, to: d}, {from: d, to: c}]",
            "spec.nodes[2]",
            "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent}, {id: b, kind: LLMAgent}, {id: c, kind: LLMAgent}, {id: d, kind: LLMAgent}]\nedges: [{from: a, to: b}, {from: b, to: c}, {from: c, to: d}]"),
        case(codes::MULTIPLE_FIRST_NODES, "a node nothing enters besides the first",
            "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent}, {id: b, kind: LLMAgent}, {id: c, kind: LLMAgent}]\nedges: [{from: a, to: b}]",
            "spec.nodes[2]",
            "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent}, {id: b, kind: LLMAgent}, {id: c, kind: LLMAgent}]\nedges: [{from: a, to: b}, {from: b, to: c}]"),
        case(codes::NO_TERMINAL_NODE, "a capped loop with no way out",
            "pattern: CriticLoop\nnodes: [{id: s, kind: LLMAgent}, {id: w, kind: LLMAgent}, {id: c, kind: LLMAgent}]\nedges: [{from: s, to: w}, {from: w, to: c}, {from: c, to: w, maxIterations: 2}]",
            "spec.edges",
            "pattern: CriticLoop\nnodes: [{id: s, kind: LLMAgent}, {id: w, kind: LLMAgent}, {id: c, kind: LLMAgent, output: {labels: [ok, redo]}}]\nedges: [{from: s, to: w}, {from: w, to: c}, {from: c, to: w, when: redo, maxIterations: 2}]"),
        case(codes::FAN_OUT_NOT_PARALLEL, "an agent with two unlabelled edges",
            "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent}, {id: b, kind: LLMAgent}, {id: c, kind: LLMAgent}]\nedges: [{from: a, to: b}, {from: a, to: c}]",
            "spec.nodes[0]",
            "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent}, {id: b, kind: LLMAgent}, {id: c, kind: LLMAgent}]\nedges: [{from: a, to: b}, {from: b, to: c}]"),
        // kinds and fields (rule 1.76)
        case(codes::NOT_SUPPORTED_YET, "a RemoteA2A node",
            "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent}, {id: r, kind: RemoteA2A}]\nedges: [{from: a, to: r}]",
            "spec.nodes[1].kind",
            "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent}, {id: r, kind: LLMAgent, tools: ['a2a:demo-writer.draft']}]\nedges: [{from: a, to: r}]"),
        case(codes::NOT_SUPPORTED_YET, "a Handoff node",
            "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent}, {id: h, kind: Handoff}]\nedges: [{from: a, to: h}]",
            "spec.nodes[1].kind", &format!("pattern: Pipeline\n{two}")),
        case(codes::NOT_SUPPORTED_YET, "the Handoff pattern",
            &format!("pattern: Handoff\n{two}"), "spec.pattern", &format!("pattern: Pipeline\n{two}")),
        case(codes::FIELD_NOT_ALLOWED, "tools on a Parallel",
            &fan(2).replace("{id: p, kind: Parallel}", "{id: p, kind: Parallel, tools: ['mcp:tirraflow.search_articles']}"),
            "spec.nodes[0].tools", &fan(2)),
        case(codes::FIELD_NOT_ALLOWED, "a prompt on an agent",
            "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent, prompt: 'Approve?'}]", "spec.nodes[0].prompt",
            "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent, instruction: 'Approve?'}]"),
        case(codes::FIELD_NOT_ALLOWED, "children on an agent",
            "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent, children: [b]}, {id: b, kind: LLMAgent}]\nedges: [{from: a, to: b}]",
            "spec.nodes[0].children", &format!("pattern: Pipeline\n{two}")),
        case(codes::FIELD_NOT_ALLOWED, "a model on a Join",
            &fan(2).replace("{id: j, kind: Join}", "{id: j, kind: Join, model: fast}"), "spec.nodes[3].model", &fan(2)),
        case(codes::MISSING_FIELD, "a Supervisor without children",
            "pattern: Supervisor\nnodes: [{id: s, kind: Supervisor}, {id: a, kind: LLMAgent}]\nedges: [{from: s, to: a}]",
            "spec.nodes[0].children",
            "pattern: Supervisor\nnodes: [{id: s, kind: Supervisor, children: [c]}, {id: a, kind: LLMAgent}, {id: c, kind: LLMAgent}]\nedges: [{from: s, to: a}]"),
        case(codes::MISSING_FIELD, "a Router without labels",
            "pattern: PlanAndExecute\nnodes: [{id: r, kind: Router}, {id: a, kind: LLMAgent}, {id: b, kind: LLMAgent}]\nedges: [{from: r, to: a}, {from: a, to: b}]",
            "spec.nodes[0].output",
            "pattern: PlanAndExecute\nnodes: [{id: r, kind: Router, output: {labels: [go]}}, {id: a, kind: LLMAgent}, {id: b, kind: LLMAgent}]\nedges: [{from: r, to: a, when: go}, {from: a, to: b}]"),
        // labels (rules 1.39–1.42, 1.78)
        case(codes::WHEN_WITHOUT_LABELS, "when on an agent without labels",
            "pattern: PlanAndExecute\nnodes: [{id: a, kind: LLMAgent}, {id: b, kind: LLMAgent}]\nedges: [{from: a, to: b, when: done}]",
            "spec.edges[0].when", &format!("pattern: PlanAndExecute\n{two}")),
        case(codes::UNKNOWN_LABEL, "when names a label the critic lacks",
            &critic_loop_with("CriticLoop", "{from: c, to: w, when: again, maxIterations: 2}"), "spec.edges[2].when", CRITIC_LOOP),
        case(codes::LABEL_HAS_TWO_EDGES, "one label with two edges",
            "pattern: Router\nnodes: [{id: r, kind: Router, output: {labels: [x, y]}}, {id: a, kind: LLMAgent}, {id: b, kind: LLMAgent}]\nedges: [{from: r, to: a, when: x}, {from: r, to: b, when: x}]",
            "spec.edges[1].when",
            "pattern: Router\nnodes: [{id: r, kind: Router, output: {labels: [x, y]}}, {id: a, kind: LLMAgent}, {id: b, kind: LLMAgent}]\nedges: [{from: r, to: a, when: x}, {from: r, to: b, when: y}]"),
        case(codes::MISSING_WHEN, "a critic's edge without when",
            &critic_loop_with("CriticLoop", "{from: c, to: w, maxIterations: 2}"), "spec.edges[2]", CRITIC_LOOP),
        case(codes::MISSING_WHEN, "a human approval's edge without when",
            "pattern: PlanAndExecute\nnodes: [{id: a, kind: LLMAgent}, {id: h, kind: HumanApproval}, {id: b, kind: LLMAgent}]\nedges: [{from: a, to: h}, {from: h, to: b}]",
            "spec.edges[1]",
            "pattern: PlanAndExecute\nnodes: [{id: a, kind: LLMAgent}, {id: h, kind: HumanApproval}, {id: b, kind: LLMAgent}]\nedges: [{from: a, to: h}, {from: h, to: b, when: approved}]"),
        case(codes::UNKNOWN_LABEL, "a human approval's edge with a label other than approved/rejected",
            "pattern: Router\nnodes: [{id: a, kind: LLMAgent}, {id: h, kind: HumanApproval}, {id: b, kind: LLMAgent}]\nedges: [{from: a, to: h}, {from: h, to: b, when: ok}]",
            "spec.edges[1].when",
            "pattern: Router\nnodes: [{id: a, kind: LLMAgent}, {id: h, kind: HumanApproval}, {id: b, kind: LLMAgent}]\nedges: [{from: a, to: h}, {from: h, to: b, when: approved}]"),
        case(codes::DUPLICATE_LABEL, "a label listed twice",
            "pattern: Router\nnodes: [{id: r, kind: Router, output: {labels: [x, x]}}, {id: a, kind: LLMAgent}]\nedges: [{from: r, to: a, when: x}]",
            "spec.nodes[0].output.labels[1]",
            "pattern: Router\nnodes: [{id: r, kind: Router, output: {labels: [x]}}, {id: a, kind: LLMAgent}]\nedges: [{from: r, to: a, when: x}]"),
        case(codes::LABEL_ENDS_RUN, "a router label with no edge",
            "pattern: Router\nnodes: [{id: r, kind: Router, output: {labels: [x, y]}}, {id: a, kind: LLMAgent}]\nedges: [{from: r, to: a, when: x}]",
            "spec.nodes[0].output.labels[1]",
            "pattern: Router\nnodes: [{id: r, kind: Router, output: {labels: [x]}}, {id: a, kind: LLMAgent}]\nedges: [{from: r, to: a, when: x}]"),
        // parallel sections (rules 1.24, 1.44–1.46)
        case(codes::TOO_MANY_BRANCHES, "a Parallel with 7 branches", &fan(7), "spec.nodes[0]", &fan(6)),
        case(codes::TOO_FEW_BRANCHES, "a Parallel with 1 branch", &fan(1), "spec.nodes[0]", &fan(2)),
        case(codes::JOIN_MISMATCH, "branches closed by two joins",
            "pattern: FanOutFanIn\nnodes: [{id: p, kind: Parallel}, {id: a, kind: LLMAgent}, {id: b, kind: LLMAgent}, {id: j, kind: Join}, {id: k, kind: Join}]\nedges: [{from: p, to: a}, {from: p, to: b}, {from: a, to: j}, {from: b, to: k}]",
            "spec.nodes[0]",
            "pattern: FanOutFanIn\nnodes: [{id: p, kind: Parallel}, {id: a, kind: LLMAgent}, {id: b, kind: LLMAgent}, {id: j, kind: Join}]\nedges: [{from: p, to: a}, {from: p, to: b}, {from: a, to: j}, {from: b, to: j}]"),
        case(codes::JOIN_MISMATCH, "a join that closes no parallel",
            "pattern: PlanAndExecute\nnodes: [{id: a, kind: LLMAgent}, {id: j, kind: Join}, {id: b, kind: LLMAgent}]\nedges: [{from: a, to: j}, {from: j, to: b}]",
            "spec.nodes[1]",
            "pattern: PlanAndExecute\nnodes: [{id: a, kind: LLMAgent}, {id: j, kind: LLMAgent}, {id: b, kind: LLMAgent}]\nedges: [{from: a, to: j}, {from: j, to: b}]"),
        case(codes::JOIN_MISMATCH, "a join also entered from outside its section",
            "pattern: FanOutFanIn\nnodes: [{id: r, kind: Router, output: {labels: [wide, skip]}}, {id: p, kind: Parallel}, {id: a, kind: LLMAgent}, {id: b, kind: LLMAgent}, {id: j, kind: Join}]\nedges: [{from: r, to: p, when: wide}, {from: r, to: j, when: skip}, {from: p, to: a}, {from: p, to: b}, {from: a, to: j}, {from: b, to: j}]",
            "spec.edges[1]",
            "pattern: FanOutFanIn\nnodes: [{id: r, kind: Router, output: {labels: [wide, skip]}}, {id: p, kind: Parallel}, {id: a, kind: LLMAgent}, {id: b, kind: LLMAgent}, {id: j, kind: Join}, {id: z, kind: LLMAgent}]\nedges: [{from: r, to: p, when: wide}, {from: r, to: z, when: skip}, {from: p, to: a}, {from: p, to: b}, {from: a, to: j}, {from: b, to: j}]"),
        case(codes::BRANCH_NOT_A_CHAIN, "a branch straight to the join",
            &fan(2).replace("{from: p, to: b1}", "{from: p, to: b1}, {from: p, to: j}"), "spec.edges[2]", &fan(2)),
        case(codes::BRANCH_NOT_A_CHAIN, "a branch that never reaches the join",
            &fan(3).replace(", {from: b2, to: j}", ""), "spec.nodes[3]", &fan(3)),
        case(codes::NESTED_FAN_OUT, "a branch node that routes",
            &fan(2).replace("{id: b1, kind: LLMAgent}", "{id: b1, kind: LLMAgent, output: {labels: [done]}}").replace("{from: b1, to: j}", "{from: b1, to: j, when: done}"),
            "spec.nodes[2]", &fan(2)),
        case(codes::NESTED_FAN_OUT, "a Parallel on a branch",
            "pattern: FanOutFanIn\nnodes: [{id: p, kind: Parallel}, {id: a, kind: LLMAgent}, {id: q, kind: Parallel}, {id: x, kind: LLMAgent}, {id: y, kind: LLMAgent}, {id: k, kind: Join}, {id: j, kind: Join}]\nedges: [{from: p, to: a}, {from: p, to: q}, {from: q, to: x}, {from: q, to: y}, {from: x, to: k}, {from: y, to: k}, {from: a, to: j}, {from: k, to: j}]",
            "spec.nodes[2]",
            "pattern: FanOutFanIn\nnodes: [{id: p, kind: Parallel}, {id: a, kind: LLMAgent}, {id: b, kind: LLMAgent}, {id: j, kind: Join}, {id: q, kind: Parallel}, {id: x, kind: LLMAgent}, {id: y, kind: LLMAgent}, {id: k, kind: Join}]\nedges: [{from: p, to: a}, {from: p, to: b}, {from: a, to: j}, {from: b, to: j}, {from: j, to: q}, {from: q, to: x}, {from: q, to: y}, {from: x, to: k}, {from: y, to: k}]"),
        // loops (rules 1.47–1.51, 2.12)
        case(codes::LOOP_AROUND_PARALLEL, "a critic sending work back before the parallel",
            "pattern: CriticLoop\nnodes: [{id: s, kind: LLMAgent}, {id: f, kind: LLMAgent}, {id: p, kind: Parallel}, {id: a, kind: LLMAgent}, {id: b, kind: LLMAgent}, {id: j, kind: Join}, {id: c, kind: LLMAgent, output: {labels: [ok, redo]}}]\nedges: [{from: s, to: f}, {from: f, to: p}, {from: p, to: a}, {from: p, to: b}, {from: a, to: j}, {from: b, to: j}, {from: j, to: c}, {from: c, to: f, when: redo, maxIterations: 2}]",
            "spec.edges[7]",
            "pattern: CriticLoop\nnodes: [{id: s, kind: LLMAgent}, {id: f, kind: LLMAgent}, {id: p, kind: Parallel}, {id: a, kind: LLMAgent}, {id: b, kind: LLMAgent}, {id: j, kind: Join}, {id: c, kind: LLMAgent, output: {labels: [ok, redo]}}, {id: w, kind: LLMAgent}]\nedges: [{from: s, to: f}, {from: f, to: p}, {from: p, to: a}, {from: p, to: b}, {from: a, to: j}, {from: b, to: j}, {from: j, to: w}, {from: w, to: c}, {from: c, to: w, when: redo, maxIterations: 2}]"),
        case(codes::LOOP_TOO_DEEP, "three loops nested",
            "pattern: CriticLoop\nnodes: [{id: s, kind: LLMAgent}, {id: h1, kind: LLMAgent}, {id: h2, kind: LLMAgent}, {id: h3, kind: LLMAgent}, {id: k3, kind: LLMAgent, output: {labels: [ok, redo]}}, {id: k2, kind: LLMAgent, output: {labels: [ok, redo]}}, {id: k1, kind: LLMAgent, output: {labels: [ok, redo]}}, {id: e, kind: LLMAgent}]\nedges: [{from: s, to: h1}, {from: h1, to: h2}, {from: h2, to: h3}, {from: h3, to: k3}, {from: k3, to: h3, when: redo, maxIterations: 2}, {from: k3, to: k2, when: ok}, {from: k2, to: h2, when: redo, maxIterations: 2}, {from: k2, to: k1, when: ok}, {from: k1, to: h1, when: redo, maxIterations: 2}, {from: k1, to: e, when: ok}]",
            "spec.edges[4]",
            "pattern: CriticLoop\nnodes: [{id: s, kind: LLMAgent}, {id: h1, kind: LLMAgent}, {id: h2, kind: LLMAgent}, {id: h3, kind: LLMAgent}, {id: k3, kind: LLMAgent}, {id: k2, kind: LLMAgent, output: {labels: [ok, redo]}}, {id: k1, kind: LLMAgent, output: {labels: [ok, redo]}}, {id: e, kind: LLMAgent}]\nedges: [{from: s, to: h1}, {from: h1, to: h2}, {from: h2, to: h3}, {from: h3, to: k3}, {from: k3, to: k2}, {from: k2, to: h2, when: redo, maxIterations: 2}, {from: k2, to: k1, when: ok}, {from: k1, to: h1, when: redo, maxIterations: 2}, {from: k1, to: e, when: ok}]"),
        case(codes::UNBOUNDED_CYCLE, "a loop without maxIterations",
            &critic_loop_with("CriticLoop", "{from: c, to: w, when: redo}"), "spec.edges[2]", CRITIC_LOOP),
        case(codes::MAX_ITERATIONS_NOT_BACK_EDGE, "maxIterations on a forward edge",
            "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent}, {id: b, kind: LLMAgent}]\nedges: [{from: a, to: b, maxIterations: 2}]",
            "spec.edges[0].maxIterations", &format!("pattern: Pipeline\n{two}")),
        case(codes::MAX_ITERATIONS_OUT_OF_RANGE, "maxIterations 7",
            &critic_loop_with("CriticLoop", "{from: c, to: w, when: redo, maxIterations: 7}"), "spec.edges[2].maxIterations",
            &critic_loop_with("CriticLoop", "{from: c, to: w, when: redo, maxIterations: 5}")),
        case(codes::LOOP_WITH_TWO_ENTRIES, "a loop a router can enter in the middle",
            "pattern: Router\nnodes: [{id: r, kind: Router, output: {labels: [x, y]}}, {id: a, kind: LLMAgent}, {id: b, kind: LLMAgent, output: {labels: [again, done]}}, {id: e, kind: LLMAgent}]\nedges: [{from: r, to: a, when: x}, {from: r, to: b, when: y}, {from: a, to: b}, {from: b, to: a, when: again, maxIterations: 2}, {from: b, to: e, when: done}]",
            "spec.edges[3]",
            "pattern: Router\nnodes: [{id: r, kind: Router, output: {labels: [x, y]}}, {id: a, kind: LLMAgent}, {id: b, kind: LLMAgent, output: {labels: [again, done]}}, {id: e, kind: LLMAgent}]\nedges: [{from: r, to: a, when: x}, {from: r, to: e, when: y}, {from: a, to: b}, {from: b, to: a, when: again, maxIterations: 2}, {from: b, to: e, when: done}]"),
        // supervisors (rules 1.52–1.55)
        case(codes::CHILD_NOT_AGENT, "a human approval as a child",
            "pattern: Supervisor\nnodes: [{id: s, kind: Supervisor, children: [h]}, {id: h, kind: HumanApproval}]", "spec.nodes[0].children[0]",
            "pattern: Supervisor\nnodes: [{id: s, kind: Supervisor, children: [h]}, {id: h, kind: LLMAgent}]"),
        case(codes::CHILD_HAS_TWO_PARENTS, "one child under two supervisors",
            "pattern: Supervisor\nnodes: [{id: s1, kind: Supervisor, children: [c]}, {id: s2, kind: Supervisor, children: [c, d]}, {id: c, kind: LLMAgent}, {id: d, kind: LLMAgent}]\nedges: [{from: s1, to: s2}]",
            "spec.nodes[1].children[0]",
            "pattern: Supervisor\nnodes: [{id: s1, kind: Supervisor, children: [c]}, {id: s2, kind: Supervisor, children: [d]}, {id: c, kind: LLMAgent}, {id: d, kind: LLMAgent}]\nedges: [{from: s1, to: s2}]"),
        case(codes::CHILD_HAS_EDGES, "an edge into a child",
            "pattern: Supervisor\nnodes: [{id: s, kind: Supervisor, children: [c]}, {id: c, kind: LLMAgent}]\nedges: [{from: s, to: c}]", "spec.edges[0]",
            "pattern: Supervisor\nnodes: [{id: s, kind: Supervisor, children: [c]}, {id: c, kind: LLMAgent}]"),
        case(codes::TOO_DEEP, "four levels of supervisors",
            "pattern: Supervisor\nnodes: [{id: s1, kind: Supervisor, children: [s2]}, {id: s2, kind: Supervisor, children: [s3]}, {id: s3, kind: Supervisor, children: [s4]}, {id: s4, kind: Supervisor, children: [a]}, {id: a, kind: LLMAgent}]",
            "spec.nodes[2].children[0]",
            "pattern: Supervisor\nnodes: [{id: s1, kind: Supervisor, children: [s2]}, {id: s2, kind: Supervisor, children: [s3]}, {id: s3, kind: Supervisor, children: [a]}, {id: a, kind: LLMAgent}]"),
        case(codes::SUPERVISOR_CYCLE, "two supervisors that are each other's child",
            "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent}, {id: s1, kind: Supervisor, children: [s2]}, {id: s2, kind: Supervisor, children: [s1]}]",
            "spec.nodes[1].children[0]",
            "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent}, {id: s1, kind: Supervisor, children: [s2]}, {id: s2, kind: Supervisor, children: [b]}, {id: b, kind: LLMAgent}]\nedges: [{from: a, to: s1}]"),
        case(codes::SUPERVISOR_CYCLE, "a supervisor that is its own child",
            "pattern: Supervisor\nnodes: [{id: s, kind: Supervisor, children: [s]}]", "spec.nodes[0].children[0]",
            "pattern: Supervisor\nnodes: [{id: s, kind: Supervisor, children: [b]}, {id: b, kind: LLMAgent}]"),
        // models and budgets (rules 1.56, 1.61, 2.30)
        case(codes::MODEL_NOT_ALLOWED, "a model naming an MCP entry",
            "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent, model: tirraflow}]", "spec.nodes[0].model",
            "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent, model: smart}]"),
        with(case(codes::MODEL_NOT_ALLOWED, "a model outside the deployment's allowlist",
            "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent, model: smart}]", "spec.nodes[0].model",
            "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent, model: fast}]"),
            |e| e.limits.allowed_models = Some(set(&["fast"]))),
        with(case(codes::MODEL_REQUIRED, "no model, no default and two models",
            "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent}]", "spec.nodes[0].model",
            "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent, model: smart}]"),
            |e| e.limits.default_model = None),
        with(case(codes::MODEL_REQUIRED, "a default model the registry lacks",
            "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent}]", "spec.nodes[0].model",
            "pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent, model: fast}]"),
            |e| e.limits.default_model = Some("gone".to_owned())),
        case(codes::BUDGET_OVER_CEILING, "maxTokens over the ceiling",
            &format!("pattern: Pipeline\nbudgets: {{maxTokens: 900000}}\nnodes: [{A}]"), "spec.budgets.maxTokens",
            &format!("pattern: Pipeline\nbudgets: {{maxTokens: 120000}}\nnodes: [{A}]")),
        case(codes::BUDGET_OVER_CEILING, "maxRemoteCalls over the ceiling",
            &format!("pattern: Pipeline\nbudgets: {{maxRemoteCalls: 21}}\nnodes: [{A}]"), "spec.budgets.maxRemoteCalls",
            &format!("pattern: Pipeline\nbudgets: {{maxRemoteCalls: 20}}\nnodes: [{A}]")),
        case(codes::BUDGET_OUT_OF_RANGE, "a timeout of zero",
            &format!("pattern: Pipeline\nbudgets: {{timeoutSeconds: 0}}\nnodes: [{A}]"), "spec.budgets.timeoutSeconds",
            &format!("pattern: Pipeline\nbudgets: {{timeoutSeconds: 240}}\nnodes: [{A}]")),
        // tools (rules 1.57–1.60, 1.64–1.66, 1.77)
        tools_case(codes::MALFORMED_TOOL_REF, "a reference without its kind", "'tirraflow.search_articles'",
            "spec.nodes[0].tools[0]", "'mcp:tirraflow.search_articles'"),
        tools_case(codes::UNKNOWN_TOOL, "a skill the remote is not registered for", "'a2a:demo-writer.deploy'",
            "spec.nodes[0].tools[0]", "'a2a:demo-writer.draft'"),
        tools_case(codes::UNKNOWN_TOOL, "an entry the registry lacks", "'mcp:tirraflw.search_articles'",
            "spec.nodes[0].tools[0]", "'mcp:tirraflow.search_articles'"),
        tools_case(codes::UNKNOWN_TOOL, "an mcp: reference to an A2A entry", "'mcp:demo-writer.draft'",
            "spec.nodes[0].tools[0]", "'a2a:demo-writer.draft'"),
        tools_case(codes::UNKNOWN_TOOL, "an MCP tool outside the allowlist", "'mcp:tirraflow.list_articles'",
            "spec.nodes[0].tools[0]", "'mcp:tirraflow.get_article'"),
        tools_case(codes::UNKNOWN_TOOL, "a model entry as a tool", "'mcp:fast.chat'",
            "spec.nodes[0].tools[0]", "'mcp:tirraflow.get_article'"),
        tools_case(codes::TOOL_NOT_READ_ONLY, "an MCP tool not listed read-only", "'mcp:tirraflow.delete_article'",
            "spec.nodes[0].tools[0]", "'mcp:tirraflow.get_article'"),
        passing_with(tools_case(codes::ACTING_NOT_ALLOWED, "an acting remote where acting is off", "'a2a:deployer.deploy'",
            "spec.nodes[0].tools[0]", "'a2a:deployer.deploy'"),
            |e| e.limits.acting_remotes = true),
        tools_case(codes::TOOL_NAME_COLLISION, "two tools that both become mcp_my_x_t", "'mcp:my-x.t', 'mcp:my_x.t'",
            "spec.nodes[0].tools[1]", "'mcp:my-x.t'"),
        tools_case(codes::TOOL_NAME_COLLISION, "the same tool twice on one node", "'mcp:tirraflow.get_article', 'mcp:tirraflow.get_article'",
            "spec.nodes[0].tools[1]", "'mcp:tirraflow.get_article', 'mcp:tirraflow.search_articles'"),
        case(codes::TOOL_NAME_COLLISION, "two children that both become n_my_c",
            "pattern: Supervisor\nnodes: [{id: s, kind: Supervisor, children: [my-c, my_c]}, {id: my-c, kind: LLMAgent}, {id: my_c, kind: LLMAgent}]",
            "spec.nodes[0].children[1]",
            "pattern: Supervisor\nnodes: [{id: s, kind: Supervisor, children: [my-c, my_d]}, {id: my-c, kind: LLMAgent}, {id: my_d, kind: LLMAgent}]"),
        tools_case(codes::TOOL_NAME_TOO_LONG, "an MCP tool name over 64 characters",
            "'mcp:knowledge-base-of-the-platform-engineering-team.search_everything'",
            "spec.nodes[0].tools[0]", "'mcp:tirraflow.search_articles'"),
        case(codes::TOOL_NAME_TOO_LONG, "a child id that makes n_<id> over 64 characters",
            &format!("pattern: Supervisor\nnodes: [{{id: s, kind: Supervisor, children: [{long}]}}, {{id: {long}, kind: LLMAgent}}]", long = format!("c{}", "x".repeat(62))),
            "spec.nodes[0].children[0]",
            &format!("pattern: Supervisor\nnodes: [{{id: s, kind: Supervisor, children: [{long}]}}, {{id: {long}, kind: LLMAgent}}]", long = format!("c{}", "x".repeat(61)))),
        // human approval (rules 1.68–1.70)
        case(codes::APPROVAL_ON_BRANCH, "a human approval on a branch",
            &fan(2).replace("{id: b1, kind: LLMAgent}", "{id: b1, kind: HumanApproval}").replace("{from: b1, to: j}", "{from: b1, to: j, when: approved}"),
            "spec.nodes[2]",
            &fan(2).replace("{id: j, kind: Join}", "{id: j, kind: Join}, {id: h, kind: HumanApproval}").replace("{from: b1, to: j}", "{from: b1, to: j}, {from: j, to: h}")),
        case(codes::APPROVAL_FEEDS_ROUTER, "a human approval followed by a router",
            "pattern: Router\nnodes: [{id: a, kind: LLMAgent}, {id: h, kind: HumanApproval}, {id: r, kind: Router, output: {labels: [x]}}, {id: b, kind: LLMAgent}]\nedges: [{from: a, to: h}, {from: h, to: r, when: approved}, {from: r, to: b, when: x}]",
            "spec.edges[1]",
            "pattern: Router\nnodes: [{id: a, kind: LLMAgent}, {id: h, kind: HumanApproval}, {id: r, kind: LLMAgent}, {id: b, kind: LLMAgent}]\nedges: [{from: a, to: h}, {from: h, to: r, when: approved}, {from: r, to: b}]"),
        // patterns (rules 1.71–1.75)
        pattern_case("a pipeline with a loop", "Pipeline", "CriticLoop", CRITIC_LOOP.trim_start_matches("pattern: CriticLoop\n")),
        pattern_case("a pipeline with a router", "Pipeline", "Router",
            "nodes: [{id: r, kind: Router, output: {labels: [x]}}, {id: a, kind: LLMAgent}]\nedges: [{from: r, to: a, when: x}]"),
        pattern_case("a pipeline with a parallel section", "Pipeline", "FanOutFanIn", fan(2).trim_start_matches("pattern: FanOutFanIn\n")),
        pattern_case("a router with no labelled edge", "Router", "Pipeline", two),
        pattern_case("a critic loop with no loop", "CriticLoop", "Pipeline", two),
        pattern_case("a fan-out with no parallel", "FanOutFanIn", "Pipeline", two),
        pattern_case("a map-reduce with no parallel", "MapReduce", "Pipeline", two),
        pattern_case("a supervisor pattern with no supervisor", "Supervisor", "Pipeline", two),
        pattern_case("a debate with neither parallel speakers nor a loop", "Debate", "Pipeline", two),
        pattern_case("a plan-and-execute with one agent", "PlanAndExecute", "Pipeline", &format!("nodes: [{A}]")),
        pattern_case("a debate of parallel speakers", "Pipeline", "Debate", fan(3).trim_start_matches("pattern: FanOutFanIn\n")),
    ]
}

/// The passing neighbour of every case, named `code (case)`, with the registry and deployment
/// it passes against.
pub(crate) fn passing_neighbours() -> Vec<(String, Env, CompositionSpec)> {
    cases()
        .into_iter()
        .map(|c| {
            let mut e = env();
            (c.setup)(&mut e);
            (c.pass_setup)(&mut e);
            (format!("{} ({})", c.code, c.name), e, spec(&c.pass))
        })
        .collect()
}

/// Codes whose failing and passing cases live in other test modules.
const COVERED_ELSEWHERE: &[(&str, &str)] = &[
    (
        codes::PLAN_INCONSISTENT,
        "plan::tests::an_invalid_spec_cannot_be_built_unchecked",
    ),
    // Only a supervisor cycle leaves no node on the graph, so it never comes alone.
    (
        codes::NO_FIRST_NODE,
        "tests::every_problem_of_a_graph_is_reported_at_once",
    ),
];

fn run_case(c: &Case) -> Result<(), String> {
    let mut e = env();
    (c.setup)(&mut e);
    let label = format!("{} ({})", c.code, c.name);
    let severity =
        codes::severity(c.code).ok_or_else(|| format!("{label}: code not in ALL_CODES"))?;
    let fail = validate(&spec(&c.fail), &e.registry, &e.limits);
    let (hits, others) = match severity {
        Severity::Error => (&fail.errors, &fail.errors),
        Severity::Warning => (&fail.warnings, &fail.errors),
    };
    if !hits.iter().any(|i| i.code == c.code && i.field == c.loc) {
        return Err(format!(
            "{label}: expected {} at {}, got errors {:?} warnings {:?}",
            c.code,
            c.loc,
            brief(&fail.errors),
            brief(&fail.warnings)
        ));
    }
    let stray: Vec<_> = others
        .iter()
        .filter(|i| i.code != c.code)
        .cloned()
        .collect();
    if !stray.is_empty() {
        return Err(format!(
            "{label}: failing case has other errors too: {:?}",
            brief(&stray)
        ));
    }
    if !hits
        .iter()
        .all(|i| !i.message.is_empty() && i.field == crate::common::loc_to_string(&i.loc))
    {
        return Err(format!(
            "{label}: an issue without message or with a field unlike its loc"
        ));
    }
    (c.pass_setup)(&mut e);
    let pass_spec = spec(&c.pass);
    let pass = validate(&pass_spec, &e.registry, &e.limits);
    if !pass.errors.is_empty() {
        return Err(format!(
            "{label}: passing neighbour has errors {:?}",
            brief(&pass.errors)
        ));
    }
    if pass.warnings.iter().any(|i| i.code == c.code) {
        return Err(format!(
            "{label}: passing neighbour still warns {:?}",
            brief(&pass.warnings)
        ));
    }
    Ok(())
}

#[test]
fn every_case_fails_with_exactly_its_code_and_its_neighbour_passes() {
    let failures: Vec<String> = cases().iter().filter_map(|c| run_case(c).err()).collect();
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_code_has_a_failing_and_a_passing_case() {
    let table = cases();
    for (code, ..) in ALL_CODES {
        let covered = table.iter().any(|c| c.code == *code)
            || COVERED_ELSEWHERE.iter().any(|(c, _)| c == code);
        assert!(covered, "code {code} has no case in the validator's table");
    }
}

#[test]
fn every_seed_pattern_check_has_a_case() {
    use crate::composition::Pattern;
    let table = cases();
    for pattern in Pattern::ALL {
        let word = format!("pattern: {}\n", pattern.as_str());
        let code = if pattern == Pattern::Handoff {
            codes::NOT_SUPPORTED_YET
        } else {
            codes::PATTERN_MISMATCH
        };
        assert!(
            table
                .iter()
                .any(|c| c.code == code && c.fail.starts_with(&word)),
            "no failing case for pattern {}",
            pattern.as_str()
        );
    }
}

#[test]
fn every_problem_of_a_graph_is_reported_at_once() {
    // (what, spec, every error expected as code at field)
    type Expected<'a> = &'a [(&'a str, &'a str)];
    #[rustfmt::skip]
    let cases: &[(&str, &str, Expected)] = &[
        ("a head-first loop without maxIterations", &HEAD_FIRST_LOOP.replace(", maxIterations: 2", ""),
            &[(codes::UNBOUNDED_CYCLE, "spec.edges[1]")]),
        // Three loops nested from the first node, the outer one unbounded, then a loop around a
        // parallel section without maxIterations, on a graph that is no Pipeline.
        ("a head-first graph with loop, parallel and pattern problems",
            "pattern: Pipeline\nnodes: [{id: h1, kind: LLMAgent}, {id: h2, kind: LLMAgent}, {id: h3, kind: LLMAgent}, {id: k3, kind: LLMAgent, output: {labels: [ok, redo]}}, {id: k2, kind: LLMAgent, output: {labels: [ok, redo]}}, {id: k1, kind: LLMAgent, output: {labels: [ok, redo]}}, {id: p, kind: Parallel}, {id: a, kind: LLMAgent}, {id: b, kind: LLMAgent}, {id: j, kind: Join}, {id: c, kind: LLMAgent, output: {labels: [ok, redo]}}, {id: e, kind: LLMAgent}]\nedges: [{from: h1, to: h2}, {from: h2, to: h3}, {from: h3, to: k3}, {from: k3, to: h3, when: redo, maxIterations: 2}, {from: k3, to: k2, when: ok}, {from: k2, to: h2, when: redo, maxIterations: 2}, {from: k2, to: k1, when: ok}, {from: k1, to: h1, when: redo}, {from: k1, to: p, when: ok}, {from: p, to: a}, {from: p, to: b}, {from: a, to: j}, {from: b, to: j}, {from: j, to: c}, {from: c, to: p, when: redo}, {from: c, to: e, when: ok}]",
            &[(codes::LOOP_TOO_DEEP, "spec.edges[3]"), (codes::UNBOUNDED_CYCLE, "spec.edges[7]"),
              (codes::LOOP_AROUND_PARALLEL, "spec.edges[14]"), (codes::UNBOUNDED_CYCLE, "spec.edges[14]"),
              (codes::PATTERN_MISMATCH, "spec.pattern")]),
        ("a loop with two entries and no maxIterations",
            "pattern: Router\nnodes: [{id: r, kind: Router, output: {labels: [x, y]}}, {id: a, kind: LLMAgent}, {id: b, kind: LLMAgent, output: {labels: [again, done]}}, {id: e, kind: LLMAgent}]\nedges: [{from: r, to: a, when: x}, {from: r, to: b, when: y}, {from: a, to: b}, {from: b, to: a, when: again}, {from: b, to: e, when: done}]",
            &[(codes::LOOP_WITH_TWO_ENTRIES, "spec.edges[3]"), (codes::UNBOUNDED_CYCLE, "spec.edges[3]")]),
        ("two first nodes on a graph that is no Router",
            "pattern: Router\nnodes: [{id: a, kind: LLMAgent}, {id: b, kind: LLMAgent}, {id: c, kind: LLMAgent}]\nedges: [{from: a, to: b}]",
            &[(codes::MULTIPLE_FIRST_NODES, "spec.nodes[2]"), (codes::PATTERN_MISMATCH, "spec.pattern")]),
        ("a supervisor cycle, which leaves no node on the graph",
            "pattern: Supervisor\nnodes: [{id: s1, kind: Supervisor, children: [s2]}, {id: s2, kind: Supervisor, children: [s1]}]",
            &[(codes::NO_FIRST_NODE, "spec.nodes"), (codes::SUPERVISOR_CYCLE, "spec.nodes[0].children[0]"),
              (codes::SUPERVISOR_CYCLE, "spec.nodes[1].children[0]"), (codes::PATTERN_MISMATCH, "spec.pattern")]),
    ];
    let e = env();
    for (what, yaml, expected) in cases {
        let v = validate(&spec(yaml), &e.registry, &e.limits);
        let mut got: Vec<(String, String)> = v
            .errors
            .iter()
            .map(|i| (i.code.clone(), i.field.clone()))
            .collect();
        got.sort();
        let mut want: Vec<(String, String)> = expected
            .iter()
            .map(|(c, f)| ((*c).to_owned(), (*f).to_owned()))
            .collect();
        want.sort();
        assert_eq!(got, want, "{what}: {:#?}", brief(&v.errors));
    }
}
