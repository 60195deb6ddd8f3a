//! The store's statements, written once and compiled for each backend: [`store_ops!`] expands
//! to the same functions over `Pool<Sqlite>` ([`sqlite`]) and `Pool<Postgres>` ([`postgres`]).
//! The SQL text is identical on both (`$n` placeholders, which sqlx-sqlite binds by number);
//! only the statement that opens a write transaction and the notification differ.

use std::fmt::Write as _;

/// Rows per multi-row `INSERT` (2 parameters a row plus the run UID: far below the 32,766
/// parameters SQLite and PostgreSQL accept in one statement).
pub(crate) const INSERT_CHUNK_ROWS: usize = 1000;

/// The PostgreSQL channel appends are announced on; the payload is `<run uid> <last seq>`.
pub(crate) const CHANNEL: &str = "orrery_events";

/// `INSERT … VALUES ($1, $2, $3), ($1, $4, $5), … ON CONFLICT DO NOTHING` for `rows` rows:
/// `$1` is the run UID, then a `seq` and a body per row.
pub(crate) fn insert_events_sql(rows: usize) -> String {
    let mut sql = String::from("INSERT INTO trace_events (run_uid, seq, body) VALUES ");
    for row in 0..rows {
        if row > 0 {
            sql.push_str(", ");
        }
        let seq = 2 + 2 * row;
        // Writing to a String cannot fail.
        let _ = write!(sql, "($1, ${seq}, ${})", seq + 1);
    }
    sql.push_str(" ON CONFLICT (run_uid, seq) DO NOTHING");
    sql
}

/// A stored `BIGINT` seq as `u64` (the store writes none below 1).
pub(crate) fn seq_from_db(seq: i64) -> u64 {
    u64::try_from(seq).unwrap_or(0)
}

