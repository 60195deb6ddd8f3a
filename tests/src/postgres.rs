//! A throwaway PostgreSQL server for a test binary, and a fresh database per test.
//!
//! [`database`] returns the URL of a database of its own (`CREATE DATABASE`) on the test
//! binary's one server, [`shared()`], which is, in order:
//! 1. the server `ORRERY_TEST_POSTGRES_URL` names (its user must be allowed to create
//!    databases);
//! 2. otherwise a server started once and shared by every test of the binary: `initdb` into a
//!    temp dir, then `postgres` on 127.0.0.1 at a free port (and a Unix socket in the temp dir),
//!    `fsync=off`. The binaries are the newest under `/usr/lib/postgresql/*/bin`, else those on
//!    `PATH`; without them it fails saying to install the `postgresql` package (`scripts/test.sh`
//!    does). PostgreSQL refuses to run as root: as root, `initdb` and the server run as the
//!    `postgres` user the Debian package creates (`setpriv`), owner of the temp dir.
//!
//! Authentication: the superuser (the user of the URLs) is trusted from 127.0.0.1; other roles
//! need their password (SCRAM), so a test can check a wrong one is refused.
//!
//! Stopping: the server runs under a small `sh` supervisor whose stdin is a pipe from this
//! process. When the pipe closes (the [`Server`] is dropped, or the test binary exits: a static
//! is never dropped, but the kernel closes the pipe) the supervisor stops the server
//! (`pg_ctl stop -m immediate`), waits for it and removes the temp dir, so nothing is left
//! running after the tests (`tests/e2e.sh` checks). This is how [`crate::testenv`]'s control
//! plane stops too (`--exit-on-stdin-eof`).

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, anyhow, bail};
use sqlx::Connection as _;

use crate::harness::free_port;

/// Names a running server to use instead of starting one:
/// `postgres://user[:password]@host:port/db`.
pub const URL_ENV: &str = "ORRERY_TEST_POSTGRES_URL";

/// How long to wait for a started server to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long to wait for the supervisor to stop the server on drop.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);
/// The OS user PostgreSQL runs as when the tests run as root.
const SYSTEM_USER: &str = "postgres";
/// The command prefix that runs a program as [`SYSTEM_USER`] (no intermediate process).
const AS_SYSTEM_USER: &[&str] = &[
    "setpriv",
    "--reuid=postgres",
    "--regid=postgres",
    "--init-groups",
    "--",
];
/// What to run when the binaries are missing.
const INSTALL_HINT: &str = "run `apt-get install -y postgresql` (scripts/test.sh installs it), \
                            or set ORRERY_TEST_POSTGRES_URL to a server the tests may create \
                            databases on";

/// The supervisor: starts the server, waits for its stdin to close, stops the server and
/// removes the temp dir. `$1` the temp dir, `$2` the log file, then the server's command line.
/// The stop command is in `$PG_STOP` (`pg_ctl stop`, prefixed like the server's).
const SUPERVISOR: &str = r#"
dir=$1; log=$2; shift 2
"$@" >>"$log" 2>&1 &
pid=$!
cat >/dev/null
$PG_STOP >/dev/null 2>&1 || kill -QUIT "$pid" 2>/dev/null
wait "$pid"
rm -rf "$dir"
"#;

/// A PostgreSQL server the tests can create databases on.
#[derive(Debug)]
pub struct Server {
    /// `postgres://user[:password]@host:port`, no database.
    base: String,
    /// The database to connect to for `CREATE DATABASE`, and the query string of the URL.
    admin_db: String,
    query: String,
    /// Whether a wrong password is refused for a non-superuser role (true for a started
    /// server; unknown for one `ORRERY_TEST_POSTGRES_URL` names).
    checks_passwords: bool,
    process: Option<Supervisor>,
}

