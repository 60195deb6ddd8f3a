//! `orrery egress-check`: whether this pod's network lets it reach what a runner pod must never
//! reach, for a platform team to run on its own cluster in a pod made like a runner pod and
//! held by a policy made like a run's (`deploy/egress-check.yaml`; docs/run-on-a-cluster.md).
//! A cluster whose network plugin does not enforce NetworkPolicies lets it through, and a run
//! there could reach the cloud's metadata service or the API server (attack 48).
//!
//! It tries a TCP connection to each target: by default the cloud metadata address
//! (169.254.169.254:80), the API server the pod is told of (`KUBERNETES_SERVICE_HOST` and
//! `_PORT`), and a public address (1.1.1.1:443). The report is one JSON line on standard output
//! and in the termination log: each target, whether it was reached, and why not.
//!
//! Exit codes: 0 nothing was reached, 1 something was (the network lets a runner out),
//! 2 a target is not `HOST:PORT`.

use super::run::{TERMINATION_LOG, error, runtime};
use super::{EXIT_INVALID, EXIT_OK, EXIT_UNREADABLE};
use clap::Args;
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

/// The cloud metadata address (AWS, GCP, Azure, OpenStack answer on it).
pub const METADATA_TARGET: &str = "169.254.169.254:80";
/// A public address (Cloudflare's resolver, answering HTTPS).
pub const PUBLIC_TARGET: &str = "1.1.1.1:443";

/// Arguments of `orrery egress-check`.
#[derive(Debug, Args)]
#[command(
    after_help = "Without --target it tries the cloud metadata address (169.254.169.254:80), the API server \
($KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, set in every pod) and a public address (1.1.1.1:443). \
A runner pod under its run's NetworkPolicy must reach none of them.\n\n\
Exit codes: 0 nothing was reached, 1 something was (the network does not hold a runner in), 2 usage."
)]
pub struct EgressCheckArgs {
    /// A target to try instead of the defaults (repeatable): `HOST:PORT`, `[IPv6]:PORT`.
    #[arg(long = "target", value_name = "HOST:PORT")]
    pub targets: Vec<String>,
    /// Seconds each connection may take before it counts as not reached: 1 to 60.
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 3,
        value_parser = clap::value_parser!(u64).range(1..=60)
    )]
    pub timeout: u64,
    /// Where the report is written besides standard output (the container's
    /// `terminationMessagePath`).
    #[arg(long, value_name = "FILE", default_value = TERMINATION_LOG)]
    pub termination_log: PathBuf,
}

/// What became of one target.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct Tried {
    /// As given.
    pub target: String,
    /// Whether a connection was made.
    pub reached: bool,
    /// Why not, when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The report.
#[derive(Debug, Serialize)]
pub struct EgressReport {
    /// True when nothing was reached.
    pub held: bool,
    /// Each target in order.
    pub targets: Vec<Tried>,
}

/// The targets to try: `given`, or the defaults with the API server the environment names.
pub fn targets(given: &[String], env: impl Fn(&str) -> Option<String>) -> Vec<String> {
    if !given.is_empty() {
        return given.to_vec();
    }
    let mut out = vec![METADATA_TARGET.to_owned()];
    if let (Some(host), Some(port)) = (
        env("KUBERNETES_SERVICE_HOST"),
        env("KUBERNETES_SERVICE_PORT"),
    ) {
        out.push(if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        });
    }
    out.push(PUBLIC_TARGET.to_owned());
    out
}

/// Whether `target` is `HOST:PORT` (a bracketed IPv6 address, an IPv4 address or a name, and a
/// port 1 to 65535).
pub fn well_formed(target: &str) -> bool {
    let Some((host, port)) = target.rsplit_once(':') else {
        return false;
    };
    let host_ok = if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        inner.parse::<std::net::Ipv6Addr>().is_ok()
    } else {
        !host.is_empty() && !host.contains(['[', ']', ':', '/', ' ']) && host.len() <= 253
    };
    host_ok && port.parse::<u16>().is_ok_and(|p| p > 0)
}

/// Tries one target.
async fn try_one(target: &str, timeout: Duration) -> Tried {
    let result = tokio::time::timeout(timeout, tokio::net::TcpStream::connect(target)).await;
    let (reached, error) = match result {
        Ok(Ok(_)) => (true, None),
        Ok(Err(e)) => (false, Some(e.to_string())),
        Err(_) => (
            false,
            Some(format!("no answer within {} s", timeout.as_secs())),
        ),
    };
    Tried {
        target: target.to_owned(),
        reached,
        error,
    }
}

