//! The paper's nouns (§I, §III.A): publication and subscription regions, each a set of
//! ranges, one per dimension of the routing space, and the overlap pairs region
//! matching finds.
//!
//! Coordinates are `u32`: HLA 1516 range bounds are unsigned normalized values. Ranges
//! are half-open, `[lo, hi)`: two ranges overlap iff `lo_a < hi_b && lo_b < hi_a`, and
//! two regions iff their ranges overlap in every dimension. A zero-width range `[x, x)`
//! is allowed; by that rule it overlaps exactly the ranges with `lo < x < hi`.

pub use ddm_region_kernels::{Pair, Range};

/// A coordinate of the routing space.
pub type Coord = u32;

/// Publication or subscription region (§I).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// "regions over which they are willing to send data".
    Publication,
    /// "regions from which they are willing to receive data".
    Subscription,
}

impl Kind {
    /// The word used in files: `pub` or `sub`.
    pub fn word(self) -> &'static str {
        match self {
            Kind::Publication => "pub",
            Kind::Subscription => "sub",
        }
    }
}

/// Why a region or a set of regions is not valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    #[error("a routing space needs at least one dimension")]
    NoDimensions,
    #[error("region has {got} ranges, the routing space has {expected} dimensions")]
    DimensionMismatch { expected: usize, got: usize },
    #[error("range of dimension {dim} has lower bound {lo} above its upper bound {hi}")]
    InvertedRange { dim: usize, lo: Coord, hi: Coord },
    #[error("{kind} region index {index} out of range ({len} regions)")]
    NoSuchRegion {
        kind: &'static str,
        index: u32,
        len: u32,
    },
    #[error("more than {max} {kind} regions")]
    TooManyRegions { kind: &'static str, max: u64 },
}

/// Checks one region's ranges against the space's dimensionality.
pub fn check_ranges(dims: usize, ranges: &[Range]) -> Result<(), ModelError> {
    if ranges.len() != dims {
        return Err(ModelError::DimensionMismatch {
            expected: dims,
            got: ranges.len(),
        });
    }
    for (dim, r) in ranges.iter().enumerate() {
        if r.lo > r.hi {
            return Err(ModelError::InvertedRange {
                dim,
                lo: r.lo,
                hi: r.hi,
            });
        }
    }
    Ok(())
}

/// All regions of one routing space, by kind, stored flat: the ranges of publication `i`
/// are `pub_ranges()[i * dims .. (i + 1) * dims]`. Regions are addressed by their index
/// in their kind; ids are the users' names for them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionSet {
    dims: usize,
    pub_ranges: Vec<Range>,
    sub_ranges: Vec<Range>,
    pub_ids: Vec<u64>,
    sub_ids: Vec<u64>,
}

impl RegionSet {
    /// An empty set of regions in a `dims`-dimensional routing space.
    pub fn new(dims: usize) -> Result<RegionSet, ModelError> {
        if dims == 0 {
            return Err(ModelError::NoDimensions);
        }
        Ok(RegionSet {
            dims,
            pub_ranges: Vec::new(),
            sub_ranges: Vec::new(),
            pub_ids: Vec::new(),
            sub_ids: Vec::new(),
        })
    }

    /// Adds a region; returns its index in its kind.
    pub fn push(&mut self, kind: Kind, id: u64, ranges: &[Range]) -> Result<u32, ModelError> {
        check_ranges(self.dims, ranges)?;
        let (rs, ids) = self.kind_mut(kind);
        let index = u32::try_from(ids.len())
            .ok()
            .filter(|&i| i < u32::MAX / 2)
            .ok_or(ModelError::TooManyRegions {
                kind: kind.word(),
                max: (u32::MAX / 2) as u64,
            })?;
        rs.extend_from_slice(ranges);
        ids.push(id);
        Ok(index)
    }

    /// A set from its columns, as a parser fills them: `pub_ranges` holds `dims` ranges
    /// per id of `pub_ids`, `sub_ranges` likewise (the layout [`RegionSet::ranges`]
    /// returns). Checks what [`RegionSet::push`] checks, for all regions at once.
    pub fn from_columns(
        dims: usize,
        (pub_ids, pub_ranges): (Vec<u64>, Vec<Range>),
        (sub_ids, sub_ranges): (Vec<u64>, Vec<Range>),
    ) -> Result<RegionSet, ModelError> {
        use rayon::prelude::*;
        if dims == 0 {
            return Err(ModelError::NoDimensions);
        }
        for (kind, ids, ranges) in [
            (Kind::Publication, &pub_ids, &pub_ranges),
            (Kind::Subscription, &sub_ids, &sub_ranges),
        ] {
            if ids.len() as u64 >= (u32::MAX / 2) as u64 {
                return Err(ModelError::TooManyRegions {
                    kind: kind.word(),
                    max: (u32::MAX / 2) as u64,
                });
            }
            if ranges.len() != ids.len() * dims {
                return Err(ModelError::DimensionMismatch {
                    expected: ids.len() * dims,
                    got: ranges.len(),
                });
            }
            // On all cores, in runs (a parser's million regions in a fraction of a ms;
            // rayon's item-by-item search was 20x slower), the first bad one found
            // only when there is one.
            let inverted = |r: &Range| r.lo > r.hi;
            let bad = ranges
                .par_chunks(1 << 14)
                .any(|run| run.iter().any(inverted));
            if let Some(i) = bad.then(|| ranges.iter().position(inverted)).flatten() {
                let r = ranges[i];
                return Err(ModelError::InvertedRange {
                    dim: i % dims,
                    lo: r.lo,
                    hi: r.hi,
                });
            }
        }
        Ok(RegionSet {
            dims,
            pub_ranges,
            sub_ranges,
            pub_ids,
            sub_ids,
        })
    }

