//! A manifest's YAML read as kubectl and the apiserver read it (rule 1.81): sigs.k8s.io/yaml's
//! `YAMLToJSON` over go-yaml v2, so YAML 1.1, where `yes`, `on` and `y` are booleans and `0777`
//! is octal ([`resolve`] says exactly what each plain scalar becomes). `orrery validate` then
//! checks the JSON the apiserver checks, and `instruction: yes` is refused as a boolean, as the
//! apiserver refuses it, instead of passing as the string "yes".
//!
//! YAML 1.2 parsers (serde_yaml) read those as strings and forget, once parsed, which scalars
//! were quoted; this reads the parser's events, where the style is still known. Beyond the
//! scalars, as kubectl: aliases repeat their anchor's value, a `<<` key merges mappings in,
//! keys become JSON's strings (`yes: 1` is `{"true": 1}`, `1.0: x` is `{"1": "x"}`), and what
//! JSON cannot hold is refused (`.inf`, `.nan`, a null key, a mapping as a key). Stricter than
//! kubectl's lenient default, as the apiserver's strict field validation: a key twice in one
//! mapping, merged keys included, is refused (rule 1.62).

mod resolve;
mod strconv;
#[cfg(test)]
mod tests;

use crate::unique_keys::key_for_message;
use granit_parser::{Event, Options, Parser, ScalarStyle, ScanError, Span, StrInput};
use resolve::Scalar;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// The most values aliases may add to one text (go-yaml refuses "excessive aliasing" too): a
/// few anchors repeated inside each other would otherwise build billions.
const MAX_ALIAS_VALUES: usize = 1_000_000;

/// The most bytes of text aliases may add to one text: one long string anchored and aliased
/// a few hundred thousand times is few values but gigabytes (found fuzzing, issue 27).
const MAX_ALIAS_BYTES: usize = 16 * 1024 * 1024;

const MERGE_TAG: &str = "tag:yaml.org,2002:merge";

/// Whether `text`, written as a plain (unquoted) YAML scalar, reads back as that very string
/// as kubectl reads YAML (`yes`, `1_000`, `0b101` and `~` do not: a boolean, numbers, null).
pub(crate) fn plain_is_text(text: &str) -> bool {
    matches!(resolve::scalar(text, true, None), Ok(resolve::Scalar::Str(s)) if s == text)
}

/// Why a YAML text was not read. Each names its document (from 1) and, in its message, the
/// line and column.
#[derive(Debug, PartialEq)]
pub(super) enum YamlError {
    /// Not YAML (or a key twice in a mapping).
    Syntax { document: usize, message: String },
    /// YAML that kubectl cannot make JSON of.
    NotJson { document: usize, message: String },
}

/// Every document of a YAML text as the JSON kubectl sends (an empty document is `null`).
pub(super) fn documents(text: &str) -> Result<Vec<Value>, YamlError> {
    let mut options = Options::default();
    options.emit_comments = false;
    // As libyaml, which go-yaml is a port of.
    options.block_scalar_eof_without_line_feed = true;
    options.bom_inside_document_as_content = true;
    let mut reader = Reader {
        parser: Parser::new_from_str_with_options(text, options),
        document: 0,
        in_document: false,
        anchors: HashMap::new(),
        expanded: 0,
        expanded_bytes: 0,
    };
    let mut documents = Vec::new();
    while let Some((event, span)) = reader.next()? {
        match event {
            Event::StreamStart => {}
            Event::StreamEnd => break,
            Event::DocumentStart(..) => {
                reader.document += 1;
                reader.in_document = true;
                reader.anchors.clear();
            }
            Event::DocumentEnd => reader.in_document = false,
            event => {
                let node = reader.node(event, span)?;
                documents.push(reader.value_of(node)?);
            }
        }
    }
    Ok(documents)
}

/// What a node holds: a scalar (kept unconverted: as a key it becomes a string, as a value
/// JSON) or a collection already converted.
#[derive(Clone)]
enum Content {
    Scalar(Scalar),
    Collection(Value),
}

/// A node as read.
struct Node {
    content: Content,
    /// How many values it holds, itself included (aliases counted in full).
    size: usize,
    /// How many bytes of text its scalars hold, keys included (aliases counted in full).
    bytes: usize,
    /// A `<<` key (plain, or tagged `!!merge`).
    merge: bool,
    /// An alias (a merge may not take an alias of a sequence).
    alias: bool,
    span: Span,
}

