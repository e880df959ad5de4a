//! Users' files -> model: JSON Lines loaders with line-numbered errors.
//!
//! - subscriptions: one filter per line,
//!   `{"interface": 3, "filter": [["temp", ">", 30], ["area", "=", "area1"]]}`;
//! - events: one event per line, `{"temp": 25, "area": "area1"}`.
//!
//! JSON integers become [`Value::Int`] (they must fit in an `i64`), other numbers
//! [`Value::Float`], strings [`Value::Str`]. Every malformed line is an error naming the
//! file, the line (1-based), the column where the JSON parser knows it, and what is
//! wrong; nothing is skipped, blank lines included.

use crate::model::{
    Attribute, Constraint, Event, Filter, InterfaceId, ModelError, Op, Subscription, Value,
};
use serde::de::{Deserializer, MapAccess, Visitor};
use std::fmt;
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// A loader error: where (file, line, column) and what.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    #[error("{file}: cannot read: {source}")]
    Read {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}:{line}{}: {what}", column.map(|c| format!(":{c}")).unwrap_or_default())]
    Bad {
        file: PathBuf,
        line: usize,
        column: Option<usize>,
        what: String,
    },
}

impl IoError {
    fn bad(file: &Path, line: usize, column: Option<usize>, what: impl Into<String>) -> Self {
        IoError::Bad {
            file: file.to_path_buf(),
            line,
            column,
            what: what.into(),
        }
    }
}

/// A JSON object as its `(key, value)` pairs in file order, duplicates kept (serde_json's
/// own map would silently keep only the last of two equal keys).
struct Pairs(Vec<(String, serde_json::Value)>);

impl<'de> serde::Deserialize<'de> for Pairs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Pairs;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Pairs, A::Error> {
                let mut v = Vec::new();
                while let Some(kv) = map.next_entry::<String, serde_json::Value>()? {
                    v.push(kv);
                }
                Ok(Pairs(v))
            }
        }
        d.deserialize_map(V)
    }
}

/// Reads lines, handing each non-final `(line number, text)` to `f`.
fn for_each_line(
    file: &Path,
    reader: impl BufRead,
    mut f: impl FnMut(usize, &str) -> Result<(), IoError>,
) -> Result<(), IoError> {
    for (i, line) in reader.lines().enumerate() {
        let line = line.map_err(|e| match e.kind() {
            std::io::ErrorKind::InvalidData => IoError::bad(file, i + 1, None, "not valid UTF-8"),
            _ => IoError::Read {
                file: file.to_path_buf(),
                source: e,
            },
        })?;
        let line = line.strip_suffix('\r').unwrap_or(&line);
        if line.trim().is_empty() {
            return Err(IoError::bad(
                file,
                i + 1,
                None,
                "empty line (expected one JSON object per line)",
            ));
        }
        f(i + 1, line)?;
    }
    Ok(())
}

fn parse_object(
    file: &Path,
    line_no: usize,
    line: &str,
) -> Result<Vec<(String, serde_json::Value)>, IoError> {
    serde_json::from_str::<Pairs>(line)
        .map(|p| p.0)
        .map_err(|e| {
            let (column, cause) = json_line_error(&e);
            IoError::bad(
                file,
                line_no,
                Some(column),
                format!("invalid JSON object: {cause}"),
            )
        })
}

/// Where and why serde_json refused one line of a JSON Lines file: the column (from 1)
/// and serde_json's message without its own position. serde_json ends its message in
/// " at line 1 column N" (its own line, not the file's, so it would contradict the
/// file's line from line 2 on) and says column 0 for an error found before it consumed
/// a byte (`[`, `"a"`, `1` where an object is expected): that is column 1. Shared with
/// the clcb loaders.
pub fn json_line_error(e: &serde_json::Error) -> (usize, String) {
    let text = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let cause = text.strip_suffix(&suffix).unwrap_or(&text);
    (e.column().max(1), cause.to_string())
}

