//! The REIN / HEM suite's dense model (20 names, 1-5 range predicates per filter, one
//! interface per filter) with events carrying 3-5, 10, all 20 or 5-10 Zipf-drawn names,
//! and `few`: the same filters over 100 names with events of 3-5 (few names of many, the
//! regime of CCM's Table 1, in numbers only, which the suite can read), and `table1`: as
//! `few` with 3-5 predicates per filter, Table 1's constraints per filter:
//! µs per event on one core and on all cores (threads keeping their scratch between calls,
//! and, for comparison, a fresh scratch per thread and call) for the hybrid index, the value index and
//! the bit index, their answers checked equal.
//!
//!     cargo run --release -p baselines --example dense_bench -- [--filters N] [--events E]
//!         [--only 3-5,10,20,zipf,few,table1] [--matchers hybrid,value,bit] [--cells MAX] [--seed S]
//!         [--cpu-time] [--dump DIR]
//!
//! `--matchers` also takes `hybrid-nobits` (the hybrid without the bit index among its
//! choices); `--filters` 100000 (default) or 1000000 (or any); `--cells` the bit index's most cells
//! a name ([`Cells::max`], 128); the first matcher's answers are the reference the others
//! are checked against (and the dump's counts); `--cpu-time` times one core by the
//! thread's CPU time (on a machine shared with other work); `--dump DIR` also writes each
//! workload as `DIR/dense-<workload>-<filters>.txt` for the HEM suite's side-by-side
//! driver (a line `hemdump names filters events`, a line per filter `k (name lo hi)*`,
//! a line per event `m (name value)*`, then the expected match count of every event).

use baselines::bit_index::{BitIndex, Cells};
use baselines::hybrid_index::HybridIndex;
use baselines::matcher::per_thread;
use baselines::value_index::ValueIndex;
use baselines::Matcher;
use ccm::model::{Op, Value};
use ccm::workload::{generate_dense, DenseParams, NameDist, Workload};
use ccm::{Event, InterfaceId};
use std::io::Write;
use std::time::Instant;

#[path = "common/cpu_time.rs"]
mod cpu_time;
use cpu_time::thread_cpu_s;

