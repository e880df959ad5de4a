//! The pruning index ([`ccm::GpuIndex`], its kernels on the host emulator) against
//! the SFF-like baseline on generated workloads: Table 1's model with uniform and Zipf
//! names and more names than signature bits, the dense model with one interface per
//! filter and with 10 interfaces, each with every event on the partition walk, every
//! event on the filter-major kernel and every event on the interface-major kernel. (Every operator and type, absent attributes
//! and long strings: the random workloads of `emu_vs_sff.rs`.)

use baselines::sff::Sff;
use baselines::Matcher;
use ccm::workload::{generate, generate_dense, DenseParams, NameDist, Params, Workload};
use ccm::{GpuIndex, IndexConfig};
use gpu_kernels::Device;

/// Launches of 7 events in blocks of 64 threads (several launches, several warps per
/// block on the emulator), dense events beyond `dense_share` of the filters, on the
/// interface-major kernel where interfaces hold at least `iface_major_min` filters
/// (no value cells, which the index would build instead for workloads of integer
/// ranges).
fn small_launches(dense_share: f64, iface_major_min: usize) -> IndexConfig {
    IndexConfig {
        dense_share,
        batch_events: 7,
        route_block: 64,
        dense_block: 64,
        iface_major_min,
        cells: false,
        ..IndexConfig::default()
    }
}

/// Table 1's workload (seed 6, uniform names), SFF's answer to each of its events, and an
/// index configuration of launches of five events (a stream of several launches).
fn table_1_in_launches_of_five() -> (Workload, Vec<Vec<ccm::InterfaceId>>, IndexConfig) {
    let w = table_1(6, NameDist::Uniform);
    let sff = Sff::build(&w.subscriptions).unwrap();
    let want = w.events.iter().map(|e| sff.match_event(e)).collect();
    let cfg = IndexConfig {
        batch_events: 5,
        route_block: 64,
        dense_block: 64,
        ..IndexConfig::default()
    };
    (w, want, cfg)
}

/// Every event's answer equals SFF's, with each dense share; returns the matches.
fn check(w: &Workload) -> usize {
    let sff = Sff::build(&w.subscriptions).unwrap();
    let want: Vec<_> = w.events.iter().map(|e| sff.match_event(e)).collect();
    let matches: usize = want.iter().map(Vec::len).sum();
    let dev = Device::emulator();
    // Dense events on the filter-major kernel (`iface_major_min` unreachable) and on
    // the interface-major one wherever an interface has several filters (1).
    // Events of few names on the triple partitions (the default), and every event on
    // the pairs' (`triple_names` 0).
    // Dense events on the filter-major kernel, and (where the index builds them) on the
    // value cells.
    for (dense_share, iface_major_min, triple_names, cells) in [
        (0.0, usize::MAX, 5, false),
        (0.125, usize::MAX, 5, false),
        (2.0, usize::MAX, 5, false),
        (2.0, usize::MAX, 0, false),
        (0.0, 1, 5, false),
        (0.125, 1, 5, false),
        (0.125, 1, 0, false),
        (0.0, usize::MAX, 5, true),
    ] {
        let cfg = IndexConfig {
            triple_names,
            cells,
            cells_share: dense_share,
            ..small_launches(dense_share, iface_major_min)
        };
        let mut index = GpuIndex::new(&dev, &w.subscriptions, cfg).unwrap();
        let got = index.match_batch(&w.batch).unwrap();
        assert_eq!(got.len(), w.events.len());
        for (i, (g, want)) in got.iter().zip(&want).enumerate() {
            assert_eq!(
                g,
                want.as_slice(),
                "event {i}, dense share {dense_share}, iface_major_min {iface_major_min}, triples {triple_names}, cells {cells}"
            );
        }
    }
    matches
}

fn table_1(names: usize, dist: NameDist) -> Workload {
    let p = Params {
        events: 24,
        interfaces: 5,
        filters_per_interface: (30, 50),
        constraints_per_filter: (1, 4),
        attrs_per_event: (2, 8),
        names,
        name_dist: dist,
        values: 4,
        ..Params::default()
    };
    generate(&p, 5).unwrap()
}

#[test]
fn table_1_model_with_uniform_and_zipf_names_and_more_names_than_signature_bits() {
    for names in [6, 100] {
        for dist in [NameDist::Uniform, NameDist::Zipf(1.0)] {
            let w = table_1(names, dist);
            let m = check(&w);
            if names == 6 {
                assert!(m > 0, "{names} names, {dist:?}: nothing matched");
            }
        }
    }
}

#[test]
fn dense_model_with_one_interface_per_filter_and_with_ten() {
    for interfaces in [None, Some(10)] {
        // (36 names: more than the partition walk keeps in shared memory.)
        for (names, names_per_event) in [(20, (3, 5)), (20, (20, 20)), (40, (36, 36))] {
            let p = DenseParams {
                events: 12,
                filters: 300,
                interfaces,
                names,
                names_per_event,
                ..DenseParams::default()
            };
            let m = check(&generate_dense(&p, 3).unwrap());
            assert!(
                m > 0,
                "{interfaces:?} {names} {names_per_event:?}: nothing matched"
            );
        }
    }
}

