//! Live delivery inside one sidecar process: who follows which run's events. The store is the
//! truth; the hub only wakes followers early. An ingest publishes the events it stored; a
//! PostgreSQL notification from another replica publishes a [`Live::Wake`] with the last
//! `seq` it stored. A follower that sees anything but the next `seq` it expects, or that lags,
//! reads the store from its cursor, so a lost or reordered wake never loses an event.

use super::store::StoredEvent;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::broadcast;

/// Wakes kept per run for a slow follower before it lags (and then reads the store).
pub const CHANNEL_CAPACITY: usize = 64;

/// What a follower of a run is woken with.
#[derive(Clone, Debug)]
pub enum Live {
    /// Events this process just stored, consecutive, and when they were stored.
    Events {
        /// The events.
        events: Arc<[StoredEvent]>,
        /// When their batch was stored.
        stored_at: Instant,
    },
    /// Another replica stored events up to this `seq` (`u64::MAX`: unknown, read the store).
    Wake(u64),
}

/// The followers of each run.
#[derive(Debug, Default)]
pub struct Hub {
    runs: Mutex<HashMap<String, broadcast::Sender<Live>>>,
}

impl Hub {
    /// An empty hub.
    pub fn new() -> Hub {
        Hub::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, broadcast::Sender<Live>>> {
        self.runs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Follows `run_uid`: everything published from now on. Subscribe before reading the
    /// store's backlog, so nothing falls between the two.
    pub fn subscribe(&self, run_uid: &str) -> broadcast::Receiver<Live> {
        let mut runs = self.lock();
        runs.retain(|_, tx| tx.receiver_count() > 0);
        runs.entry(run_uid.to_owned())
            .or_insert_with(|| broadcast::channel(CHANNEL_CAPACITY).0)
            .subscribe()
    }

    /// Wakes `run_uid`'s followers, if it has any.
    pub fn publish(&self, run_uid: &str, live: Live) {
        let runs = self.lock();
        if let Some(tx) = runs.get(run_uid) {
            // No receiver left is not an error: the next subscribe prunes the entry.
            let _ = tx.send(live);
        }
    }

    /// Wakes every follower of every run to read the store (after a lost PostgreSQL
    /// connection, when any notification may have been missed).
    pub fn wake_all(&self) {
        let runs = self.lock();
        for tx in runs.values() {
            let _ = tx.send(Live::Wake(u64::MAX));
        }
    }

    /// Runs with at least one follower.
    pub fn followed(&self) -> usize {
        self.lock()
            .values()
            .filter(|tx| tx.receiver_count() > 0)
            .count()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    fn event(seq: u64) -> StoredEvent {
        StoredEvent {
            seq,
            body: format!("{{\"seq\":{seq}}}"),
        }
    }

    #[tokio::test]
    async fn a_follower_gets_what_is_published_after_it_subscribed_and_only_for_its_run() {
        let hub = Hub::new();
        hub.publish("a", Live::Wake(1));
        let mut rx = hub.subscribe("a");
        let mut other = hub.subscribe("b");
        hub.publish(
            "a",
            Live::Events {
                events: Arc::from(vec![event(2), event(3)]),
                stored_at: Instant::now(),
            },
        );
        match rx.recv().await.unwrap() {
            Live::Events { events, .. } => {
                assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), [2, 3])
            }
            Live::Wake(_) => panic!("expected events"),
        }
        assert!(other.try_recv().is_err());
        assert_eq!(hub.followed(), 2);
        drop(rx);
        drop(other);
        assert_eq!(hub.followed(), 0);
        let _again = hub.subscribe("c");
        assert_eq!(hub.lock().len(), 1, "runs nobody follows are pruned");
    }

    #[tokio::test]
    async fn a_slow_follower_lags_instead_of_holding_up_the_others() {
        let hub = Hub::new();
        let mut slow = hub.subscribe("a");
        let mut fast = hub.subscribe("a");
        for seq in 1..=(CHANNEL_CAPACITY as u64 + 10) {
            hub.publish("a", Live::Wake(seq));
            assert!(matches!(fast.recv().await.unwrap(), Live::Wake(s) if s == seq));
        }
        assert!(matches!(
            slow.recv().await,
            Err(broadcast::error::RecvError::Lagged(10))
        ));
    }
}
