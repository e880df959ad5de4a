//! A [`Cache`]: the lazily built automaton (DFA states, transitions, leaf bundles, join
//! masks) and the word-parallel twig join's state as a document streams through it.

use super::*;

impl Cache {
    pub(super) fn new(f: &LazyDfa) -> Self {
        let mut c = Cache {
            dfa: SetTable::new(),
            trans: Vec::new(),
            leaf: Vec::new(),
            member: Vec::new(),
            words: f.nfa.states.len().div_ceil(64),
            masks_of: Vec::new(),
            masks: Vec::new(),
            sparse: Vec::new(),
            bundles_built: Vec::new(),
            bundle_tops: Vec::new(),
            bundle_nodes: 0,
            bundle_seen: Vec::new(),
            applied: Vec::new(),
            frames: Vec::new(),
            accs: Vec::new(),
            serial: 0,
            nfa_bits: vec![0; f.nfa.states.len().div_ceil(64)],
            acc_bits: vec![0; f.template.len()],
            buf: Vec::new(),
            matched: vec![0; f.nfa.ids.len()],
            doc: 0,
            found: 0,
            nfa_runtime: None,
            flushes: 0,
            nfa_fallbacks: 0,
            grew: false,
        };
        c.reset(f);
        c
    }

    /// Empties the automaton: only the empty DFA state 0 and the start state 1 remain.
    pub(super) fn reset(&mut self, f: &LazyDfa) {
        self.dfa = SetTable::new();
        self.trans.clear();
        self.leaf.clear();
        self.member.clear();
        self.masks_of.clear();
        self.masks.clear();
        self.sparse.clear();
        self.bundles_built.clear();
        self.bundle_tops.clear();
        self.bundle_nodes = 0;
        self.bundle_seen.clear();
        self.applied.clear();
        self.bundles_built.push(Bundle::default());
        self.bundle_seen.push(0);
        self.applied.push(0);
        // DFA state 0 is the empty set (no NFA state; the table interns it at
        // creation): its row is filled like any other.
        self.trans.extend(std::iter::repeat_n(NONE, f.tags));
        self.leaf.extend(std::iter::repeat_n(EMPTY_BUNDLE, f.tags));
        self.member.extend(std::iter::repeat_n(0, self.words));
        self.masks_of.push(NONE);
        let start = f.start.clone();
        let (id, _) = self.add_dfa_state(f, &start);
        debug_assert_eq!(id, START);
    }

    /// Bytes held by the automaton, its leaf bundles and join masks.
    pub fn bytes(&self) -> usize {
        self.dfa.bytes()
            + self.trans.len() * 8
            + self.member.len() * 8
            + self.masks_of.len() * 4
            + self.masks.len() * std::mem::size_of::<StateMasks>()
            + self.sparse.len() * std::mem::size_of::<(u32, u64)>()
            + self.bundles_built.len() * (16 + 8 + 4)
            + self.bundle_tops.len() * 4
    }