/// Launches of hundreds of dense events (every event dense): the filter-major kernel's
/// block rows each take several chunks of events (the grid is sized by the launch
/// before's count, none for the first), the interface-major kernel's blocks several
/// (event, interface) pairs; the answers as SFF's.
#[test]
fn launches_of_many_dense_events_stride_over_them_and_answer_as_sff() {
    let p = DenseParams {
        events: 600,
        filters: 300,
        interfaces: Some(10),
        names_per_event: (20, 20),
        ..DenseParams::default()
    };
    let w = generate_dense(&p, 9).unwrap();
    let sff = Sff::build(&w.subscriptions).unwrap();
    let want: Vec<_> = w.events.iter().map(|e| sff.match_event(e)).collect();
    assert!(want.iter().any(|a| !a.is_empty()), "nothing matched");
    let dev = Device::emulator();
    // The filter-major kernel, the interface-major one, the value cells (interfaces
    // sharing filters), the last in blocks of 64 threads and 16 events.
    for (iface_major_min, cells) in [(usize::MAX, false), (1, false), (1, true)] {
        let cfg = IndexConfig {
            batch_events: 2048,
            cells,
            cell_block: 64,
            cell_events: 16,
            ..small_launches(0.0, iface_major_min)
        };
        let mut index = GpuIndex::new(&dev, &w.subscriptions, cfg).unwrap();
        assert_eq!(index.has_cells(), cells);
        for round in 0..2 {
            let got = index.match_batch(&w.batch).unwrap();
            assert_eq!(got.len(), want.len());
            for (i, (g, want)) in got.iter().zip(&want).enumerate() {
                assert_eq!(
                    g,
                    want.as_slice(),
                    "event {i}, round {round}, iface_major_min {iface_major_min}, cells {cells}"
                );
            }
        }
    }
}

#[test]
fn answers_matched_into_again_equal_sffs_whether_their_areas_are_reused_or_grown() {
    let (w, want, cfg) = table_1_in_launches_of_five();
    let dev = Device::emulator();
    let mut index = GpuIndex::new(&dev, &w.subscriptions, cfg).unwrap();
    let mut out = ccm::Answers::default();
    // Few events (small areas), all of them (more launches, larger areas), then few
    // again (areas reused, the extra ones kept but not read).
    for n in [3, w.events.len(), 4] {
        index.match_range_into(&w.batch, 0..n, &mut out).unwrap();
        assert_eq!(out.len(), n);
        let total: usize = want[..n].iter().map(Vec::len).sum();
        assert_eq!(out.total(), total, "{n} events");
        for (i, g) in out.iter().enumerate() {
            assert_eq!(g, want[i].as_slice(), "event {i} of {n}");
        }
    }
}

#[test]
fn an_index_prepared_for_a_stream_from_a_sample_or_built_from_a_plan_answers_as_sff() {
    // `GpuIndex::prepare_for`: the staging areas made ahead from a sample of few
    // events (the stream's launches then grow them) or of all of them (room for every
    // launch); `IndexPlan` then `from_plan` (laid out before the device is known).
    let (w, want, cfg) = table_1_in_launches_of_five();
    let dev = Device::emulator();
    let tables = || ccm::layout::Tables::build(&w.subscriptions, false).unwrap();
    let few = ccm::EventBatch::from_events(&w.events[..2]);
    for (sample, made) in [(&few, 3), (&w.batch, 3)] {
        let plan = ccm::IndexPlan::new(tables(), cfg);
        let mut index = GpuIndex::from_plan(&dev, plan).unwrap();
        assert_eq!(index.prepare_for(sample).unwrap(), made);
        // Prepared again: the areas are there.
        assert_eq!(index.prepare_for(sample).unwrap(), 0);
        let got = index.match_batch(&w.batch).unwrap();
        assert_eq!(got.len(), w.events.len());
        for (i, (g, want)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, want.as_slice(), "event {i}, sample of {}", sample.len());
        }
    }
}

