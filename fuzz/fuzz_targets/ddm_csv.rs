//! ddm-region's CSV loader (`ddm_region::io::parse_regions`) on any UTF-8 text.
//!
//! Properties: no panic; an error is `IoError::Parse` naming `file:line:column`, the line
//! exists and is the *first* bad line (the lines before it load, or are no header at all),
//! and the column lies on that line; on success `write_regions` output loads back to an
//! equal `RegionSet`.
#![no_main]

mod common;

use common::*;
use ddm_region::io::{parse_regions, write_regions, IoError};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

const FILE: &str = "r.csv";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let path = Path::new(FILE);
    match parse_regions(text, path) {
        Ok(set) => {
            let mut buf = Vec::new();
            write_regions(&set, &mut buf).unwrap();
            let written = String::from_utf8(buf).expect("the writer writes UTF-8");
            match parse_regions(&written, path) {
                Ok(again) => assert_eq!(again, set, "round trip differs; written:\n{written}"),
                Err(e) => panic!("written regions do not load: {e}\n{written}"),
            }
        }
        Err(e) => {
            let msg = e.to_string();
            let IoError::Parse { line, column, .. } = e else {
                panic!("parsing a string gave a read error: {msg}");
            };
            let lines: Vec<&str> = text.lines().collect();
            let empty = msg.contains("empty file");
            if !(empty && lines.is_empty()) {
                assert!(line >= 1 && line <= lines.len(), "line {line} of {}: {msg}", lines.len());
                let chars = lines[line - 1].chars().count();
                assert!(column >= 1 && column <= chars + 1, "column {column} outside line {line} of {chars} chars: {msg}");
            }
            assert!(msg.starts_with(&format!("{FILE}:{line}:{column}: ")), "{msg}");
            if !empty {
                match parse_regions(&str_prefix(text, line - 1), path) {
                    Ok(_) => {}
                    Err(e) if e.to_string().contains("empty file") => {}
                    Err(e) => panic!("error names line {line} ({msg}), but an earlier line is bad: {e}"),
                }
            }
        }
    }
});