/// Tries every target, each with `timeout`, all at once.
pub async fn check(targets: &[String], timeout: Duration) -> EgressReport {
    let tried = futures::future::join_all(targets.iter().map(|t| try_one(t, timeout))).await;
    EgressReport {
        held: tried.iter().all(|t| !t.reached),
        targets: tried,
    }
}

/// Runs `orrery egress-check`.
pub fn run(args: &EgressCheckArgs) -> u8 {
    let targets = targets(&args.targets, |k| std::env::var(k).ok());
    if let Some(bad) = targets.iter().find(|t| !well_formed(t)) {
        error(&format!(
            "--target {bad:?}: not HOST:PORT (e.g. 10.0.0.1:443, [fd00::1]:443, kubernetes.default.svc:443)"
        ));
        return EXIT_UNREADABLE;
    }
    let runtime = match runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let report = runtime.block_on(check(&targets, Duration::from_secs(args.timeout)));
    runtime.shutdown_timeout(Duration::from_millis(200));
    let line = serde_json::to_string(&report).unwrap_or_else(|_| "{}".into());
    println!("{line}");
    if let Err(e) = std::fs::write(&args.termination_log, format!("{line}\n")) {
        error(&format!(
            "{}: cannot write the report: {e}",
            args.termination_log.display()
        ));
    }
    if report.held {
        EXIT_OK
    } else {
        let reached: Vec<&str> = report
            .targets
            .iter()
            .filter(|t| t.reached)
            .map(|t| t.target.as_str())
            .collect();
        error(&format!(
            "reached {}: this pod's network does not hold a runner in; is the network plugin enforcing NetworkPolicies?",
            reached.join(", ")
        ));
        EXIT_INVALID
    }
}

#[cfg(test)]
#[allow(clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_the_metadata_address_the_api_server_and_a_public_address() {
        let env = |k: &str| match k {
            "KUBERNETES_SERVICE_HOST" => Some("10.96.0.1".to_owned()),
            "KUBERNETES_SERVICE_PORT" => Some("443".to_owned()),
            _ => None,
        };
        assert_eq!(
            targets(&[], env),
            ["169.254.169.254:80", "10.96.0.1:443", "1.1.1.1:443"]
        );
        let v6 = |k: &str| match k {
            "KUBERNETES_SERVICE_HOST" => Some("fd00::1".to_owned()),
            "KUBERNETES_SERVICE_PORT" => Some("6443".to_owned()),
            _ => None,
        };
        assert_eq!(targets(&[], v6)[1], "[fd00::1]:6443");
        assert_eq!(targets(&[], |_| None).len(), 2, "no API server named");
        assert_eq!(targets(&["a:1".to_owned()], env), ["a:1"]);
    }

    #[test]
    fn a_target_must_be_host_and_port() {
        for good in [
            "10.0.0.1:443",
            "[fd00::1]:443",
            "kubernetes.default.svc:443",
        ] {
            assert!(well_formed(good), "{good}");
        }
        for bad in [
            "10.0.0.1",
            "10.0.0.1:0",
            "10.0.0.1:70000",
            ":443",
            "fd00::1:443",
            "[nope]:1",
            "a b:1",
        ] {
            assert!(!well_formed(bad), "{bad}");
        }
    }

    #[tokio::test]
    async fn a_listening_address_is_reached_and_a_closed_one_is_not() {
        let open = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map(|l| (l.local_addr(), l));
        let Ok((Ok(addr), _listener)) = open else {
            panic!("a loopback listener")
        };
        // A port just freed: nothing listens there.
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").map(|l| l.local_addr());
            match l {
                Ok(Ok(a)) => a,
                _ => panic!("a loopback port"),
            }
        };
        let report = check(
            &[addr.to_string(), closed.to_string()],
            Duration::from_secs(2),
        )
        .await;
        assert!(!report.held);
        assert!(report.targets[0].reached);
        assert!(!report.targets[1].reached && report.targets[1].error.is_some());
        let held = check(&[closed.to_string()], Duration::from_secs(2)).await;
        assert!(held.held);
    }
}
