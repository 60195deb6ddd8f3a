//! The short chaos soak CI runs (issue 26; `tests/src/soak.rs` says what it does and checks):
//! 40 runs, some asking a person, under 8 faults drawn from a fixed seed, every invariant
//! holding; and 20 runs while the sidecar's PostgreSQL server is restarted and killed. `ORRERY_SOAK_SEED`, `ORRERY_SOAK_RUNS` and `ORRERY_SOAK_FAULTS` change it; the
//! long soak is the `soak` benchmark binary (`docs/reliability.md`).
//!
//! Control plane: `ORRERY_TESTENV_KUBECONFIG` (set by `tests/e2e.sh`), else one started for
//! this test binary. Needs root and runc (the runners run as containers of the dev node), and
//! PostgreSQL (the sidecar's store).

use anyhow::{Result, ensure};
use orrery_tests::soak::{Chaos, SoakOptions, soak};

fn setting(name: &str, default: u64) -> Result<u64> {
    match std::env::var(name) {
        Ok(v) => Ok(v.parse()?),
        Err(_) => Ok(default),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forty_runs_under_eight_seeded_faults_keep_every_invariant() -> Result<()> {
    let options = SoakOptions {
        seed: setting("ORRERY_SOAK_SEED", 26)?,
        runs: usize::try_from(setting("ORRERY_SOAK_RUNS", 40)?)?,
        faults: usize::try_from(setting("ORRERY_SOAK_FAULTS", 8)?)?,
        prefix: "soak".into(),
        kinds: Vec::new(),
        chart: false,
    };
    let report = soak(&options).await?;
    println!("{}", report.table());
    ensure!(report.held(), "an invariant broke:\n{}", report.table());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_runs_keep_every_event_once_and_in_order_while_postgresql_is_restarted_and_killed()
-> Result<()> {
    // Two clean restarts and two SIGKILLs of every PostgreSQL process, while the runs post
    // their events and their owner follows each live.
    let options = SoakOptions {
        seed: 27,
        runs: 20,
        faults: 4,
        prefix: "soak-pg".into(),
        kinds: vec![Chaos::DatabaseRestarted, Chaos::DatabaseKilled],
        chart: false,
    };
    let report = soak(&options).await?;
    println!("{}", report.table());
    ensure!(report.held(), "an invariant broke:\n{}", report.table());
    for kind in &options.kinds {
        ensure!(
            report.faults.get(kind) == Some(&2),
            "{} twice: {:?}",
            kind.name(),
            report.faults
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chart_with_two_replicas_keeps_every_invariant_while_its_leader_standby_sidecar_api_server_and_database_fail()
-> Result<()> {
    // Every fault of the chart's system once: the leader's and a standby's pod deleted, a
    // sidecar container killed, a runner pod deleted, the API server stopped, the database's
    // connections cut, the server restarted and killed.
    let options = SoakOptions {
        seed: 28,
        runs: 24,
        faults: 8,
        prefix: "soak-chart".into(),
        kinds: Vec::new(),
        chart: true,
    };
    let report = soak(&options).await?;
    println!("{}", report.table());
    ensure!(report.held(), "an invariant broke:\n{}", report.table());
    for kind in Chaos::CHART {
        ensure!(
            report.faults.get(&kind).is_some_and(|n| *n >= 1) || kind == Chaos::Runner,
            "{} at least once: {:?}",
            kind.name(),
            report.faults
        );
    }
    Ok(())
}
