//! `orrery-podtest`: a trivial program the pod executor's tests run as image `orrery/podtest`.
//!
//! It builds a report from its flags, writes it to the file named by `$PODTEST_TERMINATION_FILE`
//! (the container's termination-message path, mapped by the executor), prints it, and exits:
//!
//! ```text
//! orrery-podtest [--message TEXT] [--env NAME]... [--file PATH]... [--args]
//!                [--write PATH=TEXT]... [--sleep SECS] [--ignore-sigterm] [--sigterm-exit N]
//!                [--exit N]
//! ```
//!
//! - `--message TEXT`: a line `TEXT`; `--env NAME`: a line `NAME=<value or <unset>>`;
//!   `--file PATH`: a line `PATH: <content or <error>>`; `--args`: a line per argument
//!   (`arg[i]=…`); `--write PATH=TEXT` writes TEXT to PATH (e.g. into a shared emptyDir);
//! - `--sleep SECS`: wait that long before exiting (the report is written first, and again at
//!   exit);
//! - SIGTERM: adds a line `got SIGTERM` and exits with `--sigterm-exit` (default 143), unless
//!   `--ignore-sigterm` (then only SIGKILL ends it);
//! - exits with `--exit N` (default 0); also exits when its parent process goes away, so a
//!   killed test leaves nothing behind.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use tokio::signal::unix::{SignalKind, signal};

/// Names the file to write the report to.
const TERMINATION_FILE_ENV: &str = "PODTEST_TERMINATION_FILE";

#[derive(Debug, Default)]
struct Opts {
    lines: Vec<String>,
    sleep: Option<Duration>,
    ignore_sigterm: bool,
    sigterm_exit: i32,
    exit: i32,
}

fn parse(args: &[String]) -> Result<Opts> {
    let mut o = Opts {
        sigterm_exit: 143,
        ..Opts::default()
    };
    let mut it = args.iter().enumerate().skip(1);
    while let Some((_, flag)) = it.next() {
        let mut value = || {
            it.next()
                .map(|(_, v)| v.clone())
                .with_context(|| format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--message" => o.lines.push(value()?),
            "--env" => {
                let name = value()?;
                let v = std::env::var(&name).unwrap_or_else(|_| "<unset>".into());
                o.lines.push(format!("{name}={v}"));
            }
            "--file" => {
                let path = value()?;
                let content =
                    std::fs::read_to_string(&path).unwrap_or_else(|e| format!("<error: {e}>"));
                o.lines.push(format!("{path}: {content}"));
            }
            "--args" => o.lines.extend(
                args.iter()
                    .enumerate()
                    .skip(1)
                    .map(|(i, a)| format!("arg[{i}]={a}")),
            ),
            "--write" => {
                let spec = value()?;
                let (path, text) = spec
                    .split_once('=')
                    .with_context(|| format!("--write {spec:?}: expected PATH=TEXT"))?;
                std::fs::write(path, text).with_context(|| format!("writing {path}"))?;
            }
            "--sleep" => o.sleep = Some(Duration::from_secs_f64(value()?.parse()?)),
            "--ignore-sigterm" => o.ignore_sigterm = true,
            "--sigterm-exit" => o.sigterm_exit = value()?.parse()?,
            "--exit" => o.exit = value()?.parse()?,
            other => bail!("unknown flag {other:?}"),
        }
    }
    Ok(o)
}

fn report(lines: &[String]) -> Result<()> {
    let text = lines.join("\n");
    println!("{text}");
    if let Some(path) = std::env::var_os(TERMINATION_FILE_ENV).filter(|p| !p.is_empty()) {
        std::fs::write(&path, &text)
            .with_context(|| format!("writing {}", std::path::Path::new(&path).display()))?;
    }
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let mut opts = parse(&args)?;
    // The handler first: once the lines are out, a SIGTERM is handled (or ignored) as asked.
    let mut sigterm = signal(SignalKind::terminate()).context("installing a SIGTERM handler")?;
    report(&opts.lines)?;
    let parent = std::os::unix::process::parent_id();
    let sleep = tokio::time::sleep(opts.sleep.unwrap_or_default());
    tokio::pin!(sleep);
    let mut orphan_check = tokio::time::interval(Duration::from_millis(500));
    loop {
        tokio::select! {
            _ = &mut sleep => break,
            _ = sigterm.recv() => {
                if !opts.ignore_sigterm {
                    opts.lines.push("got SIGTERM".into());
                    report(&opts.lines)?;
                    std::process::exit(opts.sigterm_exit);
                }
            }
            _ = orphan_check.tick() => {
                if std::os::unix::process::parent_id() != parent {
                    std::process::exit(1);
                }
            }
        }
    }
    report(&opts.lines)?;
    std::process::exit(opts.exit);
}