/// A batch whose dictionaries hold names and strings the subscriptions lack (some only
/// in the dictionaries, some on events), strings of every length from 1 to 120 bytes
/// and the constraints' own strings: the device's encoding leaves the unknown names
/// out, gives unknown strings no id (equal to no constraint's) and compares the
/// others' bytes in the batch's arena; every answer equals SFF's, over the whole batch
/// and over ranges of it that start and end inside launches.
#[test]
fn a_batch_with_names_and_strings_the_subscriptions_lack_is_answered_as_sff() {
    use ccm::batch::{EventBatch, ValueRef};
    use ccm::{InterfaceId, Op, Value};
    let subs = vec![
        sub(0, &[("s", Op::Prefix, Value::Str("xx".into()))]),
        sub(1, &[("s", Op::Substr, Value::Str("y".into()))]),
        sub(2, &[("s", Op::Suffix, Value::Str("xy".into()))]),
        sub(3, &[("n", Op::Gt, Value::Int(20))]),
        sub(
            4,
            &[
                ("s", Op::Eq, Value::Str("xxy".into())),
                ("n", Op::Lt, Value::Float(50.5)),
            ],
        ),
        sub(
            5,
            &[
                ("s", Op::Ne, Value::Str("xy".into())),
                ("f", Op::Ge, Value::Int(3)),
            ],
        ),
    ];
    let mut b = EventBatch::new();
    // Names and strings the subscriptions lack, first in the dictionaries.
    for n in ["zz", "unused", "n2"] {
        b.intern_name(n);
    }
    for i in 0..90usize {
        let mut s = "x".repeat(1 + (i * 37) % 120);
        if i.is_multiple_of(3) {
            s.push('y');
        }
        let s = match i % 10 {
            4 => "xxy".to_string(),
            5 => "xy".to_string(),
            6 => format!("q{i}"),
            _ => s,
        };
        if i % 4 == 1 {
            b.push_named("zz", ValueRef::Str(&format!("none{i}")))
                .unwrap();
        }
        b.push_named("s", ValueRef::Str(&s)).unwrap();
        if i % 5 != 2 {
            b.push_named("n", ValueRef::Int(i as i64)).unwrap();
        }
        if i % 3 == 0 {
            b.push_named("f", ValueRef::Float(i as f64 / 7.0)).unwrap();
        }
        if i % 6 == 0 {
            b.push_named("n2", ValueRef::Int(7)).unwrap();
        }
        b.end_event().unwrap();
    }
    let events = b.to_events();
    let sff = Sff::build(&subs).unwrap();
    let want: Vec<_> = events.iter().map(|e| sff.match_event(e)).collect();
    assert!(
        (0..6).all(|i| want.iter().any(|w| w.contains(&InterfaceId(i)))),
        "every interface matches"
    );
    let dev = Device::emulator();
    let cfg = IndexConfig {
        batch_events: 6,
        route_block: 64,
        dense_block: 64,
        ..IndexConfig::default()
    };
    let mut index = GpuIndex::new(&dev, &subs, cfg).unwrap();
    let mut out = ccm::Answers::default();
    for r in [0..events.len(), 3..50, 17..18, 40..events.len(), 5..5] {
        index.match_range_into(&b, r.clone(), &mut out).unwrap();
        assert_eq!(out.len(), r.len());
        for (k, g) in out.iter().enumerate() {
            let i = r.start + k;
            assert_eq!(g, want[i].as_slice(), "event {i} of range {r:?}");
        }
    }
}

/// Subscriptions added and removed between matches, on every kernel path: a removed
/// filter is skipped in place and added ones are matched from the small second table
/// without a full build, until a filter of a new interface asks for one; every answer
/// equals that of an SFF built on the subscriptions live at the time.
#[test]
fn updates_between_matches_need_no_rebuild_until_a_new_interface_and_answer_as_sff() {
    use ccm::{IndexUpdates, InterfaceId, SubId};
    let w = table_1(6, NameDist::Uniform);
    let dev = Device::emulator();
    // Every other subscription at the build (every interface and name is then seen).
    let first: Vec<_> = w.subscriptions.iter().step_by(2).cloned().collect();
    let later: Vec<_> = w.subscriptions.iter().skip(1).step_by(2).cloned().collect();
    let (half, rest) = later.split_at(later.len() / 2);
    for (dense_share, iface_major_min) in [(0.0, usize::MAX), (0.125, usize::MAX), (0.0, 1)] {
        let cfg = small_launches(dense_share, iface_major_min);
        let mut index = GpuIndex::new(&dev, &first, cfg).unwrap();
        let mut live: Vec<(SubId, ccm::Subscription)> = first
            .iter()
            .enumerate()
            .map(|(i, s)| (SubId(i as u32), s.clone()))
            .collect();
        let check = |index: &mut GpuIndex, live: &[(SubId, ccm::Subscription)], when: &str| {
            let subs: Vec<_> = live.iter().map(|(_, s)| s.clone()).collect();
            let sff = Sff::build(&subs).unwrap();
            let got = index.match_batch(&w.batch).unwrap();
            for (i, (e, g)) in w.events.iter().zip(got.iter()).enumerate() {
                assert_eq!(
                    g,
                    sff.match_event(e).as_slice(),
                    "{when}, event {i}, {cfg:?}"
                );
            }
        };
        check(&mut index, &live, "built");
        // Round 1: half of the others added, every third built filter removed.
        for s in half {
            live.push((index.add(s).unwrap(), s.clone()));
        }
        let mut k = 0;
        live.retain(|(id, _)| {
            k += 1;
            let built = (id.0 as usize) < first.len();
            let drop = built && k % 3 == 0;
            if drop {
                index.remove(*id).unwrap();
            }
            !drop
        });
        check(&mut index, &live, "round 1");
        let u = index.updates();
        assert_eq!(u.builds, 1, "{u:?}");
        assert_eq!(u.added, half.len(), "{u:?}");
        assert!(u.removed > 0, "{u:?}");
        // Round 2: every other added filter removed again, the rest added.
        let mut k = 0;
        live.retain(|(id, _)| {
            // Slots past the built ones: the filters added in round 1.
            let added = (id.0 as usize) >= first.len();
            k += 1;
            let drop = added && k % 2 == 0;
            if drop {
                index.remove(*id).unwrap();
            }
            !drop
        });
        for s in rest {
            live.push((index.add(s).unwrap(), s.clone()));
        }
        check(&mut index, &live, "round 2");
        assert_eq!(index.updates().builds, 1, "{:?}", index.updates());
        // Round 3: a filter of an interface the index has not seen: a full build.
        let mut new = first[0].clone();
        new.interface = InterfaceId(1_000_000);
        live.push((index.add(&new).unwrap(), new));
        check(&mut index, &live, "round 3");
        let u = index.updates();
        assert_eq!(
            u,
            IndexUpdates {
                builds: 2,
                added: 0,
                removed: 0
            }
        );
    }
}