    /// Replaces region `index`'s ranges (a move, §IV: "the position of each simulated
    /// region is randomly moved").
    pub fn set(&mut self, kind: Kind, index: u32, ranges: &[Range]) -> Result<(), ModelError> {
        check_ranges(self.dims, ranges)?;
        let dims = self.dims;
        let len = self.len(kind);
        if index >= len {
            return Err(ModelError::NoSuchRegion {
                kind: kind.word(),
                index,
                len,
            });
        }
        let (rs, _) = self.kind_mut(kind);
        rs[index as usize * dims..][..dims].copy_from_slice(ranges);
        Ok(())
    }

    fn kind_mut(&mut self, kind: Kind) -> (&mut Vec<Range>, &mut Vec<u64>) {
        match kind {
            Kind::Publication => (&mut self.pub_ranges, &mut self.pub_ids),
            Kind::Subscription => (&mut self.sub_ranges, &mut self.sub_ids),
        }
    }

    pub fn dims(&self) -> usize {
        self.dims
    }
    /// Number of regions of `kind`.
    pub fn len(&self, kind: Kind) -> u32 {
        match kind {
            Kind::Publication => self.pub_ids.len() as u32,
            Kind::Subscription => self.sub_ids.len() as u32,
        }
    }
    pub fn n_pub(&self) -> u32 {
        self.len(Kind::Publication)
    }
    pub fn n_sub(&self) -> u32 {
        self.len(Kind::Subscription)
    }
    pub fn is_empty(&self) -> bool {
        self.pub_ids.is_empty() && self.sub_ids.is_empty()
    }
    /// All ranges of `kind`, flat (`dims` per region).
    pub fn ranges(&self, kind: Kind) -> &[Range] {
        match kind {
            Kind::Publication => &self.pub_ranges,
            Kind::Subscription => &self.sub_ranges,
        }
    }
    /// Region `index` of `kind`'s ranges.
    pub fn region(&self, kind: Kind, index: u32) -> &[Range] {
        &self.ranges(kind)[index as usize * self.dims..][..self.dims]
    }
    /// The users' ids of `kind`'s regions, by index.
    pub fn ids(&self, kind: Kind) -> &[u64] {
        match kind {
            Kind::Publication => &self.pub_ids,
            Kind::Subscription => &self.sub_ids,
        }
    }
}

/// What happens to one region in a step: the paper's "updated region" (§III.A), new or
/// modified, plus removal, which HLA's `deleteRegion` allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Added or moved: the region's ranges are the batch's next `dims` ranges.
    Set,
    /// Removed.
    Remove,
}

/// The updated regions of one step, flat: entry `i` is `(kind, index, change)`; the
/// ranges of `Set` entries follow in order in [`UpdateBatch::ranges`].
///
/// The batch knows, as it is built, whether it is *ordered*: only `Set` entries, whose
/// (kind, index) strictly increase, publications first (as the paper's scenarios, where
/// every region moves, and [`UpdateBatch::everything`] make them). Such a batch names no
/// region twice and is already in the device's order, so the engines stage it without
/// checking or de-duplicating its entries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpdateBatch {
    entries: Vec<(Kind, u32, Change)>,
    ranges: Vec<Range>,
    ordered: bool,
    publications: u32,
}

impl Default for UpdateBatch {
    fn default() -> Self {
        UpdateBatch {
            entries: Vec::new(),
            ranges: Vec::new(),
            ordered: true,
            publications: 0,
        }
    }
}

/// (kind, index) as one number: publications (kind 0) before subscriptions.
#[inline(always)]
fn order(kind: Kind, index: u32) -> u64 {
    ((kind == Kind::Subscription) as u64) << 32 | index as u64
}

