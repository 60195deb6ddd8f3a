//! The sidecar's event store: each run's trace events, one row per event keyed
//! `(run UID, seq)`, the body the event's JSON text.
//!
//! - **SQLite** by default: a file on a volume (`sqlite:/data/events.db`), in WAL mode with a
//!   busy timeout; one sidecar process serves it and wakes its own followers.
//! - **PostgreSQL** when configured (`postgres://…`), so several sidecar replicas serve reads:
//!   an append announces itself with `pg_notify('orrery_events', '<uid> <last seq>')` inside its
//!   transaction (delivered at commit), and a replica's [`Listener`] turns that into a
//!   [`Wake`]. A wake only says "look again": followers always resume from the database by
//!   their cursor ([`Store::events_after`]), and [`Wake::Resync`] (the listener reconnected,
//!   notifications may be lost) means every follower reads again.
//!
//! One schema for both, migrated by the binary itself when the store opens
//! (`schema`: an ordered list of migrations, the versions applied kept in
//! `orrery_schema_migrations`). The SQL text is the same on both backends (`ops`).
//!
//! **Appends** are idempotent and gap-free: [`Store::append`] reads the run's last stored `seq`,
//! refuses a batch that starts past it plus one ([`StoreError::Gap`]: the runner resends from
//! `expected`), and inserts with `ON CONFLICT (run_uid, seq) DO NOTHING`, so a replayed batch
//! stores nothing twice and a partly new one stores only its new events. Two appends of one run
//! racing are safe: on PostgreSQL the second waits on the first's rows and skips those it
//! already holds; a batch that saw a gap (its predecessor not yet committed) is refused and
//! resent. Since nothing is ever stored past a gap, a run's stored events are always
//! `1..=last_seq` with none missing.
//!
//! **Approvals**: the text a person reviews, its digest and expiry, and how it was settled
//! ([`Store::put_approval`], [`Store::approvals`], [`Store::settle`], [`Store::refuse`]): held
//! here so any replica serves it, never written to etcd.
//!
//! **Retention**: events and approvals go with their run ([`Store::delete_run`]).
//!
//! A URL's password never appears in an error or in `Debug` output.

mod approvals;
mod error;
mod open;
mod ops;
mod schema;

pub use approvals::{Put, StoredApproval};
pub use error::StoreError;

use super::metrics::{StoreOpLabels, StoreOps};
use error::{Scrub, redact_url};
use open::Target;
use orrery_crds::approval::DecisionKind;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPool};
use sqlx::sqlite::SqlitePool;
use std::sync::Arc;
use std::time::Instant;

/// Which database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// Embedded SQLite (a file on a volume, or in memory for tests).
    Sqlite,
    /// A PostgreSQL server, shared by the sidecar's replicas.
    Postgres,
}

impl Backend {
    /// Its `backend` label: `sqlite` or `postgres`.
    pub fn label(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

/// A run whose events are stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunRecord {
    /// The StudioRun's UID (the key of its events).
    pub uid: String,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

/// One stored event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredEvent {
    /// Its number in the run, from 1.
    pub seq: u64,
    /// The event's JSON text.
    pub body: String,
}

/// The result of an append.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Appended {
    /// Events of the batch stored now.
    pub stored: u64,
    /// Events of the batch that were stored before (a replay).
    pub duplicates: u64,
    /// The last `seq` stored for the run, with none missing before it.
    pub last_seq: u64,
}

/// A wake-up from an append (PostgreSQL only). A replica's listener also hears its own
/// appends: a wake is a hint to read from the cursor, never data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Wake {
    /// Events of `run_uid` up to `last_seq` are stored.
    Appended {
        /// The run.
        run_uid: String,
        /// Its last stored `seq` when the append committed.
        last_seq: u64,
    },
    /// The listener reconnected: anything may have been missed, so every follower reads again.
    Resync,
}

/// The event store (cheap to clone: the pools are shared).
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    pools: Pools,
    /// The URL with its password replaced by `***`.
    target: String,
    scrub: Scrub,
    ops: StoreOps,
}

enum Pools {
    Sqlite(SqlitePool),
    Postgres {
        pool: PgPool,
        /// For listeners' own connections.
        options: Box<PgConnectOptions>,
    },
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("backend", &self.backend())
            .field("target", &self.inner.target)
            .finish()
    }
}