#[derive(Debug)]
struct Supervisor {
    child: Child,
    // Dropping it closes the pipe: the supervisor stops the server and removes `dir`.
    stdin: Option<ChildStdin>,
    dir: PathBuf,
    /// The server's data directory, log file and port.
    data: PathBuf,
    log: PathBuf,
    port: u16,
    /// The server's command line (the `setpriv` prefix included), to start it again.
    command: Vec<std::ffi::OsString>,
    /// `pg_ctl stop` for the data directory, without its mode (prefixed like the server).
    stop: Vec<std::ffi::OsString>,
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + STOP_TIMEOUT;
        while Instant::now() < deadline {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

static SHARED: OnceLock<Result<Server, String>> = OnceLock::new();

/// The test binary's server (see the module docs). Blocks the first caller until it accepts
/// connections; a start-up failure is reported to every caller.
pub fn shared() -> Result<&'static Server> {
    SHARED
        .get_or_init(|| {
            let server = match std::env::var(URL_ENV) {
                Ok(url) if !url.is_empty() => Server::existing(&url),
                _ => Server::start(),
            };
            server.map_err(|e| format!("{e:#}"))
        })
        .as_ref()
        .map_err(|e| anyhow!("test PostgreSQL server unavailable: {e}"))
}

/// A fresh database on [`shared()`], named after `hint`; returns its URL.
pub async fn database(hint: &str) -> Result<String> {
    let server = tokio::task::spawn_blocking(shared)
        .await
        .context("PostgreSQL start-up task")??;
    server.create_database(hint).await
}

impl Server {
    /// Uses the server of `url` (its database is where `CREATE DATABASE` is run).
    pub fn existing(url: &str) -> Result<Server> {
        let (rest, query) = url.split_once('?').unwrap_or((url, ""));
        let after_scheme = rest
            .find("://")
            .map(|i| i + 3)
            .with_context(|| format!("{URL_ENV} is not a postgres:// URL"))?;
        let (base, db) = match rest[after_scheme..].find('/') {
            Some(i) => (&rest[..after_scheme + i], &rest[after_scheme + i + 1..]),
            None => (rest, ""),
        };
        Ok(Server {
            base: base.to_string(),
            admin_db: if db.is_empty() { "postgres" } else { db }.to_string(),
            query: query.to_string(),
            checks_passwords: false,
            process: None,
        })
    }

    /// Starts a private server (stopped on drop, or when the test process exits). Fast, not
    /// crash-safe: a commit is acknowledged before its write-ahead log leaves the server's
    /// memory (`synchronous_commit=off`), so a killed server may lose the last ones.
    pub fn start() -> Result<Server> {
        Server::start_with(false)
    }

    /// [`Server::start`], but every commit acknowledged survives [`Server::kill`]
    /// (`synchronous_commit=on`, PostgreSQL's default; `fsync` stays off: the machine itself
    /// does not crash).
    pub fn start_crash_safe() -> Result<Server> {
        Server::start_with(true)
    }

    fn start_with(crash_safe: bool) -> Result<Server> {
        let bin = bin_dir()?;
        let root = is_root()?;
        let user = if root {
            SYSTEM_USER.to_string()
        } else {
            current_user()?
        };
        let dir = temp_dir()?;
        let result = start_in(&bin, &dir, root, &user, crash_safe);
        if result.is_err() {
            let _ = std::fs::remove_dir_all(&dir);
        }
        result
    }

