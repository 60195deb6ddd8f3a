//! Generated compositions (a seeded, hand-written generator, so every run checks the same
//! cases and a failure prints the seed):
//!
//! - compositions built from valid segments (agents, critic loops, nested loops, parallel
//!   sections, routers, approvals, supervisors) always validate, always plan, and their plans
//!   hold every invariant the engine relies on, and a walk of them always ends (loop caps, rule
//!   2.12–2.14);
//! - arbitrary and mutated specs never make `validate` or `plan` panic, and `plan` succeeds
//!   exactly when `validate` finds no error.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::{Next, Plan, plan};
use crate::codes;
use crate::composition::{CompositionSpec, Edge, Node, NodeKind, NodeOutput, Pattern};
use crate::validate::fixtures::{Env, env};
use crate::validate::validate;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// xorshift64*: small, deterministic, good enough to pick shapes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'t, T>(&mut self, items: &'t [T]) -> &'t T {
        &items[self.below(items.len())]
    }
}

fn node(id: &str, kind: NodeKind) -> Node {
    Node {
        id: id.to_owned(),
        kind,
        description: None,
        instruction: None,
        tools: Vec::new(),
        model: None,
        output: None,
        children: Vec::new(),
        prompt: None,
    }
}

fn labelled(id: &str, labels: &[&str]) -> Node {
    let mut n = node(id, NodeKind::LlmAgent);
    n.output = Some(NodeOutput {
        labels: labels.iter().map(|l| (*l).to_owned()).collect(),
    });
    n
}

fn edge(from: &str, to: &str, when: Option<&str>, max: Option<u32>) -> Edge {
    Edge {
        from: from.to_owned(),
        to: to.to_owned(),
        when: when.map(str::to_owned),
        max_iterations: max,
        screen: false,
    }
}

/// Builds a valid composition segment by segment.
struct Builder<'r> {
    rng: &'r mut Rng,
    nodes: Vec<Node>,
    edges: Vec<Edge>,
    /// The node the next segment follows, and the label that leads on from it.
    exit: (String, Option<String>),
    has_loop: bool,
    has_section: bool,
    has_supervisor: bool,
}

