//! `demo-tools`: the demo fleet's MCP server on rmcp (streamable HTTP). Every tool is read-only
//! and says so in its annotations (`readOnlyHint: true`, `destructiveHint: false`,
//! `idempotentHint: true`, `openWorldHint: false`), so an MCP client that refuses a read-only
//! listed tool without `readOnlyHint` accepts them. Tool failures (unknown article, unknown
//! unit, bad time zone, bad limit) are `isError` results the model can read; every success
//! carries `structuredContent` matching the tool's `outputSchema`.

use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

use super::articles::{Article, Corpus, SearchHit};
use super::clock::{Clock, CurrentTime, current_time};
use super::units::{Conversion, convert};

/// The server's name in `serverInfo`.
pub const SERVER_NAME: &str = "demo-tools";
/// The tools, in the order `tools/list` returns them.
pub const TOOL_NAMES: [&str; 4] = [
    "convert_units",
    "current_time",
    "get_article",
    "search_articles",
];

/// Arguments of `search_articles`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchArticlesArgs {
    /// Words to look for, e.g. "Kafka consumer lag".
    pub query: String,
    /// How many results to return (1 to 20, default 5).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// Result of `search_articles`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchArticlesResult {
    /// The query as given.
    pub query: String,
    /// Matching articles, best first.
    pub results: Vec<SearchHit>,
}

/// Arguments of `get_article`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GetArticleArgs {
    /// The article id from `search_articles`.
    pub id: String,
}

/// Arguments of `convert_units`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ConvertUnitsArgs {
    /// The value to convert.
    pub value: f64,
    /// The unit of the value: length (m, km, cm, mm, mi, yd, ft, in), mass (kg, g, mg, t, lb,
    /// oz), temperature (C, F, K) or data size (bit, B, KB, MB, GB, TB, KiB, MiB, GiB, TiB).
    pub from: String,
    /// The unit to convert to (same dimension as `from`).
    pub to: String,
}

/// Arguments of `current_time`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct CurrentTimeArgs {
    /// `UTC` (the default) or a fixed offset such as `+05:30`, `-08:00` or `UTC+2`.
    #[serde(default)]
    pub timezone: Option<String>,
}

/// The `demo-tools` MCP server: one instance per session, all sharing the corpus and clock.
#[derive(Clone, Debug)]
pub struct DemoTools {
    corpus: Arc<Corpus>,
    clock: Clock,
}

impl DemoTools {
    /// A server over these articles with this clock.
    pub fn new(corpus: Arc<Corpus>, clock: Clock) -> Self {
        DemoTools { corpus, clock }
    }
}

#[tool_router]
impl DemoTools {
    /// Search the bundled engineering articles by keywords.
    #[tool(
        description = "Search a small set of engineering articles (Kafka, PostgreSQL, Redis, gRPC, \
                       SLOs, Rust …) by keywords. Returns ids, titles, summaries and source URLs, \
                       best match first.",
        annotations(
            title = "Search articles",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn search_articles(
        &self,
        Parameters(args): Parameters<SearchArticlesArgs>,
    ) -> Result<Json<SearchArticlesResult>, String> {
        let results = self
            .corpus
            .search(&args.query, args.limit)
            .map_err(|e| e.to_string())?;
        Ok(Json(SearchArticlesResult {
            query: args.query,
            results,
        }))
    }

    /// Read one article.
    #[tool(
        description = "Read one article in full by its id (from search_articles).",
        annotations(
            title = "Get article",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn get_article(
        &self,
        Parameters(args): Parameters<GetArticleArgs>,
    ) -> Result<Json<Article>, String> {
        self.corpus.get(&args.id).cloned().map(Json).ok_or_else(|| {
            format!(
                "no article has the id '{}'; use search_articles to find ids",
                args.id
            )
        })
    }

    /// Convert a value between units.
    #[tool(
        description = "Convert a value between units of length, mass, temperature or data size.",
        annotations(
            title = "Convert units",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn convert_units(
        &self,
        Parameters(args): Parameters<ConvertUnitsArgs>,
    ) -> Result<Json<Conversion>, String> {
        convert(args.value, &args.from, &args.to)
            .map(Json)
            .map_err(|e| e.to_string())
    }

    /// The current date and time.
    #[tool(
        description = "The current date and time in UTC or a fixed UTC offset, as RFC 3339 with \
                       seconds precision.",
        annotations(
            title = "Current time",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn current_time(
        &self,
        Parameters(args): Parameters<CurrentTimeArgs>,
    ) -> Result<Json<CurrentTime>, String> {
        current_time(self.clock.now(), args.timezone.as_deref())
            .map(Json)
            .map_err(|e| e.to_string())
    }
}

#[tool_handler(
    name = "demo-tools",
    instructions = "Read-only demo tools: search and read a small bundled set of engineering \
                    articles, convert units, tell the time. Nothing here changes anything."
)]
impl ServerHandler for DemoTools {}
