//! Helpers shared by the loader targets: line arithmetic that matches how each loader
//! counts lines, so that a target can check the line an error names.
#![allow(dead_code)]

/// The lines `BufRead::lines` yields for `data` (split on `\n`; a final `\n` ends the
/// last line rather than starting an empty one). Each without its `\n`.
pub fn bufread_lines(data: &[u8]) -> Vec<&[u8]> {
    if data.is_empty() {
        return Vec::new();
    }
    let body = data.strip_suffix(b"\n").unwrap_or(data);
    body.split(|&b| b == b'\n').collect()
}

/// The first `n` lines of `data` as `BufRead::lines` counts them, each ending in `\n`.
pub fn bufread_prefix(data: &[u8], n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for l in bufread_lines(data).into_iter().take(n) {
        out.extend_from_slice(l);
        out.push(b'\n');
    }
    out
}

/// Line `n` (1-based) of `data` alone, as a one-line file (ending in `\n`).
pub fn bufread_line_alone(data: &[u8], n: usize) -> Vec<u8> {
    let mut out = bufread_lines(data)[n - 1].to_vec();
    out.push(b'\n');
    out
}

/// The first `n` lines of `text` as `str::lines` counts them (`\n` or `\r\n`).
pub fn str_prefix(text: &str, n: usize) -> String {
    let mut out = String::new();
    for l in text.lines().take(n) {
        out.push_str(l);
        out.push('\n');
    }
    out
}

/// Number of lines of `text` as an editor shows them (1 for the empty text): what a
/// byte-offset-based line number can be at most.
pub fn editor_lines(data: &[u8]) -> usize {
    data.iter().filter(|&&b| b == b'\n').count() + 1
}

/// Relative float comparison allowing `ulps` units in the last place (same sign).
pub fn f64_close(a: f64, b: f64, ulps: u64) -> bool {
    if a == b {
        return true;
    }
    if a.is_nan() || b.is_nan() || a.is_sign_negative() != b.is_sign_negative() {
        return false;
    }
    a.to_bits().abs_diff(b.to_bits()) <= ulps
}

/// Whether known, recorded findings fail the target too (`FUZZ_STRICT=1`). By default a
/// target tolerates the findings listed in fuzz/README.md so that a run can look past
/// them; the regression inputs in fuzz/regressions/ are replayed with it set.
pub fn strict() -> bool {
    static STRICT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *STRICT.get_or_init(|| std::env::var_os("FUZZ_STRICT").is_some_and(|v| v == "1"))
}

/// Checks a JSON Lines error's column against its line (`len` bytes): from 1 to one past
/// the end (finding ccm_jsonl-1 / clcb_jsonl-1, column 0, is fixed in both loaders), and
/// the message does not repeat serde_json's own "at line 1 column N".
pub fn check_json_column(column: usize, len: usize, msg: &str) {
    assert!(column >= 1 && column <= len + 1, "column {column} outside a line of {len} bytes: {msg}");
    let serde_position = msg.rsplit_once(" at line ").is_some_and(|(_, rest)| {
        rest.split_once(" column ").is_some_and(|(l, c)| {
            [l, c].iter().all(|x| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit()))
        })
    });
    assert!(!serde_position, "message repeats serde_json's position: {msg}");
}
