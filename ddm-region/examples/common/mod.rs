//! What the examples share: their two optional arguments.

/// `[reps] [regions]` from the command line: repetitions (default 20, at least 1) and
/// regions (default `default_regions`); a value that is not a whole number is an error
/// that names it.
pub fn reps_and_regions(default_regions: u32) -> Result<(usize, u32), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize, what: &str| -> Result<Option<u64>, String> {
        args.get(i)
            .map(|s| s.parse::<u32>().map(u64::from))
            .transpose()
            .map_err(|e| format!("{what} `{}`: {e}", args[i]))
    };
    let reps = number(0, "reps")?.unwrap_or(20).max(1) as usize;
    let regions = number(1, "regions")?.map_or(default_regions, |r| r as u32);
    Ok((reps, regions))
}
