//! The OTLP trace messages the exporter sends, as protobuf (`opentelemetry-proto`,
//! `opentelemetry/proto/collector/trace/v1/trace_service.proto` and the `trace`, `common` and
//! `resource` files it imports): only the fields Orrery fills, under their field numbers, so
//! that every OTLP receiver decodes them. A field left out here is absent on the wire, which
//! protobuf reads as its default.

/// `ExportTraceServiceRequest`: the body of `POST /v1/traces`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportTraceServiceRequest {
    /// The spans, grouped by the resource that made them.
    #[prost(message, repeated, tag = "1")]
    pub resource_spans: Vec<ResourceSpans>,
}

/// `ResourceSpans`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceSpans {
    /// What made the spans (`service.name`, ...).
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    /// The spans, grouped by instrumentation scope.
    #[prost(message, repeated, tag = "2")]
    pub scope_spans: Vec<ScopeSpans>,
}

/// `Resource`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Resource {
    /// Its attributes.
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
}

/// `ScopeSpans`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ScopeSpans {
    /// The instrumentation scope.
    #[prost(message, optional, tag = "1")]
    pub scope: Option<InstrumentationScope>,
    /// Its spans.
    #[prost(message, repeated, tag = "2")]
    pub spans: Vec<Span>,
}

/// `InstrumentationScope`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InstrumentationScope {
    /// Its name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its version.
    #[prost(string, tag = "2")]
    pub version: String,
}

/// `Span.SpanKind`: internal.
pub const KIND_INTERNAL: i32 = 1;
/// `Span.SpanKind`: client (a call to a remote).
pub const KIND_CLIENT: i32 = 3;

/// `Status.StatusCode`: unset.
pub const STATUS_UNSET: i32 = 0;
/// `Status.StatusCode`: ok.
pub const STATUS_OK: i32 = 1;
/// `Status.StatusCode`: error.
pub const STATUS_ERROR: i32 = 2;

/// `Span`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Span {
    /// 16 bytes.
    #[prost(bytes = "vec", tag = "1")]
    pub trace_id: Vec<u8>,
    /// 8 bytes.
    #[prost(bytes = "vec", tag = "2")]
    pub span_id: Vec<u8>,
    /// 8 bytes, or empty for a root span.
    #[prost(bytes = "vec", tag = "4")]
    pub parent_span_id: Vec<u8>,
    /// What the span is.
    #[prost(string, tag = "5")]
    pub name: String,
    /// A `KIND_*`.
    #[prost(int32, tag = "6")]
    pub kind: i32,
    /// Its start, Unix nanoseconds.
    #[prost(fixed64, tag = "7")]
    pub start_time_unix_nano: u64,
    /// Its end, Unix nanoseconds.
    #[prost(fixed64, tag = "8")]
    pub end_time_unix_nano: u64,
    /// Its attributes.
    #[prost(message, repeated, tag = "9")]
    pub attributes: Vec<KeyValue>,
    /// Things that happened within it.
    #[prost(message, repeated, tag = "11")]
    pub events: Vec<SpanEvent>,
    /// How it ended.
    #[prost(message, optional, tag = "15")]
    pub status: Option<Status>,
}

/// `Span.Event`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SpanEvent {
    /// When, Unix nanoseconds.
    #[prost(fixed64, tag = "1")]
    pub time_unix_nano: u64,
    /// What.
    #[prost(string, tag = "2")]
    pub name: String,
    /// Its attributes.
    #[prost(message, repeated, tag = "3")]
    pub attributes: Vec<KeyValue>,
}

/// `Status`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Status {
    /// Why, for an error.
    #[prost(string, tag = "2")]
    pub message: String,
    /// A `STATUS_*`.
    #[prost(int32, tag = "3")]
    pub code: i32,
}

/// `KeyValue`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValue {
    /// The attribute's name.
    #[prost(string, tag = "1")]
    pub key: String,
    /// Its value.
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
}

/// `AnyValue` (the scalar kinds Orrery sends).
#[derive(Clone, PartialEq, prost::Message)]
pub struct AnyValue {
    /// The value.
    #[prost(oneof = "Value", tags = "1, 2, 3, 4")]
    pub value: Option<Value>,
}

/// `AnyValue.value`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Value {
    /// `string_value`.
    #[prost(string, tag = "1")]
    String(String),
    /// `bool_value`.
    #[prost(bool, tag = "2")]
    Bool(bool),
    /// `int_value`.
    #[prost(int64, tag = "3")]
    Int(i64),
    /// `double_value`.
    #[prost(double, tag = "4")]
    Double(f64),
}

impl KeyValue {
    /// A string attribute.
    pub fn string(key: &str, value: impl Into<String>) -> KeyValue {
        KeyValue::of(key, Value::String(value.into()))
    }

    /// An integer attribute (saturating at `i64::MAX`).
    pub fn int(key: &str, value: u64) -> KeyValue {
        KeyValue::of(key, Value::Int(i64::try_from(value).unwrap_or(i64::MAX)))
    }

    /// A boolean attribute.
    pub fn bool(key: &str, value: bool) -> KeyValue {
        KeyValue::of(key, Value::Bool(value))
    }

    fn of(key: &str, value: Value) -> KeyValue {
        KeyValue {
            key: key.to_owned(),
            value: Some(AnyValue { value: Some(value) }),
        }
    }
}
