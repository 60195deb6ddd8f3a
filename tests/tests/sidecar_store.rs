//! The sidecar's event store on both of its databases: one table of cases run against SQLite (a
//! file) and a real PostgreSQL server, then what only PostgreSQL does: several replicas on one
//! database (migrating it together, racing appends, hearing each other's appends through
//! LISTEN/NOTIFY, resyncing after the listener's connection is cut) and password logins.
//!
//! PostgreSQL: `ORRERY_TEST_POSTGRES_URL`, else a server started for this test binary
//! (`orrery_tests::postgres`; needs the `postgresql` package: `scripts/test.sh` installs it).
//! `cargo test -p orrery-tests --test sidecar_store`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use orrery_operator::sidecar::store::{
    Appended, Backend, Listener, RunRecord, Store, StoreError, StoredEvent, Wake,
};
use orrery_tests::postgres;
use sqlx::Connection as _;

/// How long a wake-up may take to arrive.
const WAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What an append should return.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// `Ok(Appended { stored, duplicates, last_seq })`.
    Stored(u64, u64, u64),
    /// `Err(Gap { expected })`.
    Gap(u64),
    /// `Err(Ended { last })`: the run's run.end is stored at `last`.
    Ended(u64),
}

/// One step of a case; runs are named by UID (namespace `ns`, name `run-<uid>`).
#[derive(Clone, Copy, Debug)]
enum Step {
    /// Appends the events `first..=last` of a run.
    Append(&'static str, u64, u64, Expect),
    /// Appends no events; expects the run's last seq back.
    AppendNone(&'static str, u64),
    /// Appends the run's `run.end` as event `seq`; expects it stored.
    AppendEnd(&'static str, u64),
    /// `events_after(run, after, limit)` returns these seqs, each with its body.
    Events(&'static str, u64, u32, &'static [u64]),
    /// `last_seq(run)`.
    LastSeq(&'static str, u64),
    /// `delete_run(run)` deletes this many events.
    Delete(&'static str, u64),
    /// `runs()` lists these UIDs, in this order.
    Runs(&'static [&'static str]),
}

use Expect::{Ended, Gap, Stored};
use Step::{Append, AppendEnd, AppendNone, Delete, Events, LastSeq, Runs};

/// The behaviour both databases must share.
const CASES: &[(&str, &[Step])] = &[
    (
        "a first batch is stored and read back",
        &[
            Append("u1", 1, 3, Stored(3, 0, 3)),
            Events("u1", 0, 10, &[1, 2, 3]),
            LastSeq("u1", 3),
            Runs(&["u1"]),
        ],
    ),
    (
        "a replayed batch stores nothing twice",
        &[
            Append("u1", 1, 3, Stored(3, 0, 3)),
            Append("u1", 1, 3, Stored(0, 3, 3)),
            Append("u1", 2, 3, Stored(0, 2, 3)),
            Events("u1", 0, 10, &[1, 2, 3]),
        ],
    ),
    (
        "a batch past a gap is refused with the seq expected and stores nothing",
        &[
            Append("u1", 1, 2, Stored(2, 0, 2)),
            Append("u1", 4, 6, Gap(3)),
            LastSeq("u1", 2),
            Events("u1", 0, 10, &[1, 2]),
            Append("u1", 3, 6, Stored(4, 0, 6)),
        ],
    ),
    (
        "a new run's first batch starts at seq 1",
        &[Append("u1", 2, 3, Gap(1)), LastSeq("u1", 0), Runs(&[])],
    ),
    (
        "a partly stored batch stores only its new events",
        &[
            Append("u1", 1, 3, Stored(3, 0, 3)),
            Append("u1", 2, 5, Stored(2, 2, 5)),
            Events("u1", 0, 10, &[1, 2, 3, 4, 5]),
        ],
    ),
    (
        "events after a cursor come in pages in seq order",
        &[
            Append("u1", 1, 10, Stored(10, 0, 10)),
            Events("u1", 0, 4, &[1, 2, 3, 4]),
            Events("u1", 4, 4, &[5, 6, 7, 8]),
            Events("u1", 8, 4, &[9, 10]),
            Events("u1", 10, 4, &[]),
            Events("u2", 0, 4, &[]),
        ],
    ),
    (
        "runs keep their events apart",
        &[
            Append("u2", 1, 2, Stored(2, 0, 2)),
            Append("u1", 1, 3, Stored(3, 0, 3)),
            LastSeq("u1", 3),
            LastSeq("u2", 2),
            Events("u2", 0, 10, &[1, 2]),
            Runs(&["u1", "u2"]),
        ],
    ),
    (
        "deleting a run removes its events and record and nothing else",
        &[
            Append("u1", 1, 3, Stored(3, 0, 3)),
            Append("u2", 1, 2, Stored(2, 0, 2)),
            Delete("u1", 3),
            LastSeq("u1", 0),
            Events("u1", 0, 10, &[]),
            Events("u2", 0, 10, &[1, 2]),
            Runs(&["u2"]),
            Delete("u1", 0),
            Append("u1", 1, 1, Stored(1, 0, 1)),
        ],
    ),
    (
        "an empty batch stores nothing and returns the last seq",
        &[
            AppendNone("u1", 0),
            Runs(&[]),
            Append("u1", 1, 2, Stored(2, 0, 2)),
            AppendNone("u1", 2),
        ],
    ),
    (
        "a batch bigger than one insert statement is stored whole",
        &[
            Append("u1", 1, 2500, Stored(2500, 0, 2500)),
            Append("u1", 2499, 2600, Stored(100, 2, 2600)),
            Events("u1", 2597, 10, &[2598, 2599, 2600]),
        ],
    ),
    (
        "nothing is stored after a run's run.end, and a replay of what is stored still is fine",
        &[
            Append("u1", 1, 3, Stored(3, 0, 3)),
            AppendEnd("u1", 4),
            Append("u1", 5, 6, Ended(4)),
            Append("u1", 2, 5, Ended(4)),
            Append("u1", 1, 3, Stored(0, 3, 4)),
            AppendEnd("u1", 4),
            LastSeq("u1", 4),
            Append("u2", 1, 2, Stored(2, 0, 2)),
        ],
    ),
];

fn run(uid: &str) -> RunRecord {
    RunRecord {
        uid: uid.to_string(),
        namespace: "ns".to_string(),
        name: format!("run-{uid}"),
    }
}

fn body(uid: &str, seq: u64) -> String {
    format!(r#"{{"runId":"{uid}","seq":{seq}}}"#)
}

fn bodies(uid: &str, first: u64, last: u64) -> Vec<String> {
    (first..=last).map(|seq| body(uid, seq)).collect()
}

async fn run_step(store: &Store, step: Step) -> Result<()> {
    match step {
        Append(uid, first, last, expect) => {
            let got = store
                .append(&run(uid), first, &bodies(uid, first, last))
                .await;
            match (expect, got) {
                (Stored(stored, duplicates, last_seq), Ok(got)) => {
                    let want = Appended {
                        stored,
                        duplicates,
                        last_seq,
                    };
                    ensure!(got == want, "got {got:?}, want {want:?}");
                }
                (Gap(expected), Err(StoreError::Gap { expected: got })) => {
                    ensure!(got == expected, "gap expects {got}, want {expected}");
                }
                (Ended(last), Err(StoreError::Ended { last: got })) => {
                    ensure!(got == last, "ended at {got}, want {last}");
                }
                (expect, got) => bail!("got {got:?}, want {expect:?}"),
            }
        }
        AppendEnd(uid, seq) => {
            let end = format!(r#"{{"runId":"{uid}","seq":{seq},"type":"run.end"}}"#);
            let got = store.append(&run(uid), seq, &[end]).await?;
            ensure!(got.last_seq == seq, "got {got:?}");
        }
        AppendNone(uid, last_seq) => {
            let got = store.append(&run(uid), 1, &[]).await?;
            let want = Appended {
                stored: 0,
                duplicates: 0,
                last_seq,
            };
            ensure!(got == want, "got {got:?}, want {want:?}");
        }
        Events(uid, after, limit, seqs) => {
            let got = store.events_after(uid, after, limit).await?;
            let want: Vec<StoredEvent> = seqs
                .iter()
                .map(|&seq| StoredEvent {
                    seq,
                    body: body(uid, seq),
                })
                .collect();
            ensure!(got == want, "got {got:?}, want {want:?}");
        }
        LastSeq(uid, want) => {
            let got = store.last_seq(uid).await?;
            ensure!(got == want, "last_seq {got}, want {want}");
        }
        Delete(uid, want) => {
            let got = store.delete_run(uid).await?;
            ensure!(got == want, "deleted {got}, want {want}");
        }
        Runs(uids) => {
            let got = store.runs().await?;
            let want: Vec<RunRecord> = uids.iter().map(|uid| run(uid)).collect();
            ensure!(got == want, "got {got:?}, want {want:?}");
        }
    }
    Ok(())
}

/// Runs every case on a fresh store from `open`; reports every failing step.
async fn run_cases<F, Fut>(backend: Backend, open: F) -> Result<()>
where
    F: Fn(&'static str) -> Fut,
    Fut: std::future::Future<Output = Result<(Store, Option<TempDir>)>>,
{
    let mut failures = Vec::new();
    for (name, steps) in CASES {
        let (store, _dir) = open(name)
            .await
            .with_context(|| format!("{name}: opening"))?;
        ensure!(store.backend() == backend, "{store:?}");
        for (i, step) in steps.iter().enumerate() {
            if let Err(e) = run_step(&store, *step).await {
                failures.push(format!("{name}: step {} {step:?}: {e:#}", i + 1));
                break;
            }
        }
        store.close().await;
    }
    ensure!(failures.is_empty(), "{backend:?}:\n{}", failures.join("\n"));
    Ok(())
}

/// A directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(hint: &str) -> Result<TempDir> {
        let hint: String = hint
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .take(20)
            .collect();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_nanos();
        let dir = std::env::temp_dir().join(format!(
            "orrery-store-{hint}-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir)?;
        Ok(TempDir(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn sqlite_store(hint: &'static str) -> Result<(Store, Option<TempDir>)> {
    let dir = TempDir::new(hint)?;
    let url = format!("sqlite:{}", dir.0.join("events.db").display());
    Ok((Store::open(&url).await?, Some(dir)))
}

async fn postgres_store(hint: &'static str) -> Result<(Store, Option<TempDir>)> {
    let url = postgres::database(hint).await?;
    Ok((Store::open(&url).await?, None))
}

#[tokio::test]
async fn every_store_case_holds_on_sqlite() -> Result<()> {
    run_cases(Backend::Sqlite, sqlite_store).await
}

#[tokio::test]
async fn every_store_case_holds_on_postgresql() -> Result<()> {
    run_cases(Backend::Postgres, postgres_store).await
}

#[tokio::test]
async fn replicas_opening_a_new_database_at_once_apply_each_migration_once() -> Result<()> {
    let url = postgres::database("migrate_at_once").await?;
    let (a, b, c) = tokio::join!(Store::open(&url), Store::open(&url), Store::open(&url));
    let (a, b, c) = (a?, b?, c?);
    let mut conn = sqlx::PgConnection::connect(&url).await?;
    let versions: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM orrery_schema_migrations ORDER BY version")
            .fetch_all(&mut conn)
            .await?;
    // Every migration once, in order: 1, 2, … with none twice.
    let expected: Vec<i64> = (1..=i64::try_from(versions.len())?).collect();
    assert!(!versions.is_empty());
    assert_eq!(versions, expected);
    // Opening again applies nothing.
    let d = Store::open(&url).await?;
    let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM orrery_schema_migrations")
        .fetch_one(&mut conn)
        .await?;
    assert_eq!(count, i64::try_from(versions.len())?);
    for store in [a, b, c, d] {
        store.close().await;
    }
    Ok(())
}

#[tokio::test]
async fn racing_appends_of_one_run_on_two_replicas_store_every_event_once() -> Result<()> {
    let url = postgres::database("racing_appends").await?;
    let a = Store::open(&url).await?;
    let b = Store::open(&url).await?;
    // Every batch starts at 1 (a runner resending from the start), with its own length: they
    // overlap in every way, and none starts past a gap.
    let mut tasks = tokio::task::JoinSet::new();
    for (i, last) in [40u64, 80, 120, 160, 200, 60, 100, 140]
        .into_iter()
        .enumerate()
    {
        let store = if i % 2 == 0 { a.clone() } else { b.clone() };
        tasks.spawn(async move { store.append(&run("u1"), 1, &bodies("u1", 1, last)).await });
    }
    let mut stored = 0;
    while let Some(done) = tasks.join_next().await {
        stored += done??.stored;
    }
    assert_eq!(stored, 200, "each event is stored by exactly one append");
    let events = a.events_after("u1", 0, 1000).await?;
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=200).collect::<Vec<_>>());
    assert_eq!(b.last_seq("u1").await?, 200);
    a.close().await;
    b.close().await;
    Ok(())
}

async fn next_wake(listener: &mut Listener) -> Result<Wake> {
    tokio::time::timeout(WAKE_TIMEOUT, listener.next())
        .await
        .context("no wake-up within the timeout")?
        .context("listener")
}

#[tokio::test]
async fn a_replica_hears_another_replicas_append_and_reads_it_by_cursor() -> Result<()> {
    let url = postgres::database("hears_append").await?;
    let a = Store::open(&url).await?;
    let b = Store::open(&url).await?;
    let mut listener = a.listen().await?.context("PostgreSQL has a listener")?;

    b.append(&run("u1"), 1, &bodies("u1", 1, 3)).await?;
    let wake = next_wake(&mut listener).await?;
    assert_eq!(
        wake,
        Wake::Appended {
            run_uid: "u1".into(),
            last_seq: 3
        }
    );
    assert_eq!(a.events_after("u1", 0, 10).await?.len(), 3);

    // A replay stores nothing and wakes nobody: the next wake is the append after it.
    let replay = b.append(&run("u1"), 1, &bodies("u1", 1, 3)).await?;
    assert_eq!(replay.stored, 0);
    let refused = b.append(&run("u1"), 9, &bodies("u1", 9, 9)).await;
    assert!(
        matches!(refused, Err(StoreError::Gap { expected: 4 })),
        "{refused:?}"
    );
    b.append(&run("u2"), 1, &bodies("u2", 1, 1)).await?;
    let wake = next_wake(&mut listener).await?;
    assert_eq!(
        wake,
        Wake::Appended {
            run_uid: "u2".into(),
            last_seq: 1
        }
    );
    drop(listener);
    a.close().await;
    b.close().await;
    Ok(())
}

#[tokio::test]
async fn a_listener_whose_connection_is_cut_resyncs_and_hears_later_appends() -> Result<()> {
    let url = postgres::database("listener_cut").await?;
    let a = Store::open(&url).await?;
    let b = Store::open(&url).await?;
    let mut listener = a.listen().await?.context("PostgreSQL has a listener")?;

    // Cut the listener's connection, as a server restart or a network failure would.
    let mut conn = sqlx::PgConnection::connect(&url).await?;
    let cut: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND pid <> pg_backend_pid() \
         AND query LIKE 'LISTEN%'",
    )
    .fetch_all(&mut conn)
    .await?;
    assert_eq!(cut, vec![true], "exactly one listening connection is cut");

    assert_eq!(next_wake(&mut listener).await?, Wake::Resync);
    // It listens again on a new connection.
    b.append(&run("u1"), 1, &bodies("u1", 1, 2)).await?;
    assert_eq!(
        next_wake(&mut listener).await?,
        Wake::Appended {
            run_uid: "u1".into(),
            last_seq: 2
        }
    );
    drop(listener);
    a.close().await;
    b.close().await;
    Ok(())
}

/// Appends events `first..=last` of `uid`, trying again for a while as the sidecar's ingest
/// would (the runner posts again) while the server comes back.
async fn append_when_up(store: &Store, uid: &str, first: u64, last: u64) -> Result<Appended> {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        match store
            .append(&run(uid), first, &bodies(uid, first, last))
            .await
        {
            Ok(appended) => return Ok(appended),
            Err(e) if std::time::Instant::now() < deadline => {
                eprintln!("append {first}..={last}: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_whose_server_is_restarted_and_then_killed_keeps_every_event_once_and_listens_again()
-> Result<()> {
    // A server of this test's own: it is stopped and killed.
    let server = tokio::task::spawn_blocking(postgres::Server::start_crash_safe).await??;
    let url = server.create_database("restarted").await?;
    let store = Store::open(&url).await?;
    let mut listener = store.listen().await?.context("PostgreSQL has a listener")?;
    append_when_up(&store, "u1", 1, 3).await?;
    assert_eq!(
        next_wake(&mut listener).await?,
        Wake::Appended {
            run_uid: "u1".into(),
            last_seq: 3
        }
    );

    let server = std::sync::Arc::new(server);
    let mut last = 3;
    for (down, how) in [("stop", "a clean restart"), ("kill", "SIGKILL")] {
        let s = server.clone();
        tokio::task::spawn_blocking(move || match down {
            "stop" => s.stop(),
            _ => s.kill(),
        })
        .await??;
        // Down: reading fails (or waits for a connection, up to the pool's timeout).
        let refused = tokio::time::timeout(Duration::from_secs(2), store.last_seq("u1")).await;
        assert!(!matches!(refused, Ok(Ok(_))), "after {how}: {refused:?}");
        let s = server.clone();
        tokio::task::spawn_blocking(move || s.start_again()).await??;
        // Up again: the events go on from where they were, none lost or repeated; the
        // listener says it lost its connection (read again from the cursor: what was
        // announced meanwhile is gone), listens on a new one and hears the appends after.
        let listening = async {
            let mut woke = Vec::new();
            loop {
                let wake = next_wake(&mut listener).await?;
                woke.push(wake.clone());
                if wake
                    == (Wake::Appended {
                        run_uid: "u1".into(),
                        last_seq: last + 2,
                    })
                {
                    return anyhow::Ok(woke);
                }
            }
        };
        let appending = async {
            tokio::time::sleep(Duration::from_secs(2)).await;
            append_when_up(&store, "u1", last + 1, last + 2).await
        };
        let (woke, appended) = tokio::join!(listening, appending);
        let (woke, appended) = (woke?, appended?);
        assert_eq!(
            (appended.stored, appended.last_seq),
            (2, last + 2),
            "after {how}"
        );
        last += 2;
        assert!(woke.contains(&Wake::Resync), "after {how}: {woke:?}");
    }
    let events: Vec<u64> = store
        .events_after("u1", 0, 100)
        .await?
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(events, (1..=7).collect::<Vec<_>>());
    drop(listener);
    store.close().await;
    tokio::task::spawn_blocking(move || drop(server)).await?;
    Ok(())
}

#[tokio::test]
async fn a_url_with_a_password_logs_in_and_a_wrong_password_is_refused_without_showing_it()
-> Result<()> {
    let server = tokio::task::spawn_blocking(postgres::shared).await??;
    if !server.checks_passwords() {
        eprintln!(
            "{} names a server whose password checks are unknown: skipped",
            postgres::URL_ENV
        );
        return Ok(());
    }
    let url = server.create_database("password_login").await?;
    let db = url.rsplit('/').next().context("database name")?.to_string();
    let role = format!("orrery_pw_{}", std::process::id());
    server
        .execute(
            &url,
            &format!("CREATE ROLE {role} LOGIN PASSWORD 'right-pw-123'"),
        )
        .await?;
    server
        .execute(&url, &format!(r#"ALTER DATABASE "{db}" OWNER TO {role}"#))
        .await?;

    let store = Store::open(&server.url_as(&db, &role, "right-pw-123")).await?;
    store.append(&run("u1"), 1, &bodies("u1", 1, 1)).await?;
    let shown = format!("{store:?}");
    assert!(
        !shown.contains("right-pw-123") && shown.contains("***"),
        "{shown}"
    );
    store.close().await;

    let err = Store::open(&server.url_as(&db, &role, "wrong-pw-456"))
        .await
        .expect_err("a wrong password is refused");
    let text = format!("{err} {err:?}");
    assert!(matches!(err, StoreError::Open { .. }), "{text}");
    assert!(!text.contains("wrong-pw-456"), "{text}");
    assert!(text.contains(&format!("{role}:***@")), "{text}");
    assert!(text.contains("password authentication failed"), "{text}");
    Ok(())
}

/// The approval calls, the same on both backends: put is idempotent by digest, the first
/// settlement wins, refusals are kept per decision index, decisions made through the API are
/// known by their digest, and all of it goes with the run.
async fn approvals_case(store: &Store) -> Result<()> {
    use orrery_crds::approval::{ApprovalKind, ApprovalRequest, DecisionKind};
    use orrery_operator::sidecar::store::Put;
    let ask = |id: &str, digest: &str| ApprovalRequest {
        id: id.into(),
        kind: ApprovalKind::Approval,
        node: "review".into(),
        prompt: "Publish?".into(),
        text: "the draft".into(),
        digest: digest.into(),
        size: 9,
        complete: true,
        expires_at: "2026-12-02T10:00:00.000Z".into(),
    };
    let r = run("ap");
    ensure!(store.put_approval(&r, &ask("approval-1", "d1")).await? == Put::Created);
    ensure!(store.put_approval(&r, &ask("approval-1", "d1")).await? == Put::Same);
    ensure!(store.put_approval(&r, &ask("approval-1", "d2")).await? == Put::Conflict);
    ensure!(store.put_approval(&r, &ask("approval-2", "d3")).await? == Put::Created);
    let all = store.approvals("ap").await?;
    ensure!(
        all.len() == 2 && all[0].request.text == "the draft" && all[0].is_pending(),
        "{all:?}"
    );
    store.refuse("ap", "approval-1", 0, "digest").await?;
    ensure!(store.refusal("ap", "approval-1", 0).await?.as_deref() == Some("digest"));
    ensure!(store.refusal("ap", "approval-1", 1).await?.is_none());
    ensure!(store.refusals("ap").await? == vec![("approval-1".to_owned(), 0, "digest".to_owned())]);
    // Decisions made through the API, known by their digest (attack 46).
    ensure!(!store.is_api_decision("ap", "approval-1", "x1").await?);
    store.record_api_decision("ap", "approval-1", "x1").await?;
    store.record_api_decision("ap", "approval-1", "x1").await?;
    store.record_api_decision("ap", "approval-1", "x2").await?;
    store.forget_api_decision("ap", "approval-1", "x2").await?;
    ensure!(store.is_api_decision("ap", "approval-1", "x1").await?);
    ensure!(!store.is_api_decision("ap", "approval-1", "x2").await?);
    ensure!(!store.is_api_decision("ap", "approval-2", "x1").await?);
    ensure!(
        store
            .settle("ap", "approval-1", DecisionKind::Approved, Some(1))
            .await?
    );
    ensure!(
        !store
            .settle("ap", "approval-1", DecisionKind::Expired, None)
            .await?,
        "the first settlement wins"
    );
    let one = store
        .approval("ap", "approval-1")
        .await?
        .context("approval-1")?;
    ensure!(
        one.settled == Some(DecisionKind::Approved) && one.settled_index == Some(1),
        "{one:?}"
    );
    ensure!(
        one.request.text.is_empty() && one.request.digest == "d1",
        "the text is dropped once settled, the digest kept: {one:?}"
    );
    store.delete_run("ap").await?;
    ensure!(
        store.approvals("ap").await?.is_empty(),
        "approvals go with their run"
    );
    ensure!(store.refusal("ap", "approval-1", 0).await?.is_none());
    ensure!(!store.is_api_decision("ap", "approval-1", "x1").await?);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_are_kept_settled_once_and_deleted_with_their_run_on_both_backends() -> Result<()>
{
    let (sqlite, _dir) = sqlite_store("approvals").await?;
    approvals_case(&sqlite).await?;
    let (pg, _none) = postgres_store("approvals").await?;
    approvals_case(&pg).await
}

/// A sidecar started by [`Bound::start_when_store_opens`] on `url`, on a free loopback port:
/// its address, and the task that returns once the store opened (or `stop` fired).
async fn start_waiting(
    url: &str,
    stop: tokio::sync::oneshot::Receiver<()>,
) -> Result<(
    std::net::SocketAddr,
    tokio::task::JoinHandle<
        Result<
            Option<orrery_operator::sidecar::process::Bound>,
            orrery_operator::sidecar::process::StartError,
        >,
    >,
)> {
    use orrery_operator::sidecar::process::Bound;
    let address = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
    let verifier = orrery_tests::sidecar_fixture::test_verifier()?;
    let config = orrery_operator::Config::load(
        &orrery_tests::harness::workspace_root()
            .join("examples/operator/config.yaml")
            .to_string_lossy(),
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let kube = kube::Config::new("https://127.0.0.1:1".parse()?);
    let url = url.to_owned();
    let task = tokio::spawn(async move {
        Bound::start_when_store_opens(
            address,
            &url,
            verifier,
            kube,
            std::sync::Arc::new(config),
            &orrery_operator::sidecar::SidecarSettings::default(),
            async move {
                let _ = stop.await;
            },
        )
        .await
    });
    Ok((address, task))
}

#[tokio::test]
async fn a_sidecar_whose_database_is_down_at_start_is_alive_not_ready_and_serves_once_it_is_up()
-> Result<()> {
    let server = tokio::task::spawn_blocking(postgres::Server::start).await??;
    let url = server.create_database("late").await?;
    let server = std::sync::Arc::new(server);
    let s = server.clone();
    tokio::task::spawn_blocking(move || s.stop()).await??;

    let (_keep, stop) = tokio::sync::oneshot::channel();
    let (address, task) = start_waiting(&url, stop).await?;
    let http = reqwest::Client::new();
    let get = |path: &str| http.get(format!("http://{address}{path}")).send();
    // Alive (a restart would not bring the database sooner), not ready, and saying why.
    let mut healthz = None;
    for _ in 0..100 {
        if let Ok(r) = get("/healthz").await {
            healthz = Some(r.status());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    ensure!(healthz == Some(reqwest::StatusCode::OK), "{healthz:?}");
    let readyz = get("/readyz").await?;
    ensure!(readyz.status() == reqwest::StatusCode::SERVICE_UNAVAILABLE);
    let why = readyz.text().await?;
    ensure!(why.contains("the event store is not open yet"), "{why}");
    ensure!(!why.contains("password"), "{why}");
    // The API (a runner's ingest, a person's console) is told to retry.
    let api = get("/api/v1/runs").await?;
    ensure!(api.status() == reqwest::StatusCode::SERVICE_UNAVAILABLE);
    ensure!(
        api.headers().contains_key("retry-after"),
        "{:?}",
        api.headers()
    );
    ensure!(
        !task.is_finished(),
        "it waits for the database, it does not exit"
    );

    let s = server.clone();
    tokio::task::spawn_blocking(move || s.start_again()).await??;
    let bound = tokio::time::timeout(Duration::from_secs(60), task)
        .await
        .context("the store opened within a minute of the database coming up")???
        .context("not stopped")?;
    ensure!(bound.address() == address, "the same port");
    let (stop_serving, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(bound.serve(async move {
        let _ = stopped.await;
    }));
    let readyz = get("/readyz").await?;
    ensure!(
        readyz.status() == reqwest::StatusCode::OK,
        "{:?}",
        readyz.text().await
    );
    let _ = stop_serving.send(());
    serving.await??;
    Ok(())
}

#[tokio::test]
async fn a_sidecar_waiting_for_its_database_stops_when_told_and_a_sqlite_file_it_cannot_open_is_an_error_at_once()
-> Result<()> {
    // Nothing listens on this port: the database never comes.
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let (_, task) =
        start_waiting(&format!("postgres://orrery@127.0.0.1:{port}/none"), stopped).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    ensure!(!task.is_finished(), "it waits");
    let _ = stop.send(());
    let ended = tokio::time::timeout(Duration::from_secs(10), task).await???;
    ensure!(ended.is_none(), "stopped before the store opened");

    let (_keep, stopped) = tokio::sync::oneshot::channel();
    let (_, task) = start_waiting("sqlite:/nonexistent-dir-orrery/events.db", stopped).await?;
    let ended = tokio::time::timeout(Duration::from_secs(10), task).await??;
    match ended {
        Err(orrery_operator::sidecar::process::StartError::Store(StoreError::Open {
            reason,
            ..
        })) => ensure!(reason.contains("does not exist"), "{reason}"),
        Err(e) => bail!("a SQLite file that cannot be opened is a store error: {e}"),
        Ok(_) => bail!("a SQLite file that cannot be opened is an error at once"),
    }
    Ok(())
}