impl Builder<'_> {
    fn fresh(&self, prefix: &str) -> String {
        format!("{prefix}{}", self.nodes.len())
    }

    fn add(&mut self, n: Node) -> String {
        let id = n.id.clone();
        self.nodes.push(n);
        id
    }

    fn link(&mut self, to: &str) {
        let (from, when) = self.exit.clone();
        let mut e = edge(&from, to, when.as_deref(), None);
        // A screen only joins two LLMAgent nodes (rule 2.28).
        let is_agent = |id: &str| {
            self.nodes
                .iter()
                .any(|n| n.id == id && n.kind == NodeKind::LlmAgent)
        };
        let between_agents = is_agent(&from) && is_agent(to);
        e.screen = between_agents && self.rng.chance(20);
        self.edges.push(e);
    }

    fn agent(&mut self) -> String {
        let mut n = node(&self.fresh("a"), NodeKind::LlmAgent);
        if self.rng.chance(40) {
            n.tools.push(
                self.rng
                    .pick(&[
                        "mcp:tirraflow.search_articles",
                        "a2a:demo-writer.draft",
                        "mcp:my-x.t",
                    ])
                    .to_string(),
            );
        }
        if self.rng.chance(30) {
            n.model = Some("smart".to_owned());
        }
        let id = self.add(n);
        self.link(&id);
        self.exit = (id.clone(), None);
        id
    }

    /// w → [inner loop] → c, c → w when redo (capped), leaving on ok.
    fn critic_loop(&mut self, allow_inner: bool) {
        let w = self.agent();
        self.critic_loop_from(w, allow_inner);
    }

    /// The rest of a critic loop whose head `w` is the current exit.
    fn critic_loop_from(&mut self, w: String, allow_inner: bool) {
        if allow_inner && self.rng.chance(40) {
            self.critic_loop(false);
        }
        let c = self.add(labelled(&self.fresh("c"), &["ok", "redo"]));
        self.link(&c);
        let max = 1 + self.rng.below(5) as u32;
        self.edges.push(edge(&c, &w, Some("redo"), Some(max)));
        self.exit = (c, Some("ok".to_owned()));
        self.has_loop = true;
    }

    fn fan(&mut self) {
        let p = self.add(node(&self.fresh("p"), NodeKind::Parallel));
        self.link(&p);
        let j = self.fresh("j");
        let branches = 2 + self.rng.below(5);
        let mut tails = Vec::new();
        for _ in 0..branches {
            self.exit = (p.clone(), None);
            let mut last = self.agent();
            if self.rng.chance(30) {
                last = self.agent();
            }
            tails.push(last);
        }
        let j = self.add(node(&j, NodeKind::Join));
        for t in tails {
            self.edges.push(edge(&t, &j, None, None));
        }
        self.exit = (j, None);
        self.has_section = true;
    }

    fn router(&mut self) {
        if self.exit.1.as_deref() == Some("approved") {
            self.agent(); // an approval is never followed by a router
        }
        let labels: &[&str] = if self.rng.chance(50) {
            &["x", "y"]
        } else {
            &["x", "y", "z"]
        };
        let mut r = node(&self.fresh("r"), NodeKind::Router);
        r.output = Some(NodeOutput {
            labels: labels.iter().map(|l| (*l).to_owned()).collect(),
        });
        let r = self.add(r);
        self.link(&r);
        let m = self.fresh("m");
        let mut arms = Vec::new();
        for label in labels {
            if self.rng.chance(15) {
                continue; // the label ends the run: a warning, not an error
            }
            self.exit = (r.clone(), Some((*label).to_owned()));
            arms.push(self.agent());
        }
        let m = self.add(node(&m, NodeKind::LlmAgent));
        for a in &arms {
            self.edges.push(edge(a, &m, None, None));
        }
        if arms.is_empty() {
            self.exit = (r.clone(), Some(labels[0].to_owned()));
            self.link(&m);
        }
        self.exit = (m, None);
    }

    fn approval(&mut self) {
        let before = self.exit.clone();
        let h = self.add(node(&self.fresh("h"), NodeKind::HumanApproval));
        self.link(&h);
        // Not back to the first node: that loop would go around everything before it.
        let prev_is_agent = before.1.is_none()
            && before.0 != "start"
            && self
                .nodes
                .iter()
                .any(|n| n.id == before.0 && n.kind == NodeKind::LlmAgent);
        if prev_is_agent && self.rng.chance(50) {
            self.edges.push(edge(
                &h,
                &before.0,
                Some("rejected"),
                Some(1 + self.rng.below(5) as u32),
            ));
            self.has_loop = true;
        }
        self.exit = (h, Some("approved".to_owned()));
    }

    fn supervisor(&mut self) {
        let id = self.fresh("s");
        let mut s = node(&id, NodeKind::Supervisor);
        for k in 0..1 + self.rng.below(2) {
            let child = format!("{id}-k{k}");
            if self.rng.chance(30) {
                let mut sub = node(&child, NodeKind::Supervisor);
                sub.children.push(format!("{child}-leaf"));
                self.nodes
                    .push(node(&format!("{child}-leaf"), NodeKind::LlmAgent));
                self.nodes.push(sub);
            } else {
                self.nodes.push(node(&child, NodeKind::LlmAgent));
            }
            s.children.push(child);
        }
        let s = self.add(s);
        self.link(&s);
        self.exit = (s, None);
        self.has_supervisor = true;
    }
}

