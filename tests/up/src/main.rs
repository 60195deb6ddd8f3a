//! `orrery-up`, what `orrery up` runs: the whole system on this machine (see
//! `orrery_up`). In the foreground it stays up until Ctrl-C or SIGTERM and then stops
//! everything it started; `--detach` leaves it running in the background (log in the state
//! directory) once it is ready; `--status` and `--down` find it through the state directory.

use std::path::PathBuf;
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;
use kube::Api;
use kube::api::ListParams;
use orrery_crds::StudioRun;
use orrery_up::{self as up, Options, Running, state};
use tokio::signal::unix::{SignalKind, signal};

/// The whole Orrery Studio system on this machine: a local control plane, a development node
/// (pods as runc containers), the Helm chart, the demo fleet and the examples; then a
/// critic-loop StudioRun followed live. Stays up until Ctrl-C; nothing is left running after.
#[derive(Debug, Parser)]
#[command(name = "orrery up", bin_name = "orrery up")]
struct Cli {
    /// Start in the background and return once everything is up (the log goes to
    /// <state-dir>/up.log); stop it with --down.
    #[arg(long, conflicts_with_all = ["status", "down"])]
    detach: bool,
    /// Say whether an environment is up, what it serves, and its StudioRuns. Exit code 0 up,
    /// 3 not up.
    #[arg(long, conflicts_with = "down")]
    status: bool,
    /// Stop the environment started with --detach (or in another terminal) and wait until
    /// nothing of it runs.
    #[arg(long)]
    down: bool,
    /// Do not start the demo StudioRun.
    #[arg(long)]
    no_run: bool,
    /// Show runs as OpenTelemetry traces: a local receiver takes what the sidecar and the
    /// controller export and writes each run's trace as a tree to <state-dir>/traces.txt (every
    /// span as JSON lines to traces.jsonl).
    #[arg(long, conflicts_with = "otel_endpoint")]
    traces: bool,
    /// Export runs as OpenTelemetry traces to your collector's OTLP/HTTP base URL instead
    /// (e.g. http://127.0.0.1:4318; pods reach the host at the bridge's gateway, 10.213.0.1).
    #[arg(long, value_name = "URL")]
    otel_endpoint: Option<String>,
    /// The sidecar's port on loopback (default 8080 when free, else a free port).
    #[arg(long, value_name = "PORT", default_value_t = 0)]
    sidecar_port: u16,
    /// How pods are networked: `isolated` (a network namespace per pod on the bridge orrery0,
    /// NetworkPolicies enforced with nftables inside it), `host` (the host's network, policies
    /// not enforced) or `auto` (isolated when the bridge can be made, else host, said so).
    #[arg(long, value_name = "MODE", default_value = "auto")]
    pod_network: up::PodNetworkChoice,
    /// Where the cluster's files, the pods' directories and the state go.
    #[arg(long, value_name = "DIR", env = "ORRERY_UP_STATE_DIR")]
    state_dir: Option<PathBuf>,
    /// Set by --detach on the background process it starts.
    #[arg(long, hide = true)]
    detached: bool,
}