#[test]
fn an_index_on_an_encoding_pool_of_its_own_answers_as_on_the_shared_pool() {
    // `GpuIndex::set_encode_threads` (each device's index of a `MultiIndex`): the
    // whole call runs on the index's own pool, of one thread and of three, called from
    // outside any pool and from inside rayon's global pool; answers equal SFF's.
    let w = table_1(100, NameDist::Uniform);
    let sff = Sff::build(&w.subscriptions).unwrap();
    let want: Vec<_> = w.events.iter().map(|e| sff.match_event(e)).collect();
    let dev = Device::emulator();
    for threads in [1, 3] {
        let mut index = GpuIndex::new(&dev, &w.subscriptions, small_launches(0.125, 1)).unwrap();
        index.set_encode_threads(threads);
        let outside = index.match_batch(&w.batch).unwrap();
        let inside = rayon::scope(|_| index.match_batch(&w.batch).unwrap());
        for got in [outside, inside] {
            assert_eq!(got.len(), w.events.len());
            for (i, (g, want)) in got.iter().zip(&want).enumerate() {
                assert_eq!(g, want.as_slice(), "event {i}, {threads} threads");
            }
        }
    }
}

/// A call's launches grow from `first_launch` by `ramp_growth` up to a full launch:
/// with several first sizes and growths (a launch of one event, growths of 1, 1.5, 2
/// and 3, launches that reach the full size and calls that end before), over the whole
/// batch and over ranges starting and ending inside launches, every answer equals SFF's.
#[test]
fn calls_ramped_by_any_first_size_and_growth_and_copied_in_any_slices_answer_as_sff() {
    let w = table_1(6, NameDist::Zipf(1.0));
    let sff = Sff::build(&w.subscriptions).unwrap();
    let want: Vec<_> = w.events.iter().map(|e| sff.match_event(e)).collect();
    let dev = Device::emulator();
    let n = w.events.len();
    // Launches' attributes copied to the device whole when queued (a slice of 0), or a
    // slice at a time as they are staged (of one attribute, of a few, of more than a
    // launch holds).
    for (first_launch, ramp_growth, copy_slice) in [
        (1, 1.0, 0),
        (1, 1.5, 1),
        (2, 2.0, 5),
        (3, 3.0, 1 << 16),
        (100, 2.0, 3),
    ] {
        let cfg = IndexConfig {
            batch_events: 9,
            route_block: 64,
            dense_block: 64,
            first_launch,
            ramp_growth,
            copy_slice,
            ..IndexConfig::default()
        };
        let mut index = GpuIndex::new(&dev, &w.subscriptions, cfg).unwrap();
        let mut out = ccm::Answers::default();
        for r in [0..n, 1..n - 2, 5..11, 0..1] {
            index
                .match_range_into(&w.batch, r.clone(), &mut out)
                .unwrap();
            assert_eq!(out.len(), r.len());
            for (k, g) in out.iter().enumerate() {
                let i = r.start + k;
                let at = format!(
                    "event {i} of {r:?}, first {first_launch}, growth {ramp_growth}, slice {copy_slice}"
                );
                assert_eq!(g, want[i].as_slice(), "{at}");
            }
        }
    }
}

