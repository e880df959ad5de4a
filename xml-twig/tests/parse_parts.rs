//! One long document parsed in parts on all cores (`io::parse_document_in_parts`) gives
//! what the one-thread parser gives on the real documents of the project's shared
//! folder (other encodings, DOCTYPEs, namespaces, mixed content, a very wide root):
//! the same events and depth, and, on copies broken at a few places, the same error
//! (file, line, column and words).

use xml_twig::io;
use xml_twig::model::TagDict;

/// Where the real documents are: `$XML_REAL_DIR`, else the project's shared folder.
fn real_dir() -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("XML_REAL_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/xml-real")
        });
    dir.is_dir().then_some(dir)
}

/// The one-thread parse and the parse in `parts` parts, as comparable values.
fn both(
    name: &str,
    xml: &[u8],
    dict: &TagDict,
    parts: usize,
) -> [Result<xml_twig::Document, String>; 2] {
    [
        io::parse_document(name, xml, dict).map_err(|e| e.to_string()),
        io::parse_document_in_parts(name, xml, dict, parts).map_err(|e| e.to_string()),
    ]
}

#[test]
fn real_documents_parse_in_parts_as_on_one_thread_and_fail_alike_when_broken() {
    let Some(dir) = real_dir() else {
        eprintln!("note: no real documents (set XML_REAL_DIR): nothing checked");
        return;
    };
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).expect("the folder lists") {
        let path = entry.expect("an entry").path();
        if path.extension().is_none_or(|e| e != "gz") {
            continue;
        }
        let out = std::process::Command::new("gzip")
            .arg("-dc")
            .arg(&path)
            .output()
            .expect("gzip runs");
        assert!(out.status.success(), "{}", path.display());
        let xml = out.stdout;
        let name = path.display().to_string();
        // Names of the document's own elements, so that the events carry real tags.
        let mut dict = TagDict::default();
        for w in xml.split(|&b| b == b'<').skip(1).take(2000) {
            let n: Vec<u8> = w
                .iter()
                .take_while(|&&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                .copied()
                .collect();
            if let Ok(s) = std::str::from_utf8(&n) {
                if !s.is_empty() && s.as_bytes()[0].is_ascii_alphabetic() {
                    let _ = dict.insert(s);
                }
            }
        }
        for parts in [2, 5, 16, 61] {
            let [one, cut] = both(&name, &xml, &dict, parts);
            assert!(one.is_ok(), "{name}: {one:?}");
            assert_eq!(cut, one, "{name} in {parts} parts");
        }
        // Broken copies: cut short, an end tag renamed, an extra end tag.
        for k in 1..6 {
            let at = k * xml.len() / 6;
            let mut copies = vec![xml[..at].to_vec()];
            if let Some(j) = xml[at..].windows(2).position(|w| w == b"</") {
                let mut v = xml.clone();
                v[at + j + 2] ^= 0x20;
                copies.push(v);
            }
            let mut v = xml.clone();
            v.splice(at..at, b"</extra>".iter().copied());
            copies.push(v);
            for v in copies {
                let [one, cut] = both(&name, &v, &dict, 16);
                assert_eq!(cut, one, "{name} broken at {at}");
            }
        }
        checked += 1;
    }
    assert!(checked >= 5, "{checked} real documents checked");
}
