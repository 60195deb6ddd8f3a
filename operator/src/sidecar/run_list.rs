//! The run list's query (`GET /api/v1/runs/{ns}?composition=&phase=&role=&limit=&continue=`):
//! which of the namespace's runs the caller sees (only those they own or approve, always),
//! narrowed by Composition, phase and role, newest first, in pages.
//!
//! A page ends with `continue` when more follow: an opaque token naming the last run given
//! (its creation second and name), so a page never repeats or skips a run however many runs
//! are created meanwhile (new ones are newer, before the token).

use super::caller::{Caller, is_approver, owns_or_approves};
use super::problem::Problem;
use orrery_crds::StudioRun;
use orrery_crds::run::RunPhase;
use serde::Deserialize;
use std::cmp::Reverse;

/// The most runs one page holds.
pub const MAX_LIMIT: u32 = 500;

/// The query of the run list.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunsQuery {
    /// Only runs of this Composition.
    pub composition: Option<String>,
    /// Only runs in this phase (`Pending`, `Running`, `AwaitingApproval`, `Succeeded`, …).
    pub phase: Option<RunPhase>,
    /// Only runs the caller owns (`owner`) or is named an approver of (`approver`).
    pub role: Option<Role>,
    /// At most this many runs (1 to [`MAX_LIMIT`]); default: all.
    pub limit: Option<u32>,
    /// The `continue` of the page before.
    #[serde(rename = "continue")]
    pub continue_after: Option<String>,
}

/// The caller's part in a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The run's owner.
    Owner,
    /// One of its approvers (by name or group).
    Approver,
}

/// What the query words mean, for a 400's message.
pub const QUERY_HELP: &str = "the parameters are composition, phase (Pending, Running, \
     AwaitingApproval, Succeeded, Failed, Cancelled, BudgetExhausted, Rejected), role (owner or \
     approver), limit (1 to 500) and continue (from the page before)";

/// Where a run sits in the list: newest first, then by name.
type Key = (Reverse<i64>, String);

fn key(run: &StudioRun) -> Key {
    let second = run
        .metadata
        .creation_timestamp
        .as_ref()
        .map_or(0, |t| t.0.as_second());
    (
        Reverse(second),
        run.metadata.name.clone().unwrap_or_default(),
    )
}

fn token(key: &Key) -> String {
    format!("{}/{}", key.0.0, key.1)
}

fn parse_token(token: &str) -> Option<Key> {
    let (second, name) = token.split_once('/')?;
    Some((Reverse(second.parse().ok()?), name.to_owned()))
}

