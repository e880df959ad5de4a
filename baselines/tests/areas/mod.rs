//! Random CLCB areas for the peers' property tests (the grid index's and the R*-tree's):
//! circles and rectangles with their edge cases, and the points that probe an area's
//! border.

use clcb::model::{Area, Location};
use proptest::prelude::*;

/// Circles (centres from `coord`, radii from `radius`) and rectangles: zero width or
/// height, thin, square, huge (past every coordinate), far outside the others.
pub fn area(coord: BoxedStrategy<f64>, radius: BoxedStrategy<f64>) -> impl Strategy<Value = Area> {
    let circle =
        (coord.clone(), coord.clone(), radius).prop_map(|(x, y, r)| Area::circle(x, y, r).unwrap());
    let side = prop_oneof![Just(0.0), Just(0.25), 0.0f64..40.0, Just(2000.0)];
    let rect = prop_oneof![
        4 => (coord.clone(), coord, side.clone(), side)
            .prop_map(|(x, y, w, h)| Area::rect(x, y, x + w, y + h).unwrap()),
        1 => Just(Area::rect(-1e30, -1e30, 1e30, 1e30).unwrap()),
        1 => Just(Area::rect(5e6, 5e6, 5e6 + 3.0, 5e6).unwrap()),
    ];
    prop_oneof![circle, rect]
}

/// Points on an area's border, its corners and its centre.
pub fn probes(a: &Area) -> Vec<Location> {
    match *a {
        Area::Circle { center: c, .. } => {
            let r = a.radius();
            vec![
                Location { x: c.x + r, y: c.y },
                Location { x: c.x, y: c.y - r },
                c,
            ]
        }
        Area::Rect { lo, hi } => {
            let (cx, cy) = a.center();
            vec![
                lo,
                hi,
                Location { x: lo.x, y: hi.y },
                Location {
                    x: hi.x,
                    y: cy as f32,
                },
                Location {
                    x: cx as f32,
                    y: lo.y,
                },
            ]
        }
    }
}
