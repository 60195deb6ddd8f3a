//! Before a run starts: what it runs (a Composition at a revision, or the composition written
//! inline) and whether it may run (its input, its budget overrides, the one validator, the
//! relay it would need, its entries' readiness, the endpoints its NetworkPolicy must open),
//! compiled into the plan document its pod executes. Pure: the reconciler reads the objects and
//! acts on the answer.

use super::admission::{
    EntryReadiness, apply_budget_overrides, entries_readiness, needs_approvers,
};
use super::builders::{PlanDocument, plan_document};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::registry_view::registry_view;
use crate::revisions::spec_digest;
use orrery_crds::conditions::reasons;
use orrery_crds::registry::RegistryEntry;
use orrery_crds::run::{RanComposition, check_input};
use orrery_crds::{CompositionSpec, StudioRun};

/// `status.composition.name` of a run whose composition is written inline.
pub const INLINE_COMPOSITION: &str = "inline";

/// How many validation errors a refusal's message quotes.
const QUOTED_ERRORS: usize = 3;

/// The composition a run executes.
#[derive(Clone, Debug, PartialEq)]
pub struct Source {
    /// The Composition's name, or [`INLINE_COMPOSITION`].
    pub name: String,
    /// The revision (the Composition's generation it was recorded at); `None` inline.
    pub revision: Option<i64>,
    /// The spec at that revision.
    pub spec: CompositionSpec,
}

impl Source {
    /// The composition written in the run itself, if it has one.
    pub fn inline(run: &StudioRun) -> Option<Source> {
        run.spec.composition.clone().map(|spec| Source {
            name: INLINE_COMPOSITION.to_owned(),
            revision: None,
            spec,
        })
    }

    fn describe(&self) -> String {
        match self.revision {
            Some(r) => format!("Composition {} (revision {r})", self.name),
            None if self.name == INLINE_COMPOSITION => "the inline composition".to_owned(),
            None => format!("Composition {}", self.name),
        }
    }
}

/// What a run can do now.
#[derive(Clone, Debug, PartialEq)]
pub enum Prepared {
    /// Everything checks: start it with this plan.
    Ready(Box<PlanDocument>),
    /// Not yet: it waits (`Pending`) and is looked at again when what it waits for changes.
    Waiting {
        /// The condition reason.
        reason: &'static str,
        /// What it waits for.
        message: String,
    },
    /// Never: it ends `Failed` with this reason and message.
    Refused {
        /// The condition reason.
        reason: &'static str,
        /// Why, and what to do.
        message: String,
    },
}

fn refused(reason: &'static str, message: String) -> Prepared {
    Prepared::Refused { reason, message }
}

/// The entries `spec` names that are not among `entries`.
fn missing_entries(spec: &CompositionSpec, entries: &[RegistryEntry]) -> Vec<String> {
    orrery_crds::validate::named_entries(spec)
        .into_iter()
        .filter(|name| {
            !entries
                .iter()
                .any(|e| e.metadata.name.as_deref() == Some(name.as_str()))
        })
        .collect()
}