/// The index keeps the last batch's dictionaries on the device and translates a
/// batch's only when they differ: batches of the same events whose dictionaries hold
/// the same names and strings numbered in other orders (the same counts and lengths),
/// matched in turn, then one matched again after a subscription added with a string
/// new to the tables; every answer equals SFF's (a translation kept for the wrong batch
/// would match names and strings by the other batch's numbers).
#[test]
fn batches_of_other_dictionaries_in_turn_are_each_translated_and_answer_as_sff() {
    use ccm::batch::{EventBatch, ValueRef};
    use ccm::{Event, Op, Subscription, Value};
    let mut subs = vec![
        sub(0, &[("a", Op::Eq, Value::Str("ab".into()))]),
        sub(1, &[("b", Op::Eq, Value::Str("ba".into()))]),
        sub(
            2,
            &[
                ("a", Op::Gt, Value::Int(3)),
                ("b", Op::Eq, Value::Str("ab".into())),
            ],
        ),
        sub(3, &[("c", Op::Eq, Value::Str("cd".into()))]),
    ];
    let strs = ["ab", "ba", "cd", "dc"];
    let events: Vec<Event> = (0..40usize)
        .map(|i| {
            let mut pairs = vec![
                ("a", Value::Str(strs[i % 4].into())),
                ("b", Value::Str(strs[(i / 4) % 4].into())),
            ];
            if i % 3 == 0 {
                pairs[0] = ("a", Value::Int(i as i64 % 7));
            }
            if i % 5 == 0 {
                pairs.push(("c", Value::Str(strs[(i / 5) % 4].into())));
            }
            Event::from_pairs(pairs).unwrap()
        })
        .collect();
    // The same events, their names and strings interned first in two orders.
    let batch = |names: [&str; 3], strings: [&str; 4]| {
        let mut b = EventBatch::new();
        for n in names {
            b.intern_name(n);
        }
        for s in strings {
            b.push_named("z", ValueRef::Str(s)).unwrap();
        }
        b.abandon_event();
        for e in &events {
            b.push_event(e);
        }
        b
    };
    let one = batch(["a", "b", "c"], ["ab", "ba", "cd", "dc"]);
    let two = batch(["b", "c", "a"], ["ba", "dc", "ab", "cd"]);
    assert_eq!(one.to_events(), events);
    assert_eq!(two.to_events(), events);
    assert_eq!(one.strings().len(), two.strings().len());
    let dev = Device::emulator();
    let cfg = IndexConfig {
        batch_events: 16,
        route_block: 64,
        dense_block: 64,
        ..IndexConfig::default()
    };
    let mut index = GpuIndex::new(&dev, &subs, cfg).unwrap();
    let check = |index: &mut GpuIndex, subs: &[Subscription], b: &EventBatch, what: &str| {
        let sff = Sff::build(subs).unwrap();
        let got = index.match_batch(b).unwrap();
        for (i, (g, e)) in got.iter().zip(&events).enumerate() {
            assert_eq!(g, sff.match_event(e).as_slice(), "event {i}, {what}");
        }
    };
    for (b, what) in [
        (&one, "one"),
        (&two, "two"),
        (&two, "two again"),
        (&one, "one again"),
    ] {
        check(&mut index, &subs, b, what);
    }
    // A string the tables lacked: an id of its own now, where the batch's translation
    // said none.
    let added = sub(1, &[("a", Op::Eq, Value::Str("dc".into()))]);
    index.add(&added).unwrap();
    subs.push(added);
    check(&mut index, &subs, &one, "one after an added string");
    check(&mut index, &subs, &two, "two after an added string");
}

/// The partition walk's warps per event follow the walk of the launch before: always
/// heavy (every launch after the first with `heavy_warps` warps per event), never
/// heavy, and heavy with two warps; launches of one warp per event otherwise (the
/// least `walk_warps`), several calls so the hint carries over; every answer equals
/// SFF's.
#[test]
fn heavy_walks_with_several_warps_per_event_answer_as_sff() {
    let w = table_1(6, NameDist::Zipf(1.0));
    let sff = Sff::build(&w.subscriptions).unwrap();
    let want: Vec<_> = w.events.iter().map(|e| sff.match_event(e)).collect();
    let dev = Device::emulator();
    for (heavy_walk, heavy_warps) in [(0, 4), (u32::MAX, 4), (1, 2), (0, 100)] {
        let cfg = IndexConfig {
            batch_events: 6,
            route_block: 64,
            dense_block: 64,
            walk_warps: 1,
            heavy_walk,
            heavy_warps,
            ..IndexConfig::default()
        };
        let mut index = GpuIndex::new(&dev, &w.subscriptions, cfg).unwrap();
        let mut out = ccm::Answers::default();
        for r in [0..w.events.len(), 2..w.events.len()] {
            index
                .match_range_into(&w.batch, r.clone(), &mut out)
                .unwrap();
            assert!(index.take_timing().walk_groups > 0, "the walk is counted");
            for (k, g) in out.iter().enumerate() {
                let i = r.start + k;
                let at =
                    format!("event {i} of {r:?}, heavy walk {heavy_walk}, {heavy_warps} warps");
                assert_eq!(g, want[i].as_slice(), "{at}");
            }
        }
    }
}

