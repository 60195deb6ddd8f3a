//! When a failed reconcile is tried again: exponential backoff with jitter per object, capped,
//! reset by the object's next successful reconcile (issue 26).
//!
//! - A **transient** failure (the API server down, slow or refusing for now, a key not mounted
//!   yet) waits [`BASE`] after the first failure, then twice as long after each further one, up
//!   to [`CAP`]; each wait is drawn between half and all of that ("equal jitter"), so objects
//!   that failed together do not all come back in the same second.
//! - **Throttled**: when the API server says when to come back (`429 Too Many Requests` or `503`
//!   with `Retry-After`, which it sends as `details.retryAfterSeconds`), the wait is at least that.
//! - **Outdated**: a status write refused because the object changed since it was read
//!   ([`Error::Outdated`]) is no failure of anything: the reconcile runs again after
//!   [`OUTDATED`] (sooner when the watch brings the newer version), from the newer version.
//! - **Needs a fix**: an error only a change can mend (a child's name taken by another object,
//!   a child left holding another plan, an endpoint a NetworkPolicy cannot express, a broken
//!   deployment config) is retried at the cap straight away: a change to the object reconciles it
//!   at once anyway, and nothing hot-loops meanwhile. A Composition or RegistryEntry that is simply
//!   invalid is no failure at all: its status says so and it waits for a change.
//!
//! Each retry is counted in `orrery_reconcile_retries_total{kind,reason}` by [`Reason`].

use crate::error::Error;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// The wait after an object's first failure.
pub const BASE: Duration = Duration::from_secs(1);
/// The longest wait.
pub const CAP: Duration = Duration::from_secs(300);
/// The wait after a status write refused because the object changed since it was read.
pub const OUTDATED: Duration = Duration::from_millis(500);
/// Objects whose failures are remembered at once; past it the oldest count is forgotten
/// (an object deleted while failing leaves its count behind).
pub const MAX_TRACKED: usize = 10_000;

/// Why a reconcile is retried (the `reason` label).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Exponential backoff after a failure that may pass.
    Transient,
    /// The API server said when to come back.
    Throttled,
    /// Only a change can mend it: retried at the cap.
    NeedsFix,
    /// The object changed since it was read: computed again shortly.
    Outdated,
}

impl Reason {
    /// Every reason, for registering the metric series up front.
    pub const ALL: [Reason; 4] = [
        Reason::Transient,
        Reason::Throttled,
        Reason::NeedsFix,
        Reason::Outdated,
    ];

    /// Its metric label.
    pub fn label(self) -> &'static str {
        match self {
            Reason::Transient => "transient",
            Reason::Throttled => "throttled",
            Reason::NeedsFix => "needs_fix",
            Reason::Outdated => "outdated",
        }
    }
}

/// The wait the API server asked for, when it asked (`Retry-After` on a 429 or a 5xx).
pub fn server_retry_after(error: &Error) -> Option<Duration> {
    match error {
        Error::Kube(kube::Error::Api(status))
            if status.code == 429 || (500..600).contains(&status.code) =>
        {
            status
                .details
                .as_ref()
                .map(|d| d.retry_after_seconds)
                .filter(|s| *s > 0)
                .map(|s| Duration::from_secs(u64::from(s)))
        }
        _ => None,
    }
}

/// Whether only a change (to the object, its children or the deployment) can mend `error`.
pub fn needs_fix(error: &Error) -> bool {
    matches!(
        error,
        Error::Config(_)
            | Error::Endpoint { .. }
            | Error::NameTaken { .. }
            | Error::ChildDiffers { .. }
            | Error::MissingMetadata { .. }
            | Error::Canonical { .. }
    )
}

/// The backoff before retry number `failures` (1 for the first failure), before jitter:
/// `BASE · 2^(failures-1)`, at most [`CAP`].
pub fn backoff(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(31);
    BASE.saturating_mul(1u32 << doublings).min(CAP)
}

/// The wait after the `failures`-th failure in a row with `error`, and why; `jitter` in
/// `[0, 1)` picks where in the upper half of the backoff the wait falls.
pub fn delay(error: &Error, failures: u32, jitter: f64) -> (Duration, Reason) {
    if needs_fix(error) {
        return (CAP, Reason::NeedsFix);
    }
    if matches!(error, Error::Outdated { .. }) {
        return (OUTDATED, Reason::Outdated);
    }
    let full = backoff(failures);
    let jittered = full.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0)).max(BASE);
    match server_retry_after(error) {
        Some(asked) if asked >= jittered => (asked.min(CAP.saturating_mul(2)), Reason::Throttled),
        _ => (jittered, Reason::Transient),
    }
}

/// How many times each object has failed in a row (keyed by kind and UID).
#[derive(Debug, Default)]
pub struct Retries {
    failures: Mutex<HashMap<String, (u32, u64)>>,
    tick: std::sync::atomic::AtomicU64,
}

impl Retries {
    /// Nobody failing.
    pub fn new() -> Retries {
        Retries::default()
    }

    fn key(kind: &str, id: &str) -> String {
        format!("{kind}/{id}")
    }

