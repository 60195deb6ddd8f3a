//! What the dev node's network tests (`devnode_network`, `e2e_netpol`) probe with: a TCP
//! listener that counts the connections it accepts (an endpoint, or a canary that must see
//! none), a connect from inside a network namespace, and whether the host's own nftables got a
//! table of ours (it never may).

use std::io::ErrorKind;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result};
use orrery_devnode::net;

/// A TCP listener, in a network namespace or on the host, that counts the connections it
/// accepts; stopped when dropped.
pub struct CountingListener {
    /// Where it listens (the system's port when 0 was asked).
    pub addr: SocketAddr,
    accepted: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl CountingListener {
    /// Listens on `addr:port` (0: a free port), inside network namespace `netns` when given.
    pub fn start(netns: Option<&str>, addr: Ipv4Addr, port: u16) -> Result<CountingListener> {
        let bind = move || -> std::io::Result<TcpListener> {
            let listener = TcpListener::bind(SocketAddrV4::new(addr, port))?;
            listener.set_nonblocking(true)?;
            Ok(listener)
        };
        // The socket belongs to the namespace it was made in, whichever thread accepts on it.
        let listener = match netns {
            Some(ns) => {
                net::run_in(ns, bind).with_context(|| format!("entering network namespace {ns}"))?
            }
            None => bind(),
        }
        .with_context(|| format!("listening on {addr}:{port}"))?;
        let local = listener.local_addr()?;
        let accepted = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (count, halt) = (accepted.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !halt.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok(_) => {
                        count.fetch_add(1, Ordering::SeqCst);
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    Err(_) => return,
                }
            }
        });
        Ok(CountingListener {
            addr: local,
            accepted,
            stop,
            thread: Some(thread),
        })
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Connections accepted so far (after letting the accept loop catch up).
    pub fn accepted(&self) -> usize {
        std::thread::sleep(Duration::from_millis(50));
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for CountingListener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Connects to `to` (3 s at most) from inside network namespace `netns`, or from the host when
/// `None`; the error kind when it fails.
pub fn connect_from(netns: Option<&str>, to: SocketAddr) -> Result<Result<(), ErrorKind>> {
    let connect = move || {
        TcpStream::connect_timeout(&to, Duration::from_secs(3))
            .map(drop)
            .map_err(|e| e.kind())
    };
    match netns {
        Some(ns) => {
            net::run_in(ns, connect).with_context(|| format!("entering network namespace {ns}"))
        }
        None => Ok(connect()),
    }
}

/// Whether the host's own nftables ruleset has a `table inet orrery` (the dev node writes its
/// rules only inside pods' namespaces).
pub fn host_has_orrery_table() -> Result<bool> {
    let out = std::process::Command::new("nft")
        .args(["list", "tables"])
        .output()
        .context("running nft list tables")?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .any(|l| l.trim() == "table inet orrery"))
}