fn valid_composition(seed: u64) -> CompositionSpec {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let first = node("start", NodeKind::LlmAgent);
    let mut b = Builder {
        rng: &mut rng,
        nodes: vec![first],
        edges: Vec::new(),
        exit: ("start".to_owned(), None),
        has_loop: false,
        has_section: false,
        has_supervisor: false,
    };
    // A critic loop may start at the first node, which only its back edge enters.
    let head_first = b.rng.chance(20);
    if head_first {
        b.critic_loop_from("start".to_owned(), true);
    }
    for _ in 0..1 + b.rng.below(5) {
        // The largest segment (a fan of six two-agent branches) adds 14 nodes: stay within 30.
        if b.nodes.len() > 16 {
            break;
        }
        match b.rng.below(6) {
            0 => {
                b.agent();
            }
            1 => b.critic_loop(true),
            2 => b.fan(),
            3 => b.router(),
            4 => b.approval(),
            _ => b.supervisor(),
        }
    }
    let has_when = b.edges.iter().any(|e| e.when.is_some());
    let pattern = if b.has_loop {
        Pattern::CriticLoop
    } else if b.has_section {
        Pattern::FanOutFanIn
    } else if has_when || b.nodes.iter().any(|n| n.kind == NodeKind::Router) {
        Pattern::Router
    } else if b.has_supervisor {
        Pattern::Supervisor
    } else {
        Pattern::Pipeline
    };
    CompositionSpec {
        description: None,
        pattern,
        budgets: Default::default(),
        nodes: b.nodes,
        edges: b.edges,
    }
}

/// Checks what the engine relies on in a plan.
fn check_plan(spec: &CompositionSpec, p: &Plan) -> Result<(), String> {
    let n = spec.nodes.len();
    if p.nodes.len() != n || p.edges.len() != spec.edges.len() {
        return Err("plan sizes differ from the spec".into());
    }
    let outs = |i: usize| -> Vec<usize> {
        (0..p.edges.len())
            .filter(|&e| p.edges[e].from == i)
            .collect()
    };
    // The first node is the one no forward edge enters: a loop may start at it.
    if p.edges
        .iter()
        .any(|e| e.to == p.start && e.back_edge_of.is_none())
    {
        return Err("a forward edge enters the start node".into());
    }
    for (i, pn) in p.nodes.iter().enumerate() {
        if pn.id != spec.nodes[i].id || pn.kind != spec.nodes[i].kind {
            return Err(format!("node {i} differs from the spec"));
        }
        let out = outs(i);
        let ok = match &pn.next {
            Next::End => out.is_empty(),
            Next::Edge { edge } => out == [*edge],
            Next::Route { routes } => {
                routes.len() == out.len()
                    && routes.iter().all(|(l, &e)| {
                        p.edges[e].from == i
                            && p.edges[e].when.as_ref() == Some(l)
                            && pn.labels.contains(l)
                    })
            }
            Next::FanOut { section } => {
                let s = &p.sections[*section];
                s.parallel == i
                    && s.branches.iter().map(|b| b[0]).collect::<Vec<_>>()
                        == out.iter().map(|&e| p.edges[e].to).collect::<Vec<_>>()
            }
            Next::ReturnToParent => {
                pn.parent.is_some() && out.is_empty() && p.edges.iter().all(|e| e.to != i)
            }
        };
        if !ok {
            return Err(format!(
                "node {} has next {:?} but edges {out:?}",
                pn.id, pn.next
            ));
        }
        if pn.kind.calls_model() != pn.model.is_some() {
            return Err(format!("node {} model {:?}", pn.id, pn.model));
        }
    }
    for (l, lp) in p.loops.iter().enumerate() {
        let e = &p.edges[lp.back_edge];
        let ok = e.back_edge_of == Some(l)
            && e.from == lp.tail
            && e.to == lp.head
            && lp.body.first() == Some(&lp.head)
            && lp.body.contains(&lp.tail)
            && (1..=5).contains(&lp.max_iterations)
            && (1..=2).contains(&lp.depth)
            && lp.parent.is_none_or(|q| {
                q < l && p.loops[q].depth + 1 == lp.depth && p.loops[q].nested.contains(&l)
            })
            && lp.nested.iter().all(|&m| p.loops[m].parent == Some(l));
        if !ok {
            return Err(format!("loop {l} is inconsistent: {lp:?}"));
        }
    }
    for (e, pe) in p.edges.iter().enumerate() {
        if let Some(l) = pe.back_edge_of
            && p.loops[l].back_edge != e
        {
            return Err(format!(
                "edge {e} names loop {l}, which is not closed by it"
            ));
        }
    }
    let main: Vec<usize> = (0..n).filter(|&i| p.nodes[i].parent.is_none()).collect();
    let pos: BTreeMap<usize, usize> = p.order.iter().enumerate().map(|(k, &v)| (v, k)).collect();
    if p.order.len() != main.len() || main.iter().any(|v| !pos.contains_key(v)) {
        return Err(format!(
            "order {:?} is not the main nodes {main:?}",
            p.order
        ));
    }
    if p.edges
        .iter()
        .any(|e| e.back_edge_of.is_none() && pos[&e.from] >= pos[&e.to])
    {
        return Err(format!("order {:?} is not topological", p.order));
    }
    for (s, sec) in p.sections.iter().enumerate() {
        for branch in &sec.branches {
            let mut chain = vec![sec.parallel];
            chain.extend(branch);
            chain.push(sec.join);
            let linked = chain
                .windows(2)
                .all(|w| p.edges.iter().any(|e| e.from == w[0] && e.to == w[1]));
            if branch.is_empty()
                || !linked
                || branch.iter().any(|&v| p.nodes[v].in_section != Some(s))
            {
                return Err(format!("section {s} branch {branch:?} is not a chain"));
            }
        }
    }
    let mut seen = BTreeSet::from([p.start]);
    let mut queue = VecDeque::from([p.start]);
    while let Some(v) = queue.pop_front() {
        for e in p.edges.iter().filter(|e| e.from == v) {
            if seen.insert(e.to) {
                queue.push_back(e.to);
            }
        }
    }
    if main.iter().any(|v| !seen.contains(v)) {
        return Err("a main node is not reachable in the plan".into());
    }
    Ok(())
}

