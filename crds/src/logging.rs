//! Logs for every binary (`orrery`, `orrery-operator controller`, `orrery-operator sidecar`):
//! `tracing` events, written to standard error by one subscriber that [`init`] installs.
//!
//! - **Text** (the default on a terminal): one readable line an event, its fields after the
//!   message.
//! - **JSON** (`--log-format json`; the chart's default): one JSON object a line with `time`
//!   (RFC 3339), `level`, `target`, `message`, the event's own fields, the fields of every span
//!   it happened in (outermost first, so the innermost wins), and the process's fields
//!   ([`set_process_fields`]: a runner pod names its run). Two fields of kube's reconcile span
//!   get the names a log query wants: `object.reason` (what triggered the reconcile) is
//!   `trigger`, `object.ref` is `object`.
//!
//! Levels come from `--log-level` when given, else `RUST_LOG`, else [`DEFAULT_LEVEL`]: info for
//! Orrery's own crates, warnings only for the libraries under them (MCP, HTTP and database
//! libraries log every request at info).
//!
//! What a log line may carry is the same as what an error may: never a secret, a token, an
//! approval's text or a run's content; identifiers, counts, digests and remote errors screened
//! where they are made.

use serde_json::{Map, Value};
use std::io::Write as _;
use std::sync::OnceLock;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt as _;

/// The environment variable that picks the format when no flag does (runner pods get it from
/// the operator's `runner.logFormat`).
pub const FORMAT_ENV: &str = "ORRERY_LOG_FORMAT";

/// The levels when neither `--log-level` nor `RUST_LOG` says: Orrery's crates at info, the
/// libraries under them at warn.
pub const DEFAULT_LEVEL: &str =
    "warn,orrery=info,orrery_crds=info,orrery_runner=info,orrery_operator=info";

/// How log lines are written (`text` or `json` on the command line, in the chart and in the
/// operator's config).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One readable line an event.
    #[default]
    Text,
    /// One JSON object a line (for a log pipeline).
    Json,
}

impl LogFormat {
    /// The format's name on the command line and in the chart.
    pub fn as_str(self) -> &'static str {
        match self {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        }
    }

    /// Whether this is the default (text): the operator's config leaves it out then.
    pub fn is_text(&self) -> bool {
        *self == LogFormat::Text
    }
}

impl std::fmt::Display for LogFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for LogFormat {
    type Err = LoggingError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(LoggingError::Format {
                given: other.to_owned(),
            }),
        }
    }
}

/// Why logging could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum LoggingError {
    /// A format other than text or json.
    #[error("log format '{given}' is not one of: text, json (--log-format or {FORMAT_ENV})")]
    Format {
        /// What was given.
        given: String,
    },
    /// Level directives that do not parse.
    #[error(
        "log level '{given}': {reason}; give a level (error, warn, info, debug, trace) or \
         directives such as 'warn,orrery_operator=debug' (--log-level or RUST_LOG)"
    )]
    Level {
        /// What was given.
        given: String,
        /// The parser's words.
        reason: String,
    },
    /// A subscriber was installed before.
    #[error("logging is already set up in this process")]
    AlreadySet,
}

/// The level directives in force: `flag` when given, else `RUST_LOG` when set and not empty,
/// else [`DEFAULT_LEVEL`].
pub fn directives(flag: Option<&str>) -> String {
    if let Some(flag) = flag.filter(|f| !f.trim().is_empty()) {
        return flag.to_owned();
    }
    match std::env::var("RUST_LOG") {
        Ok(value) if !value.trim().is_empty() => value,
        _ => DEFAULT_LEVEL.to_owned(),
    }
}

/// Installs the process's subscriber: `format` to standard error, levels from `level` (see
/// [`directives`]).
pub fn init(format: LogFormat, level: Option<&str>) -> Result<(), LoggingError> {
    let given = directives(level);
    let filter = EnvFilter::try_new(&given).map_err(|e| LoggingError::Level {
        given: given.clone(),
        reason: e.to_string(),
    })?;
    let registry = tracing_subscriber::registry().with(filter);
    let installed = match format {
        LogFormat::Text => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .with_writer(std::io::stderr)
                    .with_target(false)
                    .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())),
            )
            .try_init(),
        LogFormat::Json => registry.with(JsonLines).try_init(),
    };
    installed.map_err(|_| LoggingError::AlreadySet)
}

