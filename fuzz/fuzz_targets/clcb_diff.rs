//! Differential: clcb's engine on the host SIMT emulator (per event, by index and by id,
//! and batched; area moves by kernel, by copies and batched) against the CPU baselines
//! (`baselines::sff_location::SffLocation`, `baselines::rtree::RTreeMatcher`), on tiny
//! workloads built from the fuzz bytes: up to 6 subscriptions of 1-2 filters, 1-5
//! steps (match an event or move a filter's area). Coordinates on a half-unit grid plus
//! odd ones, so that events on an area's border are common; FCount options and
//! the grid index (`Options::grid`) varied.
#![no_main]

use baselines::rtree::RTreeMatcher;
use baselines::sff_location::SffLocation;
use ccm::model::{Attribute, Constraint, Op, Value};
use clcb::model::{Area, AreaUpdate, Event, Filter, FilterId, Location, Subscription, SubscriptionId, Subscriptions};
use clcb::{Engine, Options};
use gpu_kernels::Device;
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;

const NAMES: [&str; 5] = ["a", "b", "c", "d", "zz"];
const FLOATS: &[f64] = &[-1.5, 0.0, -0.0, 2.0, 2.5, 9_007_199_254_740_992.0];
const STRS: &[&str] = &["", "a", "ab", "ba", "abc", "b"];
const RADII: &[f64] = &[0.0, 0.5, 1.0, 1.5, 2.5, 100.0];

fn value(u: &mut Unstructured) -> Result<Value> {
    Ok(match u.int_in_range(0..=3u8)? {
        0 => Value::Int(u.int_in_range(-3..=3i64)?),
        1 => Value::Int(9_007_199_254_740_993),
        2 => Value::Float(*u.choose(FLOATS)?),
        _ => Value::Str(u.choose(STRS)?.to_string()),
    })
}

fn constraint(u: &mut Unstructured) -> Result<Constraint> {
    let name = *u.choose(&NAMES[..4])?;
    let v = value(u)?;
    let ops: &[Op] = if matches!(v, Value::Str(_)) {
        &[Op::Eq, Op::Ne, Op::Prefix, Op::Suffix, Op::Substr]
    } else {
        &[Op::Eq, Op::Ne, Op::Lt, Op::Gt, Op::Le, Op::Ge]
    };
    Ok(Constraint::new(name, *u.choose(ops)?, v).expect("operator chosen for the type"))
}

fn coord(u: &mut Unstructured) -> Result<f64> {
    Ok(match u.int_in_range(0..=11u8)? {
        0 => 0.3,
        1 => -1.7,
        2 => 1e4,
        k => (k as i32 - 7) as f64 * 0.5,
    })
}

fn area(u: &mut Unstructured) -> Result<Area> {
    Ok(Area::circle(coord(u)?, coord(u)?, *u.choose(RADII)?).expect("finite, non-negative"))
}

fn event(u: &mut Unstructured) -> Result<Event> {
    let loc = Location::new(coord(u)?, coord(u)?).expect("finite");
    let mut attrs: Vec<Attribute> = Vec::new();
    for _ in 0..u.int_in_range(0..=5u8)? {
        let name = *u.choose(&NAMES)?;
        let value = value(u)?;
        if !attrs.iter().any(|a| a.name == name) {
            attrs.push(Attribute { name: name.to_string(), value });
        }
    }
    Ok(Event { loc, content: ccm::model::Event::new(attrs).expect("distinct names") })
}

enum Step {
    Match(Event),
    Move(usize, Area),
}

fn workload(u: &mut Unstructured) -> Result<(Subscriptions, Vec<Step>, Options)> {
    let mut subs = Vec::new();
    for _ in 0..u.int_in_range(1..=6u8)? {
        let id = SubscriptionId(u.int_in_range(0..=20u32)? * 3);
        let mut filters = Vec::new();
        for _ in 0..u.int_in_range(1..=2u8)? {
            let mut cs = Vec::new();
            for _ in 0..u.int_in_range(0..=3u8)? {
                cs.push(constraint(u)?);
            }
            filters.push(Filter::new(cs, area(u)?).expect("valid filter"));
        }
        subs.push(Subscription { id, filters });
    }
    let mut steps = Vec::new();
    for _ in 0..u.int_in_range(1..=5u8)? {
        steps.push(if u.ratio(1, 4)? {
            Step::Move(u.arbitrary()?, area(u)?)
        } else {
            Step::Match(event(u)?)
        });
    }
    let opts = Options {
        fcount_runs: u.int_in_range(1..=4u32)?,
        read_prefix: *u.choose(&[1usize, 2, 16])?,
        batch: u.int_in_range(1..=4usize)?,
        grid: u.arbitrary()?,
    };
    Ok((Subscriptions::new(subs), steps, opts))
}

fuzz_target!(|data: &[u8]| {
    let Ok((subs, steps, opts)) = workload(&mut Unstructured::new(data)) else { return };
    let mut model = subs.clone();
    let mut emu = Engine::new(Device::emulator(), &subs, opts).expect("engine");
    let mut batched = Engine::new(Device::emulator(), &subs, opts).expect("engine");
    let mut rtree = RTreeMatcher::build(&subs);
    let mut sff_model = subs.clone();
    let mut sff = SffLocation::build(&sff_model);
    let mut pending: Vec<Event> = Vec::new();
    let mut pending_want: Vec<Vec<u32>> = Vec::new();
    for (n, step) in steps.into_iter().enumerate() {
        match step {
            Step::Match(e) => {
                let want = sff.match_indices(&e);
                let ctx = || format!("step {n}, event {e:?}\nsubscriptions {model:?}\noptions {opts:?}");
                assert_eq!(rtree.match_indices(&e, &model), want, "rtree vs sff, {}", ctx());
                assert_eq!(emu.match_indices(&e, None).expect("emu"), want, "emu vs sff, {}", ctx());
                let ids: Vec<SubscriptionId> = want.iter().map(|&i| model.id(i as usize)).collect();
                assert_eq!(emu.match_event(&e).expect("emu"), ids, "emu ids vs sff, {}", ctx());
                pending.push(e);
                pending_want.push(want);
            }
            Step::Move(i, area) => {
                let got = batched.match_batch(&pending).expect("batch");
                assert_eq!(got, pending_want, "batch before step {n}\nevents {pending:?}\nsubscriptions {model:?}\noptions {opts:?}");
                pending.clear();
                pending_want.clear();
                let u = AreaUpdate { filter: FilterId((i % model.filter_count()) as u32), area };
                model.apply(&u).expect("filter exists");
                if i % 2 == 0 {
                    emu.move_area(&u).expect("emu move");
                } else {
                    emu.move_area_by_copies(&u).expect("emu move");
                }
                batched.move_areas(&[u]).expect("batched move");
                rtree.move_area(&u).expect("rtree move");
                sff.move_area(&u, &mut sff_model).expect("sff move");
            }
        }
    }
    let got = batched.match_batch(&pending).expect("batch");
    assert_eq!(got, pending_want, "batch at the end\nevents {pending:?}\nsubscriptions {model:?}\noptions {opts:?}");
});
