//! Users' regions from CSV files, with errors that name the file, line and column.
//!
//! Format: a header `kind,id,lo0,hi0,lo1,hi1,...` (any number of dimensions from 1),
//! then one region per line: `kind` is `pub` or `sub`, `id` an unsigned integer unique
//! within its kind, bounds unsigned 32-bit integers with `lo <= hi` (half-open ranges).
//! Blank lines and lines starting with `#` are skipped; fields may be padded with spaces.

use crate::model::{Kind, Range, RegionSet};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// A problem with a regions file.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    /// The cause is the error's source (printed once by a chain of causes).
    #[error("{path}: cannot read")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: {message}")]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
}

/// Reads a regions file; `-` is standard input (named `<stdin>` in errors).
pub fn read_regions(path: &Path) -> Result<RegionSet, IoError> {
    let stdin = path.as_os_str() == "-";
    let name = if stdin {
        PathBuf::from("<stdin>")
    } else {
        path.to_path_buf()
    };
    let text = if stdin {
        let mut t = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut t).map(|_| t)
    } else {
        std::fs::read_to_string(path)
    }
    .map_err(|source| IoError::Read {
        path: name.clone(),
        source,
    })?;
    parse_regions(&text, &name)
}

/// Parses the text of a regions file; `path` only names it in errors. A UTF-8
/// byte-order mark before the header is skipped.
///
/// ```
/// use ddm_region::io::parse_regions;
/// use ddm_region::{Kind, Range};
/// use std::path::Path;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let text = "kind,id,lo0,hi0,lo1,hi1\n\
///             pub,7,0,10,0,10\n\
///             ## a comment\n\
///             sub,3, 5,15, 5,15\n";
/// let set = parse_regions(text, Path::new("regions.csv"))?;
/// assert_eq!(set.dims(), 2);
/// assert_eq!(set.ids(Kind::Subscription), &[3]);
/// assert_eq!(set.region(Kind::Publication, 0), &[Range { lo: 0, hi: 10 }; 2]);
///
/// let bad = "kind,id,lo0,hi0\npub,1,9,2\n"; // lo above hi
/// let err = parse_regions(bad, Path::new("regions.csv")).unwrap_err();
/// assert!(err.to_string().starts_with("regions.csv:2:"), "{err}");
/// # Ok(()) }
/// ```
pub fn parse_regions(text: &str, path: &Path) -> Result<RegionSet, IoError> {
    // A UTF-8 byte-order mark before the header is not part of it.
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let err = |line: usize, column: usize, message: String| IoError::Parse {
        path: path.to_path_buf(),
        line,
        column,
        message,
    };
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|(_, l)| {
            let t = l.trim();
            !t.is_empty() && !t.starts_with('#')
        });
    let (hline, header) = lines.next().ok_or_else(|| {
        err(
            1,
            1,
            "empty file: expected the header `kind,id,lo0,hi0,...`".into(),
        )
    })?;
    let names: Vec<(usize, &str)> = fields(header);
    if names.len() < 4 || !names.len().is_multiple_of(2) {
        return Err(err(
            hline,
            1,
            format!(
                "header has {} columns; expected `kind,id,lo0,hi0,...` (2 + 2 per dimension)",
                names.len()
            ),
        ));
    }
    let dims = (names.len() - 2) / 2;
    for (i, &(col, name)) in names.iter().enumerate() {
        let want = match i {
            0 => "kind".to_string(),
            1 => "id".to_string(),
            _ => format!("{}{}", if i % 2 == 0 { "lo" } else { "hi" }, (i - 2) / 2),
        };
        if name != want {
            return Err(err(
                hline,
                col,
                format!("header column {} is `{name}`, expected `{want}`", i + 1),
            ));
        }
    }
    let mut set = RegionSet::new(dims).map_err(|e| err(hline, 1, e.to_string()))?;
    let mut seen: [HashSet<u64>; 2] = [HashSet::new(), HashSet::new()];
    let mut ranges = Vec::with_capacity(dims);
    for (line, text) in lines {
        let f = fields(text);
        if f.len() != names.len() {
            return Err(err(
                line,
                1,
                format!("{} fields, the header has {}", f.len(), names.len()),
            ));
        }
        let kind = match f[0].1 {
            "pub" => Kind::Publication,
            "sub" => Kind::Subscription,
            other => {
                return Err(err(
                    line,
                    f[0].0,
                    format!("kind `{other}` is neither `pub` nor `sub`"),
                ))
            }
        };
        let id: u64 = f[1].1.parse().map_err(|_| {
            err(
                line,
                f[1].0,
                format!("id `{}` is not an unsigned integer", f[1].1),
            )
        })?;
        if !seen[kind as usize].insert(id) {
            return Err(err(
                line,
                f[1].0,
                format!("{} id {id} appears twice", kind.word()),
            ));
        }
        ranges.clear();
        for d in 0..dims {
            let num = |(col, s): (usize, &str)| -> Result<u32, IoError> {
                s.parse::<u32>().map_err(|_| {
                    err(
                        line,
                        col,
                        format!("bound `{s}` is not an integer in 0..=4294967295"),
                    )
                })
            };
            let lo = num(f[2 + 2 * d])?;
            let hi = num(f[3 + 2 * d])?;
            if lo > hi {
                return Err(err(
                    line,
                    f[2 + 2 * d].0,
                    format!("dimension {d}: lower bound {lo} is above upper bound {hi}"),
                ));
            }
            ranges.push(Range { lo, hi });
        }
        set.push(kind, id, &ranges)
            .map_err(|e| err(line, 1, e.to_string()))?;
    }
    Ok(set)
}