    /// Counts one more failure of object `id` of `kind`; gives how many in a row.
    pub fn failed(&self, kind: &str, id: &str) -> u32 {
        let tick = self.tick.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        if failures.len() >= MAX_TRACKED
            && !failures.contains_key(&Retries::key(kind, id))
            && let Some(oldest) = failures
                .iter()
                .min_by_key(|(_, (_, at))| *at)
                .map(|(k, _)| k.clone())
        {
            failures.remove(&oldest);
        }
        let entry = failures.entry(Retries::key(kind, id)).or_insert((0, tick));
        entry.0 = entry.0.saturating_add(1);
        entry.1 = tick;
        entry.0
    }

    /// Object `id` of `kind` reconciled: its next failure starts from the base again.
    pub fn succeeded(&self, kind: &str, id: &str) {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        if !failures.is_empty() {
            failures.remove(&Retries::key(kind, id));
        }
    }

    /// Failures in a row of object `id` of `kind` (0: none).
    pub fn count(&self, kind: &str, id: &str) -> u32 {
        self.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&Retries::key(kind, id))
            .map_or(0, |(n, _)| *n)
    }

    /// How many objects are failing now.
    pub fn tracked(&self) -> usize {
        self.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]
    use super::*;
    use kube::core::response::{Status, StatusDetails};

    fn api(code: u16, retry_after: u32) -> Error {
        let mut status = Status::failure("slow down", "TooManyRequests");
        status.code = code;
        let details: StatusDetails =
            serde_json::from_value(serde_json::json!({"retryAfterSeconds": retry_after}))
                .expect("a StatusDetails");
        status.details = Some(details);
        Error::Kube(kube::Error::Api(status.boxed()))
    }

    #[test]
    fn the_backoff_doubles_from_one_second_to_the_five_minute_cap() {
        let waits: Vec<u64> = (1..=11).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
        assert_eq!(backoff(u32::MAX), CAP);
        assert_eq!(backoff(0), BASE);
    }

    #[test]
    fn jitter_keeps_each_wait_between_half_and_all_of_the_backoff() {
        let error = api(500, 0);
        for failures in 1..12 {
            let full = backoff(failures);
            let (low, _) = delay(&error, failures, 0.0);
            let (high, _) = delay(&error, failures, 0.999_999);
            assert!(
                low >= (full / 2).max(BASE) && low <= full,
                "{failures}: {low:?}"
            );
            assert!(high <= full && high >= low, "{failures}: {high:?}");
        }
        // Two objects failing together come back at different times.
        assert_ne!(delay(&error, 6, 0.1).0, delay(&error, 6, 0.9).0);
    }

    #[test]
    fn a_retry_after_from_the_api_server_is_honoured_when_longer_than_the_backoff() {
        let (wait, reason) = delay(&api(429, 30), 1, 0.5);
        assert_eq!((wait, reason), (Duration::from_secs(30), Reason::Throttled));
        let (wait, reason) = delay(&api(503, 2), 9, 0.0);
        assert_eq!(
            reason,
            Reason::Transient,
            "the backoff is already longer: {wait:?}"
        );
        assert!(wait >= Duration::from_secs(2));
        // A 409 or a 404 carries no such promise.
        assert_eq!(server_retry_after(&api(409, 30)), None);
        assert_eq!(server_retry_after(&api(429, 0)), None);
    }

    #[test]
    fn an_error_only_a_change_can_mend_is_retried_at_the_cap_at_once() {
        let taken = Error::NameTaken {
            kind: "Pod".into(),
            name: "r-runner".into(),
            namespace: "team-a".into(),
        };
        assert_eq!(delay(&taken, 1, 0.0), (CAP, Reason::NeedsFix));
        assert!(!needs_fix(&api(500, 0)));
    }

    #[test]
    fn a_status_write_refused_as_outdated_is_computed_again_shortly_however_often_it_happened() {
        let outdated = Error::Outdated {
            kind: "StudioRun".into(),
            name: "r".into(),
            namespace: "team-a".into(),
        };
        for failures in [1, 5, 30] {
            assert_eq!(
                delay(&outdated, failures, 0.7),
                (OUTDATED, Reason::Outdated)
            );
        }
        assert!(!needs_fix(&outdated));
    }

    #[test]
    fn failures_count_per_object_and_a_success_starts_again_from_the_base() {
        let retries = Retries::new();
        assert_eq!(retries.failed("StudioRun", "uid-1"), 1);
        assert_eq!(retries.failed("StudioRun", "uid-1"), 2);
        assert_eq!(retries.failed("StudioRun", "uid-2"), 1);
        assert_eq!(retries.failed("Composition", "uid-1"), 1);
        retries.succeeded("StudioRun", "uid-1");
        assert_eq!(retries.count("StudioRun", "uid-1"), 0);
        assert_eq!(retries.count("StudioRun", "uid-2"), 1);
        assert_eq!(retries.failed("StudioRun", "uid-1"), 1);
    }

    #[test]
    fn the_oldest_count_is_forgotten_past_the_limit() {
        let retries = Retries::new();
        for i in 0..MAX_TRACKED {
            retries.failed("StudioRun", &format!("uid-{i}"));
        }
        retries.failed("StudioRun", "uid-0");
        retries.failed("StudioRun", "new");
        assert_eq!(retries.tracked(), MAX_TRACKED);
        assert_eq!(retries.count("StudioRun", "uid-1"), 0, "the oldest went");
        assert_eq!(
            retries.count("StudioRun", "uid-0"),
            2,
            "touched again, kept"
        );
    }
}
