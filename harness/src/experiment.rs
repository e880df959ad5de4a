//! What an experiment is: one table or figure of a paper, as a sweep over the paper's
//! x-axis values, run on a set of engines, checked for equal answers, recorded per seed.
//!
//! A paper module (`papers::<paper>`) lists its experiments; the runner (`runner`) owns
//! everything around them: engine selection, the GPU, progress, CSV, plots.

use std::fmt::Debug;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The four papers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Paper {
    Ccm,
    Clcb,
    Xml,
    Ddm,
}

impl Paper {
    pub const ALL: [Paper; 4] = [Paper::Ccm, Paper::Clcb, Paper::Xml, Paper::Ddm];
    pub fn name(self) -> &'static str {
        match self {
            Paper::Ccm => "ccm",
            Paper::Clcb => "clcb",
            Paper::Xml => "xml",
            Paper::Ddm => "ddm",
        }
    }
}

/// One table or figure of a paper.
pub struct Experiment {
    pub paper: Paper,
    /// Short id used on the command line and in file names: `table2`, `fig5`, `fig6b`.
    pub id: &'static str,
    /// "Fig. 5: processing time vs number of filters per interface"
    pub title: &'static str,
    pub x_label: &'static str,
    pub y_label: &'static str,
    pub log_x: bool,
    pub log_y: bool,
    /// True for throughputs (events/s), false for times and sizes.
    pub higher_is_better: bool,
    /// The series every other series' speedup is computed against (e.g. `"sff"`).
    pub baseline: Option<&'static str>,
    /// The paper's headline number for this table or figure, quoted by `harness report`.
    pub paper_says: &'static str,
    /// Runs the sweep, calling [`Ctx::record`] for every measurement.
    pub run: fn(&mut Ctx) -> anyhow::Result<()>,
}

/// Which kind of engine an engine name denotes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineKind {
    /// The real GPU.
    Gpu,
    /// The same kernels on the host SIMT emulator.
    Emu,
    /// A CPU baseline.
    Cpu,
}

/// One measurement: a (series, x) point for one seed.
#[derive(Clone, Debug)]
pub struct Sample {
    pub series: String,
    pub x: f64,
    pub value: f64,
}

/// What an experiment sees of the run: sizes, seeds, engines, the GPU, and the recorder.
pub struct Ctx {
    /// Small sizes for CI and a first look (seconds, not minutes).
    pub quick: bool,
    /// One workload per seed; results are mean/min/max over seeds.
    pub seeds: Vec<u64>,
    /// Engines the user asked for (`--engines`), or `None` for the experiment's defaults.
    engines: Option<Vec<String>>,
    /// GPU ordinal (`--device`), when a GPU is present.
    pub gpu_ordinal: Option<usize>,
    /// The GPUs the scaling experiments spread over (`--devices`, default all of
    /// them); empty when no GPU is present.
    pub gpus: Vec<usize>,
    pub(crate) samples: Vec<Sample>,
    pub(crate) progress: Arc<indicatif::ProgressBar>,
    /// Answer checks ([`Ctx::check`]) that found the two engines in agreement.
    checks_agreed: AtomicUsize,
    /// Answer checks that found a disagreement.
    checks_disagreed: AtomicUsize,
}

impl Ctx {
    pub(crate) fn new(
        quick: bool,
        seeds: Vec<u64>,
        engines: Option<Vec<String>>,
        gpu_ordinal: Option<usize>,
        progress: Arc<indicatif::ProgressBar>,
    ) -> Self {
        Ctx {
            quick,
            seeds,
            engines,
            gpu_ordinal,
            gpus: gpu_ordinal.into_iter().collect(),
            samples: Vec::new(),
            progress,
            checks_agreed: AtomicUsize::new(0),
            checks_disagreed: AtomicUsize::new(0),
        }
    }

    /// How many answer checks ([`Ctx::check`]) this experiment made so far: (agreed,
    /// disagreed).
    pub fn checks(&self) -> (usize, usize) {
        (
            self.checks_agreed.load(Ordering::Relaxed),
            self.checks_disagreed.load(Ordering::Relaxed),
        )
    }