/// One page of `runs` for `caller`: the runs they own or approve that the query keeps, newest
/// first, and the `continue` token when more follow.
pub fn page<'a>(
    runs: &'a [StudioRun],
    query: &RunsQuery,
    caller: &Caller,
) -> Result<(Vec<&'a StudioRun>, Option<String>), Problem> {
    if let Some(limit) = query.limit
        && !(1..=MAX_LIMIT).contains(&limit)
    {
        return Err(Problem::invalid(
            vec!["query".into(), "limit".into()],
            format!("limit {limit} is not between 1 and {MAX_LIMIT}"),
        ));
    }
    let after = match &query.continue_after {
        None => None,
        Some(t) => Some(parse_token(t).ok_or_else(|| {
            Problem::invalid(
                vec!["query".into(), "continue".into()],
                "continue is not a token this list gave; start again without it",
            )
        })?),
    };
    let mut kept: Vec<(Key, &StudioRun)> = runs
        .iter()
        .filter(|r| owns_or_approves(r, caller))
        .filter(|r| match query.role {
            None => true,
            Some(Role::Owner) => r.spec.owner == caller.username,
            Some(Role::Approver) => is_approver(r, caller),
        })
        .filter(|r| {
            query.composition.as_ref().is_none_or(|c| {
                r.spec
                    .composition_ref
                    .as_ref()
                    .is_some_and(|x| &x.name == c)
            })
        })
        .filter(|r| {
            query
                .phase
                .is_none_or(|p| r.status.as_ref().and_then(|s| s.phase) == Some(p))
        })
        .map(|r| (key(r), r))
        .filter(|(k, _)| after.as_ref().is_none_or(|a| k > a))
        .collect();
    kept.sort_by(|a, b| a.0.cmp(&b.0));
    let limit = query.limit.map_or(usize::MAX, |l| l as usize);
    let more = kept.len() > limit;
    kept.truncate(limit);
    let next = more.then(|| kept.last().map(|(k, _)| token(k))).flatten();
    Ok((kept.into_iter().map(|(_, r)| r).collect(), next))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use orrery_crds::run::Approvers;
    use orrery_crds::{StudioRunSpec, StudioRunStatus};

    fn caller(name: &str, groups: &[&str]) -> Caller {
        let config = kube::Config::new("https://127.0.0.1:1".parse().unwrap());
        Caller {
            username: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            client: kube::Client::try_from(config).unwrap(),
        }
    }

    fn run(
        name: &str,
        second: i64,
        owner: &str,
        phase: RunPhase,
        approver: Option<&str>,
    ) -> StudioRun {
        let spec: StudioRunSpec = serde_json::from_value(serde_json::json!({
            "compositionRef": {"name": if name.starts_with('n') { "notes" } else { "other" }},
            "input": "x",
            "owner": owner,
        }))
        .unwrap();
        let mut run = StudioRun::new(name, spec);
        run.spec.approvers = approver.map(|a| Approvers {
            users: vec![a.into()],
            ..Approvers::default()
        });
        run.metadata.creation_timestamp = Some(Time(
            k8s_openapi::jiff::Timestamp::from_second(second).unwrap(),
        ));
        run.status = Some(StudioRunStatus {
            phase: Some(phase),
            ..StudioRunStatus::default()
        });
        run
    }

    fn runs() -> Vec<StudioRun> {
        vec![
            run("n1", 100, "alice", RunPhase::Succeeded, None),
            run("n2", 200, "alice", RunPhase::AwaitingApproval, None),
            run("o3", 300, "bob", RunPhase::AwaitingApproval, Some("alice")),
            run("o4", 300, "bob", RunPhase::Running, None),
            run("n5", 400, "alice", RunPhase::Running, None),
            run("n6", 400, "alice", RunPhase::Failed, None),
        ]
    }

    fn names(page: &[&StudioRun]) -> Vec<String> {
        page.iter()
            .map(|r| r.metadata.name.clone().unwrap())
            .collect()
    }

    #[tokio::test]
    async fn the_list_is_the_callers_runs_newest_first_narrowed_by_each_filter() {
        let runs = runs();
        let alice = caller("alice", &[]);
        let all = |q: RunsQuery| names(&page(&runs, &q, &alice).unwrap().0);
        assert_eq!(all(RunsQuery::default()), ["n5", "n6", "o3", "n2", "n1"]);
        let phase = |p| RunsQuery {
            phase: Some(p),
            ..RunsQuery::default()
        };
        assert_eq!(all(phase(RunPhase::AwaitingApproval)), ["o3", "n2"]);
        let role = |r| RunsQuery {
            role: Some(r),
            ..RunsQuery::default()
        };
        assert_eq!(all(role(Role::Owner)), ["n5", "n6", "n2", "n1"]);
        assert_eq!(all(role(Role::Approver)), ["o3"]);
        let composition = RunsQuery {
            composition: Some("notes".into()),
            ..RunsQuery::default()
        };
        assert_eq!(all(composition), ["n5", "n6", "n2", "n1"]);
        let bob = caller("bob", &[]);
        assert_eq!(
            names(&page(&runs, &RunsQuery::default(), &bob).unwrap().0),
            ["o3", "o4"]
        );
    }

    #[tokio::test]
    async fn pages_follow_each_other_without_repeat_or_gap_even_when_runs_are_added() {
        let mut runs = runs();
        let alice = caller("alice", &[]);
        let limit = |continue_after: Option<String>| RunsQuery {
            limit: Some(2),
            continue_after,
            ..RunsQuery::default()
        };
        let (first, next) = page(&runs, &limit(None), &alice).unwrap();
        assert_eq!(names(&first), ["n5", "n6"]);
        let next = next.expect("more follow");
        // A newer run created meanwhile does not shift the next page.
        runs.push(run("n7", 500, "alice", RunPhase::Pending, None));
        let (second, next) = page(&runs, &limit(Some(next)), &alice).unwrap();
        assert_eq!(names(&second), ["o3", "n2"]);
        let (third, next) = page(&runs, &limit(next), &alice).unwrap();
        assert_eq!(names(&third), ["n1"]);
        assert_eq!(next, None, "the last page has no continue");
    }

    #[tokio::test]
    async fn a_limit_out_of_range_or_a_foreign_token_is_a_400_at_its_parameter() {
        let runs = runs();
        let alice = caller("alice", &[]);
        for (query, at) in [
            (
                RunsQuery {
                    limit: Some(0),
                    ..RunsQuery::default()
                },
                "limit",
            ),
            (
                RunsQuery {
                    limit: Some(MAX_LIMIT + 1),
                    ..RunsQuery::default()
                },
                "limit",
            ),
            (
                RunsQuery {
                    continue_after: Some("not-a-token".into()),
                    ..RunsQuery::default()
                },
                "continue",
            ),
        ] {
            let problem = page(&runs, &query, &alice).expect_err("refused");
            let body = serde_json::to_value(&problem.body).unwrap();
            assert_eq!(body["loc"], serde_json::json!(["query", at]), "{body}");
            assert_eq!(body["code"], "invalid");
        }
    }
}
