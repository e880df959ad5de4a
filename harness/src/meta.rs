//! Where and when a run happened: device, CPU, commit, date (for every CSV row).

/// The run's environment, written into every CSV row.
#[derive(Clone, Debug)]
pub struct Meta {
    /// GPU name, or "none".
    pub device: String,
    pub cpu: String,
    pub cores: usize,
    pub commit: String,
    /// UTC date, YYYY-MM-DD.
    pub date: String,
}

impl Meta {
    pub fn collect(device: String) -> Meta {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split(':').nth(1))
                    .map(|m| m.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        Meta {
            device,
            cpu,
            cores,
            commit: env!("GPU_MATCH_COMMIT").to_string(),
            date: today_utc(),
        }
    }
}

/// Today's UTC date from the system clock (civil-from-days, no calendar crate needed).
pub fn today_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn today_utc_is_a_plausible_iso_date() {
        let d = super::today_utc();
        assert_eq!(d.len(), 10, "{d}");
        assert!(
            d.as_str() > "2024-01-01" && d.as_str() < "2100-01-01",
            "{d}"
        );
    }
}