/// The highest `seq` a store holds (its column is a `BIGINT`).
const MAX_SEQ: u64 = i64::MAX as u64;

/// `seq` as a `BIGINT` value, or [`StoreError::Seq`].
fn seq_to_db(seq: u64) -> Result<i64, StoreError> {
    i64::try_from(seq).map_err(|_| StoreError::Seq { seq })
}

impl Store {
    /// Whether `url` names a database server (PostgreSQL): one that may be down for a while
    /// (starting, restarting, failing over) and come back, so a sidecar waits for it rather
    /// than exit. A SQLite file is on the sidecar's own volume: failing to open it is not
    /// something waiting mends.
    pub fn is_server_url(url: &str) -> bool {
        matches!(
            open::parse(url, &Scrub::for_url(url)),
            Ok(Target::Postgres(_))
        )
    }

    /// Opens the store `url` names and applies the migrations it lacks:
    /// - `sqlite:/path/events.db`: the file, created if missing (its directory must exist: one
    ///   that does not is an [`StoreError::Open`] naming it), in WAL mode with a busy timeout;
    /// - `sqlite::memory:`: an in-memory database on one connection (tests);
    /// - `postgres://…` or `postgresql://…`: a PostgreSQL database.
    ///
    /// Any other URL is a [`StoreError::Url`] listing these. The URL's password never appears
    /// in an error or in `Debug` output.
    pub async fn open(url: &str) -> Result<Store, StoreError> {
        let scrub = Scrub::for_url(url);
        let target = redact_url(url);
        let pools = match open::parse(url, &scrub)? {
            Target::Sqlite { options, memory } => {
                let pool = open::sqlite(*options, memory, &target, &scrub).await?;
                let migrated = ops::sqlite::migrate(&pool, &scrub).await;
                if migrated.is_err() {
                    pool.close().await;
                }
                migrated?;
                Pools::Sqlite(pool)
            }
            Target::Postgres(options) => {
                let pool = open::postgres(&options, &target, &scrub).await?;
                let migrated = ops::postgres::migrate(&pool, &scrub).await;
                if migrated.is_err() {
                    pool.close().await;
                }
                migrated?;
                Pools::Postgres { pool, options }
            }
        };
        Ok(Store {
            inner: Arc::new(Inner {
                pools,
                target,
                scrub,
                ops: super::metrics::store_ops(),
            }),
        })
    }

    /// The durations of this store's calls (`orrery_sidecar_store_operation_duration_seconds`).
    pub fn operations(&self) -> StoreOps {
        self.inner.ops.clone()
    }

    /// Runs one call of the store, its duration observed as `operation`.
    async fn timed<T>(&self, operation: &'static str, work: impl Future<Output = T>) -> T {
        let began = Instant::now();
        let out = work.await;
        self.inner
            .ops
            .get_or_create(&StoreOpLabels {
                backend: self.backend().label().into(),
                operation: operation.into(),
            })
            .observe(began.elapsed().as_secs_f64());
        out
    }

    /// Which database this store is.
    pub fn backend(&self) -> Backend {
        match self.inner.pools {
            Pools::Sqlite(_) => Backend::Sqlite,
            Pools::Postgres { .. } => Backend::Postgres,
        }
    }