/// Walks a plan like the engine (random labels, loop caps per entry, nested loops restarting
/// when their outer back edge is taken); returns the number of steps.
fn walk(p: &Plan, rng: &mut Rng) -> usize {
    let mut taken = vec![0u32; p.loops.len()];
    let mut steps = 0;
    let mut cur = p.start;
    loop {
        steps += 1;
        assert!(steps < 100_000, "walk does not end");
        let edge = match &p.nodes[cur].next {
            Next::End | Next::ReturnToParent => return steps,
            Next::Edge { edge } => *edge,
            Next::Route { .. } => {
                let label = rng.pick(&p.nodes[cur].labels).clone();
                match &p.nodes[cur].next {
                    Next::Route { routes } => match routes.get(&label) {
                        Some(&e) => e,
                        None => return steps,
                    },
                    _ => return steps,
                }
            }
            Next::FanOut { section } => {
                let s = &p.sections[*section];
                steps += s.branches.iter().map(Vec::len).sum::<usize>();
                cur = s.join;
                continue;
            }
        };
        let e = &p.edges[edge];
        if let Some(l) = e.back_edge_of {
            if taken[l] >= p.loops[l].max_iterations {
                return steps; // the loop stops: the branch ends
            }
            taken[l] += 1;
            let mut stack = p.loops[l].nested.clone();
            while let Some(m) = stack.pop() {
                taken[m] = 0;
                stack.extend(&p.loops[m].nested);
            }
        } else {
            for (l, lp) in p.loops.iter().enumerate() {
                if lp.head == e.to && !lp.body.contains(&e.from) {
                    taken[l] = 0;
                }
            }
        }
        cur = e.to;
    }
}