    /// Stops the server as a restart would (`pg_ctl stop --mode=fast`: every session ended,
    /// a clean shutdown); [`Server::start_again`] brings it back. A server of this process only.
    pub fn stop(&self) -> Result<()> {
        let process = self.owned("stopped")?;
        let (program, args) = process.stop.split_first().context("the stop command")?;
        let out = Command::new(program)
            .args(args)
            .args(["--mode=fast", "--wait"])
            .stdin(Stdio::null())
            .output()
            .context("running pg_ctl stop")?;
        if !out.status.success() {
            bail!(
                "pg_ctl stop failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(())
    }

    /// Kills every process of the server with SIGKILL at once, as the OOM killer would (no
    /// shutdown; the next start recovers from the write-ahead log; a server that is to keep
    /// every acknowledged commit through this is started by [`Server::start_crash_safe`]). The
    /// postmaster is stopped first so it starts no process meanwhile. A server of this
    /// process only.
    pub fn kill(&self) -> Result<()> {
        use nix::sys::signal::{Signal, kill};
        use nix::unistd::Pid;
        let process = self.owned("killed")?;
        let pid_file = process.data.join("postmaster.pid");
        let text = std::fs::read_to_string(&pid_file)
            .with_context(|| format!("reading {}: is the server running?", pid_file.display()))?;
        let pid: i32 = text
            .lines()
            .next()
            .and_then(|l| l.trim().parse().ok())
            .with_context(|| format!("no PID in {}", pid_file.display()))?;
        let postmaster = Pid::from_raw(pid);
        kill(postmaster, Signal::SIGSTOP).context("stopping the postmaster")?;
        for child in children_of(pid) {
            let _ = kill(Pid::from_raw(child), Signal::SIGKILL);
        }
        kill(postmaster, Signal::SIGKILL).context("killing the postmaster")?;
        let deadline = Instant::now() + STOP_TIMEOUT;
        while alive(pid) {
            if Instant::now() > deadline {
                bail!("PostgreSQL's postmaster {pid} did not die of SIGKILL");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// Starts the server again on its port, data and log, after [`Server::stop`] or
    /// [`Server::kill`]; returns once it accepts connections. The supervisor still stops it
    /// when the [`Server`] is dropped (`pg_ctl stop` finds it by its data directory).
    pub fn start_again(&self) -> Result<()> {
        let process = self.owned("started again")?;
        // The lock files of a server that ended name its PID, which a zombie (its parent slow
        // to reap it) still holds: the new server would take it for a live one. A killed
        // container's successor starts without them the same way.
        let locks = [
            process.data.join("postmaster.pid"),
            process
                .dir
                .join("sock")
                .join(format!(".s.PGSQL.{}.lock", process.port)),
        ];
        for lock in locks {
            let pid = std::fs::read_to_string(&lock)
                .ok()
                .and_then(|text| text.lines().next()?.trim().parse::<i32>().ok());
            if pid.is_some_and(|pid| !alive(pid)) {
                std::fs::remove_file(&lock)
                    .with_context(|| format!("removing the stale {}", lock.display()))?;
            }
        }
        let before = read_log(&process.log).len();
        // Through `sh … &`: the server is nobody's child here, as the first one is the
        // supervisor's.
        let status = Command::new("sh")
            .arg("-c")
            .arg(r#"log=$1; shift; "$@" >>"$log" 2>&1 </dev/null &"#)
            .arg("orrery-postgres")
            .arg(&process.log)
            .args(&process.command)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .status()
            .context("starting PostgreSQL again")?;
        if !status.success() {
            bail!("starting PostgreSQL again failed ({status})");
        }
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            let text = read_log(&process.log);
            let new = text.get(before..).unwrap_or_default();
            if new.contains("database system is ready to accept connections")
                && std::net::TcpStream::connect(("127.0.0.1", process.port)).is_ok()
            {
                return Ok(());
            }
            // (A client turned away while it recovers is logged FATAL too; not a failure.)
            let failed = new
                .lines()
                .any(|l| l.contains("FATAL:") && !l.contains("the database system is"));
            if failed || Instant::now() > deadline {
                bail!(
                    "PostgreSQL did not come back (or not within {START_TIMEOUT:?}); its log:\n{}",
                    tail(new)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn owned(&self, what: &str) -> Result<&Supervisor> {
        self.process.as_ref().with_context(|| {
            format!("the server {URL_ENV} names is not this process's to be {what}")
        })
    }

    /// The URL of database `db`.
    pub fn url(&self, db: &str) -> String {
        if self.query.is_empty() {
            format!("{}/{db}", self.base)
        } else {
            format!("{}/{db}?{}", self.base, self.query)
        }
    }

    /// `url(db)` with `user:password` as the credentials.
    pub fn url_as(&self, db: &str, user: &str, password: &str) -> String {
        let url = self.url(db);
        let (scheme, rest) = url.split_once("://").unwrap_or(("postgres", &url));
        let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
        format!("{scheme}://{user}:{password}@{host}")
    }

    /// Whether a role's wrong password is refused (see the module docs).
    pub fn checks_passwords(&self) -> bool {
        self.checks_passwords
    }

    /// Whether this value started (and stops) the server.
    pub fn owns_process(&self) -> bool {
        self.process.is_some()
    }

    /// Creates a database named after `hint` (made unique) and returns its URL.
    pub async fn create_database(&self, hint: &str) -> Result<String> {
        let name = unique_db_name(hint);
        let admin = self.url(&self.admin_db);
        let mut conn = sqlx::PgConnection::connect(&admin)
            .await
            .with_context(|| format!("connecting to {}", self.url(&self.admin_db)))?;
        sqlx::query(sqlx::AssertSqlSafe(format!(r#"CREATE DATABASE "{name}""#)))
            .execute(&mut conn)
            .await
            .with_context(|| format!("CREATE DATABASE {name}"))?;
        conn.close().await.ok();
        Ok(self.url(&name))
    }

    /// Runs `sql` (one statement) on database `db` as the server's user; returns the rows
    /// affected.
    pub async fn execute(&self, db_url: &str, sql: &str) -> Result<u64> {
        let mut conn = sqlx::PgConnection::connect(db_url)
            .await
            .context("connecting to the test database")?;
        let done = sqlx::query(sqlx::AssertSqlSafe(sql.to_string()))
            .execute(&mut conn)
            .await
            .with_context(|| format!("running {sql}"))?;
        conn.close().await.ok();
        Ok(done.rows_affected())
    }
}

fn start_in(bin: &Path, dir: &Path, root: bool, user: &str, crash_safe: bool) -> Result<Server> {
    let data = dir.join("data");
    let sock = dir.join("sock");
    let log = dir.join("postgres.log");
    std::fs::create_dir(&sock).with_context(|| format!("creating {}", sock.display()))?;
    std::fs::write(&log, b"").with_context(|| format!("creating {}", log.display()))?;
    if root {
        let status = Command::new("chown")
            .args(["-R", SYSTEM_USER])
            .arg(dir)
            .status()
            .context("running chown")?;
        if !status.success() {
            bail!(
                "chown -R {SYSTEM_USER} {} failed ({status}): PostgreSQL refuses to run as \
                 root and needs the '{SYSTEM_USER}' user the Debian package creates; \
                 {INSTALL_HINT}",
                dir.display()
            );
        }
    }
    // As root, every PostgreSQL binary runs as the `postgres` user.
    let prefix: &[&str] = if root { AS_SYSTEM_USER } else { &[] };
    let as_user = |program: &Path| -> Command {
        let mut cmd = match prefix.split_first() {
            Some((first, rest)) => {
                let mut cmd = Command::new(first);
                cmd.args(rest).arg(program);
                cmd
            }
            None => Command::new(program),
        };
        cmd.current_dir(dir);
        cmd
    };

    let out = as_user(&bin.join("initdb"))
        .arg("--pgdata")
        .arg(&data)
        .args(["--username", user, "--auth=trust", "--encoding=UTF8"])
        .args(["--locale=C", "--no-sync", "--no-instructions"])
        .stdin(Stdio::null())
        .output()
        .context("running initdb")?;
    if !out.status.success() {
        bail!(
            "initdb failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The superuser is trusted; any other role needs its password.
    let hba = format!(
        "local all all trust\n\
         host all {user} 127.0.0.1/32 trust\n\
         host all all 127.0.0.1/32 scram-sha-256\n"
    );
    std::fs::write(data.join("pg_hba.conf"), hba).context("writing pg_hba.conf")?;

    let port = free_port()?;
    let server = as_user(&bin.join("postgres"));
    let stop = format!(
        "{} {} stop --pgdata {} --mode=immediate --wait",
        prefix.join(" "),
        bin.join("pg_ctl").display(),
        data.display()
    );
    let mut supervisor = Command::new("sh");
    supervisor
        .arg("-c")
        .arg(SUPERVISOR)
        .arg("orrery-postgres")
        .arg(dir)
        .arg(&log)
        .arg(server.get_program())
        .args(server.get_args())
        .arg("-D")
        .arg(&data)
        .args(["-p", &port.to_string()])
        .arg("-k")
        .arg(&sock)
        .args(["-c", "listen_addresses=127.0.0.1"])
        .args(["-c", "fsync=off", "-c"])
        .arg(if crash_safe {
            "synchronous_commit=on"
        } else {
            "synchronous_commit=off"
        })
        .args(["-c", "full_page_writes=off", "-c", "max_connections=300"])
        .env("PG_STOP", stop)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    let mut child = supervisor
        .spawn()
        .context("starting the PostgreSQL supervisor")?;
    let stdin = child.stdin.take();
    // After `-c SUPERVISOR $0 dir log`: the server's command line.
    let command: Vec<std::ffi::OsString> = supervisor
        .get_args()
        .skip(5)
        .map(ToOwned::to_owned)
        .collect();
    let mut stop_command: Vec<std::ffi::OsString> =
        prefix.iter().map(std::ffi::OsString::from).collect();
    stop_command.push(bin.join("pg_ctl").into());
    stop_command.extend(["stop".into(), "--pgdata".into(), data.clone().into()]);
    let mut process = Supervisor {
        child,
        stdin,
        dir: dir.to_path_buf(),
        data: data.clone(),
        log: log.clone(),
        port,
        command,
        stop: stop_command,
    };

    // Ready when the server says so and takes a TCP connection.
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        let text = read_log(&log);
        if text.contains("database system is ready to accept connections")
            && std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        {
            break;
        }
        if let Ok(Some(status)) = process.child.try_wait() {
            bail!(
                "PostgreSQL exited ({status}) while starting; its log:\n{}",
                tail(&text)
            );
        }
        if !server_alive(&text) || Instant::now() > deadline {
            // Dropping `process` stops what was started.
            let text = read_log(&log);
            bail!(
                "PostgreSQL did not accept connections within {START_TIMEOUT:?}; its log:\n{}",
                tail(&text)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(Server {
        base: format!("postgres://{user}@127.0.0.1:{port}"),
        admin_db: "postgres".to_string(),
        query: String::new(),
        checks_passwords: true,
        process: Some(process),
    })
}

/// Whether process `pid` runs: there, and not a zombie (dead, its parent slow to reap it).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit_once(") ")
            .is_some_and(|(_, r)| r.starts_with('Z'))
    })
}

/// The PIDs whose parent is `pid` (from `/proc`).
fn children_of(pid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|child| {
            std::fs::read_to_string(format!("/proc/{child}/stat")).is_ok_and(|stat| {
                // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
                stat.rsplit_once(") ")
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<i32>().ok())
                    == Some(pid)
            })
        })
        .collect()
}

/// False once the log says the server gave up.
fn server_alive(log: &str) -> bool {
    !log.contains("database system is shut down") && !log.contains("FATAL:")
}

fn read_log(log: &Path) -> String {
    let mut text = String::new();
    if let Ok(mut f) = std::fs::File::open(log) {
        let _ = f.read_to_string(&mut text);
    }
    text
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

/// The directory with `initdb`, `pg_ctl` and `postgres`: the newest
/// `/usr/lib/postgresql/<version>/bin`, else the directory of `initdb` on `PATH`.
pub fn bin_dir() -> Result<PathBuf> {
    let has_all = |dir: &Path| {
        ["initdb", "pg_ctl", "postgres"]
            .iter()
            .all(|b| dir.join(b).is_file())
    };
    let mut versions: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let version: Vec<u32> = name
                .split('.')
                .map(str::parse)
                .collect::<Result<_, _>>()
                .ok()?;
            let bin = entry.path().join("bin");
            has_all(&bin).then_some((version, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Ok(bin);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        if has_all(&dir) {
            return Ok(dir);
        }
    }
    bail!(
        "PostgreSQL is not installed: no initdb, pg_ctl and postgres under \
         /usr/lib/postgresql/*/bin or on PATH; {INSTALL_HINT}"
    )
}

fn is_root() -> Result<bool> {
    let out = Command::new("id")
        .arg("-u")
        .output()
        .context("running id -u")?;
    Ok(String::from_utf8_lossy(&out.stdout).trim() == "0")
}

fn current_user() -> Result<String> {
    let out = Command::new("id")
        .arg("-un")
        .output()
        .context("running id -un")?;
    let user = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if user.is_empty() {
        bail!("id -un printed no user name");
    }
    Ok(user)
}

fn temp_dir() -> Result<PathBuf> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let dir = std::env::temp_dir().join(format!(
        "orrery-pg-{}-{}-{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// `t_<hint>_<pid>_<n>`: lower-case letters, digits and `_`, at most 63 bytes.
fn unique_db_name(hint: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let hint: String = hint
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    format!(
        "t_{hint}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn an_existing_servers_url_is_split_into_server_database_and_query() {
        let s = Server::existing("postgres://u:pw@db:5432/main?sslmode=disable").unwrap();
        assert_eq!(s.url("t1"), "postgres://u:pw@db:5432/t1?sslmode=disable");
        assert_eq!(s.admin_db, "main");
        let s = Server::existing("postgresql://u@db").unwrap();
        assert_eq!(s.url("t1"), "postgresql://u@db/t1");
        assert_eq!(s.admin_db, "postgres");
        assert_eq!(s.url_as("t1", "r", "x"), "postgresql://r:x@db/t1");
        assert!(Server::existing("db:5432").is_err());
    }

    #[test]
    fn database_names_are_short_lower_case_identifiers() {
        let name = unique_db_name("A Very-Long hint that goes on and on and on and on and on");
        assert!(name.len() <= 63, "{name}");
        assert!(name.starts_with("t_a_very_long_hint"), "{name}");
        assert!(
            name.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
            "{name}"
        );
    }
}