/// Converts a JSON scalar to a [`Value`]: integers that fit in `i64`, other numbers as
/// `f64`, strings.
fn to_value(v: &serde_json::Value) -> Result<Value, String> {
    match v {
        serde_json::Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Ok(Value::Int(i))
            } else if n.is_u64() {
                Err(format!(
                    "integer {n} does not fit in a signed 64-bit integer"
                ))
            } else {
                n.as_f64()
                    .map(Value::Float)
                    .ok_or_else(|| format!("number {n} is not representable"))
            }
        }
        serde_json::Value::String(s) => Ok(Value::Str(s.clone())),
        other => Err(format!(
            "expected a number or a string, found {}",
            json_kind(other)
        )),
    }
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

fn model_err(e: ModelError) -> String {
    e.to_string()
}

/// Parses one subscriptions line (without file context; errors are plain text).
fn subscription_from(pairs: Vec<(String, serde_json::Value)>) -> Result<Subscription, String> {
    let mut interface = None;
    let mut filter = None;
    for (k, v) in pairs {
        let slot = match k.as_str() {
            "interface" => &mut interface,
            "filter" => &mut filter,
            _ => {
                return Err(format!(
                    "unknown key `{k}` (expected `interface` and `filter`)"
                ))
            }
        };
        if slot.is_some() {
            return Err(format!("key `{k}` appears twice"));
        }
        *slot = Some(v);
    }
    let interface = interface.ok_or("missing key `interface`")?;
    let interface = interface
        .as_u64()
        .and_then(|i| u32::try_from(i).ok())
        .ok_or_else(|| {
            format!("`interface` must be an integer in 0..=4294967295, found {interface}")
        })?;
    let filter = filter.ok_or("missing key `filter`")?;
    let items = filter
        .as_array()
        .ok_or_else(|| format!("`filter` must be an array, found {}", json_kind(&filter)))?;
    let mut constraints = Vec::with_capacity(items.len());
    for (j, c) in items.iter().enumerate() {
        let triple = c.as_array().filter(|a| a.len() == 3).ok_or_else(|| {
            format!(
                "constraint {} must be a [name, operator, value] array, found {c}",
                j + 1
            )
        })?;
        let name = triple[0]
            .as_str()
            .ok_or_else(|| format!("constraint {}: the name must be a string", j + 1))?;
        let op_text = triple[1]
            .as_str()
            .ok_or_else(|| format!("constraint {}: the operator must be a string", j + 1))?;
        let op = Op::parse(op_text).ok_or_else(|| {
            format!(
                "constraint {}: unknown operator `{op_text}` (expected one of = != < > <= >= prefix suffix substr)",
                j + 1
            )
        })?;
        let value =
            to_value(&triple[2]).map_err(|e| format!("constraint {}: value: {e}", j + 1))?;
        constraints.push(
            Constraint::new(name, op, value).map_err(|e| format!("constraint {}: {e}", j + 1))?,
        );
    }
    let filter = Filter::new(constraints).map_err(model_err)?;
    Ok(Subscription {
        interface: InterfaceId(interface),
        filter,
    })
}

fn event_from(pairs: Vec<(String, serde_json::Value)>) -> Result<Event, String> {
    let mut attrs = Vec::with_capacity(pairs.len());
    for (k, v) in pairs {
        let value = to_value(&v).map_err(|e| format!("attribute `{k}`: {e}"))?;
        attrs.push(Attribute { name: k, value });
    }
    Event::new(attrs).map_err(model_err)
}

/// Parses a subscriptions JSON Lines stream; `file` names it in errors.
pub fn parse_subscriptions(
    file: &Path,
    reader: impl BufRead,
) -> Result<Vec<Subscription>, IoError> {
    let mut out = Vec::new();
    for_each_line(file, reader, |n, line| {
        let pairs = parse_object(file, n, line)?;
        out.push(subscription_from(pairs).map_err(|w| IoError::bad(file, n, None, w))?);
        Ok(())
    })?;
    Ok(out)
}

/// Parses an events JSON Lines stream; `file` names it in errors.
pub fn parse_events(file: &Path, reader: impl BufRead) -> Result<Vec<Event>, IoError> {
    let mut out = Vec::new();
    for_each_line(file, reader, |n, line| {
        let pairs = parse_object(file, n, line)?;
        out.push(event_from(pairs).map_err(|w| IoError::bad(file, n, None, w))?);
        Ok(())
    })?;
    Ok(out)
}

fn open(path: &Path) -> Result<std::io::BufReader<std::fs::File>, IoError> {
    std::fs::File::open(path)
        .map(std::io::BufReader::new)
        .map_err(|e| IoError::Read {
            file: path.to_path_buf(),
            source: e,
        })
}

