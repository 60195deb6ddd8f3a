//! Per-person rate limits on what a person starts through the sidecar (runs started, decisions
//! made, Compositions saved): a token bucket per user name, refilled continuously (rule 10.35). Past it the answer
//! is 429 with `Retry-After`, the seconds until the next token.

use super::problem::Problem;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How many of an action a person may take per minute, in a burst or spread out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerMinute(pub u32);

/// One bucket per person.
#[derive(Debug)]
pub struct Bucket {
    what: &'static str,
    per_minute: PerMinute,
    people: Mutex<HashMap<String, (f64, Instant)>>,
}

/// Forget people whose bucket is full again after this long (bounds the map).
const FORGET_AFTER: Duration = Duration::from_secs(600);

impl Bucket {
    /// `per_minute` of `what` (`run starts`, `decisions`) per person.
    pub fn new(what: &'static str, per_minute: PerMinute) -> Bucket {
        Bucket {
            what,
            per_minute: PerMinute(per_minute.0.max(1)),
            people: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one token for `user` at `now`, or 429.
    pub fn take_at(&self, user: &str, now: Instant) -> Result<(), Problem> {
        let capacity = f64::from(self.per_minute.0);
        let per_second = capacity / 60.0;
        let mut people = self.people.lock().unwrap_or_else(|e| e.into_inner());
        if people.len() > 10_000 {
            people.retain(|_, (_, at)| now.duration_since(*at) < FORGET_AFTER);
        }
        let (tokens, at) = people.entry(user.to_owned()).or_insert((capacity, now));
        let refilled = (*tokens + now.duration_since(*at).as_secs_f64() * per_second).min(capacity);
        *at = now;
        if refilled >= 1.0 {
            *tokens = refilled - 1.0;
            Ok(())
        } else {
            *tokens = refilled;
            let wait = ((1.0 - refilled) / per_second).ceil().max(1.0);
            Err(Problem::rate_limited(
                wait as u64,
                format!(
                    "{user} has used {} {} in the last minute, the most one person may; try again in {} s",
                    self.per_minute.0, self.what, wait as u64
                ),
            ))
        }
    }
}

/// The sidecar's per-person limits.
#[derive(Debug)]
pub struct Limits {
    starts: Bucket,
    decisions: Bucket,
    saves: Bucket,
}

impl Limits {
    /// Limits of `starts` run starts, `decisions` decisions and `saves` Composition saves per
    /// person per minute.
    pub fn new(starts: PerMinute, decisions: PerMinute, saves: PerMinute) -> Limits {
        Limits {
            starts: Bucket::new("run starts", starts),
            decisions: Bucket::new("decisions", decisions),
            saves: Bucket::new("composition saves", saves),
        }
    }

    /// One run start by `user`, or 429.
    pub fn start(&self, user: &str) -> Result<(), Problem> {
        self.starts.take_at(user, Instant::now())
    }

    /// One decision by `user`, or 429.
    pub fn decide(&self, user: &str) -> Result<(), Problem> {
        self.decisions.take_at(user, Instant::now())
    }

    /// One Composition save (a dry run too) by `user`, or 429.
    pub fn save(&self, user: &str) -> Result<(), Problem> {
        self.saves.take_at(user, Instant::now())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_person_gets_a_burst_then_one_token_per_interval_and_others_are_not_affected() {
        let bucket = Bucket::new("run starts", PerMinute(3));
        let t0 = Instant::now();
        for _ in 0..3 {
            bucket.take_at("alice", t0).unwrap();
        }
        let refused = bucket.take_at("alice", t0).unwrap_err();
        assert_eq!(refused.retry_after, Some(20));
        assert!(refused.body.message.contains("3 run starts"));
        bucket.take_at("bob", t0).unwrap();
        // 20 s later one token is back, not two.
        let later = t0 + Duration::from_secs(20);
        bucket.take_at("alice", later).unwrap();
        assert!(bucket.take_at("alice", later).is_err());
    }

    #[test]
    fn saves_have_a_bucket_of_their_own_that_names_them() {
        let limits = Limits::new(PerMinute(5), PerMinute(5), PerMinute(1));
        limits.save("alice").unwrap();
        let refused = limits.save("alice").unwrap_err();
        assert_eq!(refused.status, axum::http::StatusCode::TOO_MANY_REQUESTS);
        assert!(refused.body.message.contains("1 composition saves"));
        limits.start("alice").unwrap();
        limits.decide("alice").unwrap();
    }
}