    /// Appends the consecutive events `first_seq, first_seq + 1, …` of `run` (`bodies` in
    /// order) in one transaction:
    /// - reads the run's last stored `seq` (0 when none); a batch starting past it plus one is
    ///   refused with [`StoreError::Gap`] and stores nothing;
    /// - inserts every event, skipping those already stored (`ON CONFLICT DO NOTHING`):
    ///   `stored` counts the new ones, `duplicates` the rest, `last_seq` is the run's last
    ///   stored `seq` after the insert;
    /// - records the run (UID, namespace, name, when first seen) if it is new;
    /// - on PostgreSQL, when anything was stored, notifies the other replicas at commit.
    ///
    /// Empty `bodies` store nothing and return the current `last_seq`. `first_seq` 0, or a
    /// `seq` past `i64::MAX`, is a [`StoreError::Seq`].
    pub async fn append(
        &self,
        run: &RunRecord,
        first_seq: u64,
        bodies: &[String],
    ) -> Result<Appended, StoreError> {
        if bodies.is_empty() {
            let last_seq = self.last_seq(&run.uid).await?;
            return Ok(Appended {
                stored: 0,
                duplicates: 0,
                last_seq,
            });
        }
        if first_seq == 0 {
            return Err(StoreError::Seq { seq: 0 });
        }
        let count = u64::try_from(bodies.len()).unwrap_or(u64::MAX);
        let last = first_seq.saturating_add(count - 1);
        if last > MAX_SEQ {
            return Err(StoreError::Seq { seq: last });
        }
        let first = seq_to_db(first_seq)?;
        let scrub = &self.inner.scrub;
        self.timed("append", async {
            match &self.inner.pools {
                Pools::Sqlite(pool) => ops::sqlite::append(pool, scrub, run, first, bodies).await,
                Pools::Postgres { pool, .. } => {
                    ops::postgres::append(pool, scrub, run, first, bodies).await
                }
            }
        })
        .await
    }

    /// The last `seq` stored for `run_uid` (0 when none).
    pub async fn last_seq(&self, run_uid: &str) -> Result<u64, StoreError> {
        let scrub = &self.inner.scrub;
        self.timed("last_seq", async {
            match &self.inner.pools {
                Pools::Sqlite(pool) => ops::sqlite::last_seq(pool, scrub, run_uid).await,
                Pools::Postgres { pool, .. } => ops::postgres::last_seq(pool, scrub, run_uid).await,
            }
        })
        .await
    }

    /// `run_uid`'s events with `seq > after`, ascending, at most `limit` of them.
    pub async fn events_after(
        &self,
        run_uid: &str,
        after: u64,
        limit: u32,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        // Nothing is stored past MAX_SEQ: a cursor beyond it reads nothing.
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let scrub = &self.inner.scrub;
        self.timed("events_after", async {
            match &self.inner.pools {
                Pools::Sqlite(pool) => {
                    ops::sqlite::events_after(pool, scrub, run_uid, after, limit).await
                }
                Pools::Postgres { pool, .. } => {
                    ops::postgres::events_after(pool, scrub, run_uid, after, limit).await
                }
            }
        })
        .await
    }

    /// Every run the store holds events of, by namespace, name and UID.
    pub async fn runs(&self) -> Result<Vec<RunRecord>, StoreError> {
        let scrub = &self.inner.scrub;
        self.timed("runs", async {
            match &self.inner.pools {
                Pools::Sqlite(pool) => ops::sqlite::runs(pool, scrub).await,
                Pools::Postgres { pool, .. } => ops::postgres::runs(pool, scrub).await,
            }
        })
        .await
    }

    /// Deletes `run_uid`'s events and its record, in one transaction; returns how many events
    /// were deleted (0 for a run the store does not hold).
    pub async fn delete_run(&self, run_uid: &str) -> Result<u64, StoreError> {
        let scrub = &self.inner.scrub;
        self.timed("delete_run", async {
            match &self.inner.pools {
                Pools::Sqlite(pool) => ops::sqlite::delete_run(pool, scrub, run_uid).await,
                Pools::Postgres { pool, .. } => {
                    ops::postgres::delete_run(pool, scrub, run_uid).await
                }
            }
        })
        .await
    }

    /// Stores an approval `run` asked for: [`Put::Created`], [`Put::Same`] for a retry with
    /// the same digest, [`Put::Conflict`] when the id is taken by another digest.
    pub async fn put_approval(
        &self,
        run: &RunRecord,
        ask: &orrery_crds::approval::ApprovalRequest,
    ) -> Result<Put, StoreError> {
        let scrub = &self.inner.scrub;
        self.timed("put_approval", async {
            match &self.inner.pools {
                Pools::Sqlite(pool) => ops::sqlite::put_approval(pool, scrub, run, ask).await,
                Pools::Postgres { pool, .. } => {
                    ops::postgres::put_approval(pool, scrub, run, ask).await
                }
            }
        })
        .await
    }