struct Reader<'a> {
    parser: Parser<'a, StrInput<'a>>,
    /// Documents started so far.
    document: usize,
    in_document: bool,
    /// Each anchor's node, its size and its bytes, in the current document.
    anchors: HashMap<usize, (Content, usize, usize)>,
    /// Values added by aliases so far.
    expanded: usize,
    /// Bytes of text added by aliases so far.
    expanded_bytes: usize,
}

/// Where a span starts, as messages say it.
fn position(span: &Span) -> String {
    format!("line {} column {}", span.start.line(), span.start.col() + 1)
}

impl<'a> Reader<'a> {
    /// The document an error is in: the current one, or the next if it has not started.
    fn error_document(&self) -> usize {
        if self.in_document {
            self.document
        } else {
            self.document + 1
        }
    }

    fn syntax(&self, message: String) -> YamlError {
        YamlError::Syntax {
            document: self.error_document(),
            message,
        }
    }

    fn not_json(&self, span: &Span, message: impl std::fmt::Display) -> YamlError {
        YamlError::NotJson {
            document: self.error_document(),
            message: format!("{}: {message}", position(span)),
        }
    }

    fn scan_error(&self, error: &ScanError) -> YamlError {
        let mark = error.marker();
        self.syntax(format!(
            "{} at line {} column {}",
            error.info(),
            mark.line(),
            mark.col() + 1
        ))
    }

    fn next(&mut self) -> Result<Option<(Event<'a>, Span)>, YamlError> {
        match self.parser.next() {
            None => Ok(None),
            Some(Ok(next)) => Ok(Some(next)),
            Some(Err(error)) => Err(self.scan_error(&error)),
        }
    }

    /// The next event inside a node, which must come.
    fn next_inside(&mut self) -> Result<(Event<'a>, Span), YamlError> {
        self.next()?
            .ok_or_else(|| self.syntax("the text ends inside a sequence or mapping".to_owned()))
    }

    /// A node's JSON value.
    fn value_of(&self, node: Node) -> Result<Value, YamlError> {
        match node.content {
            Content::Scalar(scalar) => scalar.to_json().map_err(|m| self.not_json(&node.span, m)),
            Content::Collection(value) => Ok(value),
        }
    }

    /// Reads the node that `event` starts.
    fn node(&mut self, event: Event<'a>, span: Span) -> Result<Node, YamlError> {
        let (content, size, bytes, anchor) = match event {
            Event::Scalar(text, style, anchor, tag) => {
                let tag = tag.map(|t| format!("{}{}", t.handle(), t.suffix()));
                let plain = style == ScalarStyle::Plain;
                let merge = text == "<<"
                    && match tag.as_deref() {
                        None => plain,
                        Some(tag) => tag == "!" || tag == MERGE_TAG,
                    };
                let scalar = resolve::scalar(&text, plain, tag.as_deref())
                    .map_err(|m| self.not_json(&span, m))?;
                let content = Content::Scalar(scalar);
                let bytes = text.len();
                if anchor != 0 {
                    self.anchors.insert(anchor, (content.clone(), 1, bytes));
                }
                return Ok(Node {
                    content,
                    size: 1,
                    bytes,
                    merge,
                    alias: false,
                    span,
                });
            }
            Event::SequenceStart(_, anchor, _) => {
                let (items, size, bytes) = self.sequence()?;
                (
                    Content::Collection(Value::Array(items)),
                    size,
                    bytes,
                    anchor,
                )
            }
            Event::MappingStart(_, anchor, _) => {
                let (map, size, bytes) = self.mapping()?;
                (Content::Collection(Value::Object(map)), size, bytes, anchor)
            }
            Event::Alias(id) => {
                let Some((content, size, bytes)) = self.anchors.get(&id) else {
                    return Err(self.syntax(format!("{}: unknown anchor", position(&span))));
                };
                let (size, bytes) = (*size, *bytes);
                // Counted before the copy is made: a refused alias costs nothing.
                self.expanded = self.expanded.saturating_add(size);
                self.expanded_bytes = self.expanded_bytes.saturating_add(bytes);
                if self.expanded > MAX_ALIAS_VALUES {
                    return Err(self.syntax(format!(
                        "{}: aliases expand to more than {MAX_ALIAS_VALUES} values; no manifest repeats that much",
                        position(&span)
                    )));
                }
                if self.expanded_bytes > MAX_ALIAS_BYTES {
                    return Err(self.syntax(format!(
                        "{}: aliases expand to more than {} MiB of text; no manifest repeats that much",
                        position(&span),
                        MAX_ALIAS_BYTES / (1024 * 1024)
                    )));
                }
                return Ok(Node {
                    content: content.clone(),
                    size,
                    bytes,
                    merge: false,
                    alias: true,
                    span,
                });
            }
            _ => {
                return Err(self.syntax(format!(
                    "{}: unexpected YAML event {event:?}",
                    position(&span)
                )));
            }
        };
        if anchor != 0 {
            self.anchors.insert(anchor, (content.clone(), size, bytes));
        }
        Ok(Node {
            content,
            size,
            bytes,
            merge: false,
            alias: false,
            span,
        })
    }

