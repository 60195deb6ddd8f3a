//! The long chaos soak (issue 26): `--runs` StudioRuns, some asking a person, under `--faults`
//! faults drawn from `--seed`, then every invariant checked and printed as a Markdown table
//! (what it does and checks: `tests/src/soak.rs`; CI runs a short one, `tests/tests/e2e_soak.rs`).
//! Exits 1 when an invariant broke. The table of a long run goes into `docs/reliability.md`.
//!
//! ```text
//! cargo build -p orrery-runner --bin orrery -p orrery-operator
//! tests/e2e.sh cargo run -p orrery-bench --bin soak -- [--seed 26] [--runs 1000] [--faults 300] [--chart]
//! ```
//!
//! `--chart` soaks the Helm chart with two operator replicas instead of in-process controllers
//! (it needs the images: `tests/images.sh`-built, as the chart's end-to-end tests do).
//!
//! Needs root and runc (the runners run as containers of the dev node) and PostgreSQL.

use anyhow::{Context, Result, bail};
use orrery_tests::soak::{SoakOptions, soak};

fn args() -> Result<SoakOptions> {
    let mut out = SoakOptions {
        seed: 26,
        runs: 1000,
        faults: 300,
        prefix: "soak".into(),
        kinds: Vec::new(),
        chart: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--chart" {
            out.chart = true;
            continue;
        }
        let value = it
            .next()
            .with_context(|| format!("{flag} needs a number"))?;
        let number = || -> Result<u64> {
            value
                .parse()
                .with_context(|| format!("{flag} needs a number, not {value:?}"))
        };
        match flag.as_str() {
            "--seed" => out.seed = number()?,
            "--runs" => out.runs = usize::try_from(number()?)?,
            "--faults" => out.faults = usize::try_from(number()?)?,
            other => {
                bail!("unknown argument {other}; use --seed N, --runs N, --faults N and --chart")
            }
        }
    }
    Ok(out)
}

#[tokio::main]
async fn main() -> Result<()> {
    let options = args()?;
    let report = soak(&options).await?;
    println!("{}", report.table());
    if !report.held() {
        bail!("an invariant broke (seed {})", options.seed);
    }
    Ok(())
}