impl UpdateBatch {
    /// An empty batch with room for `entries` entries and `ranges` ranges.
    pub fn with_capacity(entries: usize, ranges: usize) -> UpdateBatch {
        UpdateBatch {
            entries: Vec::with_capacity(entries),
            ranges: Vec::with_capacity(ranges),
            ..UpdateBatch::default()
        }
    }
    /// A batch of the given entries and ranges, as if added one by one (the ranges are
    /// not checked against the `Set` entries here: staging reports a mismatch).
    pub fn from_parts(entries: Vec<(Kind, u32, Change)>, ranges: Vec<Range>) -> UpdateBatch {
        let mut b = UpdateBatch::with_capacity(entries.len(), 0);
        for &(kind, index, change) in &entries {
            b.note(kind, index, change);
            b.entries.push((kind, index, change));
        }
        b.ranges = ranges;
        b
    }
    /// Adds (or moves) region `index` of `kind` to `ranges`.
    pub fn set(&mut self, kind: Kind, index: u32, ranges: &[Range]) {
        self.note(kind, index, Change::Set);
        self.entries.push((kind, index, Change::Set));
        self.ranges.extend_from_slice(ranges);
    }
    /// Removes region `index` of `kind`.
    pub fn remove(&mut self, kind: Kind, index: u32) {
        self.note(kind, index, Change::Remove);
        self.entries.push((kind, index, Change::Remove));
    }
    /// Keeps [`UpdateBatch::is_ordered`] and the publications' count true for the entry
    /// about to be pushed.
    #[inline(always)]
    fn note(&mut self, kind: Kind, index: u32, change: Change) {
        let after_last = self
            .entries
            .last()
            .is_none_or(|&(k, i, _)| order(k, i) < order(kind, index));
        self.ordered &= after_last & (change == Change::Set);
        self.publications += (kind == Kind::Publication) as u32;
    }
    /// The entries, `(kind, index, change)`, in the order they were added.
    pub fn entries(&self) -> &[(Kind, u32, Change)] {
        &self.entries
    }
    /// The ranges of the `Set` entries, `dims` each, in order.
    pub fn ranges(&self) -> &[Range] {
        &self.ranges
    }
    /// Only `Set` entries, (kind, index) strictly increasing, publications first.
    pub fn is_ordered(&self) -> bool {
        self.ordered
    }
    /// How many entries name a publication.
    pub fn publications(&self) -> u32 {
        self.publications
    }
    /// Every region of `set`, as a batch (the first step, or a one-shot match).
    pub fn everything(set: &RegionSet) -> UpdateBatch {
        let n = (set.n_pub() + set.n_sub()) as usize;
        let mut b = UpdateBatch::with_capacity(n, n * set.dims());
        for kind in [Kind::Publication, Kind::Subscription] {
            for i in 0..set.len(kind) {
                b.set(kind, i, set.region(kind, i));
            }
        }
        b
    }
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_with_an_inverted_range_are_refused_naming_the_first() {
        let r = |lo, hi| Range { lo, hi };
        // 40,000 regions (several runs of the parallel check), two inverted, far apart.
        let mut ranges = vec![r(0, 1); 40_000];
        ranges[39_000] = r(9, 3);
        ranges[20_001] = r(5, 4);
        let ids: Vec<u64> = (0..40_000).collect();
        let e = RegionSet::from_columns(1, (ids.clone(), ranges), (vec![], vec![])).unwrap_err();
        assert_eq!(
            e,
            ModelError::InvertedRange {
                dim: 0,
                lo: 5,
                hi: 4
            }
        );
        let good = RegionSet::from_columns(1, (ids, vec![r(0, 1); 40_000]), (vec![], vec![]));
        assert_eq!(good.unwrap().len(Kind::Publication), 40_000);
    }

    #[test]
    fn a_batch_knows_whether_it_is_ordered_as_it_is_built() {
        let r = [Range { lo: 1, hi: 2 }];
        let mut b = UpdateBatch::default();
        assert!(b.is_ordered());
        b.set(Kind::Publication, 0, &r);
        b.set(Kind::Publication, 5, &r);
        b.set(Kind::Subscription, 0, &r);
        assert!(b.is_ordered());
        assert_eq!(b.publications(), 2);
        // Each of these breaks the order: a step back, the same region again, a
        // publication after a subscription, a removal.
        for (kind, index, remove) in [
            (Kind::Subscription, 0, false),
            (Kind::Publication, 9, false),
            (Kind::Subscription, 3, true),
        ] {
            let mut c = b.clone();
            if remove {
                c.remove(kind, index);
            } else {
                c.set(kind, index, &r);
            }
            assert!(!c.is_ordered(), "{kind:?} {index} {remove}");
            let again = UpdateBatch::from_parts(c.entries().to_vec(), c.ranges().to_vec());
            assert_eq!(again, c);
        }
        assert_eq!(
            UpdateBatch::from_parts(b.entries().to_vec(), b.ranges().to_vec()),
            b
        );
    }
}