/// Interface `i`'s subscription to the conjunction of `cs` (name, operator, value).
fn sub(i: u32, cs: &[(&str, ccm::Op, ccm::Value)]) -> ccm::Subscription {
    ccm::Subscription {
        interface: ccm::InterfaceId(i),
        filter: ccm::Filter {
            constraints: cs
                .iter()
                .map(|(n, o, v)| ccm::Constraint::new(*n, *o, v.clone()).unwrap())
                .collect(),
        },
    }
}

/// The filter-major kernel's range form compared as `i32` (every bound narrow: strictly
/// inside `i32` or unbounded) and as `i64`: integer bounds and event values at and around
/// the limits of `i32` and `i64` (values clamped to `i32` must decide as the `i64`
/// compare), every event dense, an interface per filter and two filters of one
/// interface; each answer as SFF's. Then a bound outside `i32` (no narrow kernel).
#[test]
fn range_forms_compared_as_i32_and_as_i64_answer_as_sff_at_the_limits() {
    use ccm::batch::{EventBatch, ValueRef};
    use ccm::{Op, Value};
    let big = i32::MAX as i64;
    let small = i32::MIN as i64;
    let narrow_subs = vec![
        sub(0, &[("a", Op::Ge, Value::Int(5))]),
        sub(1, &[("a", Op::Le, Value::Int(big - 1))]),
        sub(
            2,
            &[
                ("a", Op::Gt, Value::Int(big - 2)),
                ("b", Op::Lt, Value::Int(small + 2)),
            ],
        ),
        sub(3, &[("a", Op::Eq, Value::Int(big - 1))]),
        sub(4, &[("b", Op::Eq, Value::Int(small + 1))]),
        sub(
            5,
            &[
                ("a", Op::Ge, Value::Int(-3)),
                ("a", Op::Le, Value::Int(7)),
                ("c", Op::Gt, Value::Int(0)),
            ],
        ),
        sub(5, &[("c", Op::Lt, Value::Int(small + 2))]),
        sub(
            6,
            &[("a", Op::Gt, Value::Int(10)), ("a", Op::Lt, Value::Int(5))],
        ),
    ];
    let values = [
        i64::MIN,
        small - 1,
        small,
        small + 1,
        small + 2,
        -3,
        0,
        5,
        7,
        11,
        big - 2,
        big - 1,
        big,
        big + 1,
        i64::MAX,
    ];
    let mut b = EventBatch::new();
    for (i, &a) in values.iter().enumerate() {
        for (j, &c) in values.iter().enumerate().step_by(2) {
            b.push_named("a", ValueRef::Int(a)).unwrap();
            b.push_named("b", ValueRef::Int(values[(i + j) % values.len()]))
                .unwrap();
            b.push_named("c", ValueRef::Int(c)).unwrap();
            b.end_event().unwrap();
        }
    }
    let events = b.to_events();
    let wide = {
        let mut s = narrow_subs.clone();
        s.push(sub(7, &[("a", Op::Lt, Value::Int(big + 5))]));
        s
    };
    let dev = Device::emulator();
    for subs in [&narrow_subs, &wide] {
        let sff = Sff::build(subs).unwrap();
        let want: Vec<_> = events.iter().map(|e| sff.match_event(e)).collect();
        assert!(want.iter().filter(|w| !w.is_empty()).count() > events.len() / 4);
        for narrow_ranges in [true, false] {
            let cfg = IndexConfig {
                narrow_ranges,
                dense_share: 0.0,
                batch_events: 16,
                dense_block: 64,
                ..IndexConfig::for_device(&dev)
            };
            let mut index = GpuIndex::new(&dev, subs, cfg).unwrap();
            let got = index.match_batch(&b).unwrap();
            assert_eq!(got.len(), events.len());
            for (i, g) in got.iter().enumerate() {
                assert_eq!(
                    g,
                    want[i].as_slice(),
                    "event {i} ({:?}), {} filters, narrow_ranges {narrow_ranges}",
                    events[i],
                    subs.len()
                );
            }
        }
    }
}