    /// Whether to run the engine named `name` (of kind `kind`) in this run.
    ///
    /// GPU engines run when a GPU is present; emulator engines run in quick mode without a
    /// GPU only (every GPU lane run on the host is far too slow for the papers' sizes, and with
    /// a GPU the same kernels are checked on the GPU itself) unless the user names them;
    /// CPU engines always run. `--engines` overrides all of this.
    pub fn wants(&self, name: &str, kind: EngineKind) -> bool {
        // `--engines` parses names into `engines::RunEngine`: every name asked about must
        // be one of them (checked by the tests that run experiments).
        #[cfg(test)]
        assert!(
            crate::engines::RunEngine::known(name),
            "engine `{name}` is missing from harness::engines::RunEngine"
        );
        if let Some(list) = &self.engines {
            return list.iter().any(|e| e == name)
                && (kind != EngineKind::Gpu || self.gpu_ordinal.is_some());
        }
        match kind {
            EngineKind::Gpu => self.gpu_ordinal.is_some(),
            EngineKind::Emu => self.quick && self.gpu_ordinal.is_none(),
            EngineKind::Cpu => true,
        }
    }

    /// Records one measurement (one seed) of `series` at `x`.
    pub fn record(&mut self, series: &str, x: f64, value: f64) {
        self.samples.push(Sample {
            series: series.to_string(),
            x,
            value,
        });
    }

    /// Fails the run when two engines disagree on a workload, naming the workload and
    /// the first differing item. Every call is counted, as agreed or disagreed
    /// ([`Ctx::checks`]), for the run's summary.
    pub fn check<T: PartialEq + Debug>(
        &self,
        workload: &str,
        reference: (&str, &[T]),
        other: (&str, &[T]),
    ) -> anyhow::Result<()> {
        let result = Self::compare(workload, reference, other);
        let counter = if result.is_ok() {
            &self.checks_agreed
        } else {
            &self.checks_disagreed
        };
        counter.fetch_add(1, Ordering::Relaxed);
        result
    }

    fn compare<T: PartialEq + Debug>(
        workload: &str,
        reference: (&str, &[T]),
        other: (&str, &[T]),
    ) -> anyhow::Result<()> {
        let (rn, r) = reference;
        let (on, o) = other;
        if let Some(i) = (0..r.len().min(o.len())).find(|&i| r[i] != o[i]) {
            anyhow::bail!(
                "{on} disagrees with {rn} on workload {workload}: item {i}: {rn} = {:?}, {on} = {:?}",
                r[i],
                o[i]
            );
        }
        if r.len() != o.len() {
            anyhow::bail!(
                "{on} disagrees with {rn} on workload {workload}: {rn} gave {} items, {on} gave {}",
                r.len(),
                o.len()
            );
        }
        Ok(())
    }

    /// Sets how many steps the experiment will take (for the progress bar's estimate).
    pub fn set_steps(&self, n: u64) {
        self.progress.set_length(n);
    }

    /// Marks one step done, with a short description of what runs next.
    pub fn step(&self, what: &str) {
        self.progress.set_message(what.to_string());
        self.progress.inc(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_check_is_counted_as_agreed_or_disagreed() {
        let ctx = Ctx::new(
            true,
            vec![1],
            None,
            None,
            Arc::new(indicatif::ProgressBar::hidden()),
        );
        assert_eq!(ctx.checks(), (0, 0));
        ctx.check("w1", ("a", &[1, 2][..]), ("b", &[1, 2][..]))
            .unwrap();
        ctx.check("w2", ("a", &[1, 2][..]), ("b", &[1, 2][..]))
            .unwrap();
        let e = ctx
            .check("w3", ("a", &[1, 2][..]), ("b", &[1, 3][..]))
            .unwrap_err();
        assert!(e.to_string().contains("workload w3: item 1"), "{e}");
        assert!(ctx
            .check("w4", ("a", &[1][..]), ("b", &[1, 2][..]))
            .is_err());
        assert_eq!(ctx.checks(), (2, 2));
    }
}