    fn sequence(&mut self) -> Result<(Vec<Value>, usize, usize), YamlError> {
        let mut items = Vec::new();
        let (mut size, mut bytes) = (1usize, 0usize);
        loop {
            let (event, span) = self.next_inside()?;
            if matches!(event, Event::SequenceEnd) {
                return Ok((items, size, bytes));
            }
            let item = self.node(event, span)?;
            size = size.saturating_add(item.size);
            bytes = bytes.saturating_add(item.bytes);
            items.push(self.value_of(item)?);
        }
    }

    fn mapping(&mut self) -> Result<(Map<String, Value>, usize, usize), YamlError> {
        let mut map = Map::new();
        let (mut size, mut bytes) = (1usize, 0usize);
        loop {
            let (event, span) = self.next_inside()?;
            if matches!(event, Event::MappingEnd) {
                return Ok((map, size, bytes));
            }
            let key = self.node(event, span)?;
            let (event, span) = self.next_inside()?;
            let value = self.node(event, span)?;
            size = size.saturating_add(key.size).saturating_add(value.size);
            bytes = bytes.saturating_add(key.bytes).saturating_add(value.bytes);
            if key.merge {
                self.merge(&mut map, value, &key.span)?;
                continue;
            }
            let name = match &key.content {
                Content::Scalar(scalar) => {
                    scalar.to_key().map_err(|m| self.not_json(&key.span, m))?
                }
                Content::Collection(_) => {
                    return Err(self.not_json(
                        &key.span,
                        "a sequence or mapping cannot be a key (kubectl: invalid map key)",
                    ));
                }
            };
            if map.contains_key(&name) {
                return Err(self.syntax(format!(
                    "duplicate key {} (a key may appear only once in a mapping; the last would silently win) at {}",
                    key_for_message(&name),
                    position(&key.span)
                )));
            }
            let value = self.value_of(value)?;
            map.insert(name, value);
        }
    }

    /// `<<: *base` (or a list of them): the mappings' keys join `map`. A key `map` already has,
    /// or that two merged mappings share, is refused as a key written twice.
    fn merge(&self, map: &mut Map<String, Value>, value: Node, at: &Span) -> Result<(), YamlError> {
        let wrong = || {
            self.not_json(
                at,
                "map merge requires map or sequence of maps as the value (go-yaml's words)",
            )
        };
        let mappings = match value.content {
            Content::Collection(Value::Object(merged)) => vec![merged],
            Content::Collection(Value::Array(items)) if !value.alias => items
                .into_iter()
                .map(|item| match item {
                    Value::Object(merged) => Ok(merged),
                    _ => Err(wrong()),
                })
                .collect::<Result<_, _>>()?,
            _ => return Err(wrong()),
        };
        for merged in mappings {
            for (name, v) in merged {
                if map.contains_key(&name) {
                    return Err(self.syntax(format!(
                        "duplicate key {} merged by `<<` (a key may appear only once in a mapping, merged keys included; the last would silently win) at {}",
                        key_for_message(&name),
                        position(at)
                    )));
                }
                map.insert(name, v);
            }
        }
        Ok(())
    }
}