struct Args {
    filters: usize,
    events: usize,
    only: Vec<String>,
    seed: u64,
    cpu_time: bool,
    dump: Option<std::path::PathBuf>,
    cells: Cells,
    matchers: Vec<String>,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        filters: 100_000,
        events: 1000,
        only: vec!["3-5".into(), "10".into(), "20".into(), "zipf".into()],
        seed: 1,
        cpu_time: false,
        dump: None,
        cells: Cells::default(),
        matchers: vec!["hybrid".into(), "value".into(), "bit".into()],
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().ok_or(format!("{flag} needs a value"));
        let num = |s: String| s.parse::<usize>().map_err(|e| format!("{flag} {s}: {e}"));
        match flag.as_str() {
            "--filters" => a.filters = num(val()?)?,
            "--events" => a.events = num(val()?)?,
            "--seed" => a.seed = num(val()?)? as u64,
            "--only" => a.only = val()?.split(',').map(str::to_string).collect(),
            "--cpu-time" => a.cpu_time = true,
            "--dump" => a.dump = Some(val()?.into()),
            "--cells" => a.cells.max = num(val()?)?,
            "--matchers" => a.matchers = val()?.split(',').map(str::to_string).collect(),
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(a)
}

/// Seconds of the clock in use: the thread's CPU time or the wall clock.
fn clock(cpu: bool) -> f64 {
    static T0: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    if cpu {
        thread_cpu_s()
    } else {
        T0.get_or_init(Instant::now).elapsed().as_secs_f64()
    }
}

/// µs per event on this thread (every event at least once, for at least half a second).
fn one_core<M: Matcher>(m: &M, events: &[Event], cpu: bool) -> f64 {
    let mut s = m.scratch();
    let t0 = clock(cpu);
    let mut n = 0;
    let mut sink = 0;
    while n < events.len() || n % 16 != 0 || clock(cpu) - t0 < 0.5 {
        sink += m.match_event_with(&events[n % events.len()], &mut s).len();
        n += 1;
    }
    std::hint::black_box(sink);
    (clock(cpu) - t0) * 1e6 / n as f64
}

/// µs per event of `call` over all events on every core (wall clock), for at least half
/// a second.
fn all_cores(events: &[Event], call: impl Fn() -> Vec<Vec<InterfaceId>>) -> f64 {
    let t0 = Instant::now();
    let mut n = 0;
    while n == 0 || t0.elapsed().as_secs_f64() < 0.5 {
        std::hint::black_box(call());
        n += events.len();
    }
    t0.elapsed().as_secs_f64() * 1e6 / n as f64
}

/// One core; all cores as `match_parallel` runs (each thread's scratch kept warm between
/// calls where the matcher keeps a pool) and with a fresh scratch per thread and call;
/// heap bytes and the answers of every event.
fn run<M: Matcher>(m: &M, events: &[Event], a: &Args) -> Run {
    let got = m.match_parallel(events);
    let fresh = || per_thread(events, || m.scratch(), |e, s| m.match_event_with(e, s));
    Run {
        one: one_core(m, events, a.cpu_time),
        fresh: all_cores(events, fresh),
        all: all_cores(events, || m.match_parallel(events)),
        bytes: m.heap_bytes(),
        got,
    }
}

/// How many of `events` the hybrid `h` answered with each of its indexes (names, values,
/// bits), per number of names an event carries, once on one core and once on all cores
/// (each thread with its own scratch), after [`run`] has taught it the indexes' times:
/// whether it chooses alike on every core.
fn choices(h: &HybridIndex, events: &[Event]) -> (Choices, Choices) {
    use rayon::prelude::*;
    let add = |mut n: Choices, (k, c): (usize, usize)| {
        *n.entry(k).or_default().get_mut(c).expect("three indexes") += 1;
        n
    };
    let mut s = h.scratch();
    let one = events
        .iter()
        .map(|e| (e.len(), h.match_choosing(e, &mut s).1 as usize))
        .fold(Choices::new(), add);
    let all = events
        .par_iter()
        .map_init(
            || h.scratch(),
            |s, e| (e.len(), h.match_choosing(e, s).1 as usize),
        )
        .fold(Choices::new, add)
        .reduce(Choices::new, |mut a, b| {
            for (k, n) in b {
                let m = a.entry(k).or_default();
                for c in 0..3 {
                    m[c] += n[c];
                }
            }
            a
        });
    (one, all)
}

/// Events per number of names, per index chosen (names, values, bits).
type Choices = std::collections::BTreeMap<usize, [usize; 3]>;

/// Prints the hybrid's choices ([`choices`]) and its shared timings per number of names.
fn print_choices(h: &HybridIndex, events: &[Event], label: &str, m: &str) {
    let (one, all) = choices(h, events);
    let timings = h.timings_all();
    for (k, n) in &one {
        let timing = timings
            .iter()
            .find(|t| t.0 == *k)
            .map(|(_, ns, samples)| {
                format!("{:.1?} µs over {samples:?} samples", ns.map(|x| x / 1e3))
            })
            .unwrap_or_default();
        println!(
            "workload={label:<5} matcher={m:<6} names={k:<2} choices (names values bits) one_core={n:?} all_cores={:?} timings {timing}",
            all.get(k).copied().unwrap_or_default()
        );
    }
}

/// What [`run`] measured of one matcher.
struct Run {
    one: f64,
    all: f64,
    fresh: f64,
    bytes: usize,
    got: Vec<Vec<InterfaceId>>,
}

/// The workload `label` and its number of names.
fn workload(label: &str, a: &Args) -> Result<(Workload, usize), Box<dyn std::error::Error>> {
    let suite = DenseParams::default().predicates_per_filter;
    let (names, names_per_event, event_names, predicates_per_filter) = match label {
        "3-5" => (20, (3, 5), NameDist::Uniform, suite),
        "10" => (20, (10, 10), NameDist::Uniform, suite),
        "20" => (20, (20, 20), NameDist::Uniform, suite),
        "zipf" => (20, (5, 10), NameDist::Zipf(1.0), suite),
        "few" => (100, (3, 5), NameDist::Uniform, suite),
        "table1" => (100, (3, 5), NameDist::Uniform, (3, 5)),
        _ => {
            return Err(format!("unknown workload {label} (3-5, 10, 20, zipf, few, table1)").into())
        }
    };
    let p = DenseParams {
        events: a.events,
        filters: a.filters,
        names,
        names_per_event,
        event_names,
        predicates_per_filter,
        ..DenseParams::default()
    };
    Ok((generate_dense(&p, a.seed)?, names))
}

/// Writes `w` for the HEM suite's driver (see the module docs); names `n<i>` are `i`.
fn dump(
    path: &std::path::Path,
    names: usize,
    w: &Workload,
    counts: &[usize],
) -> Result<(), Box<dyn std::error::Error>> {
    let name = |n: &str| n[1..].parse::<usize>();
    let int = |v: &Value| match v {
        Value::Int(i) => Ok(*i),
        _ => Err("dense values are integers"),
    };
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(
        f,
        "hemdump {names} {} {}",
        w.subscriptions.len(),
        w.events.len()
    )?;
    for s in &w.subscriptions {
        // Each name's `>= lo` and `<= hi`, as one interval.
        let mut preds: Vec<(usize, i64, i64)> = Vec::new();
        for c in &s.filter.constraints {
            let (n, v) = (name(&c.name)?, int(&c.value)?);
            let i = match preds.iter().position(|p| p.0 == n) {
                Some(i) => i,
                None => {
                    preds.push((n, i64::MIN, i64::MAX));
                    preds.len() - 1
                }
            };
            match c.op {
                Op::Ge => preds[i].1 = preds[i].1.max(v),
                Op::Le => preds[i].2 = preds[i].2.min(v),
                _ => return Err("dense filters are >= and <=".into()),
            }
        }
        write!(f, "{}", preds.len())?;
        for (n, lo, hi) in preds {
            write!(f, " {n} {lo} {hi}")?;
        }
        writeln!(f)?;
    }
    for e in &w.events {
        write!(f, "{}", e.len())?;
        for a in e.attributes() {
            write!(f, " {} {}", name(&a.name)?, int(&a.value)?)?;
        }
        writeln!(f)?;
    }
    let counts: Vec<String> = counts.iter().map(|c| c.to_string()).collect();
    writeln!(f, "{}", counts.join(" "))?;
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a = args()?;
    println!(
        "# dense model, {} filters, {} events, {} threads for all cores, one core by {}",
        a.filters,
        a.events,
        rayon::current_num_threads(),
        if a.cpu_time {
            "thread CPU time"
        } else {
            "wall clock"
        }
    );
    for label in &a.only {
        let (w, names) = workload(label, &a)?;
        let mut want: Option<Vec<Vec<InterfaceId>>> = None;
        for m in &a.matchers {
            let t = Instant::now();
            let Run {
                one,
                all,
                fresh,
                bytes,
                got,
            } = match m.as_str() {
                "bit" => run(
                    &BitIndex::build_with(&w.subscriptions, a.cells)?,
                    &w.events,
                    &a,
                ),
                "hybrid" | "hybrid-nobits" => {
                    let h = HybridIndex::build_with(&w.subscriptions, m == "hybrid")?;
                    let r = run(&h, &w.events, &a);
                    print_choices(&h, &w.events, label, m);
                    r
                }
                "value" => run(&ValueIndex::build(&w.subscriptions)?, &w.events, &a),
                _ => {
                    return Err(
                        format!("unknown matcher {m} (hybrid, hybrid-nobits, value, bit)").into(),
                    )
                }
            };
            let secs = t.elapsed().as_secs_f64();
            match &want {
                None => {
                    if let Some(dir) = &a.dump {
                        std::fs::create_dir_all(dir)?;
                        let counts: Vec<usize> = got.iter().map(Vec::len).collect();
                        dump(
                            &dir.join(format!("dense-{label}-{}.txt", a.filters)),
                            names,
                            &w,
                            &counts,
                        )?;
                    }
                    want = Some(got);
                }
                Some(want) if *want != got => {
                    return Err(format!("workload {label}: {m} answers differ").into());
                }
                Some(_) => {}
            }
            let answers =
                want.iter().flatten().map(Vec::len).sum::<usize>() as f64 / w.events.len() as f64;
            println!(
                "workload={label:<5} filters={} matcher={m:<6} one_core_us={one:9.2} all_cores_us={all:8.2} \
                 all_cores_fresh_scratch_us={fresh:8.2} build_and_run_s={secs:6.2} mb={:7.1} answers_per_event={answers:.1}",
                a.filters,
                bytes as f64 / 1e6
            );
        }
    }
    Ok(())
}
