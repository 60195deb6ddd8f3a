//! Running `ip`, `nft` and `unshare`: the command line is kept for the error, with its stderr and
//! a fix.

use std::io::Write;
use std::process::{Command, Stdio};

use super::NetError;

/// The Debian package that provides `program`.
pub fn package_of(program: &str) -> &'static str {
    match program {
        "ip" => "iproute2",
        "nft" => "nftables",
        "unshare" => "util-linux",
        _ => "the package that provides it",
    }
}

/// `program args…` as a shell would show it.
pub fn display(program: &str, args: &[&str]) -> String {
    let mut out = program.to_owned();
    for a in args {
        out.push(' ');
        if a.is_empty() || a.contains(char::is_whitespace) {
            out.push_str(&format!("{a:?}"));
        } else {
            out.push_str(a);
        }
    }
    out
}

/// Runs `program args…` (with `stdin` written to it, if any) and returns its stdout; a failure
/// becomes a [`NetError`] carrying `fix`.
pub fn run(
    program: &str,
    args: &[&str],
    stdin: Option<&str>,
    fix: &str,
) -> Result<String, NetError> {
    let command = match stdin {
        Some(_) => format!("{} < (ruleset)", display(program, args)),
        None => display(program, args),
    };
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            NetError::Missing {
                program: program.to_owned(),
                command: command.clone(),
                fix: format!(
                    "install {} (apt-get install {})",
                    program,
                    package_of(program)
                ),
            }
        } else {
            NetError::Spawn {
                command: command.clone(),
                source,
                fix: fix.to_owned(),
            }
        }
    })?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A failed write shows up as the command's own failure below.
        let _ = pipe.write_all(text.as_bytes());
    }
    let output = child.wait_with_output().map_err(|source| NetError::Spawn {
        command: command.clone(),
        source,
        fix: fix.to_owned(),
    })?;
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
    let fix = if stderr.contains("Operation not permitted") {
        format!("run as root (CAP_NET_ADMIN and CAP_SYS_ADMIN are needed); {fix}")
    } else {
        fix.to_owned()
    };
    Err(NetError::Command {
        command,
        status: output.status.to_string(),
        stderr,
        fix,
    })
}

/// Runs `ip args…`.
pub fn ip(args: &[&str], fix: &str) -> Result<String, NetError> {
    run("ip", args, None, fix)
}

/// Runs `ip args…` and reads its `-j` output as JSON.
pub fn ip_json(args: &[&str], fix: &str) -> Result<serde_json::Value, NetError> {
    let out = ip(args, fix)?;
    if out.trim().is_empty() {
        return Ok(serde_json::Value::Array(Vec::new()));
    }
    serde_json::from_str(&out).map_err(|e| NetError::Output {
        command: display("ip", args),
        problem: e.to_string(),
    })
}