    /// `run_uid`'s approvals, in the order they were asked.
    pub async fn approvals(&self, run_uid: &str) -> Result<Vec<StoredApproval>, StoreError> {
        let scrub = &self.inner.scrub;
        self.timed("approvals", async {
            match &self.inner.pools {
                Pools::Sqlite(pool) => ops::sqlite::approvals(pool, scrub, run_uid).await,
                Pools::Postgres { pool, .. } => {
                    ops::postgres::approvals(pool, scrub, run_uid).await
                }
            }
        })
        .await
    }

    /// One approval of a run.
    pub async fn approval(
        &self,
        run_uid: &str,
        id: &str,
    ) -> Result<Option<StoredApproval>, StoreError> {
        Ok(self
            .approvals(run_uid)
            .await?
            .into_iter()
            .find(|a| a.request.id == id))
    }

    /// Records how approval `id` was settled (stored as [`DecisionKind::as_str`]) and by the
    /// decision at `index`, if one, and drops its text; the first
    /// settlement wins (false when it was settled before or is unknown).
    pub async fn settle(
        &self,
        run_uid: &str,
        id: &str,
        outcome: DecisionKind,
        index: Option<u64>,
    ) -> Result<bool, StoreError> {
        let index = index.map(|i| i64::try_from(i).unwrap_or(i64::MAX));
        let scrub = &self.inner.scrub;
        self.timed("settle", async {
            match &self.inner.pools {
                Pools::Sqlite(pool) => {
                    ops::sqlite::settle(pool, scrub, run_uid, id, outcome, index).await
                }
                Pools::Postgres { pool, .. } => {
                    ops::postgres::settle(pool, scrub, run_uid, id, outcome, index).await
                }
            }
        })
        .await
    }

    /// Records that the run refused the decision at `index` on approval `id`, and why.
    pub async fn refuse(
        &self,
        run_uid: &str,
        id: &str,
        index: u64,
        reason: &str,
    ) -> Result<(), StoreError> {
        let index = i64::try_from(index).unwrap_or(i64::MAX);
        let scrub = &self.inner.scrub;
        self.timed("refuse", async {
            match &self.inner.pools {
                Pools::Sqlite(pool) => {
                    ops::sqlite::refuse(pool, scrub, run_uid, id, index, reason).await
                }
                Pools::Postgres { pool, .. } => {
                    ops::postgres::refuse(pool, scrub, run_uid, id, index, reason).await
                }
            }
        })
        .await
    }

    /// Every decision of the run that was refused: `(approval id, index, reason)`, by approval
    /// and index.
    pub async fn refusals(&self, run_uid: &str) -> Result<Vec<(String, u64, String)>, StoreError> {
        let scrub = &self.inner.scrub;
        let rows = self
            .timed("refusals", async {
                match &self.inner.pools {
                    Pools::Sqlite(pool) => ops::sqlite::refusals(pool, scrub, run_uid).await,
                    Pools::Postgres { pool, .. } => {
                        ops::postgres::refusals(pool, scrub, run_uid).await
                    }
                }
            })
            .await?;
        Ok(rows
            .into_iter()
            .map(|(id, index, reason)| (id, u64::try_from(index).unwrap_or(0), reason))
            .collect())
    }

    /// Records that a decision on approval `id` whose digest is `digest`
    /// ([`crate::sidecar::approvals::decision_digest`]) is made through the API, before it is
    /// appended to the run's status.
    pub async fn record_api_decision(
        &self,
        run_uid: &str,
        id: &str,
        digest: &str,
    ) -> Result<(), StoreError> {
        let scrub = &self.inner.scrub;
        self.timed("record_api_decision", async {
            match &self.inner.pools {
                Pools::Sqlite(pool) => {
                    ops::sqlite::record_api_decision(pool, scrub, run_uid, id, digest).await
                }
                Pools::Postgres { pool, .. } => {
                    ops::postgres::record_api_decision(pool, scrub, run_uid, id, digest).await
                }
            }
        })
        .await
    }

