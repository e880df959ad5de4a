//! Differential: ccm's engine on the host SIMT emulator (Algorithm 1 per event, both
//! reset variants, with and without grouping, and the batched kernel) against the
//! SFF-like CPU baseline (`baselines::sff::Sff`), on tiny workloads built from the fuzz
//! bytes: up to 12 subscriptions of 1-3 constraints and up to 4 events, over pools of
//! names and values that hit the typing rules' edges (empty strings, prefix = whole
//! string, int/float at 2^53 and the i64 ends, -0.0, infinities, type mismatches).
#![no_main]

use baselines::sff::Sff;
use ccm::model::{Attribute, Constraint, Event, Filter, InterfaceId, Op, Subscription, Value};
use ccm::{Ccm, Config, Reset};
use gpu_kernels::Device;
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;

const NAMES: &[&str] = &["a", "b", ""];
const STRS: &[&str] = &["", "a", "ab", "abc", "b", "ba", "bab", "é", "aé"];
const INTS: &[i64] = &[-2, -1, 0, 1, 2, i64::MIN, i64::MAX, (1 << 53) + 1, 1 << 53, -(1 << 53) - 1];
const FLOATS: &[f64] = &[
    0.5, -0.0, 0.0, 1.0, 2.0, -2.5, 9007199254740992.0, -9007199254740992.0,
    9_223_372_036_854_775_808.0, -9_223_372_036_854_775_808.0, f64::INFINITY, f64::NEG_INFINITY, 1e300,
];

fn value(u: &mut Unstructured) -> Result<Value> {
    Ok(match u.int_in_range(0..=2u8)? {
        0 => Value::Int(*u.choose(INTS)?),
        1 => Value::Float(*u.choose(FLOATS)?),
        _ => Value::Str(u.choose(STRS)?.to_string()),
    })
}

fn constraint(u: &mut Unstructured) -> Result<Constraint> {
    let name = *u.choose(NAMES)?;
    let v = value(u)?;
    let ops: Vec<Op> = Op::ALL
        .into_iter()
        .filter(|o| if v.is_number() { o.on_numbers() } else { o.on_strings() })
        .collect();
    let op = *u.choose(&ops)?;
    Ok(Constraint::new(name, op, v).expect("operator chosen for the type"))
}

fn event(u: &mut Unstructured) -> Result<Event> {
    let mut attrs: Vec<Attribute> = Vec::new();
    for _ in 0..u.int_in_range(0..=4u8)? {
        let name = *u.choose(NAMES)?;
        let value = value(u)?;
        if !attrs.iter().any(|a| a.name == name) {
            attrs.push(Attribute { name: name.to_string(), value });
        }
    }
    Ok(Event::new(attrs).expect("distinct names"))
}

fn workload(u: &mut Unstructured) -> Result<(Vec<Subscription>, Vec<Event>, Config)> {
    let mut subs = Vec::new();
    for _ in 0..u.int_in_range(0..=12u8)? {
        let interface = InterfaceId(u.int_in_range(0..=3u32)? * 7);
        let mut cs = Vec::new();
        for _ in 0..u.int_in_range(1..=3u8)? {
            cs.push(constraint(u)?);
        }
        subs.push(Subscription { interface, filter: Filter::new(cs).expect("1..=3 constraints") });
    }
    let mut events = Vec::new();
    for _ in 0..u.int_in_range(1..=4u8)? {
        events.push(event(u)?);
    }
    let cfg = Config {
        reset: if u.arbitrary()? { Reset::Memset } else { Reset::InKernel },
        grouping: u.arbitrary()?,
        block: 32,
        batch_events: *u.choose(&[1usize, 3, 5])?,
        batch_chunk: *u.choose(&[1u32, 4])?,
        ..Config::default()
    };
    Ok((subs, events, cfg))
}

fuzz_target!(|data: &[u8]| {
    let Ok((subs, events, cfg)) = workload(&mut Unstructured::new(data)) else { return };
    let sff = Sff::build(&subs).expect("SFF builds");
    let want: Vec<Vec<InterfaceId>> = events.iter().map(|e| sff.match_event(e)).collect();
    let dev = Device::emulator();
    let mut ccm = Ccm::new(&dev, &subs, cfg.clone()).expect("engine");
    for (e, w) in events.iter().zip(&want) {
        let got = ccm.match_event(e).expect("match_event");
        assert_eq!(&got, w, "event {e:?}\nsubscriptions {subs:#?}\nconfig {cfg:?}");
    }
    let got = ccm.match_events(&events).expect("match_events");
    assert_eq!(got, want, "batch\nsubscriptions {subs:#?}\nevents {events:?}\nconfig {cfg:?}");
});
