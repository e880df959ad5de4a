//! The brute-force CCM oracle shared by the content-index and SFF-like property tests:
//! every constraint of every filter checked directly, numbers compared exactly.

use ccm::model::{Constraint, Event, InterfaceId, Op, Subscription, Value};
use std::cmp::Ordering;

/// Exact order of two numbers through i128 (finite floats below 1e30 in magnitude;
/// larger ones and infinities are beyond every i64).
pub fn brute_cmp(a: &Value, b: &Value) -> Ordering {
    fn parts(v: &Value) -> (i128, f64) {
        match *v {
            Value::Int(i) => (i as i128, 0.0),
            Value::Float(x) if x.abs() < 1e30 => (x.floor() as i128, x - x.floor()),
            Value::Float(x) => (if x > 0.0 { i128::MAX } else { i128::MIN }, 0.0),
            Value::Str(_) => unreachable!(),
        }
    }
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => x.partial_cmp(y).unwrap(),
        _ => {
            let (ai, af) = parts(a);
            let (bi, bf) = parts(b);
            ai.cmp(&bi).then(af.partial_cmp(&bf).unwrap())
        }
    }
}

pub fn brute_sat(c: &Constraint, e: &Event) -> bool {
    let Some(v) = e.get(&c.name) else {
        return false;
    };
    match (&c.value, v) {
        (Value::Str(k), Value::Str(x)) => match c.op {
            Op::Eq => x == k,
            Op::Ne => x != k,
            Op::Prefix => x.starts_with(k.as_str()),
            Op::Suffix => x.ends_with(k.as_str()),
            Op::Substr => x.contains(k.as_str()),
            _ => false,
        },
        (Value::Str(_), _) | (_, Value::Str(_)) => false,
        (k, x) => {
            let o = brute_cmp(x, k);
            match c.op {
                Op::Eq => o == Ordering::Equal,
                Op::Ne => o != Ordering::Equal,
                Op::Lt => o == Ordering::Less,
                Op::Gt => o == Ordering::Greater,
                Op::Le => o != Ordering::Greater,
                Op::Ge => o != Ordering::Less,
                _ => false,
            }
        }
    }
}

pub fn brute(subs: &[Subscription], e: &Event) -> Vec<InterfaceId> {
    let mut out: Vec<InterfaceId> = subs
        .iter()
        .filter(|s| s.filter.constraints.iter().all(|c| brute_sat(c, e)))
        .map(|s| s.interface)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}