/// Loads a subscriptions file (one filter per line).
pub fn load_subscriptions(path: &Path) -> Result<Vec<Subscription>, IoError> {
    parse_subscriptions(path, open(path)?)
}

/// Loads an events file (one event per line).
pub fn load_events(path: &Path) -> Result<Vec<Event>, IoError> {
    parse_events(path, open(path)?)
}

fn value_json(v: &Value) -> serde_json::Value {
    match v {
        Value::Int(i) => (*i).into(),
        // Non-finite floats have no JSON spelling (the model never holds NaN); an
        // infinity is written as a string rather than silently changed.
        Value::Float(x) => serde_json::Number::from_f64(*x)
            .map(Into::into)
            .unwrap_or_else(|| x.to_string().into()),
        Value::Str(s) => s.clone().into(),
    }
}

/// Writes subscriptions in the loader's format (one line each).
pub fn write_subscriptions(
    mut w: impl std::io::Write,
    subs: &[Subscription],
) -> std::io::Result<()> {
    for s in subs {
        let filter: Vec<serde_json::Value> = s
            .filter
            .constraints
            .iter()
            .map(|c| serde_json::json!([c.name, c.op.symbol(), value_json(&c.value)]))
            .collect();
        writeln!(
            w,
            "{}",
            serde_json::json!({"interface": s.interface.0, "filter": filter})
        )?;
    }
    Ok(())
}

