#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::error::{Scrub, redact_url};
use super::ops::{INSERT_CHUNK_ROWS, insert_events_sql};
use super::schema::MIGRATIONS;
use super::*;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "orrery-store-test-{}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .expect("clock after 1970")
                .as_nanos()
        ));
        std::fs::create_dir_all(&dir).expect("create the temp dir");
        TempDir(dir)
    }

    fn url(&self) -> String {
        format!("sqlite:{}", self.0.join("events.db").display())
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// An in-memory store and a file store (with the directory that holds it).
async fn stores() -> Vec<(Store, Option<TempDir>)> {
    let memory = Store::open("sqlite::memory:").await.expect("open memory");
    let dir = TempDir::new();
    let file = Store::open(&dir.url()).await.expect("open file");
    vec![(memory, None), (file, Some(dir))]
}

fn run(uid: &str) -> RunRecord {
    RunRecord {
        uid: uid.to_string(),
        namespace: "team-a".to_string(),
        name: format!("run-{uid}"),
    }
}

fn bodies(seqs: std::ops::RangeInclusive<u64>) -> Vec<String> {
    seqs.map(|s| format!(r#"{{"seq":{s}}}"#)).collect()
}

fn appended(stored: u64, duplicates: u64, last_seq: u64) -> Appended {
    Appended {
        stored,
        duplicates,
        last_seq,
    }
}

#[tokio::test]
async fn a_replayed_batch_stores_nothing_twice() {
    for (store, _dir) in stores().await {
        let r = run("u1");
        let first = store.append(&r, 1, &bodies(1..=3)).await.unwrap();
        assert_eq!(first, appended(3, 0, 3), "{store:?}");
        let again = store.append(&r, 1, &bodies(1..=3)).await.unwrap();
        assert_eq!(again, appended(0, 3, 3), "{store:?}");
        let events = store.events_after("u1", 0, 100).await.unwrap();
        assert_eq!(events.len(), 3);
        store.close().await;
    }
}

#[tokio::test]
async fn a_batch_past_a_gap_is_refused_with_the_expected_seq_and_stores_nothing() {
    for (store, _dir) in stores().await {
        let r = run("u1");
        store.append(&r, 1, &bodies(1..=2)).await.unwrap();
        let err = store.append(&r, 4, &bodies(4..=5)).await.unwrap_err();
        assert!(matches!(err, StoreError::Gap { expected: 3 }), "{err:?}");
        assert!(err.to_string().contains("resend from seq 3"), "{err}");
        assert_eq!(store.last_seq("u1").await.unwrap(), 2);
        // A first batch must start at 1, and a refused new run is not recorded.
        let err = store
            .append(&run("u2"), 2, &bodies(2..=2))
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::Gap { expected: 1 }), "{err:?}");
        assert_eq!(store.runs().await.unwrap(), vec![r]);
    }
}

#[tokio::test]
async fn a_partly_stored_batch_stores_only_its_new_events() {
    for (store, _dir) in stores().await {
        let r = run("u1");
        store.append(&r, 1, &bodies(1..=3)).await.unwrap();
        let mut overlap = bodies(2..=5);
        // A body resent for a stored seq never replaces the stored one.
        overlap[0] = r#"{"seq":2,"changed":true}"#.to_string();
        let got = store.append(&r, 2, &overlap).await.unwrap();
        assert_eq!(got, appended(2, 2, 5));
        let events = store.events_after("u1", 0, 100).await.unwrap();
        let expected: Vec<StoredEvent> = (1..=5)
            .zip(bodies(1..=5))
            .map(|(seq, body)| StoredEvent { seq, body })
            .collect();
        assert_eq!(events, expected);
    }
}

#[tokio::test]
async fn events_after_pages_through_a_run_in_seq_order() {
    for (store, _dir) in stores().await {
        store.append(&run("u1"), 1, &bodies(1..=10)).await.unwrap();
        store.append(&run("u2"), 1, &bodies(1..=4)).await.unwrap();
        let mut cursor = 0;
        let mut pages = Vec::new();
        loop {
            let page = store.events_after("u1", cursor, 4).await.unwrap();
            let Some(last) = page.last() else { break };
            cursor = last.seq;
            pages.push(page.iter().map(|e| e.seq).collect::<Vec<_>>());
        }
        assert_eq!(pages, vec![vec![1, 2, 3, 4], vec![5, 6, 7, 8], vec![9, 10]]);
        assert!(
            store
                .events_after("u1", u64::MAX, 4)
                .await
                .unwrap()
                .is_empty()
        );
        assert!(store.events_after("nobody", 0, 4).await.unwrap().is_empty());
    }
}

#[tokio::test]
async fn deleting_a_run_removes_its_events_and_record_and_nothing_else() {
    for (store, _dir) in stores().await {
        store.append(&run("u1"), 1, &bodies(1..=3)).await.unwrap();
        store.append(&run("u2"), 1, &bodies(1..=2)).await.unwrap();
        assert_eq!(store.delete_run("u1").await.unwrap(), 3);
        assert_eq!(store.last_seq("u1").await.unwrap(), 0);
        assert_eq!(store.runs().await.unwrap(), vec![run("u2")]);
        assert_eq!(store.events_after("u2", 0, 10).await.unwrap().len(), 2);
        assert_eq!(store.delete_run("u1").await.unwrap(), 0);
        // A deleted run's UID starts again from 1.
        let again = store.append(&run("u1"), 1, &bodies(1..=1)).await.unwrap();
        assert_eq!(again, appended(1, 0, 1));
    }
}

#[tokio::test]
async fn runs_lists_every_run_once_with_the_names_of_its_first_append() {
    for (store, _dir) in stores().await {
        assert!(store.runs().await.unwrap().is_empty());
        let b = RunRecord {
            uid: "u-b".into(),
            namespace: "team-b".into(),
            name: "second".into(),
        };
        store.append(&b, 1, &bodies(1..=1)).await.unwrap();
        store.append(&run("u-a"), 1, &bodies(1..=1)).await.unwrap();
        let renamed = RunRecord {
            name: "renamed".into(),
            ..b.clone()
        };
        store.append(&renamed, 2, &bodies(2..=2)).await.unwrap();
        assert_eq!(store.runs().await.unwrap(), vec![run("u-a"), b]);
    }
}

#[tokio::test]
async fn an_empty_append_stores_nothing_and_returns_the_last_seq() {
    for (store, _dir) in stores().await {
        assert_eq!(
            store.append(&run("u1"), 7, &[]).await.unwrap(),
            appended(0, 0, 0)
        );
        store.append(&run("u1"), 1, &bodies(1..=2)).await.unwrap();
        assert_eq!(
            store.append(&run("u1"), 9, &[]).await.unwrap(),
            appended(0, 0, 2)
        );
        assert_eq!(store.runs().await.unwrap(), vec![run("u1")]);
    }
}

#[tokio::test]
async fn a_seq_of_zero_or_past_bigint_is_refused() {
    let store = Store::open("sqlite::memory:").await.unwrap();
    let err = store
        .append(&run("u1"), 0, &bodies(0..=0))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Seq { seq: 0 }), "{err:?}");
    let err = store
        .append(&run("u1"), i64::MAX as u64, &bodies(1..=2))
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::Seq { seq } if seq == i64::MAX as u64 + 1),
        "{err:?}"
    );
    assert!(store.runs().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_batch_larger_than_one_insert_is_stored_whole_in_order() {
    let store = Store::open("sqlite::memory:").await.unwrap();
    let n = (2 * INSERT_CHUNK_ROWS + 7) as u64;
    let got = store.append(&run("u1"), 1, &bodies(1..=n)).await.unwrap();
    assert_eq!(got, appended(n, 0, n));
    let got = store
        .append(&run("u1"), 1, &bodies(1..=n + 1))
        .await
        .unwrap();
    assert_eq!(got, appended(1, n, n + 1));
    let events = store.events_after("u1", n - 2, 10).await.unwrap();
    assert_eq!(
        events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![n - 1, n, n + 1]
    );
    assert_eq!(events[2].body, format!(r#"{{"seq":{}}}"#, n + 1));
}

#[test]
fn the_multi_row_insert_binds_the_run_once_and_two_values_a_row() {
    assert_eq!(
        insert_events_sql(2),
        "INSERT INTO trace_events (run_uid, seq, body) VALUES ($1, $2, $3), ($1, $4, $5) \
         ON CONFLICT (run_uid, seq) DO NOTHING"
    );
    let params = 1 + 2 * INSERT_CHUNK_ROWS;
    assert!(params < 32_766 / 2, "{params} parameters in one statement");
}

fn sqlite_pool(store: &Store) -> &SqlitePool {
    match &store.inner.pools {
        Pools::Sqlite(pool) => pool,
        Pools::Postgres { .. } => panic!("not SQLite"),
    }
}

#[tokio::test]
async fn a_store_file_is_in_wal_mode_with_a_busy_timeout() {
    let dir = TempDir::new();
    let store = Store::open(&dir.url()).await.unwrap();
    let pool = sqlite_pool(&store);
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(mode, "wal");
    let timeout: i64 = sqlx::query_scalar("PRAGMA busy_timeout")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(timeout, 10_000);
    store.append(&run("u1"), 1, &bodies(1..=1)).await.unwrap();
    assert!(dir.0.join("events.db-wal").exists());
    store.close().await;
}

#[test]
fn every_postgresql_session_is_opened_with_a_statement_timeout_rule_10_20() {
    let scrub = Scrub::default();
    let Ok(open::Target::Postgres(options)) =
        open::parse("postgres://orrery@db.example:5432/events", &scrub)
    else {
        panic!("a PostgreSQL URL parses as PostgreSQL");
    };
    let expected = format!(
        "statement_timeout={}",
        open::PG_STATEMENT_TIMEOUT.as_millis()
    );
    assert!(
        options.get_options().is_some_and(|o| o.contains(&expected)),
        "{:?}",
        options.get_options()
    );
}

async fn applied_migrations(store: &Store) -> Vec<(i64, i64)> {
    sqlx::query_as("SELECT version, applied_at FROM orrery_schema_migrations ORDER BY version")
        .fetch_all(sqlite_pool(store))
        .await
        .unwrap()
}

#[tokio::test]
async fn a_reopened_file_keeps_its_events_and_applies_no_migration_again() {
    let dir = TempDir::new();
    let store = Store::open(&dir.url()).await.unwrap();
    store.append(&run("u1"), 1, &bodies(1..=3)).await.unwrap();
    let before = applied_migrations(&store).await;
    assert_eq!(before.len(), MIGRATIONS.len());
    assert_eq!(before[0].0, 1);
    store.close().await;

    let reopened = Store::open(&dir.url()).await.unwrap();
    assert_eq!(applied_migrations(&reopened).await, before);
    assert_eq!(reopened.last_seq("u1").await.unwrap(), 3);
    assert_eq!(reopened.runs().await.unwrap(), vec![run("u1")]);
    let got = reopened
        .append(&run("u1"), 1, &bodies(1..=4))
        .await
        .unwrap();
    assert_eq!(got, appended(1, 3, 4));
    reopened.close().await;
}

#[tokio::test]
async fn a_database_migrated_by_a_newer_sidecar_is_refused_with_both_versions() {
    let dir = TempDir::new();
    let store = Store::open(&dir.url()).await.unwrap();
    sqlx::query("INSERT INTO orrery_schema_migrations (version, applied_at) VALUES (99, 0)")
        .execute(sqlite_pool(&store))
        .await
        .unwrap();
    store.close().await;
    let err = Store::open(&dir.url()).await.unwrap_err();
    assert!(
        matches!(err, StoreError::Migrate { version: 99, .. }),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("version 99") && text.contains("at least as new"),
        "{text}"
    );
}

#[tokio::test]
async fn a_store_file_in_a_missing_directory_is_an_open_error_naming_the_directory() {
    let dir = TempDir::new();
    let missing = dir.0.join("no-such-volume");
    let url = format!("sqlite:{}", missing.join("events.db").display());
    let err = Store::open(&url).await.unwrap_err();
    let StoreError::Open { target, reason } = &err else {
        panic!("expected Open, got {err:?}");
    };
    assert_eq!(target, &url);
    assert!(reason.contains(&missing.display().to_string()), "{reason}");
    assert!(
        err.to_string().contains("mount the store's volume"),
        "{err}"
    );
    assert!(!missing.exists());
}

#[tokio::test]
async fn a_url_of_another_scheme_is_refused_with_the_urls_that_work() {
    for url in [
        "mysql://u:hunter2@db/events",
        "/data/events.db",
        "events.db",
        "",
    ] {
        let err = Store::open(url).await.unwrap_err();
        assert!(matches!(err, StoreError::Url { .. }), "{url}: {err:?}");
        let text = err.to_string();
        for form in ["sqlite:/path/events.db", "sqlite::memory:", "postgres://"] {
            assert!(text.contains(form), "{url}: {text}");
        }
        assert!(!text.contains("hunter2"), "{text}");
    }
}

#[tokio::test]
async fn a_postgres_password_never_appears_in_errors_or_debug() {
    // Nothing listens on port 1; the last URL does not even parse (a space in the host).
    let urls = [
        "postgres://orrery:hunter2@127.0.0.1:1/events",
        "postgresql://orrery:hunter2@127.0.0.1:1/events?sslmode=disable",
        "postgres://orrery@127.0.0.1:1/events?password=hunter2",
        "postgres://orrery:hunter2@bad host:1/events",
    ];
    for url in urls {
        let err = Store::open(url).await.unwrap_err();
        let text = format!("{err} {err:?}");
        assert!(!text.contains("hunter2"), "{url}: {text}");
        assert!(
            text.contains("***") || text.contains("orrery@"),
            "{url}: {text}"
        );
    }
    let store = Store::open("sqlite::memory:").await.unwrap();
    assert_eq!(
        format!("{store:?}"),
        r#"Store { backend: Sqlite, target: "sqlite::memory:" }"#
    );
}

#[test]
fn redacted_urls_hide_passwords_and_keep_the_rest() {
    let cases = [
        ("postgres://u:pw@db:5432/ev", "postgres://u:***@db:5432/ev"),
        (
            "postgres://u@db/ev?password=pw&sslmode=require",
            "postgres://u@db/ev?password=***&sslmode=require",
        ),
        ("postgres://u:p%40w@db/ev", "postgres://u:***@db/ev"),
        (
            "postgres://u:pw@bad host/ev?x=1",
            "postgres://u:***@bad host/ev",
        ),
        ("sqlite:/data/events.db", "sqlite:/data/events.db"),
        ("sqlite::memory:", "sqlite::memory:"),
    ];
    for (url, shown) in cases {
        assert_eq!(redact_url(url), shown, "{url}");
    }
    let scrub = Scrub::for_url("postgres://u:p%40w@db/ev");
    assert_eq!(
        scrub.text("auth p@w and p%40w failed"),
        "auth *** and *** failed"
    );
}

#[test]
fn a_notification_payload_is_a_run_uid_and_a_seq_or_is_skipped() {
    assert_eq!(
        parse_payload("0b5c-uid 42"),
        Some(Wake::Appended {
            run_uid: "0b5c-uid".into(),
            last_seq: 42
        })
    );
    for bad in ["", "uid", "uid x", " 42", "uid -1", "uid 4 2", "uid 42 "] {
        assert_eq!(parse_payload(bad), None, "{bad:?}");
    }
}

#[tokio::test]
async fn sqlite_has_no_listener() {
    let store = Store::open("sqlite::memory:").await.unwrap();
    assert_eq!(store.backend(), Backend::Sqlite);
    assert!(store.listen().await.unwrap().is_none());
}

#[tokio::test]
async fn approvals_are_stored_as_the_same_strings_and_a_row_naming_no_kind_is_refused() {
    use orrery_crds::approval::{ApprovalKind, ApprovalRequest, ApprovalState, DecisionKind};
    let dir = TempDir::new();
    let store = Store::open(&dir.url()).await.unwrap();
    let ask = ApprovalRequest {
        id: "input-1".into(),
        kind: ApprovalKind::Input,
        node: "writer".into(),
        prompt: String::new(),
        text: "which region?".into(),
        digest: "d".into(),
        size: 13,
        complete: true,
        expires_at: "2026-12-02T10:00:00Z".into(),
    };
    assert_eq!(
        store.put_approval(&run("u1"), &ask).await.unwrap(),
        Put::Created
    );
    assert!(
        store
            .settle("u1", "input-1", DecisionKind::Approved, Some(0))
            .await
            .unwrap()
    );
    let pool = sqlite_pool(&store);
    let (kind, settled): (String, String) =
        sqlx::query_as("SELECT kind, settled FROM approvals WHERE approval_id = 'input-1'")
            .fetch_one(pool)
            .await
            .unwrap();
    assert_eq!((kind.as_str(), settled.as_str()), ("Input", "approved"));
    let read = store.approval("u1", "input-1").await.unwrap().unwrap();
    assert_eq!(read.request.kind, ApprovalKind::Input);
    assert_eq!(read.state(), ApprovalState::Approved);
    sqlx::query("UPDATE approvals SET kind = 'Question' WHERE approval_id = 'input-1'")
        .execute(pool)
        .await
        .unwrap();
    let err = store.approvals("u1").await.unwrap_err();
    assert!(
        matches!(&err, StoreError::Row { column: "kind", value, .. } if value == "Question"),
        "{err}"
    );
    store.close().await;
}

#[tokio::test]
async fn a_decision_made_through_the_api_is_known_by_its_digest_and_refusals_are_listed_until_its_run_goes()
 {
    for (store, _dir) in stores().await {
        store.append(&run("u1"), 1, &bodies(1..=1)).await.unwrap();
        assert!(
            !store
                .is_api_decision("u1", "approval-1", "d1")
                .await
                .unwrap()
        );
        store
            .record_api_decision("u1", "approval-1", "d1")
            .await
            .unwrap();
        // Recording twice (a retried request) is no error.
        store
            .record_api_decision("u1", "approval-1", "d1")
            .await
            .unwrap();
        assert!(
            store
                .is_api_decision("u1", "approval-1", "d1")
                .await
                .unwrap()
        );
        for (uid, id, digest) in [
            ("u1", "approval-2", "d1"),
            ("u1", "approval-1", "d2"),
            ("u2", "approval-1", "d1"),
        ] {
            assert!(
                !store.is_api_decision(uid, id, digest).await.unwrap(),
                "{uid} {id} {digest}"
            );
        }
        store
            .record_api_decision("u1", "approval-1", "d3")
            .await
            .unwrap();
        store
            .forget_api_decision("u1", "approval-1", "d3")
            .await
            .unwrap();
        assert!(
            !store
                .is_api_decision("u1", "approval-1", "d3")
                .await
                .unwrap()
        );
        store
            .refuse("u1", "approval-2", 4, "by hand")
            .await
            .unwrap();
        store.refuse("u1", "approval-1", 2, "digest").await.unwrap();
        assert_eq!(
            store.refusals("u1").await.unwrap(),
            vec![
                ("approval-1".to_owned(), 2, "digest".to_owned()),
                ("approval-2".to_owned(), 4, "by hand".to_owned())
            ]
        );
        store.delete_run("u1").await.unwrap();
        assert!(
            !store
                .is_api_decision("u1", "approval-1", "d1")
                .await
                .unwrap()
        );
        assert!(store.refusals("u1").await.unwrap().is_empty());
        store.close().await;
    }
}