#[test]
fn compositions_built_from_valid_segments_validate_plan_and_end() {
    let e = env();
    let mut rng = Rng(7);
    // What the generated plans held, so the test cannot pass on trivial graphs.
    let mut saw = BTreeSet::new();
    for seed in 0..1500 {
        let spec = valid_composition(seed);
        let v = validate(&spec, &e.registry, &e.limits);
        assert!(
            v.is_valid(),
            "seed {seed}: {:#?}\n{}",
            v.errors,
            serde_yaml::to_string(&spec).unwrap()
        );
        let p =
            plan(&spec, &e.registry, &e.limits).unwrap_or_else(|v| panic!("seed {seed}: {v:#?}"));
        if let Err(why) = check_plan(&spec, &p) {
            panic!(
                "seed {seed}: {why}\n{}",
                serde_yaml::to_string(&spec).unwrap()
            );
        }
        for _ in 0..3 {
            walk(&p, &mut rng);
        }
        if p.loops.iter().any(|l| l.depth == 2) {
            saw.insert("nested loop");
        }
        if p.sections.iter().any(|s| s.branches.len() == 6) {
            saw.insert("six branches");
        }
        if p.nodes
            .iter()
            .any(|n| n.parent.is_some_and(|q| p.nodes[q].parent.is_some()))
        {
            saw.insert("grandchild");
        }
        if p.loops
            .iter()
            .any(|l| p.nodes[l.tail].kind == NodeKind::HumanApproval)
        {
            saw.insert("approval loop");
        }
        if p.loops.iter().any(|l| l.head == p.start) {
            saw.insert("loop at the first node");
        }
        if p.nodes.iter().any(|n| n.kind == NodeKind::Router) {
            saw.insert("router");
        }
        if p.nodes.len() > 20 {
            saw.insert("large");
        }
    }
    assert_eq!(saw.len(), 7, "the generator only made {saw:?}");
}

fn arbitrary_spec(rng: &mut Rng) -> CompositionSpec {
    const IDS: [&str; 7] = ["a", "b", "c", "d", "e", "f", "ghost"];
    const LABELS: [&str; 5] = ["x", "y", "approved", "rejected", "Bad label"];
    const TOOLS: [&str; 7] = [
        "mcp:tirraflow.search_articles",
        "mcp:tirraflow.delete_article",
        "a2a:demo-writer.draft",
        "a2a:deployer.deploy",
        "mcp:my_x.t",
        "mcp:my-x.t",
        "not a tool",
    ];
    let count = rng.below(8);
    let nodes = (0..count)
        .map(|_| {
            let mut n = node(rng.pick::<&str>(&IDS[..6]), *rng.pick(&NodeKind::ALL));
            if rng.chance(30) {
                let labels = (0..1 + rng.below(3))
                    .map(|_| (*rng.pick(&LABELS)).to_owned())
                    .collect();
                n.output = Some(NodeOutput { labels });
            }
            for _ in 0..rng.below(3) {
                n.tools.push((*rng.pick(&TOOLS)).to_owned());
            }
            for _ in 0..rng.below(3) {
                n.children.push((*rng.pick(&IDS)).to_owned());
            }
            n.model = rng
                .pick(&[
                    None,
                    Some("fast"),
                    Some("smart"),
                    Some("tirraflow"),
                    Some("nope"),
                ])
                .map(str::to_owned);
            n
        })
        .collect();
    let edges = (0..rng.below(12))
        .map(|_| {
            let mut e = edge(
                rng.pick::<&str>(&IDS),
                rng.pick::<&str>(&IDS),
                *rng.pick(&[
                    None,
                    None,
                    Some("x"),
                    Some("y"),
                    Some("approved"),
                    Some("rejected"),
                ]),
                *rng.pick(&[None, None, Some(0), Some(1), Some(3), Some(7)]),
            );
            e.screen = rng.chance(20);
            e
        })
        .collect();
    CompositionSpec {
        description: None,
        pattern: *rng.pick(&Pattern::ALL),
        budgets: Default::default(),
        nodes,
        edges,
    }
}

