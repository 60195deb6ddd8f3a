//! The composition ledger: what one run has used against its budgets (tokens per model, tool
//! calls, delegations, remote calls, the deadline).
//!
//! The first budget spent is recorded once ([`Ledger::first_hit`]); the engine turns it into a
//! `budget.hit` event and ends the run `BudgetExhausted`. Calls are refused *before* they run:
//! tool calls, delegations and remote calls are checked and reserved in one step
//! ([`Ledger::reserve`], or [`Ledger::reserve_all`] for a call charged to several budgets at
//! once: all or nothing); a model call is refused once the tokens are spent
//! ([`Ledger::check_tokens`]). The deadline (`timeoutSeconds`) pauses while a person decides
//! ([`Ledger::pause`]). Thread-safe: share it as `Arc<Ledger>`.

use crate::model::Usage;
use orrery_crds::budget::{BudgetKey, BudgetLimits};
use orrery_crds::run::RunTotals;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// A budget that ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BudgetHit {
    /// Which budget.
    pub budget: BudgetKey,
    /// Its limit (seconds for the deadline).
    pub limit: u64,
    /// What had been used when it ran out (seconds for the deadline).
    pub used: u64,
}

impl std::fmt::Display for BudgetHit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "budget {} is spent ({} of {})",
            self.budget, self.used, self.limit
        )
    }
}

#[derive(Debug, Default)]
struct Counters {
    tokens: u64,
    tokens_by_model: BTreeMap<String, u64>,
    tool_calls: u64,
    delegations: u64,
    remote_calls: u64,
    paused_total: Duration,
    paused_since: Option<Instant>,
    pause_depth: u32,
    first_hit: Option<BudgetHit>,
}

/// The ledger of one run.
#[derive(Debug)]
pub struct Ledger {
    limits: BudgetLimits,
    started: Instant,
    counters: Mutex<Counters>,
    /// Bumped whenever the pause state changes, so the deadline watcher re-reads it.
    pause_changed: watch::Sender<u64>,
}

/// Keeps the run's deadline paused while it lives (a person is deciding).
#[derive(Debug)]
pub struct PauseGuard<'a> {
    ledger: &'a Ledger,
}

impl Drop for PauseGuard<'_> {
    fn drop(&mut self) {
        self.ledger.resume();
    }
}

impl Ledger {
    /// A fresh ledger for a run with these budgets; the deadline starts now.
    pub fn new(limits: BudgetLimits) -> Self {
        let (pause_changed, _) = watch::channel(0);
        Ledger {
            limits,
            started: Instant::now(),
            counters: Mutex::new(Counters::default()),
            pause_changed,
        }
    }

    /// The run's budgets.
    pub fn limits(&self) -> &BudgetLimits {
        &self.limits
    }

