//! The store's schema: one text for SQLite and PostgreSQL, embedded in the binary as an
//! ordered list of migrations. Migration `n` (1-based) is `MIGRATIONS[n - 1]`; the versions
//! applied are rows of `orrery_schema_migrations`. Opening a store applies the ones missing, all
//! in one transaction (on PostgreSQL under an advisory lock, so replicas starting together
//! apply each once). A migration is never edited once released: a change is a new one at the
//! end.

/// The bookkeeping table: one row per migration applied.
pub(crate) const MIGRATIONS_TABLE: &str = "CREATE TABLE IF NOT EXISTS orrery_schema_migrations (\
     version BIGINT PRIMARY KEY, \
     applied_at BIGINT NOT NULL)";

/// The highest version applied (NULL when none).
pub(crate) const APPLIED_VERSION: &str = "SELECT MAX(version) FROM orrery_schema_migrations";

/// Records one applied migration: `$1` its version, `$2` the time (unix seconds).
pub(crate) const RECORD_VERSION: &str =
    "INSERT INTO orrery_schema_migrations (version, applied_at) VALUES ($1, $2)";

/// Serializes migrations of replicas opening one PostgreSQL database at once (released at the
/// end of the transaction). The key is arbitrary but fixed: "orry" in ASCII.
pub(crate) const PG_MIGRATION_LOCK: &str = "SELECT pg_advisory_xact_lock(1869771385)";

/// The migrations, in order. Each may hold several statements (run with the simple protocol).
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: a run's events, keyed (run UID, seq), and the runs they belong to.
    "CREATE TABLE trace_events (\
         run_uid TEXT NOT NULL, \
         seq BIGINT NOT NULL, \
         body TEXT NOT NULL, \
         PRIMARY KEY (run_uid, seq)); \
     CREATE TABLE runs (\
         run_uid TEXT PRIMARY KEY, \
         namespace TEXT NOT NULL, \
         name TEXT NOT NULL, \
         first_seen BIGINT NOT NULL)",
    // 2: the approvals a run asked for (the text a person reviews is held here, never in
    // etcd) and the decisions the run refused.
    "CREATE TABLE approvals (\
         run_uid TEXT NOT NULL, \
         approval_id TEXT NOT NULL, \
         kind TEXT NOT NULL, \
         node TEXT NOT NULL, \
         prompt TEXT NOT NULL, \
         text TEXT NOT NULL, \
         digest TEXT NOT NULL, \
         size BIGINT NOT NULL, \
         complete BIGINT NOT NULL, \
         expires_at TEXT NOT NULL, \
         asked_at BIGINT NOT NULL, \
         settled TEXT, \
         settled_index BIGINT, \
         PRIMARY KEY (run_uid, approval_id)); \
     CREATE TABLE refused_decisions (\
         run_uid TEXT NOT NULL, \
         approval_id TEXT NOT NULL, \
         decision_index BIGINT NOT NULL, \
         reason TEXT NOT NULL, \
         PRIMARY KEY (run_uid, approval_id, decision_index))",
    // 3: the decisions made through the API, each by the digest of the decision as appended
    // to `status.decisions` (attack 46: while the admission policies are not in place, a
    // decision written by hand is not honoured, one made through the API still is).
    "CREATE TABLE api_decisions (\
         run_uid TEXT NOT NULL, \
         approval_id TEXT NOT NULL, \
         decision_digest TEXT NOT NULL, \
         PRIMARY KEY (run_uid, approval_id, decision_digest))",
];

/// The newest schema version this binary knows.
pub(crate) fn latest_version() -> u32 {
    u32::try_from(MIGRATIONS.len()).unwrap_or(u32::MAX)
}

/// Seconds since the Unix epoch (0 if the clock is before it).
pub(crate) fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
