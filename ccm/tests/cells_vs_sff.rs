//! The pruning index's value cells (dense events on per-name cells of values, for
//! filters that are all integer ranges, each its own interface) against the SFF-like
//! baseline on random workloads: ranges of every comparison operator with bounds at and
//! near each other and near the ends of `i32` (unbounded sides, empty ranges), over one
//! slice of filters or two, and events whose values lie on, between and beyond the
//! bounds (beyond `i32` too), that lack names (each absent name's OR, or its group's), or
//! carry a name of the cells as a float or a string (answered by SFF's rules instead); the
//! cells over the filters in interface order and in name order.
//! Also with filters that share interfaces (an interface matches when any of its filters
//! does): interfaces of one filter to hundreds, runs of slots within a slice and across
//! slices, with and without the partition walk for events of small partitions.

use baselines::sff::Sff;
use baselines::Matcher;
use ccm::batch::{EventBatch, ValueRef};
use ccm::model::{Constraint, Filter, InterfaceId, Op, Subscription, Value};
use ccm::{GpuIndex, IndexConfig};
use gpu_kernels::Device;
use proptest::prelude::*;

const NAMES: &[&str] = &["a", "b", "c", "d"];
/// Bounds: near each other, and near (inside) the ends of `i32`.
const BOUNDS: &[i64] = &[-7, -3, 0, 1, 2, 5, 9, -2_147_483_640, 2_147_483_640];
/// Event values: the bounds, between them, and beyond `i32`.
const VALUES: &[i64] = &[
    -8,
    -7,
    -5,
    -3,
    0,
    1,
    2,
    3,
    5,
    9,
    12,
    -2_147_483_641,
    -2_147_483_640,
    2_147_483_640,
    2_147_483_641,
    i32::MIN as i64,
    i32::MAX as i64,
    i64::MIN,
    i64::MAX,
    1 << 40,
];

/// A filter: one to three comparisons on distinct or repeated names.
fn filter() -> impl Strategy<Value = Vec<(usize, Op, i64)>> {
    let op = prop::sample::select(vec![Op::Eq, Op::Lt, Op::Gt, Op::Le, Op::Ge]);
    prop::collection::vec(
        (0..NAMES.len(), op, prop::sample::select(BOUNDS.to_vec())),
        1..4,
    )
}

/// An event's attribute per name: absent (0), an integer (1), a float (2) or a string (3),
/// mostly integers.
fn event() -> impl Strategy<Value = Vec<(u8, i64)>> {
    let kind = prop::sample::select(vec![0u8, 1, 1, 1, 1, 1, 2, 3]);
    prop::collection::vec((kind, prop::sample::select(VALUES.to_vec())), NAMES.len())
}

/// The subscriptions of `filters`, each repeated `copies` times, copy `i` of the whole
/// list in interface `iface(i)`.
fn subscriptions(
    filters: &[Vec<(usize, Op, i64)>],
    copies: usize,
    iface: impl Fn(usize) -> u32,
) -> Vec<Subscription> {
    (0..copies)
        .flat_map(|_| filters.iter())
        .enumerate()
        .map(|(i, f)| Subscription {
            interface: InterfaceId(iface(i)),
            filter: Filter {
                constraints: f
                    .iter()
                    .map(|&(n, op, v)| Constraint::new(NAMES[n], op, Value::Int(v)).unwrap())
                    .collect(),
            },
        })
        .collect()
}

/// The batch of `events`: per name absent, an integer, a float or a string.
fn batch(events: &[Vec<(u8, i64)>]) -> EventBatch {
    let mut b = EventBatch::new();
    for e in events {
        for (n, &(kind, v)) in e.iter().enumerate() {
            match kind {
                1 => b.push_named(NAMES[n], ValueRef::Int(v)).unwrap(),
                2 => b
                    .push_named(NAMES[n], ValueRef::Float(v as f64 + 0.5))
                    .unwrap(),
                3 => b.push_named(NAMES[n], ValueRef::Str("5")).unwrap(),
                _ => {}
            }
        }
        b.end_event().unwrap();
    }
    b
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn value_cells_answer_as_sff(
        filters in prop::collection::vec(filter(), 1..60),
        copies in 1usize..40,
        events in prop::collection::vec(event(), 1..24),
        cell_max in 1u32..8,
        cell_lists in any::<bool>(),
        cell_groups in any::<bool>(),
        cells_sorted in any::<bool>(),
        sorted_counts in any::<bool>(),
        cells_share in prop::sample::select(vec![0.0, 0.125]),
    ) {
        // Each filter repeated `copies` times, each copy its own interface: up to two
        // slices of 1024 filters. Every event on the cells (in name order with
        // `cells_sorted`, their answers counted by them with `sorted_counts`), or each
        // launch's path as the index chooses.
        let subs = subscriptions(&filters, copies, |i| i as u32);
        let b = batch(&events);
        let dev = Device::emulator();
        let cfg = IndexConfig {
            cell_max,
            cell_lists,
            cell_groups,
            cells_sorted,
            sorted_counts,
            cells_share,
            batch_events: 16,
            ..IndexConfig::for_device(&dev)
        };
        cells_answer_as_sff(&dev, &subs, &b, cfg)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn value_cells_with_shared_interfaces_answer_as_sff(
        filters in prop::collection::vec(filter(), 1..60),
        copies in 1usize..50,
        per in prop::sample::select(vec![1usize, 2, 3, 7, 40, 300, 1500]),
        gaps in any::<bool>(),
        events in prop::collection::vec(event(), 1..24),
        cell_max in 1u32..8,
        cells_share in prop::sample::select(vec![0.0, 0.3]),
    ) {
        // Runs of `per` filters in one interface (`gaps`: the user ids three apart, so
        // that ranks and ids differ), up to three slices (with `per` = 1, one filter per
        // interface: the cells without interfaces).
        let iface = |i: usize| ((i / per) * if gaps { 3 } else { 1 }) as u32;
        let subs = subscriptions(&filters, copies, iface);
        let b = batch(&events);
        let dev = Device::emulator();
        let cfg = IndexConfig {
            cell_max,
            cells_share,
            batch_events: 16,
            ..IndexConfig::for_device(&dev)
        };
        cells_answer_as_sff(&dev, &subs, &b, cfg)?;
    }
}

/// The index of `subs` on `dev` with `cfg` is built with value cells and answers every
/// event of `b` as SFF does.
fn cells_answer_as_sff(
    dev: &Device,
    subs: &[Subscription],
    b: &EventBatch,
    cfg: IndexConfig,
) -> Result<(), TestCaseError> {
    let mut index = GpuIndex::new(dev, subs, cfg).unwrap();
    prop_assert!(index.has_cells());
    let sff = Sff::build(subs).unwrap();
    let got = index.match_batch(b).unwrap();
    for (i, (e, g)) in b.to_events().iter().zip(got.iter()).enumerate() {
        let want = sff.match_event(e);
        prop_assert_eq!(g, want.as_slice(), "event {} ({:?})", i, e);
    }
    Ok(())
}