    /// The limit of one budget.
    pub fn limit(&self, key: BudgetKey) -> u64 {
        self.limits.get(key)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counters> {
        // A poisoned lock only means another thread panicked mid-update of plain counters;
        // the numbers are still the best we have.
        self.counters.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn record_hit(c: &mut Counters, hit: BudgetHit) -> BudgetHit {
        if c.first_hit.is_none() {
            c.first_hit = Some(hit);
        }
        hit
    }

    /// Refuses a model call once the tokens are spent (used ≥ limit).
    pub fn check_tokens(&self) -> Result<(), BudgetHit> {
        let mut c = self.lock();
        if let Some(hit) = c.first_hit {
            return Err(hit);
        }
        let limit = self.limits.max_tokens;
        if c.tokens >= limit {
            let hit = BudgetHit {
                budget: BudgetKey::Tokens,
                limit,
                used: c.tokens,
            };
            return Err(Self::record_hit(&mut c, hit));
        }
        Ok(())
    }

    /// Charges a model response's tokens to `model` (the registry entry). Returns the hit when
    /// the run is now over its token budget.
    pub fn add_tokens(&self, model: &str, usage: Usage) -> Result<(), BudgetHit> {
        let mut c = self.lock();
        let n = usage.total();
        c.tokens = c.tokens.saturating_add(n);
        let per_model = c.tokens_by_model.entry(model.to_owned()).or_insert(0);
        *per_model = per_model.saturating_add(n);
        let limit = self.limits.max_tokens;
        if c.tokens > limit {
            let hit = BudgetHit {
                budget: BudgetKey::Tokens,
                limit,
                used: c.tokens,
            };
            return Err(Self::record_hit(&mut c, hit));
        }
        Ok(())
    }

    /// Checks and reserves one tool call, delegation or remote call. A call past its budget is
    /// refused before it runs (and nothing is reserved).
    pub fn reserve(&self, key: BudgetKey) -> Result<(), BudgetHit> {
        self.reserve_all(&[key])
    }

    /// Checks and reserves one unit of each of `keys` together (an A2A call is a tool call, a
    /// delegation and a remote call): either every budget has room and all are charged, or the
    /// call is refused with the first budget that has none and nothing is charged.
    pub fn reserve_all(&self, keys: &[BudgetKey]) -> Result<(), BudgetHit> {
        let mut c = self.lock();
        if let Some(hit) = c.first_hit {
            return Err(hit);
        }
        for &key in keys {
            // Tokens are charged from usage and time runs by itself: nothing to reserve.
            let Some(used) = Self::counter(&c, key) else {
                continue;
            };
            // A key listed twice needs room for both.
            let wanted = keys.iter().filter(|&&k| k == key).count() as u64;
            let limit = self.limit(key);
            if used.saturating_add(wanted) > limit {
                let hit = BudgetHit {
                    budget: key,
                    limit,
                    used,
                };
                return Err(Self::record_hit(&mut c, hit));
            }
        }
        for &key in keys {
            match key {
                BudgetKey::ToolCalls => c.tool_calls += 1,
                BudgetKey::Delegations => c.delegations += 1,
                BudgetKey::RemoteCalls => c.remote_calls += 1,
                BudgetKey::Tokens | BudgetKey::Timeout => {}
            }
        }
        Ok(())
    }

    fn counter(c: &Counters, key: BudgetKey) -> Option<u64> {
        match key {
            BudgetKey::ToolCalls => Some(c.tool_calls),
            BudgetKey::Delegations => Some(c.delegations),
            BudgetKey::RemoteCalls => Some(c.remote_calls),
            BudgetKey::Tokens | BudgetKey::Timeout => None,
        }
    }

    /// Records that `key` is spent, as a tool found it (e.g. a remote's extra message had no
    /// budget left), and returns the run's first hit: this one unless another came first.
    pub fn spent(&self, key: BudgetKey) -> BudgetHit {
        let used = self.used(key);
        let mut c = self.lock();
        let hit = BudgetHit {
            budget: key,
            limit: self.limit(key),
            used,
        };
        Self::record_hit(&mut c, hit);
        c.first_hit.unwrap_or(hit)
    }

    /// Records that the deadline passed. Returns the hit.
    pub fn deadline_hit(&self) -> BudgetHit {
        let active = self.active_elapsed();
        let mut c = self.lock();
        let hit = BudgetHit {
            budget: BudgetKey::Timeout,
            limit: self.limits.timeout_seconds,
            used: active.as_secs(),
        };
        Self::record_hit(&mut c, hit)
    }

    /// The first budget that ran out, if any.
    pub fn first_hit(&self) -> Option<BudgetHit> {
        self.lock().first_hit
    }

    /// Pauses the deadline until the guard is dropped. Pauses nest (several people asked at
    /// once): the deadline runs again when the last guard goes.
    pub fn pause(&self) -> PauseGuard<'_> {
        {
            let mut c = self.lock();
            if c.pause_depth == 0 {
                c.paused_since = Some(Instant::now());
            }
            c.pause_depth += 1;
        }
        self.pause_changed.send_modify(|v| *v = v.wrapping_add(1));
        PauseGuard { ledger: self }
    }

    fn resume(&self) {
        {
            let mut c = self.lock();
            c.pause_depth = c.pause_depth.saturating_sub(1);
            if c.pause_depth == 0
                && let Some(since) = c.paused_since.take()
            {
                c.paused_total += since.elapsed();
            }
        }
        self.pause_changed.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// Whether the deadline is paused now.
    pub fn is_paused(&self) -> bool {
        self.lock().pause_depth > 0
    }

    /// Run time so far, time spent waiting for people left out.
    pub fn active_elapsed(&self) -> Duration {
        let c = self.lock();
        let paused_now = c.paused_since.map(|s| s.elapsed()).unwrap_or_default();
        self.started
            .elapsed()
            .saturating_sub(c.paused_total + paused_now)
    }

    /// Run time left before the deadline (zero once it passed).
    pub fn remaining(&self) -> Duration {
        Duration::from_secs(self.limits.timeout_seconds).saturating_sub(self.active_elapsed())
    }

    /// Resolves when the deadline passes: run time (pauses left out) reaches `timeoutSeconds`.
    /// Never resolves while paused.
    pub async fn deadline(&self) {
        let mut changes = self.pause_changed.subscribe();
        loop {
            if self.is_paused() {
                if changes.changed().await.is_err() {
                    return;
                }
                continue;
            }
            let left = self.remaining();
            if left.is_zero() {
                return;
            }
            tokio::select! {
                _ = tokio::time::sleep(left) => {}
                changed = changes.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
            }
        }
    }

    /// What the run used, wall time included (time waiting for people counted).
    pub fn totals(&self) -> RunTotals {
        let c = self.lock();
        RunTotals {
            tokens: c.tokens,
            tokens_by_model: c.tokens_by_model.clone(),
            tool_calls: c.tool_calls,
            delegations: c.delegations,
            remote_calls: c.remote_calls,
            wall_time_ms: u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
        }
    }

    /// How much of one budget is used (seconds of run time for the deadline).
    pub fn used(&self, key: BudgetKey) -> u64 {
        match key {
            BudgetKey::Timeout => self.active_elapsed().as_secs(),
            _ => {
                let c = self.lock();
                match key {
                    BudgetKey::Tokens => c.tokens,
                    BudgetKey::ToolCalls => c.tool_calls,
                    BudgetKey::Delegations => c.delegations,
                    BudgetKey::RemoteCalls => c.remote_calls,
                    BudgetKey::Timeout => 0,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn limits(
        tokens: u64,
        tools: u64,
        delegations: u64,
        remote: u64,
        timeout: u64,
    ) -> BudgetLimits {
        BudgetLimits {
            max_tokens: tokens,
            max_tool_calls: tools,
            max_delegations: delegations,
            max_remote_calls: remote,
            timeout_seconds: timeout,
        }
    }

    #[test]
    fn a_call_past_each_counted_budget_is_refused_before_it_runs() {
        for key in [
            BudgetKey::ToolCalls,
            BudgetKey::Delegations,
            BudgetKey::RemoteCalls,
        ] {
            let ledger = Ledger::new(limits(100, 2, 2, 2, 60));
            assert!(ledger.reserve(key).is_ok());
            assert!(ledger.reserve(key).is_ok());
            let hit = ledger.reserve(key).unwrap_err();
            assert_eq!(
                hit,
                BudgetHit {
                    budget: key,
                    limit: 2,
                    used: 2
                },
                "{key}"
            );
            assert_eq!(ledger.used(key), 2, "the refused call reserved nothing");
        }
    }

    #[test]
    fn reserving_several_budgets_charges_all_or_none() {
        // Room for tool calls and delegations, none for remote calls: an A2A call is refused
        // and charges nothing at all.
        let ledger = Ledger::new(limits(100, 5, 5, 0, 60));
        let keys = [
            BudgetKey::ToolCalls,
            BudgetKey::Delegations,
            BudgetKey::RemoteCalls,
        ];
        let hit = ledger.reserve_all(&keys).unwrap_err();
        assert_eq!(hit.budget, BudgetKey::RemoteCalls);
        for key in keys {
            assert_eq!(ledger.used(key), 0, "{key} was charged for a refused call");
        }
        let ledger = Ledger::new(limits(100, 5, 5, 5, 60));
        ledger.reserve_all(&keys).unwrap();
        for key in keys {
            assert_eq!(ledger.used(key), 1, "{key}");
        }
    }

    #[test]
    fn a_budget_a_tool_found_spent_becomes_the_first_hit() {
        let ledger = Ledger::new(limits(100, 5, 5, 2, 60));
        ledger.reserve(BudgetKey::RemoteCalls).unwrap();
        let hit = ledger.spent(BudgetKey::RemoteCalls);
        assert_eq!(
            hit,
            BudgetHit {
                budget: BudgetKey::RemoteCalls,
                limit: 2,
                used: 1
            }
        );
        assert_eq!(ledger.first_hit(), Some(hit));
        assert_eq!(
            ledger.spent(BudgetKey::ToolCalls),
            hit,
            "the first hit stands"
        );
        assert_eq!(
            BudgetKey::from_key("maxRemoteCalls"),
            Some(BudgetKey::RemoteCalls)
        );
        assert_eq!(BudgetKey::from_key("maxSomething"), None);
    }

    #[test]
    fn a_zero_budget_refuses_the_first_call() {
        let ledger = Ledger::new(limits(100, 0, 5, 5, 60));
        assert_eq!(
            ledger.reserve(BudgetKey::ToolCalls).unwrap_err().budget,
            BudgetKey::ToolCalls
        );
    }

    #[test]
    fn tokens_over_the_limit_are_a_hit_and_the_next_model_call_is_refused() {
        let ledger = Ledger::new(limits(100, 5, 5, 5, 60));
        assert!(ledger.check_tokens().is_ok());
        assert!(
            ledger
                .add_tokens(
                    "a",
                    Usage {
                        input_tokens: 60,
                        output_tokens: 40
                    }
                )
                .is_ok()
        );
        let hit = ledger.check_tokens().unwrap_err();
        assert_eq!(
            hit,
            BudgetHit {
                budget: BudgetKey::Tokens,
                limit: 100,
                used: 100
            }
        );
    }

    #[test]
    fn a_response_that_overshoots_the_token_budget_is_reported_at_once() {
        let ledger = Ledger::new(limits(100, 5, 5, 5, 60));
        let hit = ledger
            .add_tokens(
                "a",
                Usage {
                    input_tokens: 90,
                    output_tokens: 20,
                },
            )
            .unwrap_err();
        assert_eq!(hit.used, 110);
    }

    #[test]
    fn only_the_first_budget_spent_is_recorded_and_later_calls_are_refused() {
        let ledger = Ledger::new(limits(100, 0, 5, 5, 60));
        let first = ledger.reserve(BudgetKey::ToolCalls).unwrap_err();
        assert_eq!(ledger.first_hit(), Some(first));
        let again = ledger.reserve(BudgetKey::Delegations).unwrap_err();
        assert_eq!(
            again, first,
            "once a budget is spent every later call is refused"
        );
        assert_eq!(ledger.first_hit(), Some(first));
    }

    #[test]
    fn tokens_are_totalled_per_model() {
        let ledger = Ledger::new(limits(1000, 5, 5, 5, 60));
        ledger
            .add_tokens(
                "fast",
                Usage {
                    input_tokens: 10,
                    output_tokens: 5,
                },
            )
            .unwrap();
        ledger
            .add_tokens(
                "slow",
                Usage {
                    input_tokens: 100,
                    output_tokens: 1,
                },
            )
            .unwrap();
        ledger
            .add_tokens(
                "fast",
                Usage {
                    input_tokens: 1,
                    output_tokens: 1,
                },
            )
            .unwrap();
        let totals = ledger.totals();
        assert_eq!(totals.tokens, 118);
        assert_eq!(totals.tokens_by_model.get("fast"), Some(&17));
        assert_eq!(totals.tokens_by_model.get("slow"), Some(&101));
    }

    #[tokio::test]
    async fn the_deadline_fires_after_the_timeout() {
        let ledger = Ledger::new(limits(10, 5, 5, 5, 1));
        let start = tokio::time::Instant::now();
        tokio::time::timeout(Duration::from_secs(3), ledger.deadline())
            .await
            .unwrap();
        assert!(start.elapsed() >= Duration::from_secs(1));
        assert_eq!(ledger.deadline_hit().budget, BudgetKey::Timeout);
    }

    #[tokio::test]
    async fn the_deadline_does_not_run_while_a_person_decides() {
        let ledger = std::sync::Arc::new(Ledger::new(limits(10, 5, 5, 5, 1)));
        let guard = ledger.pause();
        let waiter = {
            let ledger = ledger.clone();
            tokio::spawn(async move { ledger.deadline().await })
        };
        // Longer than the whole 1 s deadline: a deadline that ran while paused would fire.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert!(ledger.is_paused());
        assert!(!waiter.is_finished(), "a paused deadline must not fire");
        drop(guard);
        assert!(!ledger.is_paused());
        // Generous: only a deadline that never resumes can miss this.
        tokio::time::timeout(Duration::from_secs(30), waiter)
            .await
            .expect("the deadline fires once the person has decided")
            .unwrap();
        // Read in this order, wall time minus run time is at least the paused time, whatever
        // the scheduler did; no comparison against the deadline's own length.
        let active = ledger.active_elapsed();
        let wall = ledger.totals().wall_time_ms;
        assert!(
            active >= Duration::from_secs(1),
            "the deadline fired on run time"
        );
        assert!(
            wall >= u64::try_from(active.as_millis()).unwrap() + 1500,
            "the 1.5 s pause is left out of run time and counted in wall time: {wall} ms wall, {active:?} run"
        );
    }
}
