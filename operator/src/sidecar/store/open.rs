//! From a store URL to an open pool: which backend, its connection options, the checks that
//! make a wrong URL or a missing volume an error that says what to fix.

use super::error::{Scrub, StoreError, redact_url};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{ConnectOptions as _, Connection as _};
use std::str::FromStr;
use std::time::Duration;

/// How long a SQLite writer waits for another to finish before the statement fails.
pub(crate) const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections of a SQLite file pool (WAL: readers run beside the one writer).
const SQLITE_MAX_CONNECTIONS: u32 = 4;
/// Connections of a PostgreSQL pool (a listener has its own).
const PG_MAX_CONNECTIONS: u32 = 8;
/// How long to wait for a connection (to the server, or free in the pool).
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(15);
/// How long one PostgreSQL statement may run before the server cancels it (rule 10.20: a
/// hung statement fails, and the call is retried); set on every session as the
/// `statement_timeout` startup option, in milliseconds.
pub(crate) const PG_STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);
/// The `application_name` the sidecar's PostgreSQL sessions carry (seen in `pg_stat_activity`).
pub(crate) const APPLICATION_NAME: &str = "orrery-sidecar";

/// The store URLs that work, for messages.
const URL_FORMS: &str = "use sqlite:/path/events.db (a file on a volume; created if missing), \
                         sqlite::memory: (tests only) or postgres://user@host:5432/database";

/// A parsed store URL.
pub(crate) enum Target {
    /// A SQLite file, or the in-memory database.
    Sqlite {
        options: Box<SqliteConnectOptions>,
        memory: bool,
    },
    /// A PostgreSQL database.
    Postgres(Box<PgConnectOptions>),
}

/// What `url` names. The errors show it redacted ([`redact_url`]).
pub(crate) fn parse(url: &str, scrub: &Scrub) -> Result<Target, StoreError> {
    let shown = redact_url(url);
    let scheme = url
        .split_once(':')
        .map(|(scheme, _)| scheme.to_ascii_lowercase());
    match scheme.as_deref() {
        Some("sqlite") => {
            let rest = url.get("sqlite:".len()..).unwrap_or_default();
            let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
            let memory = path.trim_start_matches("//") == ":memory:"
                || query.split('&').any(|kv| kv == "mode=memory");
            let options = SqliteConnectOptions::from_str(&format!("sqlite:{rest}")).map_err(
                |e| StoreError::Url {
                    reason: format!(
                        "the store URL {shown} is not a SQLite URL sqlx accepts ({}); {URL_FORMS}",
                        scrub.text(&e.to_string())
                    ),
                },
            )?;
            if !memory && options.get_filename().as_os_str().is_empty() {
                return Err(StoreError::Url {
                    reason: format!("the store URL {shown} names no file; {URL_FORMS}"),
                });
            }
            Ok(Target::Sqlite {
                options: Box::new(options),
                memory,
            })
        }
        Some("postgres" | "postgresql") => {
            let options = PgConnectOptions::from_str(url).map_err(|e| StoreError::Url {
                reason: format!(
                    "the store URL {shown} is not a PostgreSQL URL ({}); {URL_FORMS}",
                    scrub.text(&e.to_string())
                ),
            })?;
            let timeout_ms = PG_STATEMENT_TIMEOUT.as_millis().to_string();
            Ok(Target::Postgres(Box::new(
                options
                    .application_name(APPLICATION_NAME)
                    .options([("statement_timeout", timeout_ms.as_str())]),
            )))
        }
        _ => Err(StoreError::Url {
            reason: format!(
                "the store URL {shown} is neither SQLite nor PostgreSQL (it must start with \
                 sqlite:, postgres: or postgresql:); {URL_FORMS}"
            ),
        }),
    }
}

/// Opens a SQLite pool: the file created if missing (its directory must exist), WAL, the busy
/// timeout; the in-memory database on one connection kept for the pool's life.
pub(crate) async fn sqlite(
    options: SqliteConnectOptions,
    memory: bool,
    target: &str,
    scrub: &Scrub,
) -> Result<SqlitePool, StoreError> {
    let open_error = |reason: String| StoreError::Open {
        target: target.to_string(),
        reason,
    };
    let options = options.busy_timeout(SQLITE_BUSY_TIMEOUT);
    let pool = if memory {
        // One connection, never closed while the pool lives: the data is that connection's.
        SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(options)
            .await
    } else {
        let file = options.get_filename().to_path_buf();
        if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty())
            && !dir.is_dir()
        {
            return Err(open_error(format!(
                "the directory {} does not exist: create it, or mount the store's volume there",
                dir.display()
            )));
        }
        let options = options
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // An acknowledged batch survives a power cut.
            .synchronous(SqliteSynchronous::Full);
        SqlitePoolOptions::new()
            .max_connections(SQLITE_MAX_CONNECTIONS)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(options)
            .await
    };
    pool.map_err(|e| open_error(scrub.text(&e.to_string())))
}

/// Opens a PostgreSQL pool. One connection is made first on its own, so a wrong address or
/// password fails at once with the server's or the network's reason (a pool retries a refused
/// connection until its timeout and then says only that it timed out).
pub(crate) async fn postgres(
    options: &PgConnectOptions,
    target: &str,
    scrub: &Scrub,
) -> Result<PgPool, StoreError> {
    let open_error = |e: sqlx::Error| StoreError::Open {
        target: target.to_string(),
        reason: scrub.text(&e.to_string()),
    };
    let first = tokio::time::timeout(ACQUIRE_TIMEOUT, options.connect())
        .await
        .map_err(|_| StoreError::Open {
            target: target.to_string(),
            reason: format!("no connection within {}s", ACQUIRE_TIMEOUT.as_secs()),
        })?
        .map_err(open_error)?;
    // Only a probe: a failure to say goodbye changes nothing.
    let _ = first.close().await;
    PgPoolOptions::new()
        .max_connections(PG_MAX_CONNECTIONS)
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .connect_with(options.clone())
        .await
        .map_err(open_error)
}

/// A pool of one connection for a listener: it holds that connection for its whole life, so it
/// never takes one from the store's pool (whose `close` would otherwise wait for it).
pub(crate) async fn listener_pool(
    options: &PgConnectOptions,
    scrub: &Scrub,
) -> Result<PgPool, StoreError> {
    PgPoolOptions::new()
        .max_connections(1)
        .idle_timeout(None)
        .max_lifetime(None)
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .connect_with(options.clone())
        .await
        .map_err(|e| scrub.query("listen", &e))
}