    /// Forgets a decision [`Store::record_api_decision`] recorded whose append failed.
    pub async fn forget_api_decision(
        &self,
        run_uid: &str,
        id: &str,
        digest: &str,
    ) -> Result<(), StoreError> {
        let scrub = &self.inner.scrub;
        self.timed("forget_api_decision", async {
            match &self.inner.pools {
                Pools::Sqlite(pool) => {
                    ops::sqlite::forget_api_decision(pool, scrub, run_uid, id, digest).await
                }
                Pools::Postgres { pool, .. } => {
                    ops::postgres::forget_api_decision(pool, scrub, run_uid, id, digest).await
                }
            }
        })
        .await
    }

    /// Whether the decision on approval `id` whose digest is `digest` was made through the API.
    pub async fn is_api_decision(
        &self,
        run_uid: &str,
        id: &str,
        digest: &str,
    ) -> Result<bool, StoreError> {
        let scrub = &self.inner.scrub;
        self.timed("is_api_decision", async {
            match &self.inner.pools {
                Pools::Sqlite(pool) => {
                    ops::sqlite::is_api_decision(pool, scrub, run_uid, id, digest).await
                }
                Pools::Postgres { pool, .. } => {
                    ops::postgres::is_api_decision(pool, scrub, run_uid, id, digest).await
                }
            }
        })
        .await
    }

    /// Why the run refused the decision at `index` on approval `id`, if it did.
    pub async fn refusal(
        &self,
        run_uid: &str,
        id: &str,
        index: u64,
    ) -> Result<Option<String>, StoreError> {
        let index = i64::try_from(index).unwrap_or(i64::MAX);
        let scrub = &self.inner.scrub;
        self.timed("refusal", async {
            match &self.inner.pools {
                Pools::Sqlite(pool) => ops::sqlite::refusal(pool, scrub, run_uid, id, index).await,
                Pools::Postgres { pool, .. } => {
                    ops::postgres::refusal(pool, scrub, run_uid, id, index).await
                }
            }
        })
        .await
    }

    /// On PostgreSQL, a listener of the appends of every replica (this one's included), on a
    /// connection of its own. On SQLite `Ok(None)`: one process serves the file, and the
    /// sidecar wakes its own followers.
    pub async fn listen(&self) -> Result<Option<Listener>, StoreError> {
        let Pools::Postgres { options, .. } = &self.inner.pools else {
            return Ok(None);
        };
        let scrub = self.inner.scrub.clone();
        let pool = open::listener_pool(options, &scrub).await?;
        let mut listener = PgListener::connect_with(&pool)
            .await
            .map_err(|e| scrub.query("listen", &e))?;
        listener
            .listen(ops::CHANNEL)
            .await
            .map_err(|e| scrub.query("listen", &e))?;
        Ok(Some(Listener { listener, scrub }))
    }

    /// Closes the pools (waiting for connections in use to be returned). Listeners have their
    /// own connections: drop them to close those.
    pub async fn close(&self) {
        match &self.inner.pools {
            Pools::Sqlite(pool) => pool.close().await,
            Pools::Postgres { pool, .. } => pool.close().await,
        }
    }
}

/// Hears the appends announced on PostgreSQL ([`Store::listen`]).
pub struct Listener {
    listener: PgListener,
    scrub: Scrub,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener").finish_non_exhaustive()
    }
}

impl Listener {
    /// The next wake-up: an append, or [`Wake::Resync`] after the connection was lost and made
    /// again (notifications sent meanwhile are gone). A malformed payload is skipped. An error
    /// means the connection could not be made again; calling again retries.
    pub async fn next(&mut self) -> Result<Wake, StoreError> {
        loop {
            match self.listener.try_recv().await {
                Ok(Some(notification)) => {
                    if let Some(wake) = parse_payload(notification.payload()) {
                        return Ok(wake);
                    }
                }
                Ok(None) => return Ok(Wake::Resync),
                Err(e) => return Err(self.scrub.query("listen", &e)),
            }
        }
    }
}

/// `<run uid> <last seq>` as a [`Wake::Appended`]; anything else is `None`.
fn parse_payload(payload: &str) -> Option<Wake> {
    let (run_uid, last_seq) = payload.split_once(' ')?;
    if run_uid.is_empty() || run_uid.contains(char::is_whitespace) {
        return None;
    }
    let last_seq = last_seq.parse().ok()?;
    Some(Wake::Appended {
        run_uid: run_uid.to_string(),
        last_seq,
    })
}

#[cfg(test)]
mod tests;