/// One random change to a valid composition.
fn mutate(spec: &mut CompositionSpec, rng: &mut Rng) {
    let n = spec.nodes.len();
    match rng.below(6) {
        0 if !spec.edges.is_empty() => {
            let k = rng.below(spec.edges.len());
            spec.edges.remove(k);
        }
        1 if n > 0 => {
            let (f, t) = (rng.below(n), rng.below(n));
            spec.edges.push(edge(
                &spec.nodes[f].id.clone(),
                &spec.nodes[t].id.clone(),
                None,
                None,
            ));
        }
        2 if n > 0 => spec.nodes[rng.below(n)].kind = *rng.pick(&NodeKind::ALL),
        3 => spec.edges.iter_mut().for_each(|e| e.max_iterations = None),
        4 if !spec.edges.is_empty() => {
            let k = rng.below(spec.edges.len());
            spec.edges[k].when = Some("x".to_owned());
        }
        _ if n > 1 => {
            let k = rng.below(n);
            spec.nodes.remove(k);
        }
        _ => {}
    }
}

fn plan_agrees_with_validate(spec: &CompositionSpec, e: &Env, what: &str) {
    let v = validate(spec, &e.registry, &e.limits);
    match plan(spec, &e.registry, &e.limits) {
        Ok(p) => {
            assert!(v.is_valid(), "{what}: planned although invalid");
            if let Err(why) = check_plan(spec, &p) {
                panic!("{what}: {why}");
            }
        }
        Err(refused) => {
            assert!(!v.is_valid(), "{what}: valid but not planned: {refused:#?}");
            assert!(
                refused
                    .errors
                    .iter()
                    .all(|i| i.code != codes::PLAN_INCONSISTENT),
                "{what}: {refused:#?}"
            );
            assert!(
                refused
                    .errors
                    .iter()
                    .all(|i| codes::severity(&i.code).is_some()),
                "{what}: unlisted code"
            );
        }
    }
}

#[test]
fn arbitrary_specs_never_panic_and_plan_exactly_when_valid() {
    let e = env();
    let mut rng = Rng(0xDEC0_DE5E_ED00_0001);
    for round in 0..4000 {
        let spec = arbitrary_spec(&mut rng);
        plan_agrees_with_validate(&spec, &e, &format!("arbitrary round {round}"));
    }
}

#[test]
fn mutated_valid_compositions_never_panic_and_plan_exactly_when_valid() {
    let e = env();
    let mut rng = Rng(0x5EED_0000_0000_0042);
    let mut still_valid = 0;
    for seed in 0..1500 {
        let mut spec = valid_composition(seed);
        for _ in 0..1 + rng.below(3) {
            mutate(&mut spec, &mut rng);
        }
        plan_agrees_with_validate(&spec, &e, &format!("mutated seed {seed}"));
        still_valid += usize::from(validate(&spec, &e.registry, &e.limits).is_valid());
    }
    // Both sides of "plans exactly when valid" were exercised.
    assert!(
        (50..1450).contains(&still_valid),
        "{still_valid} of 1500 mutated specs stayed valid"
    );
}

#[test]
fn a_huge_spec_is_refused_without_searching_its_graph() {
    let e = env();
    let nodes: Vec<Node> = (0..3000)
        .map(|i| node(&format!("n{i}"), NodeKind::LlmAgent))
        .collect();
    let edges = (1..3000)
        .map(|i| edge(&format!("n{}", i - 1), &format!("n{i}"), None, None))
        .collect();
    let spec = CompositionSpec {
        description: None,
        pattern: Pattern::Pipeline,
        budgets: Default::default(),
        nodes,
        edges,
    };
    let refused = plan(&spec, &e.registry, &e.limits).unwrap_err();
    let found: BTreeSet<&str> = refused.errors.iter().map(|i| i.code.as_str()).collect();
    assert_eq!(
        found,
        BTreeSet::from([codes::TOO_MANY_NODES, codes::TOO_MANY_EDGES])
    );
}
