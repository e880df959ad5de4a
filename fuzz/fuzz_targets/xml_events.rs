//! xml-twig's XML-to-events encoder (`xml_twig::io::parse_document`) on any bytes.
//!
//! Properties: no panic; an error is `XmlError::Xml` naming `file:line:column` with a
//! line of the document and a column from 1; on success the events are well nested with
//! exactly one root element, `max_depth` is their depth, `bytes` the input's size, and
//! every tag id is a dictionary id or `OTHER_TAG`. No writer exists, so no round trip.
#![no_main]

mod common;

use common::*;
use libfuzzer_sys::fuzz_target;
use xml_twig::io::parse_document;
use xml_twig::{Document, TagDict, XmlError};

const FILE: &str = "d.xml";

fuzz_target!(|data: &[u8]| {
    let mut dict = TagDict::default();
    for name in ["a", "b", "c", "dblp", "article", "title", "x:y"] {
        dict.insert(name).unwrap();
    }
    match parse_document(FILE, data, &dict) {
        Ok(doc) => {
            assert_eq!(doc.bytes, data.len());
            let again = Document::from_events(doc.events.clone(), doc.bytes)
                .unwrap_or_else(|| panic!("events are not well nested: {:?}", doc.events));
            assert_eq!(again.max_depth, doc.max_depth, "max_depth");
            assert!(!doc.events.is_empty(), "a document with no element");
            let mut depth = 0usize;
            let mut roots = 0usize;
            for e in &doc.events {
                assert!(e.tag() as usize <= dict.len(), "tag id {} not in the dictionary", e.tag());
                if e.is_open() {
                    if depth == 0 {
                        roots += 1;
                    }
                    depth += 1;
                } else {
                    depth -= 1;
                }
            }
            assert_eq!(roots, 1, "a document must have one root element");
        }
        Err(XmlError::Xml { file, line, column, what }) => {
            assert_eq!(file, FILE);
            let lines = editor_lines(data);
            assert!(line >= 1 && line <= lines, "line {line} of {lines}: {what}");
            assert!(column >= 1, "column {column}: {what}");
            let msg = XmlError::Xml { file, line, column, what: what.clone() }.to_string();
            assert!(msg.starts_with(&format!("{FILE}:{line}:{column}: ")), "{msg}");
        }
        Err(e) => panic!("a document gave a non-XML error: {e}"),
    }
});
