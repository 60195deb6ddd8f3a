//! The demo fleet in-process on loopback: `demo-tools` (MCP, streamable HTTP at `/mcp`) and
//! `demo-writer` (A2A 1.0, card at `/.well-known/agent-card.json`, JSON-RPC at `/`). The
//! default ports (7801 and 7802) are the ones `examples/registry/` names; port 0 picks free
//! ports (tests).

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::articles::{ArticlesError, Corpus};
use super::clock::{Clock, ClockError};
use super::tools::DemoTools;
use super::writer::DemoWriter;
use crate::a2a::server::{A2aServer, A2aServerConfig};
use crate::a2a::types::AGENT_CARD_PATH;

/// `demo-tools`' default port.
pub const DEFAULT_TOOLS_PORT: u16 = 7801;
/// `demo-writer`'s default port.
pub const DEFAULT_WRITER_PORT: u16 = 7802;
/// The MCP endpoint path.
pub const MCP_PATH: &str = "/mcp";
/// How long [`Fleet::shutdown`] waits for open connections to finish.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// What to start.
#[derive(Clone, Debug)]
pub struct FleetConfig {
    /// Port for `demo-tools` on 127.0.0.1 (0: any free port).
    pub tools_port: u16,
    /// Port for `demo-writer` on 127.0.0.1 (0: any free port).
    pub writer_port: u16,
    /// The clock of `current_time`.
    pub clock: Clock,
    /// When set, `demo-writer` requires `Authorization: Bearer <token>` and says so on its card.
    pub writer_bearer_token: Option<String>,
    /// Host names both servers answer to (DNS-rebinding protection); the loopback names by
    /// default. Add a name here to reach the fleet through it.
    pub allowed_hosts: Vec<String>,
    /// The URL `demo-writer`'s card names as its JSON-RPC interface; `None`: `http://` and its
    /// own address. Set it when clients reach the writer through something in front of it (a
    /// TLS front on another address), or they would call the loopback address the card names.
    pub writer_public_url: Option<String>,
}

/// The host names a loopback server answers to by default.
pub fn loopback_hosts() -> Vec<String> {
    ["127.0.0.1", "localhost", "::1"].map(String::from).to_vec()
}

impl Default for FleetConfig {
    fn default() -> Self {
        FleetConfig {
            tools_port: DEFAULT_TOOLS_PORT,
            writer_port: DEFAULT_WRITER_PORT,
            clock: Clock::System,
            writer_bearer_token: None,
            allowed_hosts: loopback_hosts(),
            writer_public_url: None,
        }
    }
}

impl FleetConfig {
    /// The default ports, with the clock from `ORRERY_DEMO_FIXED_TIME` when it is set.
    pub fn from_env() -> Result<Self, FleetError> {
        Ok(FleetConfig {
            clock: Clock::from_env()?,
            ..FleetConfig::default()
        })
    }

    /// Free ports chosen by the system (for tests).
    pub fn ephemeral() -> Self {
        FleetConfig {
            tools_port: 0,
            writer_port: 0,
            ..FleetConfig::default()
        }
    }
}

/// Why the fleet could not start or stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// A port could not be bound.
    #[error(
        "cannot listen on {addr} for {server}: {source}; stop whatever uses the port or choose another one"
    )]
    Bind {
        /// `demo-tools` or `demo-writer`.
        server: &'static str,
        /// The address.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
    /// The bundled articles are unusable.
    #[error(transparent)]
    Articles(#[from] ArticlesError),
    /// The fixed clock is misconfigured.
    #[error(transparent)]
    Clock(#[from] ClockError),
    /// A server stopped with an error.
    #[error("{server} stopped with an error: {source}")]
    Serve {
        /// Which server.
        server: &'static str,
        /// The cause.
        source: std::io::Error,
    },
    /// A server did not stop within the grace period and was aborted.
    #[error("{server} did not shut down within {seconds} s and was stopped")]
    ShutdownTimeout {
        /// Which server.
        server: &'static str,
        /// The grace period.
        seconds: u64,
    },
}

/// The running fleet. Dropping it stops the servers without waiting; prefer
/// [`Fleet::shutdown`].
#[derive(Debug)]
pub struct Fleet {
    tools_addr: SocketAddr,
    writer_addr: SocketAddr,
    shutdown: CancellationToken,
    servers: Vec<(&'static str, JoinHandle<std::io::Result<()>>)>,
    writer: Option<Arc<A2aServer>>,
}

async fn bind(server: &'static str, port: u16) -> Result<(TcpListener, SocketAddr), FleetError> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let bind_error = |source| FleetError::Bind {
        server,
        addr,
        source,
    };
    let listener = TcpListener::bind(addr).await.map_err(bind_error)?;
    let local = listener.local_addr().map_err(bind_error)?;
    Ok((listener, local))
}

fn serve(
    listener: TcpListener,
    app: axum::Router,
    shutdown: CancellationToken,
) -> JoinHandle<std::io::Result<()>> {
    tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown.cancelled_owned())
            .await
    })
}