/// The comma-separated fields of a line, trimmed, with their 1-based start columns.
fn fields(line: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = 0usize;
    for part in line.split(',') {
        let lead = part.len() - part.trim_start().len();
        out.push((line[..start + lead].chars().count() + 1, part.trim()));
        start += part.len() + 1;
    }
    out
}

/// Writes regions in the format [`read_regions`] reads.
pub fn write_regions(set: &RegionSet, out: &mut impl std::io::Write) -> std::io::Result<()> {
    write!(out, "kind,id")?;
    for d in 0..set.dims() {
        write!(out, ",lo{d},hi{d}")?;
    }
    writeln!(out)?;
    for kind in [Kind::Publication, Kind::Subscription] {
        for i in 0..set.len(kind) {
            write!(out, "{},{}", kind.word(), set.ids(kind)[i as usize])?;
            for r in set.region(kind, i) {
                write!(out, ",{},{}", r.lo, r.hi)?;
            }
            writeln!(out)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<RegionSet, IoError> {
        parse_regions(s, Path::new("r.csv"))
    }

    #[test]
    fn parses_two_dimensional_regions_of_both_kinds() {
        let set =
            parse("kind,id,lo0,hi0,lo1,hi1\npub,7,0,10,5,5\n# note\n\nsub, 3 ,2,4,0,9\n").unwrap();
        assert_eq!(set.dims(), 2);
        assert_eq!(set.ids(Kind::Publication), &[7]);
        assert_eq!(
            set.region(Kind::Subscription, 0),
            &[Range { lo: 2, hi: 4 }, Range { lo: 0, hi: 9 }]
        );
    }

    #[test]
    fn a_byte_order_mark_before_the_header_is_skipped() {
        let set = parse("\u{FEFF}kind,id,lo0,hi0\npub,1,0,10\n").unwrap();
        assert_eq!(set.ids(Kind::Publication), &[1]);
    }

    #[test]
    fn a_missing_file_names_it_and_leaves_the_cause_to_the_source() {
        let e = read_regions(Path::new("/nonexistent/r.csv")).unwrap_err();
        assert_eq!(e.to_string(), "/nonexistent/r.csv: cannot read");
        assert!(std::error::Error::source(&e).is_some());
    }

    #[test]
    fn bad_rows_name_file_line_and_column() {
        let e = parse("kind,id,lo0,hi0\npub,1,0,10\nsub,2,5,x\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "r.csv:3:9: bound `x` is not an integer in 0..=4294967295"
        );
        let e = parse("kind,id,lo0,hi0\nfoo,1,0,10\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("r.csv:2:1: kind `foo`"), "{e}");
        let e = parse("kind,id,lo0,hi0\npub,1,9,3\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("r.csv:2:7: dimension 0: lower bound 9"),
            "{e}"
        );
        let e = parse("kind,id,lo0,hi0\npub,1,0,3\npub,1,0,3\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("r.csv:3:5: pub id 1 appears twice"), "{e}");
        let e = parse("kind,id,lo0,hi0\npub,1,0\n").unwrap_err().to_string();
        assert!(e.starts_with("r.csv:2:1: 3 fields"), "{e}");
    }

    #[test]
    fn bad_headers_are_rejected() {
        assert!(parse("").unwrap_err().to_string().contains("empty file"));
        assert!(parse("kind,id,lo0\n")
            .unwrap_err()
            .to_string()
            .contains("3 columns"));
        let e = parse("kind,id,lo0,top0\n").unwrap_err().to_string();
        assert_eq!(e, "r.csv:1:13: header column 4 is `top0`, expected `hi0`");
    }

    #[test]
    fn write_then_read_round_trips() {
        let set = parse("kind,id,lo0,hi0\npub,1,0,3\nsub,9,3,3\n").unwrap();
        let mut buf = Vec::new();
        write_regions(&set, &mut buf).unwrap();
        assert_eq!(parse(std::str::from_utf8(&buf).unwrap()).unwrap(), set);
    }
}