/// Exit code of --status when nothing is up.
const EXIT_NOT_UP: u8 = 3;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let state_dir = cli.state_dir.clone().unwrap_or_else(up::default_state_dir);
    // Absolute, so what names it (processes, the detached child's arguments) is recognisable.
    let state_dir = if state_dir.is_absolute() {
        state_dir
    } else {
        std::env::current_dir()
            .map(|d| d.join(&state_dir))
            .unwrap_or(state_dir)
    };
    let result = if cli.status {
        status(&state_dir)
    } else if cli.down {
        down(&state_dir)
    } else if cli.detach {
        detach(&cli, &state_dir)
    } else {
        foreground(&cli, &state_dir)
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("orrery up: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// Writes the state; a failure is reported, never fatal (the clean-up must still run).
fn write_state(state_dir: &std::path::Path, st: &state::UpState) {
    if let Err(e) = state::write(state_dir, st) {
        eprintln!("orrery up: {e:#} (--status and --down will not see this phase)");
    }
}

/// The signals that stop `orrery up`: Ctrl-C, SIGTERM (`--down`), a closed terminal (SIGHUP),
/// SIGQUIT.
struct StopSignals(Vec<(tokio::signal::unix::Signal, &'static str)>);

impl StopSignals {
    fn listen() -> Result<StopSignals> {
        let mut all = Vec::new();
        for (kind, name) in [
            (SignalKind::interrupt(), "Ctrl-C"),
            (SignalKind::terminate(), "SIGTERM"),
            (SignalKind::hangup(), "SIGHUP (the terminal closed)"),
            (SignalKind::quit(), "SIGQUIT"),
        ] {
            all.push((
                signal(kind).with_context(|| format!("listening for {name}"))?,
                name,
            ));
        }
        Ok(StopSignals(all))
    }

    /// The next stop signal's name.
    async fn recv(&mut self) -> &'static str {
        let waits = self.0.iter_mut().map(|(s, name)| {
            let name = *name;
            Box::pin(async move {
                s.recv().await;
                name
            })
        });
        futures::future::select_all(waits).await.0
    }
}

fn foreground(cli: &Cli, state_dir: &std::path::Path) -> Result<u8> {
    std::fs::create_dir_all(state_dir)
        .with_context(|| format!("creating {}", state_dir.display()))?;
    // Held for the whole life of this process: a second `orrery up` on the same state
    // directory is refused here, before it could touch the first one's cluster or pods.
    let lock_path = state_dir.join("up.lock");
    let lock = std::fs::File::create(&lock_path)
        .with_context(|| format!("creating {}", lock_path.display()))?;
    if lock.try_lock().is_err() {
        bail!(
            "already up (another orrery up holds {}): `orrery up --status` shows it, `orrery up \
             --down` stops it",
            lock_path.display()
        );
    }
    if let Some(other) = state::live(state_dir)? {
        bail!(
            "already up (pid {}, state in {}): `orrery up --status` shows it, `orrery up --down` \
             stops it",
            other.pid,
            state_dir.display()
        );
    }
    let mut st = state::UpState::starting();
    if cli.detached {
        st.log = Some(state_dir.join("up.log"));
    }
    state::write(state_dir, &st)?;
    let options = Options {
        state_dir: state_dir.to_path_buf(),
        sidecar_port: cli.sidecar_port,
        demo_run: !cli.no_run,
        pod_network: cli.pod_network,
        traces: match (&cli.otel_endpoint, cli.traces) {
            (Some(url), _) => up::Traces::Endpoint(url.clone()),
            (None, true) => up::Traces::Local,
            (None, false) => up::Traces::Off,
        },
    };
    let rt = runtime()?;
    let code = rt.block_on(async {
        let mut signals = StopSignals::listen()?;
        let mut running = Running::default();
        let started = Instant::now();
        let outcome = tokio::select! {
            r = up::start(&options, &mut running) => Some(r),
            name = signals.recv() => {
                eprintln!("orrery up: {name}: stopping what was started");
                // A build may be running (cargo, go, buildah, helm): it goes too.
                up::stop_builds();
                None
            }
        };
        let code = match outcome {
            Some(Ok(())) => {
                st.phase = state::Phase::Ready;
                st.kubeconfig = running.env.as_ref().map(|e| e.kubeconfig.clone());
                st.server = running.env.as_ref().map(|e| e.server.clone());
                st.kubectl = running
                    .env
                    .as_ref()
                    .and_then(|e| e.bin.as_ref())
                    .map(|b| b.join("kubectl"));
                st.sidecar_url = running.sidecar_url.clone();
                st.banner = running.banner.clone();
                write_state(state_dir, &st);
                let took = up::steps::human(started.elapsed());
                if cli.detached {
                    // `--detach` prints the banner (and how to stop it from there) once it
                    // reads this phase; this log is what it echoes meanwhile.
                    println!("orrery up: ready (up in {took})");
                } else {
                    println!(
                        "\n{}\n\n(up in {took})",
                        up::ready_text(&running.banner, false)
                    );
                }
                let name = signals.recv().await;
                eprintln!("orrery up: {name}: stopping everything");
                0
            }
            Some(Err(e)) => {
                st.phase = state::Phase::Failed;
                st.error = Some(format!("{e:#}"));
                write_state(state_dir, &st);
                eprintln!("orrery up: {e:#}\norrery up: stopping what was started");
                1
            }
            None => 130,
        };
        if st.phase != state::Phase::Failed {
            st.phase = state::Phase::Stopping;
            write_state(state_dir, &st);
        }
        let stopped = running.stop().await;
        state::remove(state_dir);
        match stopped {
            Ok(()) => {
                eprintln!("orrery up: stopped; nothing of it runs now");
                anyhow::Ok(code)
            }
            Err(e) => Err(e),
        }
    });
    // A build step cut short may still be finishing on a blocking thread: do not wait for it.
    rt.shutdown_timeout(Duration::from_secs(5));
    drop(lock);
    code
}

/// Starts this program again in the background, in its own process group (so a Ctrl-C in this
/// terminal does not reach it), and waits until it is ready or has failed.
fn detach(cli: &Cli, state_dir: &std::path::Path) -> Result<u8> {
    use std::os::unix::process::CommandExt;
    std::fs::create_dir_all(state_dir)
        .with_context(|| format!("creating {}", state_dir.display()))?;
    if let Some(other) = state::live(state_dir)? {
        bail!(
            "already up (pid {}): `orrery up --status` shows it, `orrery up --down` stops it",
            other.pid
        );
    }
    let log_path = state_dir.join("up.log");
    let log = std::fs::File::create(&log_path)
        .with_context(|| format!("creating {}", log_path.display()))?;
    let exe = std::env::current_exe().context("locating this program")?;
    let mut args: Vec<String> = vec![
        "--detached".into(),
        "--state-dir".into(),
        state_dir.to_string_lossy().into_owned(),
        "--sidecar-port".into(),
        cli.sidecar_port.to_string(),
        "--pod-network".into(),
        cli.pod_network.as_arg().into(),
    ];
    if cli.no_run {
        args.push("--no-run".into());
    }
    if cli.traces {
        args.push("--traces".into());
    }
    if let Some(url) = &cli.otel_endpoint {
        args.extend(["--otel-endpoint".into(), url.clone()]);
    }
    let mut child = std::process::Command::new(exe)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0)
        .spawn()
        .context("starting orrery up in the background")?;
    eprintln!(
        "orrery up: starting in the background (pid {}); following {} until it is ready …",
        child.id(),
        log_path.display()
    );
    let mut shown = 0usize;
    // A cold start builds for about half an hour on 2 cores: far past that, something hangs.
    let deadline = Instant::now() + Duration::from_secs(90 * 60);
    loop {
        if Instant::now() > deadline {
            bail!(
                "orrery up (pid {}) is still starting after 90 min: its log is {}; `orrery up \
                 --down` stops it",
                child.id(),
                log_path.display()
            );
        }
        std::thread::sleep(Duration::from_millis(500));
        // Echo the log's new lines, so the builds' progress shows here too.
        if let Ok(text) = std::fs::read_to_string(&log_path)
            && text.len() > shown
        {
            eprint!("{}", &text[shown..]);
            shown = text.len();
        }
        if let Some(code) = child.try_wait()? {
            bail!(
                "orrery up stopped while starting ({code}); its log: {}",
                log_path.display()
            );
        }
        if let Some(st) = state::read(state_dir)?
            && st.pid == child.id()
        {
            match st.phase {
                state::Phase::Ready => {
                    println!(
                        "\n{}\n\nRunning in the background (pid {}, log {}).",
                        up::ready_text(&st.banner, true),
                        st.pid,
                        log_path.display()
                    );
                    return Ok(0);
                }
                state::Phase::Failed => bail!(
                    "{}; it is stopping what it started (log: {})",
                    st.error.unwrap_or_default(),
                    log_path.display()
                ),
                state::Phase::Starting | state::Phase::Stopping => {}
            }
        }
    }
}

fn status(state_dir: &std::path::Path) -> Result<u8> {
    let Some(st) = state::live(state_dir)? else {
        let left = up::leftovers::find(state_dir)?;
        if left.is_empty() {
            println!(
                "orrery up: not running (no live environment in {})",
                state_dir.display()
            );
        } else {
            println!(
                "orrery up: not running, but an orrery up that was killed before it could stop \
                 left {} (state in {}): `orrery up --down` removes it, as the next `orrery up` \
                 does",
                left.describe(),
                state_dir.display()
            );
        }
        return Ok(EXIT_NOT_UP);
    };
    println!(
        "orrery up: {:?} (pid {}){}",
        st.phase,
        st.pid,
        st.log
            .as_ref()
            .map(|l| format!(", log {}", l.display()))
            .unwrap_or_default()
    );
    if st.phase != state::Phase::Ready {
        return Ok(0);
    }
    if let Some(server) = &st.server {
        println!("  API server: {server}");
    }
    if let Some(url) = &st.sidecar_url {
        println!("  sidecar:    {url}");
    }
    if let Some(kubeconfig) = &st.kubeconfig {
        println!("  kubeconfig: {}", kubeconfig.display());
        let runs = runtime()?.block_on(async {
            let config = kube::Config::from_custom_kubeconfig(
                kube::config::Kubeconfig::read_from(kubeconfig)?,
                &Default::default(),
            )
            .await?;
            let client = kube::Client::try_from(config)?;
            let api: Api<StudioRun> = Api::all(client);
            anyhow::Ok(api.list(&ListParams::default()).await?.items)
        });
        match runs {
            Ok(runs) => {
                println!("  StudioRuns:");
                for run in runs {
                    let phase = run
                        .status
                        .as_ref()
                        .and_then(|s| s.phase)
                        .map(|p| format!("{p:?}"))
                        .unwrap_or_else(|| "Pending".into());
                    println!(
                        "    {}/{}  {phase}",
                        run.metadata.namespace.unwrap_or_default(),
                        run.metadata.name.unwrap_or_default()
                    );
                }
            }
            Err(e) => println!("  StudioRuns: cannot list ({e:#})"),
        }
    }
    Ok(0)
}

fn down(state_dir: &std::path::Path) -> Result<u8> {
    let Some(st) = state::live(state_dir)? else {
        return down_leftovers(state_dir);
    };
    eprintln!("orrery up: stopping pid {} …", st.pid);
    state::stop(&st, Duration::from_secs(120))?;
    let left = orrery_tests::harness::processes_naming(&state_dir.join("node").to_string_lossy());
    if !left.is_empty() {
        bail!("stopped, but processes of its pods are left: {left:?}");
    }
    println!("orrery up: stopped; nothing of it runs now");
    Ok(0)
}

/// `--down` with no live `orrery up`: removes what one that was killed left, as the next
/// `orrery up` would (`up::leftovers`).
fn down_leftovers(state_dir: &std::path::Path) -> Result<u8> {
    // An `orrery up` starting on this state directory holds the lock before it writes its state:
    // what it starts is not a leftover.
    let lock_path = state_dir.join("up.lock");
    let lock = match std::fs::File::open(&lock_path) {
        Ok(lock) => Some(lock),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("opening {}", lock_path.display())),
    };
    if let Some(lock) = &lock
        && lock.try_lock().is_err()
    {
        bail!(
            "an orrery up is starting on {} (it holds {}): run `orrery up --down` again once \
             `orrery up --status` shows it",
            state_dir.display(),
            lock_path.display()
        );
    }
    let cleared = up::leftovers::clear(state_dir)?;
    if cleared.is_empty() {
        println!(
            "orrery up: not running (no live environment in {}); nothing to stop",
            state_dir.display()
        );
    } else {
        println!(
            "orrery up: not running; removed what an orrery up that was killed left: {}",
            cleared.describe()
        );
    }
    drop(lock);
    Ok(0)
}
