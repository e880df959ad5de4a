//! xml-twig's query file parser (`xml_twig::io::parse_query_file`) on any UTF-8 text.
//!
//! Properties: no panic; an error is `XmlError::QuerySyntax` naming `file:line:column`,
//! the line exists and is the *first* bad line (the lines before it parse), the line alone
//! fails with the same column, and the column lies on the line; on success the ids are
//! the 0-based numbers of the non-blank, non-comment lines, every twig is well formed
//! (parents before children, children lists consistent), `Query`'s `Display` parses back
//! to an equal twig (documented on `impl Display for Query`), and the set compiles.
#![no_main]

mod common;

use common::*;
use libfuzzer_sys::fuzz_target;
use xml_twig::io::{parse_query, parse_query_file};
use xml_twig::{ProfileSet, Query, XmlError};

const FILE: &str = "q.txt";

fn check_twig(q: &Query) {
    assert!(!q.nodes.is_empty(), "a query with no node");
    for (i, n) in q.nodes.iter().enumerate() {
        match n.parent {
            None => assert_eq!(i, 0, "node {i} has no parent"),
            Some(p) => {
                assert!(p < i, "node {i}'s parent {p} comes after it");
                assert!(q.nodes[p].children.contains(&i), "node {i} missing from its parent's children");
            }
        }
        for &c in &n.children {
            assert_eq!(q.nodes[c].parent, Some(i), "child {c} of {i} has another parent");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match parse_query_file(FILE, text) {
        Ok(set) => {
            let want: Vec<u32> = text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty() && !l.trim().starts_with('#'))
                .map(|(i, _)| i as u32)
                .collect();
            assert_eq!(set.ids, want, "ids are not the query lines' numbers");
            assert_eq!(set.queries.len(), set.ids.len());
            for q in &set.queries {
                check_twig(q);
                let shown = q.to_string();
                match parse_query(&shown) {
                    Ok(again) => assert_eq!(&again, q, "`{shown}` parses to another twig"),
                    Err(e) => panic!("Display wrote `{shown}`, which does not parse: {e:?}"),
                }
            }
            ProfileSet::compile(&set).expect("a parsed query set compiles");
        }
        Err(XmlError::QuerySyntax { file, line, column, what }) => {
            assert_eq!(file, FILE);
            let lines: Vec<&str> = text.lines().collect();
            assert!(line >= 1 && line <= lines.len(), "line {line} of {}: {what}", lines.len());
            let chars = lines[line - 1].chars().count();
            assert!(column >= 1 && column <= chars + 1, "column {column} outside line {line} of {chars} chars: {what}");
            let msg = XmlError::QuerySyntax { file, line, column, what: what.clone() }.to_string();
            assert!(msg.starts_with(&format!("{FILE}:{line}:{column}: ")), "{msg}");
            if let Err(e) = parse_query_file(FILE, &str_prefix(text, line - 1)) {
                panic!("error names line {line} ({what}), but an earlier line is bad: {e}");
            }
            match parse_query(lines[line - 1]) {
                Ok(_) => panic!("error names line {line} ({what}), but the line alone parses"),
                Err(e) => assert_eq!(e.column, column, "the line alone fails at another column"),
            }
        }
        Err(e) => panic!("a query file gave a non-syntax error: {e}"),
    }
});