/// Starts `demo-tools` and `demo-writer` on 127.0.0.1.
pub async fn start_fleet(cfg: FleetConfig) -> Result<Fleet, FleetError> {
    let corpus = Arc::new(Corpus::bundled()?);
    let (tools_listener, tools_addr) = bind("demo-tools", cfg.tools_port).await?;
    let (writer_listener, writer_addr) = bind("demo-writer", cfg.writer_port).await?;
    let shutdown = CancellationToken::new();

    let tools = DemoTools::new(corpus, cfg.clock);
    let mcp_config = StreamableHttpServerConfig::default()
        .with_cancellation_token(shutdown.child_token())
        .with_allowed_hosts(cfg.allowed_hosts.clone())
        .with_allowed_origins(["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]);
    let mcp = StreamableHttpService::new(
        move || Ok(tools.clone()),
        Arc::new(LocalSessionManager::default()),
        mcp_config,
    );
    let tools_app = axum::Router::new().nest_service(MCP_PATH, mcp);

    let writer_rpc_url = cfg
        .writer_public_url
        .clone()
        .unwrap_or_else(|| format!("http://{writer_addr}"));
    let handler = Arc::new(DemoWriter::new(
        &writer_rpc_url,
        cfg.writer_bearer_token.is_some(),
    ));
    let writer = Arc::new(A2aServer::new(
        handler,
        A2aServerConfig {
            bearer_token: cfg.writer_bearer_token,
            allowed_hosts: cfg.allowed_hosts,
            ..A2aServerConfig::default()
        },
    ));

    let servers = vec![
        (
            "demo-tools",
            serve(tools_listener, tools_app, shutdown.clone()),
        ),
        (
            "demo-writer",
            serve(writer_listener, writer.router(), shutdown.clone()),
        ),
    ];
    // The CLI prints its own banner with these addresses; this is for a debug log.
    tracing::debug!(tools = %tools_addr, writer = %writer_addr, "demo fleet listening");
    Ok(Fleet {
        tools_addr,
        writer_addr,
        shutdown,
        servers,
        writer: Some(writer),
    })
}

impl Fleet {
    /// `demo-tools`' address.
    pub fn tools_addr(&self) -> SocketAddr {
        self.tools_addr
    }

    /// `demo-writer`'s address.
    pub fn writer_addr(&self) -> SocketAddr {
        self.writer_addr
    }

    /// The MCP endpoint, e.g. `http://127.0.0.1:7801/mcp`.
    pub fn tools_url(&self) -> String {
        format!("http://{}{MCP_PATH}", self.tools_addr)
    }

    /// The writer's card URL, e.g. `http://127.0.0.1:7802/.well-known/agent-card.json`.
    pub fn writer_card_url(&self) -> String {
        format!("http://{}{AGENT_CARD_PATH}", self.writer_addr)
    }

    /// The writer's JSON-RPC URL (its card's interface URL), e.g. `http://127.0.0.1:7802`.
    pub fn writer_rpc_url(&self) -> String {
        format!("http://{}", self.writer_addr)
    }

    /// Stops both servers: open MCP sessions and A2A streams end, in-flight work finishes, and
    /// connections close within a grace period (after which the servers are aborted).
    pub async fn shutdown(mut self) -> Result<(), FleetError> {
        self.shutdown.cancel();
        if let Some(writer) = self.writer.take() {
            writer.shutdown().await;
        }
        let mut result = Ok(());
        for (server, mut handle) in std::mem::take(&mut self.servers) {
            let outcome = match tokio::time::timeout(SHUTDOWN_GRACE, &mut handle).await {
                Ok(Ok(Ok(()))) => Ok(()),
                Ok(Ok(Err(source))) => Err(FleetError::Serve { server, source }),
                Ok(Err(join)) => Err(FleetError::Serve {
                    server,
                    source: std::io::Error::other(join),
                }),
                Err(_) => {
                    handle.abort();
                    Err(FleetError::ShutdownTimeout {
                        server,
                        seconds: SHUTDOWN_GRACE.as_secs(),
                    })
                }
            };
            if result.is_ok() {
                result = outcome;
            }
        }
        result
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        self.shutdown.cancel();
        for (_, handle) in &self.servers {
            handle.abort();
        }
    }
}
