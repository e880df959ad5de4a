//! One long document filtered on all cores: segments filtered in parallel from their
//! replayed start paths, then a sequential fix-up performing the closes they handed over.

use super::*;

impl LazyDfa {
    /// Filters one document on all threads of the current rayon pool, split into
    /// segments of events (see the module docs, "One long document"): the answers of
    /// [`Self::filter_with`]. A document of fewer than [`SEGMENT_MIN_EVENTS`] events,
    /// or a pool of one thread, is filtered on one core; a longer one is cut into four
    /// segments per thread, of at least [`SEGMENT_MIN_LEN`] events.
    pub fn filter_segmented(&self, doc: &Document) -> Matches {
        let threads = rayon::current_num_threads();
        let n = doc.events.len();
        if threads < 2 || n < SEGMENT_MIN_EVENTS {
            return self.filter(doc);
        }
        self.filter_segmented_by(doc, n.div_ceil(4 * threads).max(SEGMENT_MIN_LEN))
    }

    /// [`Self::filter_segmented`] on a pool of `threads` workers.
    pub fn filter_segmented_threads(
        &self,
        doc: &Document,
        threads: usize,
    ) -> Result<Matches, rayon::ThreadPoolBuildError> {
        crate::yfilter::on_threads(threads, || self.filter_segmented(doc))
    }

    /// [`Self::filter_segmented`] with segments of `segment_events` events (at least
    /// one), whatever the document's length: for tests (boundaries at every depth) and
    /// tuning.
    ///
    /// ```
    /// use baselines::lazy_dfa::LazyDfa;
    /// use xml_twig::{io, ProfileSet};
    /// # fn main() -> Result<(), xml_twig::XmlError> {
    /// let set = io::parse_query_file("q.txt", "/a[b]//c\n//d\n/a/*/c\n")?;
    /// let profiles = ProfileSet::compile(&set)?;
    /// let dfa = LazyDfa::new(&profiles);
    /// let xml = b"<a><x><c/></x><b/><x><d/></x></a>";
    /// let doc = io::parse_document("d.xml", xml, &profiles.dict)?;
    /// // A boundary after every event: elements open across every one of them.
    /// assert_eq!(dfa.filter_segmented_by(&doc, 1), dfa.filter(&doc));
    /// assert_eq!(dfa.filter_segmented_by(&doc, 1), vec![0, 1, 2]);
    /// # Ok(()) }
    /// ```
    pub fn filter_segmented_by(&self, doc: &Document, segment_events: usize) -> Matches {
        let seg = segment_events.max(1);
        if self.too_wide || doc.events.len() <= seg {
            return self.filter(doc);
        }
        let chunks: Vec<&[xml_twig::model::Event]> = doc.events.chunks(seg).collect();
        // The open path at every boundary (the one after the last segment too).
        let paths = xml_twig::engine::segment_paths(doc, seg);
        let outs: Vec<Option<SegmentOut>> = chunks
            .par_iter()
            .zip(&paths[..chunks.len()])
            .map_init(
                || self.take(),
                |g, (events, path)| {
                    let c = g.cache();
                    let out = self.run_segment(c, events, path);
                    if out.is_none() {
                        // Past the budget: this cache starts afresh (the document goes
                        // to one core below).
                        c.reset(self);
                        c.flushes += 1;
                    }
                    out
                },
            )
            .collect();
        let mut g = self.take();
        let fx = g.cache();
        let Some(outs) = outs.into_iter().collect::<Option<Vec<SegmentOut>>>() else {
            return self.filter_with(fx, doc);
        };
        if outs.iter().any(|o| o.all) {
            let mut all = self.nfa.ids.clone();
            all.sort_unstable();
            return all;
        }
        if !self.fix_up(fx, &outs, &paths) {
            return self.filter_with(fx, doc);
        }
        self.matches_of(fx)
    }

    /// Maps a tag id to the automaton's (names no query uses to 0: only `*` and `//`
    /// see them).
    #[inline]
    pub(super) fn tag_of(&self, tag: u16) -> u16 {
        if tag as usize >= self.tags {
            0
        } else {
            tag
        }
    }

    /// Runs the automaton over one segment `events` whose open path at its start is
    /// `path` (tag ids, outermost first): the path is replayed through the cached
    /// transitions, then the segment runs as [`Self::run`] does, except that the
    /// closes of the path's elements are left to [`Self::fix_up`] (their joins need
    /// reports from other segments). `None` when the cache went past its budget.
    pub(super) fn run_segment(
        &self,
        c: &mut Cache,
        events: &[xml_twig::model::Event],
        path: &[u16],
    ) -> Option<SegmentOut> {
        c.begin_doc();
        for &t in path {
            if !c.open(self, self.tag_of(t)) {
                return None;
            }
        }
        let queries = self.nfa.ids.len();
        let width = self.template.len();
        // Frames below `keep` were opened before the segment.
        let mut keep = path.len() + 1;
        let mut closed = Vec::new();
        for ev in events {
            if ev.is_open() {
                if !c.open(self, self.tag_of(ev.tag())) {
                    return None;
                }
                continue;
            }
            let top = c.frames.len() - 1;
            if top == 0 {
                continue; // unbalanced close: ignored, as in `run`
            }
            if top < keep {
                // Opened before the segment: hand over what it received here.
                let fr = c.frames.pop()?;
                if fr.acc == NO_ACC {
                    closed.push(Vec::new());
                } else {
                    closed.push(c.accs[fr.acc..fr.acc + width].to_vec());
                    c.accs.truncate(fr.acc);
                }
                keep = top;
                continue;
            }
            if !c.close_top(self) {
                return None;
            }
            if c.found == queries {
                return Some(SegmentOut {
                    all: true,
                    matched: Vec::new(),
                    closed: Vec::new(),
                    open: Vec::new(),
                });
            }
        }
        let open = c.frames[1..]
            .iter()
            .map(|fr| {
                if fr.acc == NO_ACC {
                    Vec::new()
                } else {
                    c.accs[fr.acc..fr.acc + width].to_vec()
                }
            })
            .collect();
        let stamp = c.doc;
        let matched = (0..queries as u32)
            .filter(|&q| c.matched[q as usize] == stamp)
            .collect();
        Some(SegmentOut {
            all: false,
            matched,
            closed,
            open,
        })
    }

    /// The sequential fix-up of [`Self::filter_segmented_by`], on cache `c`: walks the
    /// segments in order keeping the document's real stack of open elements (every one
    /// with an accumulator, so they stay in stack order), ORs in what each segment's
    /// elements received and closes, with their twig joins, the elements a segment
    /// closed but did not open. False when the cache went past its budget.
    pub(super) fn fix_up(&self, c: &mut Cache, outs: &[SegmentOut], paths: &[Vec<u16>]) -> bool {
        c.begin_doc();
        c.acc_of(self, 0);
        for (i, out) in outs.iter().enumerate() {
            let base = paths[i].len();
            if c.frames.len() != base + 1 {
                debug_assert!(false, "segment paths out of step");
                return false;
            }
            for words in &out.closed {
                let top = c.frames.len() - 1;
                c.or_into(top, words);
                if !c.close_top(self) {
                    return false;
                }
            }
            for (k, words) in out.open.iter().enumerate() {
                let at = k + 1;
                if at >= c.frames.len() {
                    // Opened in the segment, still open at its end.
                    if !c.open(self, self.tag_of(paths[i + 1][k])) {
                        return false;
                    }
                    c.acc_of(self, at);
                }
                c.or_into(at, words);
            }
            for &q in &out.matched {
                c.match_query(q);
            }
        }
        true
    }
}