/// The value cells (dense events with every filter integer ranges) on the dense model
/// over several slices of filters (the last one partial), each filter its own interface,
/// ten interfaces (each over slices of its own) and 700 (three filters each, many in a
/// slice), with one cell per name, a few and many, every event on them or only those
/// beyond a share of the filters in launches with the partition walk (which the index
/// tries after launches of every event on the cells), the lists from the cells' counts
/// or from the rows of answer bits (and grown and listed again: launches of 10 events
/// start with room for 40 ids), the absent names one by one or by groups, the filters in
/// interface order or (one per interface) also in name order; each answer as SFF's.
#[test]
fn value_cells_answer_the_dense_model_as_sff() {
    let dev = Device::emulator();
    for interfaces in [None, Some(10), Some(700)] {
        // (The lists from the cells' counts, but with the walk kept for some events, and in
        // the last case: from the rows of answer bits.)
        for (x, cell_max, cells_share, cell_lists, cell_groups, cells_sorted) in [
            ((3, 5), 64, 0.0, true, false, true),
            ((3, 5), 64, 0.0, true, false, false),
            ((3, 5), 9, 0.0, true, true, true),
            ((3, 5), 9, -1.0, true, false, true),
            ((10, 10), 1, 0.05, true, false, true),
            ((3, 5), 64, 0.05, true, false, true),
            ((10, 10), 64, 0.0, true, true, true),
            ((20, 20), 6, 0.0, true, false, true),
            ((20, 20), 64, 0.0, false, false, false),
        ] {
            let p = DenseParams {
                events: 24,
                filters: 2100,
                interfaces,
                names_per_event: x,
                ..DenseParams::default()
            };
            let w = generate_dense(&p, 11).unwrap();
            let sff = Sff::build(&w.subscriptions).unwrap();
            let want: Vec<_> = w.events.iter().map(|e| sff.match_event(e)).collect();
            assert!(want.iter().any(|a| !a.is_empty()), "{x:?}: nothing matched");
            let cfg = IndexConfig {
                cell_max,
                cells_share,
                cell_lists,
                cell_groups,
                cells_sorted,
                // (A share below 0: every event on the cells, their answers counted by the
                // cells in name order.)
                sorted_counts: cells_share < 0.0,
                batch_events: 10,
                ..IndexConfig::for_device(&dev)
            };
            let mut index = GpuIndex::new(&dev, &w.subscriptions, cfg).unwrap();
            assert!(index.has_cells(), "{x:?}");
            let got = index.match_batch(&w.batch).unwrap();
            assert_eq!(got.len(), want.len());
            for (i, (g, want)) in got.iter().zip(&want).enumerate() {
                assert_eq!(
                g,
                want.as_slice(),
                "event {i}, {interfaces:?}, {x:?}, cell_max {cell_max}, cell_lists {cell_lists}, groups {cell_groups}, \
                 sorted {cells_sorted}"
            );
            }
            let timing = index.take_timing();
            assert!(timing.dense_events > 0, "{x:?}: no event on the cells");
            if cells_share > 0.0 {
                // Both paths tried (three launches: the cells in the first two, which
                // were queued before either was measured, then the walk).
                assert_eq!((timing.launches, timing.cells_launches), (3, 2), "{x:?}");
            }
        }
    }
}

/// The value cells with unbounded, empty and `i32`-edge ranges, events whose values lie
/// outside `i32`, that lack names, carry names no filter has (some 35 of them, before
/// the names of the cells), or carry a name of the cells as a float or a string (answered by SFF's rules instead); then filters removed
/// in place and one added to an interface (the cells kept); each answer as SFF's. Each
/// filter its own interface, then 60 interfaces sharing the filters.
#[test]
fn value_cells_answer_odd_events_and_updates_as_sff() {
    // Each filter its own interface; 60 interfaces of 25 filters (sharing them).
    odd_events_and_updates(|i| i);
    odd_events_and_updates(|i| i % 60);
}

fn odd_events_and_updates(iface: impl Fn(u32) -> u32) {
    use ccm::batch::{EventBatch, ValueRef};
    use ccm::{Op, SubId, Value};
    let big = i32::MAX as i64;
    let mut subs = Vec::new();
    for i in 0..1500u32 {
        let v = (i as i64 * 7919) % 2000 - 1000;
        let cs: Vec<(&str, Op, Value)> = match i % 6 {
            0 => vec![("a", Op::Ge, Value::Int(v))],
            1 => vec![("a", Op::Lt, Value::Int(v)), ("b", Op::Gt, Value::Int(-v))],
            2 => vec![
                ("b", Op::Ge, Value::Int(v)),
                ("b", Op::Le, Value::Int(v + 300)),
            ],
            3 => vec![
                ("a", Op::Eq, Value::Int(v)),
                ("c", Op::Le, Value::Int(big - 1)),
            ],
            4 => vec![
                ("c", Op::Gt, Value::Int(v)),
                ("c", Op::Lt, Value::Int(v - 5)),
            ],
            _ => vec![
                ("a", Op::Gt, Value::Int(-big + 1)),
                ("b", Op::Le, Value::Int(v)),
            ],
        };
        subs.push(sub(iface(i), &cs));
    }
    let mut b = EventBatch::new();
    let values = [
        i64::MIN,
        -big - 5,
        -1000,
        -333,
        -1,
        0,
        17,
        400,
        999,
        big - 1,
        big,
        1 << 40,
    ];
    for (i, &a) in values.iter().enumerate() {
        for (j, &c) in values.iter().enumerate() {
            let bv = values[(i + 2 * j) % values.len()];
            if j % 6 == 5 {
                // Names no filter has first (the batch's encoding drops them).
                for k in 0..35 {
                    b.push_named(&format!("p{k}"), ValueRef::Int(k)).unwrap();
                }
            }
            match (i + j) % 7 {
                0 => b.push_named("a", ValueRef::Float(a as f64 + 0.5)).unwrap(),
                1 => b.push_named("a", ValueRef::Str("x")).unwrap(),
                2 => {}
                _ => b.push_named("a", ValueRef::Int(a)).unwrap(),
            }
            if j % 4 != 1 {
                b.push_named("b", ValueRef::Int(bv)).unwrap();
            }
            if j % 5 != 2 {
                b.push_named("c", ValueRef::Int(c)).unwrap();
            }
            if j % 3 == 0 {
                b.push_named("zz", ValueRef::Int(c)).unwrap();
            }
            b.end_event().unwrap();
        }
    }
    let events = b.to_events();
    let dev = Device::emulator();
    let cfg = IndexConfig {
        batch_events: 40,
        ..IndexConfig::for_device(&dev)
    };
    let mut index = GpuIndex::new(&dev, &subs, cfg).unwrap();
    assert!(index.has_cells());
    let mut live: Vec<(SubId, ccm::Subscription)> = subs
        .iter()
        .enumerate()
        .map(|(i, s)| (SubId(i as u32), s.clone()))
        .collect();
    for round in 0..2 {
        let now: Vec<_> = live.iter().map(|(_, s)| s.clone()).collect();
        let sff = Sff::build(&now).unwrap();
        let got = index.match_batch(&b).unwrap();
        let mut matched = 0;
        for (i, (e, g)) in events.iter().zip(got.iter()).enumerate() {
            let want = sff.match_event(e);
            matched += want.len();
            assert_eq!(g, want.as_slice(), "round {round}, event {i} ({e:?})");
        }
        assert!(matched > events.len(), "round {round}: few matches");
        // Every fourth filter removed, one added to interface 3.
        let mut k = 0;
        live.retain(|(id, _)| {
            k += 1;
            let drop = k % 4 == 0;
            if drop {
                index.remove(*id).unwrap();
            }
            !drop
        });
        let extra = sub(3, &[("b", Op::Lt, Value::Int(0))]);
        live.push((index.add(&extra).unwrap(), extra));
    }
    assert_eq!(index.updates().builds, 1);
    assert!(index.has_cells());
}