/// Checks `run` against `source` and the namespace's `entries` under `config`, in the order a
/// person fixes things: the input, the budget overrides, the composition's validity, the
/// approvers it must name (rule 4.54), the relay it would need, its entries' readiness, the
/// endpoints its NetworkPolicy must name.
pub fn prepare(
    run: &StudioRun,
    source: Source,
    entries: &[RegistryEntry],
    config: &Config,
) -> Result<Prepared> {
    if let Err(e) = check_input(&run.spec.input) {
        return Ok(refused(reasons::REFUSED, format!("spec.input: {e}")));
    }
    let what = source.describe();
    let digest = spec_digest(&source.spec)?;
    let spec =
        match apply_budget_overrides(&source.spec, run.spec.budgets.as_ref(), &config.ceilings()) {
            Ok(spec) => spec,
            Err(error) => return Ok(refused(reasons::REFUSED, error.to_string())),
        };
    let registry = registry_view(entries);
    let plan = match orrery_crds::plan::plan(&spec, &registry, &config.deployment_limits()) {
        Ok(plan) => plan,
        // An entry the composition names that does not exist yet (GitOps applies in any
        // order) is waited for, as a missing Composition is.
        Err(_) if !missing_entries(&spec, entries).is_empty() => {
            return Ok(Prepared::Waiting {
                reason: reasons::WAITING_FOR_ENTRIES,
                message: format!(
                    "{what} names RegistryEntry {} which does not exist in this namespace yet; the run starts when it is created",
                    missing_entries(&spec, entries).join(", ")
                ),
            });
        }
        Err(validation) => {
            let quoted: Vec<String> = validation
                .errors
                .iter()
                .take(QUOTED_ERRORS)
                .map(|e| e.to_string())
                .collect();
            return Ok(refused(
                reasons::INVALID,
                format!(
                    "{what} is not valid ({} error(s)): {}; fix the composition (`orrery validate` shows every error) and create the run again",
                    validation.errors.len(),
                    quoted.join("; ")
                ),
            ));
        }
    };
    if let Some(why) = needs_approvers(run, &plan) {
        return Ok(refused(
            reasons::APPROVERS_REQUIRED,
            format!("{what}: {why}"),
        ));
    }
    match entries_readiness(&plan, entries) {
        EntryReadiness::Ready => {}
        EntryReadiness::Waiting(message) => {
            return Ok(Prepared::Waiting {
                reason: reasons::WAITING_FOR_ENTRIES,
                message: format!("{message}; the run starts when they are Ready"),
            });
        }
        EntryReadiness::Refused(message) => {
            return Ok(refused(reasons::ENTRY_NOT_READY, message));
        }
    }
    let composition = RanComposition {
        name: source.name,
        revision: source.revision,
        digest,
    };
    let document = plan_document(run, composition, spec, plan, entries, config)?;
    match super::network::reachable_endpoints(&document, config) {
        Ok(_) => Ok(Prepared::Ready(Box::new(document))),
        Err(e @ Error::Endpoint { .. }) => Ok(refused(reasons::REFUSED, e.to_string())),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::kstatus::{Health, set_health};
    use crate::run::builders::tests::{config, entries, run};
    use k8s_openapi::jiff::Timestamp;
    use orrery_crds::budget::Budgets;

    fn ready(mut entries: Vec<RegistryEntry>) -> Vec<RegistryEntry> {
        for e in entries.iter_mut() {
            let status = e.status.get_or_insert_with(Default::default);
            set_health(
                &mut status.conditions,
                &Health::Ready {
                    reason: "Probed",
                    message: String::new(),
                },
                None,
                Timestamp::UNIX_EPOCH,
            );
        }
        entries
    }

    fn source(yaml: &str) -> Source {
        Source {
            name: "notes".into(),
            revision: Some(2),
            spec: serde_yaml::from_str(yaml).expect("a composition spec"),
        }
    }

    const PLAIN: &str = "{pattern: Pipeline, nodes: [{id: a, kind: LLMAgent, model: gpt, \
                         instruction: do}]}";

    fn outcome(run: &StudioRun, source: Source, entries: &[RegistryEntry]) -> Prepared {
        prepare(run, source, entries, &config("")).expect("prepare")
    }

    fn refusal(p: Prepared) -> (&'static str, String) {
        match p {
            Prepared::Refused { reason, message } => (reason, message),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn a_valid_run_on_ready_entries_gets_its_plan_with_the_composition_it_ran() {
        let entries = ready(entries());
        let Prepared::Ready(doc) = outcome(&run("r"), source(PLAIN), &entries) else {
            panic!("a valid run is ready");
        };
        assert_eq!(doc.composition.name, "notes");
        assert_eq!(doc.composition.revision, Some(2));
        assert_eq!(
            doc.composition.digest,
            spec_digest(&source(PLAIN).spec).expect("digest")
        );
        assert_eq!(doc.run.name, "r");
        assert_eq!(
            doc.entries
                .iter()
                .map(|e| e.name.as_str())
                .collect::<Vec<_>>(),
            ["gpt"]
        );
    }

    #[test]
    fn a_run_whose_endpoint_lies_in_the_clusters_ranges_is_refused_naming_the_entry_and_the_fix_anchor_19()
     {
        // The gpt entry resolves to 198.51.100.9, port 443.
        let ready_entries = ready(entries());
        let ranged = config("clusterRanges: ['198.51.100.0/24']");
        let (reason, message) =
            refusal(prepare(&run("r"), source(PLAIN), &ready_entries, &ranged).expect("prepare"));
        assert_eq!(reason, reasons::REFUSED);
        assert!(
            message.contains("RegistryEntry \"gpt\"")
                && message.contains("198.51.100.0/24")
                && message.contains("198.51.100.9:443 to privateNetworkAllowlist"),
            "{message}"
        );
        let named = config(
            "clusterRanges: ['198.51.100.0/24']\nprivateNetworkAllowlist: ['198.51.100.9:443']",
        );
        assert!(matches!(
            prepare(&run("r"), source(PLAIN), &ready_entries, &named).expect("prepare"),
            Prepared::Ready(_)
        ));
    }

    #[test]
    fn each_check_refuses_or_waits_with_its_reason() {
        let ready_entries = ready(entries());
        let mut long = run("r");
        long.spec.input = "x".repeat(200_000);
        let (reason, message) = refusal(outcome(&long, source(PLAIN), &ready_entries));
        assert_eq!(reason, reasons::REFUSED);
        assert!(message.starts_with("spec.input:"), "{message}");

        let mut greedy = run("r");
        greedy.spec.budgets = Some(Budgets {
            max_tokens: Some(10_000_000),
            ..Budgets::default()
        });
        let (reason, message) = refusal(outcome(&greedy, source(PLAIN), &ready_entries));
        assert_eq!(reason, reasons::REFUSED);
        assert!(message.contains("spec.budgets.maxTokens"), "{message}");

        let broken = source(
            "{pattern: Pipeline, nodes: [{id: a, kind: LLMAgent, model: gpt, instruction: do, tools: ['mcp:tools.no_such_tool']}]}",
        );
        let (reason, message) = refusal(outcome(&run("r"), broken, &ready_entries));
        assert_eq!(reason, reasons::INVALID);
        assert!(
            message.starts_with("Composition notes (revision 2) is not valid (1 error(s))"),
            "{message}"
        );

        let approval = source(
            "{pattern: Pipeline, nodes: [{id: a, kind: LLMAgent, model: gpt, instruction: do}, \
             {id: b, kind: HumanApproval, prompt: ok?}], edges: [{from: a, to: b}]}",
        );
        // A person's run with an approval starts: people decide through the sidecar.
        assert!(matches!(
            outcome(&run("r"), approval.clone(), &ready_entries),
            Prepared::Ready(_)
        ));

        // Owned by a service account naming no approvers, it is refused for that first.
        let mut pipeline = run("r");
        pipeline.spec.owner = "system:serviceaccount:team:pipeline".into();
        let (reason, message) = refusal(outcome(&pipeline, approval, &ready_entries));
        assert_eq!(reason, reasons::APPROVERS_REQUIRED);
        assert!(
            message.starts_with("Composition notes (revision 2): the run's owner system:serviceaccount:team:pipeline is not a person"),
            "{message}"
        );

        let later = source(
            "{pattern: Pipeline, nodes: [{id: a, kind: LLMAgent, model: not-yet, instruction: do}]}",
        );
        match outcome(&run("r"), later, &ready_entries) {
            Prepared::Waiting { reason, message } => {
                assert_eq!(reason, reasons::WAITING_FOR_ENTRIES);
                assert!(
                    message.contains("names RegistryEntry not-yet which does not exist"),
                    "{message}"
                );
            }
            other => panic!("a missing entry makes the run wait, got {other:?}"),
        }

        match outcome(&run("r"), source(PLAIN), &entries()) {
            Prepared::Waiting { reason, message } => {
                assert_eq!(reason, reasons::WAITING_FOR_ENTRIES);
                assert!(
                    message.contains("RegistryEntry gpt is not Ready yet"),
                    "{message}"
                );
            }
            other => panic!("unprobed entries make the run wait, got {other:?}"),
        }
    }

    #[test]
    fn an_inline_composition_runs_under_the_inline_name_without_a_revision() {
        let mut r = run("r");
        assert_eq!(Source::inline(&r), None);
        r.spec.composition = Some(source(PLAIN).spec);
        let inline = Source::inline(&r).expect("inline");
        assert_eq!(inline.name, INLINE_COMPOSITION);
        assert_eq!(inline.revision, None);
        assert_eq!(inline.describe(), "the inline composition");
    }
}