/// The environment variable a W3C trace context comes in (`00-<trace id>-<span id>-<flags>`),
/// as OpenTelemetry's environment carrier names it: a runner pod gets its run's.
pub const TRACEPARENT_ENV: &str = "TRACEPARENT";

/// The trace id (32 lowercase hex digits) of a W3C `traceparent`, if it is one: version `00`,
/// a trace id and a parent id not all zeros, two hex digits of flags.
pub fn trace_id_of(traceparent: &str) -> Option<&str> {
    let mut parts = traceparent.trim().split('-');
    let (version, trace, parent, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let hex = |s: &str, n: usize| {
        s.len() == n
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let valid = parts.next().is_none()
        && version == "00"
        && hex(trace, 32)
        && hex(parent, 16)
        && hex(flags, 2)
        && trace.bytes().any(|b| b != b'0')
        && parent.bytes().any(|b| b != b'0');
    valid.then_some(trace)
}

/// Fields every JSON line of this process carries (set once; a later call is ignored).
static PROCESS_FIELDS: OnceLock<Map<String, Value>> = OnceLock::new();

/// Sets the fields every JSON line of this process carries from now on (a runner pod: its
/// run's `run_uid`, `namespace` and `name`). Only the first call counts.
pub fn set_process_fields<I, K, V>(fields: I)
where
    I: IntoIterator<Item = (K, V)>,
    K: Into<String>,
    V: Into<Value>,
{
    let map = fields
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
    let _ = PROCESS_FIELDS.set(map);
}

/// The names a few fields of other crates' spans get in a JSON line.
fn field_name(name: &str) -> &str {
    match name {
        "object.reason" => "trigger",
        "object.ref" => "object",
        other => other,
    }
}

/// A span's or an event's fields, as JSON values.
#[derive(Default)]
struct Fields(Map<String, Value>);

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0
            .insert(field_name(field.name()).to_owned(), Value::from(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0
            .insert(field_name(field.name()).to_owned(), Value::from(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0
            .insert(field_name(field.name()).to_owned(), Value::from(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0
            .insert(field_name(field.name()).to_owned(), Value::from(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0
            .insert(field_name(field.name()).to_owned(), Value::from(value));
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.0.insert(
            field_name(field.name()).to_owned(),
            Value::from(value.to_string()),
        );
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(
            field_name(field.name()).to_owned(),
            Value::from(format!("{value:?}")),
        );
    }
}

/// The JSON-lines layer: each event one object on standard error, written whole.
struct JsonLines;

impl<S> Layer<S> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(fields);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(fields) = span.extensions_mut().get_mut::<Fields>()
        {
            values.record(fields);
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let line = json_line(event, ctx);
        let mut text = Value::Object(line).to_string();
        text.push('\n');
        // One write of the whole line: lines of concurrent events never interleave.
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    }
}

/// The JSON object of one event.
fn json_line<S>(event: &Event<'_>, ctx: Context<'_, S>) -> Map<String, Value>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let meta = event.metadata();
    let mut line = Map::new();
    line.insert("time".into(), Value::from(now_rfc3339()));
    line.insert("level".into(), Value::from(meta.level().as_str()));
    line.insert("target".into(), Value::from(meta.target()));
    if let Some(process) = PROCESS_FIELDS.get() {
        line.extend(process.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    if let Some(scope) = ctx.event_scope(event) {
        for span in scope.from_root() {
            if let Some(fields) = span.extensions().get::<Fields>() {
                line.extend(fields.0.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
    }
    let mut fields = Fields::default();
    event.record(&mut fields);
    line.extend(fields.0);
    line
}

/// Now, as RFC 3339 in UTC with milliseconds (the trace events' format).
fn now_rfc3339() -> String {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    crate::events::timestamp::format_epoch_millis(
        u64::try_from(since.as_millis()).unwrap_or(u64::MAX),
    )
}

#[cfg(test)]
mod tests {

    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn a_trace_id_is_read_only_from_a_well_formed_traceparent() {
        let id = "4bf92f3577b34da6a3ce929d0e0e4736";
        for (text, want) in [
            (format!("00-{id}-00f067aa0ba902b7-01"), Some(id)),
            (format!(" 00-{id}-00f067aa0ba902b7-00\n"), Some(id)),
            (format!("01-{id}-00f067aa0ba902b7-01"), None),
            (format!("00-{}-00f067aa0ba902b7-01", "0".repeat(32)), None),
            (format!("00-{id}-0000000000000000-01"), None),
            (
                format!("00-{}-00f067aa0ba902b7-01", id.to_uppercase()),
                None,
            ),
            (format!("00-{id}-00f067aa0ba902b7-01-extra"), None),
            ("00-short-00f067aa0ba902b7-01".to_owned(), None),
            (String::new(), None),
        ] {
            assert_eq!(trace_id_of(&text), want, "{text:?}");
        }
    }
    use std::sync::{Arc, Mutex};
    use tracing_subscriber::layer::SubscriberExt;

    #[test]
    fn formats_parse_by_name_and_others_are_refused_naming_the_choices() {
        assert_eq!("json".parse::<LogFormat>().unwrap(), LogFormat::Json);
        assert_eq!(" text ".parse::<LogFormat>().unwrap(), LogFormat::Text);
        let err = "yaml".parse::<LogFormat>().unwrap_err().to_string();
        assert!(
            err.contains("'yaml'") && err.contains("text, json"),
            "{err}"
        );
    }

    #[test]
    fn a_flag_wins_over_rust_log_and_the_default_keeps_libraries_at_warn() {
        assert_eq!(directives(Some("debug")), "debug");
        assert!(DEFAULT_LEVEL.starts_with("warn,"));
        assert!(EnvFilter::try_new(DEFAULT_LEVEL).is_ok());
    }

    #[test]
    fn level_directives_that_do_not_parse_are_an_error_naming_them() {
        let err = init(LogFormat::Text, Some("info,=["))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("'info,=['") && err.contains("RUST_LOG"),
            "{err}"
        );
    }

    /// The JSON layer's lines, collected from a subscriber of the test's own.
    fn lines_of(f: impl FnOnce()) -> Vec<Map<String, Value>> {
        let seen: Arc<Mutex<Vec<Map<String, Value>>>> = Arc::default();
        struct Collect(Arc<Mutex<Vec<Map<String, Value>>>>);
        impl<S> Layer<S> for Collect
        where
            S: Subscriber + for<'a> LookupSpan<'a>,
        {
            fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
                self.0.lock().unwrap().push(json_line(event, ctx));
            }
        }
        let subscriber = tracing_subscriber::registry()
            .with(JsonLines)
            .with(Collect(seen.clone()));
        tracing::subscriber::with_default(subscriber, f);
        seen.lock().unwrap().clone()
    }

    #[test]
    fn a_json_line_carries_the_message_its_fields_and_every_enclosing_spans_fields() {
        let lines = lines_of(|| {
            let outer = tracing::info_span!(
                "reconciling object",
                "object.reason" = "object updated",
                "object.ref" = "StudioRun/r1.ns"
            );
            let _o = outer.enter();
            let inner = tracing::info_span!(
                "reconcile",
                kind = "StudioRun",
                namespace = "ns",
                name = "r1",
                uid = "u-1"
            );
            let _i = inner.enter();
            tracing::warn!(attempt = 2_u64, "status write failed");
        });
        assert_eq!(lines.len(), 1);
        let line = &lines[0];
        assert_eq!(line["message"], "status write failed");
        assert_eq!(line["level"], "WARN");
        assert_eq!(line["attempt"], 2);
        assert_eq!(line["trigger"], "object updated");
        assert_eq!(line["object"], "StudioRun/r1.ns");
        assert_eq!(line["namespace"], "ns");
        assert_eq!(line["name"], "r1");
        assert_eq!(line["uid"], "u-1");
        assert_eq!(line["kind"], "StudioRun");
        assert!(line["time"].as_str().unwrap().ends_with('Z'));
    }

    #[test]
    fn a_field_recorded_on_a_span_later_appears_in_the_lines_after() {
        let lines = lines_of(|| {
            let span = tracing::info_span!("reconcile", uid = tracing::field::Empty);
            let _s = span.enter();
            tracing::info!("before");
            span.record("uid", "u-2");
            tracing::info!("after");
        });
        assert!(lines[0].get("uid").is_none());
        assert_eq!(lines[1]["uid"], "u-2");
    }
}
