//! clcb's JSON Lines loaders (`clcb::io::parse_subscriptions`, `parse_events`) on any bytes.
//!
//! Properties: no panic; an error is `IoError::Bad` naming `file:line[:column]` with a
//! line that exists, is the *first* bad line and is bad on its own; a column lies on that
//! line; on success one item per line, and the writers' output loads back. The area
//! does not round-trip bit for bit by design (the model keeps `r*r` in f32, the writer
//! writes `sqrt(r*r)`), so the reloaded area is compared with `Area::circle` of the
//! written radius; content floats within 1 ulp (serde_json's default float parser).
#![no_main]

mod common;

use clcb::io::{parse_events, parse_subscriptions, write_events, write_subscriptions, IoError};
use clcb::model::{Area, Event, Subscription, Value};
use common::*;
use libfuzzer_sys::fuzz_target;
use std::path::Path;

const FILE: &str = "fuzz.jsonl";

fn check_err<T>(data: &[u8], e: IoError, parse: impl Fn(&[u8]) -> Result<Vec<T>, IoError>) {
    let msg = e.to_string();
    let IoError::Bad { line, column, .. } = e else {
        panic!("an in-memory reader gave a read error: {msg}");
    };
    let lines = bufread_lines(data);
    assert!(line >= 1 && line <= lines.len(), "line {line} of {} lines: {msg}", lines.len());
    assert!(msg.starts_with(&format!("{FILE}:{line}")), "message does not start with file:line: {msg}");
    if let Some(c) = column {
        check_json_column(c, lines[line - 1].len(), &msg);
    }
    if let Err(e) = parse(&bufread_prefix(data, line - 1)) {
        panic!("error names line {line} ({msg}), but an earlier line is bad: {e}");
    }
    match parse(&bufread_line_alone(data, line)) {
        Ok(_) => panic!("error names line {line} ({msg}), but that line alone loads"),
        Err(IoError::Bad { line: 1, .. }) => {}
        Err(e) => panic!("line {line} alone fails elsewhere than line 1: {e}"),
    }
}

fn value_close(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => f64_close(*x, *y, 1),
        _ => a == b,
    }
}

/// The area the loader must give for what the writer wrote for `a`.
fn rewritten(a: &Area) -> Area {
    let Area::Circle { center, .. } = *a else {
        return *a; // a rectangle's corners are written as they are (f32 -> f64 exact)
    };
    Area::circle(center.x as f64, center.y as f64, a.radius() as f64).unwrap_or_else(|e| {
        panic!("the writer writes an area the loader refuses: {a:?} (radius {}): {e}", a.radius())
    })
}

fn subs_close(a: &[Subscription], b: &[Subscription]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(a, b)| {
            a.id == b.id
                && a.filters.len() == b.filters.len()
                && a.filters.iter().zip(&b.filters).all(|(f, g)| {
                    rewritten(&f.area) == g.area
                        && f.constraints.len() == g.constraints.len()
                        && f.constraints.iter().zip(&g.constraints).all(|(c, d)| {
                            c.name == d.name && c.op == d.op && value_close(&c.value, &d.value)
                        })
                })
        })
}

fn events_close(a: &[Event], b: &[Event]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(a, b)| {
            a.loc == b.loc
                && a.attributes().len() == b.attributes().len()
                && a.attributes().iter().zip(b.attributes()).all(|(x, y)| {
                    x.name == y.name && value_close(&x.value, &y.value)
                })
        })
}

fuzz_target!(|data: &[u8]| {
    let file = Path::new(FILE);
    let subs = |d: &[u8]| parse_subscriptions(file, d);
    let events = |d: &[u8]| parse_events(file, d);

    match subs(data) {
        Ok(s) => {
            assert_eq!(s.len(), bufread_lines(data).len(), "one subscription per line");
            let mut buf = Vec::new();
            write_subscriptions(&mut buf, &s).unwrap();
            let again = subs(&buf).unwrap_or_else(|e| {
                panic!("written subscriptions do not load: {e}\n{}", String::from_utf8_lossy(&buf))
            });
            assert!(subs_close(&s, &again), "subscriptions round trip differs:\n{s:?}\n{again:?}");
        }
        Err(e) => check_err(data, e, subs),
    }

    match events(data) {
        Ok(ev) => {
            assert_eq!(ev.len(), bufread_lines(data).len(), "one event per line");
            let mut buf = Vec::new();
            write_events(&mut buf, &ev).unwrap();
            let again = events(&buf).unwrap_or_else(|e| {
                panic!("written events do not load: {e}\n{}", String::from_utf8_lossy(&buf))
            });
            assert!(events_close(&ev, &again), "events round trip differs:\n{ev:?}\n{again:?}");
        }
        Err(e) => check_err(data, e, events),
    }
});