/// The functions of one backend. `$db` is the sqlx database, `$begin` the statement that opens
/// a write transaction, `$lock` a statement run first in the migration transaction (or
/// `None`), `$notify` whether appends announce themselves with `pg_notify`.
macro_rules! store_ops {
    ($db:ty, begin: $begin:expr, migration_lock: $lock:expr, notify: $notify:expr) => {
        use crate::sidecar::store::error::{Scrub, StoreError};
        use crate::sidecar::store::ops::{
            CHANNEL, INSERT_CHUNK_ROWS, insert_events_sql, seq_from_db,
        };
        use crate::sidecar::store::schema::{
            APPLIED_VERSION, MIGRATIONS, MIGRATIONS_TABLE, RECORD_VERSION, latest_version,
            unix_now,
        };
        use crate::sidecar::store::{Appended, RunRecord, StoredEvent};

        type Pool = sqlx::Pool<$db>;

        /// Applies the migrations the database lacks, in one transaction.
        pub(crate) async fn migrate(pool: &Pool, scrub: &Scrub) -> Result<(), StoreError> {
            let failed = |e: sqlx::Error| scrub.query("migrate", &e);
            let mut tx = pool.begin_with($begin).await.map_err(failed)?;
            if let Some(lock) = $lock {
                sqlx::query(lock).execute(&mut *tx).await.map_err(failed)?;
            }
            sqlx::raw_sql(MIGRATIONS_TABLE)
                .execute(&mut *tx)
                .await
                .map_err(failed)?;
            let applied: Option<i64> = sqlx::query_scalar(APPLIED_VERSION)
                .fetch_one(&mut *tx)
                .await
                .map_err(failed)?;
            let applied = u32::try_from(applied.unwrap_or(0)).unwrap_or(u32::MAX);
            if applied > latest_version() {
                return Err(StoreError::Migrate {
                    version: applied,
                    reason: format!(
                        "the database is at schema version {applied}, newer than this \
                         sidecar's {}: run a sidecar at least as new as the one that migrated \
                         it",
                        latest_version()
                    ),
                });
            }
            for (version, sql) in (1..).zip(MIGRATIONS.iter()).skip(applied as usize) {
                let failed = |e: sqlx::Error| StoreError::Migrate {
                    version,
                    reason: scrub.text(&e.to_string()),
                };
                sqlx::raw_sql(*sql)
                    .execute(&mut *tx)
                    .await
                    .map_err(failed)?;
                sqlx::query(RECORD_VERSION)
                    .bind(i64::from(version))
                    .bind(unix_now())
                    .execute(&mut *tx)
                    .await
                    .map_err(failed)?;
            }
            tx.commit().await.map_err(failed)
        }

        /// The highest `seq` stored for `run_uid`, 0 when none.
        async fn max_seq<'e, E>(executor: E, run_uid: &str) -> Result<u64, sqlx::Error>
        where
            E: sqlx::Executor<'e, Database = $db>,
        {
            let max: Option<i64> =
                sqlx::query_scalar("SELECT MAX(seq) FROM trace_events WHERE run_uid = $1")
                    .bind(run_uid)
                    .fetch_one(executor)
                    .await?;
            Ok(max.map(seq_from_db).unwrap_or(0))
        }

        pub(crate) async fn last_seq(
            pool: &Pool,
            scrub: &Scrub,
            run_uid: &str,
        ) -> Result<u64, StoreError> {
            max_seq(pool, run_uid)
                .await
                .map_err(|e| scrub.query("last_seq", &e))
        }

        /// See `Store::append`; `first_seq` and the last seq are checked to fit a `BIGINT`.
        pub(crate) async fn append(
            pool: &Pool,
            scrub: &Scrub,
            run: &RunRecord,
            first_seq: i64,
            bodies: &[String],
        ) -> Result<Appended, StoreError> {
            let failed = |e: sqlx::Error| scrub.query("append", &e);
            let mut tx = pool.begin_with($begin).await.map_err(failed)?;
            let last = max_seq(&mut *tx, &run.uid).await.map_err(failed)?;
            if seq_from_db(first_seq) > last + 1 {
                // Dropping the transaction rolls it back: nothing is stored.
                return Err(StoreError::Gap { expected: last + 1 });
            }
            // New events after a stored run.end are refused (a replay of what is stored is
            // not new): the trace ended there.
            let through = seq_from_db(first_seq)
                .saturating_add(u64::try_from(bodies.len()).unwrap_or(u64::MAX))
                .saturating_sub(1);
            if last > 0 && through > last {
                let end: Option<String> = sqlx::query_scalar(
                    "SELECT body FROM trace_events WHERE run_uid = $1 AND seq = $2",
                )
                .bind(run.uid.as_str())
                .bind(i64::try_from(last).unwrap_or(i64::MAX))
                .fetch_optional(&mut *tx)
                .await
                .map_err(failed)?;
                if end.is_some_and(|b| crate::sidecar::events::is_run_end(&b)) {
                    return Err(StoreError::Ended { last });
                }
            }
            sqlx::query(
                "INSERT INTO runs (run_uid, namespace, name, first_seen) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (run_uid) DO NOTHING",
            )
            .bind(run.uid.as_str())
            .bind(run.namespace.as_str())
            .bind(run.name.as_str())
            .bind(unix_now())
            .execute(&mut *tx)
            .await
            .map_err(failed)?;
            let mut stored = 0u64;
            let mut seq = first_seq;
            for chunk in bodies.chunks(INSERT_CHUNK_ROWS) {
                let mut insert =
                    sqlx::query(sqlx::AssertSqlSafe(insert_events_sql(chunk.len())))
                        // One text per row count: not worth a prepared statement each.
                        .persistent(false)
                        .bind(run.uid.as_str());
                for body in chunk {
                    insert = insert.bind(seq).bind(body.as_str());
                    seq += 1;
                }
                stored += insert.execute(&mut *tx).await.map_err(failed)?.rows_affected();
            }
            let last_seq = max_seq(&mut *tx, &run.uid).await.map_err(failed)?;
            if $notify && stored > 0 {
                sqlx::query("SELECT pg_notify($1, $2)")
                    .bind(CHANNEL)
                    .bind(format!("{} {last_seq}", run.uid))
                    .execute(&mut *tx)
                    .await
                    .map_err(failed)?;
            }
            tx.commit().await.map_err(failed)?;
            let total = u64::try_from(bodies.len()).unwrap_or(u64::MAX);
            Ok(Appended {
                stored,
                duplicates: total.saturating_sub(stored),
                last_seq,
            })
        }

        pub(crate) async fn events_after(
            pool: &Pool,
            scrub: &Scrub,
            run_uid: &str,
            after: i64,
            limit: u32,
        ) -> Result<Vec<StoredEvent>, StoreError> {
            let rows: Vec<(i64, String)> = sqlx::query_as(
                "SELECT seq, body FROM trace_events WHERE run_uid = $1 AND seq > $2 \
                 ORDER BY seq LIMIT $3",
            )
            .bind(run_uid)
            .bind(after)
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await
            .map_err(|e| scrub.query("events_after", &e))?;
            Ok(rows
                .into_iter()
                .map(|(seq, body)| StoredEvent {
                    seq: seq_from_db(seq),
                    body,
                })
                .collect())
        }

        pub(crate) async fn runs(pool: &Pool, scrub: &Scrub) -> Result<Vec<RunRecord>, StoreError> {
            let rows: Vec<(String, String, String)> = sqlx::query_as(
                "SELECT run_uid, namespace, name FROM runs ORDER BY namespace, name, run_uid",
            )
            .fetch_all(pool)
            .await
            .map_err(|e| scrub.query("runs", &e))?;
            Ok(rows
                .into_iter()
                .map(|(uid, namespace, name)| RunRecord {
                    uid,
                    namespace,
                    name,
                })
                .collect())
        }

        pub(crate) async fn delete_run(
            pool: &Pool,
            scrub: &Scrub,
            run_uid: &str,
        ) -> Result<u64, StoreError> {
            let failed = |e: sqlx::Error| scrub.query("delete_run", &e);
            let mut tx = pool.begin_with($begin).await.map_err(failed)?;
            let deleted = sqlx::query("DELETE FROM trace_events WHERE run_uid = $1")
                .bind(run_uid)
                .execute(&mut *tx)
                .await
                .map_err(failed)?
                .rows_affected();
            for table in ["approvals", "refused_decisions", "api_decisions"] {
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "DELETE FROM {table} WHERE run_uid = $1"
                )))
                .bind(run_uid)
                .execute(&mut *tx)
                .await
                .map_err(failed)?;
            }
            sqlx::query("DELETE FROM runs WHERE run_uid = $1")
                .bind(run_uid)
                .execute(&mut *tx)
                .await
                .map_err(failed)?;
            tx.commit().await.map_err(failed)?;
            Ok(deleted)
        }
    };
}

/// SQLite: a write transaction takes the write lock at once (`BEGIN IMMEDIATE`), so two
/// writers of one process wait on the busy timeout instead of failing to upgrade a read lock.
pub(crate) mod sqlite {
    store_ops!(
        sqlx::Sqlite,
        begin: "BEGIN IMMEDIATE",
        migration_lock: None::<&'static str>,
        notify: false
    );
    crate::sidecar::store::approvals::approval_ops!(sqlx::Sqlite, begin: "BEGIN IMMEDIATE");
}

/// PostgreSQL: migrations under an advisory lock; appends notify [`CHANNEL`] at commit.
pub(crate) mod postgres {
    store_ops!(
        sqlx::Postgres,
        begin: "BEGIN",
        migration_lock: Some(crate::sidecar::store::schema::PG_MIGRATION_LOCK),
        notify: true
    );
    crate::sidecar::store::approvals::approval_ops!(sqlx::Postgres, begin: "BEGIN");
}
