//! How fast a regions file loads ([`ddm_region::io::read_regions`]: the file mapped, its
//! body cut at line ends and parsed on rayon's pool; `RAYON_NUM_THREADS` sets the
//! threads): best and median of `reps` loads, in seconds and MB/s of the file.
//!
//!     cargo run --release -p ddm-region --example load_regions FILE [reps (at least 1)]
//!
//! Make a file with `cargo run --release -p harness -- ddm generate --out FILE`.

use std::path::PathBuf;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = PathBuf::from(args.next().ok_or("usage: load_regions FILE [reps]")?);
    let reps: usize = args.next().map_or(Ok(5), |s| s.parse())?;
    if reps == 0 {
        return Err("reps must be at least 1".into());
    }
    let bytes = std::fs::metadata(&path)?.len() as f64;
    let mut times = Vec::with_capacity(reps);
    let mut regions = 0;
    for _ in 0..reps {
        let t = Instant::now();
        let set = ddm_region::io::read_regions(&path)?;
        times.push(t.elapsed().as_secs_f64());
        regions = set.len(ddm_region::Kind::Publication) + set.len(ddm_region::Kind::Subscription);
    }
    times.sort_by(f64::total_cmp);
    let (best, median) = (times[0], times[reps / 2]);
    println!(
        "{regions} regions, {:.1} MB, {} threads: best {best:.4} s ({:.0} MB/s), median {median:.4} s",
        bytes / 1e6,
        rayon::current_num_threads(),
        bytes / 1e6 / best
    );
    Ok(())
}