/// The value cells' lists over many slices (ten slices of filters, the last short; a
/// warp of `ccm_cells_lists` per event and slice), each filter its own interface, every
/// event on the cells; each answer as SFF's.
#[test]
fn value_cells_list_events_of_many_slices_as_sff() {
    let dev = Device::emulator();
    let p = DenseParams {
        events: 12,
        filters: 9500,
        names_per_event: (10, 10),
        ..DenseParams::default()
    };
    let w = generate_dense(&p, 5).unwrap();
    let sff = Sff::build(&w.subscriptions).unwrap();
    let cfg = IndexConfig {
        cells_share: 0.0,
        batch_events: 5,
        ..IndexConfig::for_device(&dev)
    };
    let mut index = GpuIndex::new(&dev, &w.subscriptions, cfg).unwrap();
    assert!(index.has_cells());
    let got = index.match_batch(&w.batch).unwrap();
    let mut matches = 0;
    for (i, (e, g)) in w.events.iter().zip(got.iter()).enumerate() {
        let want = sff.match_event(e);
        assert_eq!(g, want.as_slice(), "event {i}");
        matches += want.len();
    }
    // Answers in the later slices too.
    assert!(
        got.iter().flatten().any(|&i| i.0 >= 8 * 1024),
        "{matches} answers"
    );
    assert_eq!(index.take_timing().cells_launches, 3);
}
/// A stream of calls on the dense model whose launches switch between every event on
/// the value cells (in interface order and in name order) and the partition walk (the
/// index's choice, trying the paths not taken one launch in 32): a walk ORs into rows
/// the cells' launch before in the same slot wrote, so those must be left zero, also
/// once the lists' buffer has grown and the lists fit; each answer as SFF's in every
/// call.
#[test]
fn launches_switching_between_the_cells_and_the_walk_answer_as_sff() {
    let dev = Device::emulator();
    let p = DenseParams {
        events: 24,
        filters: 2100,
        names_per_event: (3, 5),
        ..DenseParams::default()
    };
    let w = generate_dense(&p, 11).unwrap();
    let sff = Sff::build(&w.subscriptions).unwrap();
    let want: Vec<_> = w.events.iter().map(|e| sff.match_event(e)).collect();
    let cfg = IndexConfig {
        cells_share: 0.05,
        batch_events: 10,
        ..IndexConfig::for_device(&dev)
    };
    let mut index = GpuIndex::new(&dev, &w.subscriptions, cfg).unwrap();
    let (mut cells, mut sorted, mut walked) = (0, 0, 0);
    for call in 0..15 {
        let got = index.match_batch(&w.batch).unwrap();
        for (i, (g, want)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, want.as_slice(), "call {call}, event {i}");
        }
        let t = index.take_timing();
        cells += t.cells_launches;
        sorted += t.sorted_launches;
        walked += t.launches - t.cells_launches;
    }
    assert!(
        cells > 2 && walked > 0 && sorted > 0,
        "{cells} launches on the cells, {sorted} of them in name order, {walked} walked"
    );
}