    /// This cache's counters.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            dfa_states: self.dfa.len(),
            closes: self.bundles_built.len() - 1,
            node_sets: self.bundle_nodes,
            bytes: self.bytes(),
            flushes: self.flushes,
            nfa_fallbacks: self.nfa_fallbacks,
        }
    }

    /// NFA state `s` is in DFA state `state` ([`NONE`] is in none).
    #[inline]
    pub(super) fn has(&self, state: u32, s: u32) -> bool {
        s != NONE
            && self.member[state as usize * self.words + (s / 64) as usize] >> (s % 64) & 1 == 1
    }

    /// Interns the DFA state of NFA states `set` (sorted); a new one gets an empty
    /// transition row and its membership bitset.
    pub(super) fn add_dfa_state(&mut self, f: &LazyDfa, set: &[u32]) -> (u32, bool) {
        let (id, new) = self.dfa.intern(set);
        self.grew = true;
        if new {
            self.trans.extend(std::iter::repeat_n(NONE, f.tags));
            self.leaf.extend(std::iter::repeat_n(EMPTY_BUNDLE, f.tags));
            self.masks_of.push(NONE);
            let at = self.member.len();
            self.member.extend(std::iter::repeat_n(0, self.words));
            for &s in set {
                self.member[at + (s / 64) as usize] |= 1 << (s % 64);
            }
        }
        (id, new)
    }

    /// Builds the transition of DFA state `from` on `tag` (XMLTK's lazy step) and its
    /// leaf bundle.
    #[cold]
    pub(super) fn build_transition(&mut self, f: &LazyDfa, from: u32, tag: u16) -> u32 {
        let mut next = std::mem::take(&mut self.buf);
        next.clear();
        let mut bits = std::mem::take(&mut self.nfa_bits);
        let mut add = |s: u32| {
            bits[(s / 64) as usize] |= 1 << (s % 64);
            let e = f.nfa.states[s as usize].eps;
            if e != NONE {
                bits[(e / 64) as usize] |= 1 << (e % 64);
            }
        };
        for &s in self.dfa.get(from) {
            let st = &f.nfa.states[s as usize];
            if st.self_loop {
                add(s);
            }
            if let Ok(k) = st.on_tag.binary_search_by_key(&tag, |&(t, _)| t) {
                add(st.on_tag[k].1);
            }
            if st.on_any != NONE {
                add(st.on_any);
            }
        }
        // Read back in order (sorted, no duplicates), clearing the scratch.
        for (w, word) in bits.iter_mut().enumerate() {
            let mut x = std::mem::take(word);
            while x != 0 {
                next.push(w as u32 * 64 + x.trailing_zeros());
                x &= x - 1;
            }
        }
        self.nfa_bits = bits;
        let (to, _) = self.add_dfa_state(f, &next);
        self.buf = next;
        let bundle = self.build_bundle(f, from, to);
        self.trans[from as usize * f.tags + tag as usize] = to;
        self.leaf[from as usize * f.tags + tag as usize] = bundle;
        to
    }

    /// Appends the bits set in `acc_bits` to `sparse` as `(word, bits)` pairs, word
    /// ascending, clearing them; returns their `(start, len)` and number.
    pub(super) fn push_sparse(&mut self) -> ((u32, u32), usize) {
        let start = self.sparse.len() as u32;
        let mut count = 0;
        for (w, word) in self.acc_bits.iter_mut().enumerate() {
            let x = std::mem::take(word);
            if x != 0 {
                count += x.count_ones() as usize;
                self.sparse.push((w as u32, x));
            }
        }
        self.grew = true;
        ((start, self.sparse.len() as u32 - start), count)
    }

    /// The leaf bundle of an element in DFA state `state` under one in `parent`: its
    /// active leaves, as queries matched (a leaf whose path to the twig's root has no
    /// split) or as their child bits in the parent's accumulator (a `//` leaf only where
    /// its `//`-state is active in `parent`: elsewhere no ancestor can use it).
    pub(super) fn build_bundle(&mut self, f: &LazyDfa, parent: u32, state: u32) -> u32 {
        let tops = self.bundle_tops.len() as u32;
        for i in 0..self.dfa.get(state).len() {
            let s = self.dfa.get(state)[i];
            for &n in &f.nfa.states[s as usize].nodes {
                let info = &f.nodes[n as usize];
                if info.children != 0 {
                    continue;
                }
                if info.to_top {
                    self.bundle_tops.push(info.query);
                } else if !info.desc || self.has(parent, info.desc_state) {
                    self.acc_bits[(info.slot / 64) as usize] |= 1 << (info.slot % 64);
                }
            }
        }
        let (delta, count) = self.push_sparse();
        self.bundle_nodes += count;
        let b = Bundle {
            delta,
            tops: (tops, self.bundle_tops.len() as u32 - tops),
        };
        if b.delta.1 == 0 && b.tops.1 == 0 {
            return EMPTY_BUNDLE;
        }
        self.bundles_built.push(b);
        self.bundle_seen.push(0);
        self.applied.push(0);
        self.grew = true;
        self.bundles_built.len() as u32 - 1
    }

    /// The join masks of DFA state `state`, built on first use (see [`StateMasks`]).
    pub(super) fn masks(&mut self, f: &LazyDfa, state: u32) -> StateMasks {
        let have = self.masks_of[state as usize];
        if have != NONE {
            return self.masks[have as usize];
        }
        // Join numbers fit in plane 0's words, the first of the accumulator's.
        for &s in self.dfa.get(state) {
            let (a, b) = f.joins_of[s as usize];
            for &j in &f.state_joins[a as usize..b as usize] {
                self.acc_bits[(j / 64) as usize] |= 1 << (j % 64);
            }
        }
        let (active, _) = self.push_sparse();
        for &s in self.dfa.get(state) {
            let (a, b) = f.by_desc[s as usize];
            for &n in &f.desc_nodes[a as usize..b as usize] {
                let slot = f.nodes[n as usize].slot;
                self.acc_bits[(slot / 64) as usize] |= 1 << (slot % 64);
            }
        }
        let (pass, _) = self.push_sparse();
        let m = StateMasks { active, pass };
        self.masks.push(m);
        self.masks_of[state as usize] = self.masks.len() as u32 - 1;
        m
    }

    /// The accumulator of frame `i` (allocated from the template on the first report;
    /// nothing is above it on the stack then: its children have closed).
    #[inline]
    pub(super) fn acc_of(&mut self, f: &LazyDfa, i: usize) -> usize {
        let a = self.frames[i].acc;
        if a != NO_ACC {
            return a;
        }
        let at = self.accs.len();
        self.accs.extend_from_slice(&f.template);
        self.frames[i].acc = at;
        at
    }

    /// Marks query `q` matched in this document.
    #[inline]
    pub(super) fn match_query(&mut self, q: u32) {
        if self.matched[q as usize] != self.doc {
            self.matched[q as usize] = self.doc;
            self.found += 1;
        }
    }

    /// Starts a document: a new stamp for its matches, an empty stack but for the
    /// document's own frame (in [`START`]).
    pub(super) fn begin_doc(&mut self) {
        self.doc = self.doc.wrapping_add(1);
        if self.doc == 0 {
            self.matched.iter_mut().for_each(|x| *x = 0);
            self.applied.iter_mut().for_each(|x| *x = 0);
            self.doc = 1;
        }
        self.found = 0;
        self.frames.clear();
        self.accs.clear();
        self.serial += 1;
        self.frames.push(Frame {
            state: START,
            bundle: EMPTY_BUNDLE,
            acc: NO_ACC,
            serial: self.serial,
        });
    }

    /// Opens an element of tag `tag` (already mapped below `f.tags`) under the top
    /// frame: one table load once warm. False when the cache went past its budget.
    #[inline]
    pub(super) fn open(&mut self, f: &LazyDfa, tag: u16) -> bool {
        let from = self.frames.last().map_or(START, |fr| fr.state);
        let at = from as usize * f.tags + tag as usize;
        let mut to = self.trans[at];
        if to == NONE {
            to = self.build_transition(f, from, tag);
        }
        self.serial += 1;
        self.frames.push(Frame {
            state: to,
            bundle: self.leaf[at],
            acc: NO_ACC,
            serial: self.serial,
        });
        if self.grew {
            self.grew = false;
            if self.bytes() > f.budget {
                return false;
            }
        }
        true
    }

    /// Closes the top frame (there is one under it): its twig join if it received
    /// reports, then its leaf bundle into the parent's accumulator and its matched
    /// queries. False when the cache went past its budget.
    #[inline]
    pub(super) fn close_top(&mut self, f: &LazyDfa) -> bool {
        let Some(fr) = self.frames.pop() else {
            return true;
        };
        let pi = self.frames.len() - 1;
        let parent_serial = self.frames[pi].serial;
        if fr.acc != NO_ACC {
            self.join(f, fr, pi);
            if self.grew {
                self.grew = false;
                if self.bytes() > f.budget {
                    return false;
                }
            }
        }
        let b = fr.bundle;
        if b != EMPTY_BUNDLE {
            let bundle = self.bundles_built[b as usize];
            let (ds, dn) = bundle.delta;
            if dn > 0 && self.bundle_seen[b as usize] != parent_serial {
                self.bundle_seen[b as usize] = parent_serial;
                let to = self.acc_of(f, pi);
                for &(w, bits) in &self.sparse[ds as usize..(ds + dn) as usize] {
                    self.accs[to + w as usize] |= bits;
                }
            }
            let (ts, tn) = bundle.tops;
            if tn > 0 && self.applied[b as usize] != self.doc {
                self.applied[b as usize] = self.doc;
                for k in ts..ts + tn {
                    let q = self.bundle_tops[k as usize];
                    self.match_query(q);
                }
            }
        }
        true
    }

    /// ORs `words` (a segment's accumulator, or nothing) into frame `i`'s accumulator,
    /// which exists.
    pub(super) fn or_into(&mut self, i: usize, words: &[u64]) {
        let at = self.frames[i].acc;
        if at == NO_ACC || words.is_empty() {
            return;
        }
        for (a, &w) in self.accs[at..at + words.len()].iter_mut().zip(words) {
            *a |= w;
        }
    }

    /// The twig join at the close of element `fr` (under frame `parent`), which received
    /// reports: the join nodes active at it whose children all reported are the AND of
    /// the accumulator's planes and its state's active mask, word by word; each sets its
    /// own child bit in the parent's accumulator (or matches its query), and the `//`
    /// bits the parent's state can still use pass up, word by word. Work scales with the
    /// active words and the nodes satisfied, not with the query nodes active.
    pub(super) fn join(&mut self, f: &LazyDfa, fr: Frame, parent: usize) {
        let own = self.masks(f, fr.state);
        let up = self.masks(f, self.frames[parent].state);
        let acc = fr.acc;
        let width = f.template.len();
        // The parent's accumulator: below this one, or a fresh one above it, moved down
        // when this one is dropped.
        let fresh = self.frames[parent].acc == NO_ACC;
        let to = if fresh {
            self.accs.extend_from_slice(&f.template);
            acc + width
        } else {
            self.frames[parent].acc
        };
        let planes = f.planes.get(1..).unwrap_or_default();
        let (s0, n0) = own.active;
        for k in s0 as usize..(s0 + n0) as usize {
            let (w, active) = self.sparse[k];
            let w = w as usize;
            let mut s = active & self.accs[acc + w];
            for &(off, bits) in planes {
                if bits as usize <= 64 * w {
                    break;
                }
                s &= self.accs[acc + off as usize + w];
            }
            while s != 0 {
                let j = w * 64 + s.trailing_zeros() as usize;
                s &= s - 1;
                let (slot, q) = f.jout[j];
                if slot == NONE {
                    self.match_query(q);
                } else {
                    self.accs[to + (slot / 64) as usize] |= 1 << (slot % 64);
                }
            }
        }
        let (s1, n1) = up.pass;
        for k in s1 as usize..(s1 + n1) as usize {
            let (w, bits) = self.sparse[k];
            let w = w as usize;
            self.accs[to + w] |= self.accs[acc + w] & bits;
        }
        if fresh {
            self.accs.copy_within(to..to + width, acc);
            self.frames[parent].acc = acc;
            self.accs.truncate(acc + width);
        } else {
            self.accs.truncate(acc);
        }
    }
}