/// Writes events in the loader's format (one line each, attributes in order).
pub fn write_events(mut w: impl std::io::Write, events: &[Event]) -> std::io::Result<()> {
    for e in events {
        // Written by hand to keep the attributes' order (serde_json's map sorts keys).
        let fields: Vec<String> = e
            .attributes()
            .iter()
            .map(|a| {
                format!(
                    "{}:{}",
                    serde_json::Value::from(a.name.as_str()),
                    value_json(&a.value)
                )
            })
            .collect();
        writeln!(w, "{{{}}}", fields.join(","))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subs(text: &str) -> Result<Vec<Subscription>, IoError> {
        parse_subscriptions(Path::new("subs.jsonl"), text.as_bytes())
    }
    fn events(text: &str) -> Result<Vec<Event>, IoError> {
        parse_events(Path::new("events.jsonl"), text.as_bytes())
    }

    #[test]
    fn loads_the_issue_example() {
        let s = subs(r#"{"interface": 3, "filter": [["temp", ">", 30], ["area", "=", "area1"]]}"#)
            .unwrap();
        assert_eq!(s[0].interface, InterfaceId(3));
        assert_eq!(
            s[0].filter.constraints[0],
            Constraint::new("temp", Op::Gt, Value::Int(30)).unwrap()
        );
        let e = events("{\"temp\": 25, \"area\": \"area1\"}\n{\"x\": 2.5}\n").unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(e[1].get("x"), Some(&Value::Float(2.5)));
    }

    /// The malformed-input table of issue 9: each line must fail with its line number
    /// and a message containing the expected words.
    #[test]
    fn malformed_subscription_lines_name_line_and_problem() {
        let ok = r#"{"interface": 1, "filter": [["a", "=", 1]]}"#;
        let table: &[(&str, &str)] = &[
            (
                r#"{"interface": 1, "filter": [["a", "=", 1]"#,
                "invalid JSON",
            ),
            (
                r#"{"interface": -1, "filter": [["a", "=", 1]]}"#,
                "interface",
            ),
            (
                r#"{"interface": 4294967296, "filter": [["a", "=", 1]]}"#,
                "interface",
            ),
            (
                r#"{"interface": "x", "filter": [["a", "=", 1]]}"#,
                "interface",
            ),
            (r#"{"filter": [["a", "=", 1]]}"#, "missing key `interface`"),
            (r#"{"interface": 1}"#, "missing key `filter`"),
            (
                r#"{"interface": 1, "filter": []}"#,
                "at least one constraint",
            ),
            (
                r#"{"interface": 1, "filter": [["a", "~", 1]]}"#,
                "unknown operator `~`",
            ),
            (
                r#"{"interface": 1, "filter": [["a", "<", "x"]]}"#,
                "does not apply to a string",
            ),
            (
                r#"{"interface": 1, "filter": [["a", "prefix", 3]]}"#,
                "does not apply to a integer",
            ),
            (
                r#"{"interface": 1, "filter": [["a", "=", true]]}"#,
                "boolean",
            ),
            (
                r#"{"interface": 1, "filter": [["a", "="]]}"#,
                "[name, operator, value]",
            ),
            (
                r#"{"interface": 1, "filter": [[1, "=", 1]]}"#,
                "name must be a string",
            ),
            (
                r#"{"interface": 1, "filter": [["a", "=", 1]], "x": 0}"#,
                "unknown key `x`",
            ),
            (
                r#"{"interface": 1, "interface": 2, "filter": [["a", "=", 1]]}"#,
                "twice",
            ),
            (
                r#"{"interface": 1, "filter": [["a", "=", 18446744073709551615]]}"#,
                "does not fit",
            ),
            (r#"[1, 2]"#, "invalid JSON"),
            ("", "empty line"),
        ];
        for (bad, want) in table {
            let text = format!("{ok}\n{bad}\n{ok}\n");
            let err = subs(&text).expect_err(bad).to_string();
            assert!(err.starts_with("subs.jsonl:2"), "{bad}: {err}");
            assert!(err.contains(want), "{bad}: {err} (wanted {want})");
        }
    }

    #[test]
    fn malformed_event_lines_name_line_and_problem() {
        let table: &[(&str, &str)] = &[
            (r#"{"a": 1"#, "invalid JSON"),
            (r#"{"a": 1, "a": 2}"#, "appears twice"),
            (r#"{"a": null}"#, "null"),
            (r#"{"a": [1]}"#, "array"),
            (r#"{"a": 1e999}"#, "invalid JSON"),
            (r#""a""#, "invalid JSON"),
            ("   ", "empty line"),
        ];
        for (bad, want) in table {
            let err = events(&format!("{{}}\n{bad}\n"))
                .expect_err(bad)
                .to_string();
            assert!(err.starts_with("events.jsonl:2"), "{bad}: {err}");
            assert!(err.contains(want), "{bad}: {err} (wanted {want})");
        }
    }

    #[test]
    fn json_errors_give_a_column_within_the_line() {
        for bad in ["[1, 2]", "[", "{\"a\": }", "x"] {
            let err = events(&format!("{bad}\n")).unwrap_err();
            let IoError::Bad {
                line,
                column: Some(c),
                what,
                ..
            } = &err
            else {
                panic!("{err}")
            };
            assert_eq!(*line, 1);
            assert!(*c >= 1 && *c <= bad.len() + 1, "{bad}: column {c}");
            assert!(!what.contains("at line"), "{what}");
        }
    }

    #[test]
    fn floats_parse_correctly_rounded() {
        // 17 significant digits with a large exponent: the case serde_json's fast float
        // parser can get 1 ulp wrong without `float_roundtrip`.
        for x in [
            2.2250738585072014e-308f64,
            1.7976931348623157e308,
            9.109383701528e-31,
            0.1 + 0.2,
        ] {
            let e = events(&format!("{{\"x\": {x:?}}}\n")).unwrap();
            assert_eq!(e[0].get("x"), Some(&Value::Float(x)));
        }
    }

    #[test]
    fn empty_files_load_as_empty_lists_and_missing_files_are_named() {
        assert!(subs("").unwrap().is_empty());
        assert!(events("").unwrap().is_empty());
        let err = load_events(Path::new("/nonexistent/e.jsonl"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("/nonexistent/e.jsonl"), "{err}");
    }

    #[test]
    fn writers_round_trip_through_loaders() {
        let s = subs(r#"{"interface": 7, "filter": [["t", ">=", -2.5], ["s", "substr", "a\"b"]]}"#)
            .unwrap();
        let mut buf = Vec::new();
        write_subscriptions(&mut buf, &s).unwrap();
        assert_eq!(parse_subscriptions(Path::new("x"), &buf[..]).unwrap(), s);
        let e = events(r#"{"b": "x", "a": 9007199254740993}"#).unwrap();
        let mut buf = Vec::new();
        write_events(&mut buf, &e).unwrap();
        assert_eq!(parse_events(Path::new("x"), &buf[..]).unwrap(), e);
    }
}
