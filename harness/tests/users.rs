//! The commands for users' own data, end to end on the built binary (no GPU: the CPU
//! engines and the emulator): standard input, streaming in windows, bad lines and
//! documents, XML encodings and DOCTYPEs, byte-order marks, engine names, missing
//! directories, errors printed once, and bounded memory on a long stream.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn harness() -> Command {
    Command::new(env!("CARGO_BIN_EXE_harness"))
}

/// `harness ccm match` with `flags`, the subscriptions and events files: its output.
fn ccm_match(flags: &[&str], subs: &Path, events: &Path) -> Output {
    harness()
        .args(["ccm", "match"])
        .args(flags)
        .arg("--subscriptions")
        .arg(subs)
        .arg("--events")
        .arg(events)
        .output()
        .expect("run harness")
}

/// A fresh temporary directory for one test.
fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("harness-users-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).expect("create the test directory");
    d
}

fn write(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).expect("write a test file");
    p
}

/// Runs `cmd` with `stdin` as its standard input.
fn run_with_stdin(mut cmd: Command, stdin: &[u8]) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start harness");
    let mut input = child.stdin.take().expect("stdin");
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let out = child.wait_with_output().expect("wait for harness");
    writer.join().expect("writer");
    out
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `out`, the run with `flags`, ended with a usage error (exit code 2) saying `says`.
fn assert_usage_error(out: &std::process::Output, flags: &[&str], says: &str) {
    assert_eq!(out.status.code(), Some(2), "{flags:?}");
    assert!(
        text(&out.stderr).contains(says),
        "{flags:?}: {}",
        text(&out.stderr)
    );
}

const CCM_SUBS: &str = "{\"interface\": 3, \"filter\": [[\"temp\", \">\", 30]]}\n\
{\"interface\": 1, \"filter\": [[\"area\", \"=\", \"a1\"]]}\n\
{\"interface\": 2, \"filter\": [[\"temp\", \"<\", 0], [\"area\", \"prefix\", \"a\"]]}\n";

#[test]
fn ccm_match_reads_events_from_stdin_and_subscriptions_from_a_file() {
    let d = tmp("ccm-stdin");
    let subs = write(&d, "s.jsonl", CCM_SUBS);
    let mut cmd = harness();
    cmd.args([
        "ccm",
        "match",
        "--engine",
        "sff",
        "--events",
        "-",
        "--subscriptions",
    ])
    .arg(&subs);
    let out = run_with_stdin(
        cmd,
        b"{\"temp\": 35, \"area\": \"a1\"}\n{\"temp\": -5, \"area\": \"ab\"}\n{\"x\": 1}\n",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "[1,3]\n[2]\n[]\n");
    // And the other way round: subscriptions on standard input.
    let events = write(&d, "e.jsonl", "{\"temp\": 35}\n");
    let mut cmd = harness();
    cmd.args([
        "ccm",
        "match",
        "--engine",
        "sff",
        "--subscriptions",
        "-",
        "--events",
    ])
    .arg(&events);
    let out = run_with_stdin(cmd, CCM_SUBS.as_bytes());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "[3]\n");
    std::fs::remove_dir_all(d).ok();
}

#[test]
fn the_cpu_engines_sff_index_and_hybrid_give_the_same_answers() {
    let d = tmp("ccm-cpu-engines");
    let subs = write(&d, "s.jsonl", CCM_SUBS);
    let events = write(
        &d,
        "e.jsonl",
        "{\"temp\": 35, \"area\": \"a1\"}\n{\"temp\": -5, \"area\": \"ab\"}\n{\"x\": 1}\n",
    );
    for engine in ["sff", "index", "hybrid"] {
        let out = ccm_match(&["--stats", "--engine", engine], &subs, &events);
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{engine}: {stderr}");
        assert_eq!(text(&out.stdout), "[1,3]\n[2]\n[]\n", "{engine}");
        assert!(
            stderr.contains(&format!("build the index ({engine})")),
            "{engine}: {stderr}"
        );
        assert!(!stderr.contains("note:"), "{engine}: {stderr}");
    }
    std::fs::remove_dir_all(d).ok();
}

#[test]
fn a_bad_event_line_is_reported_with_its_position_answered_null_and_the_exit_code_is_2() {
    let d = tmp("ccm-bad-line");
    let subs = write(&d, "s.jsonl", CCM_SUBS);
    let events = write(
        &d,
        "e.jsonl",
        "{\"temp\": 35}\n{\"temp\": }\n{\"temp\": null}\n{\"area\": \"a1\"}\n",
    );
    for engine in ["sff", "emu", "emu-index"] {
        let out = ccm_match(&["--window", "2", "--engine", engine], &subs, &events);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{engine}: {stderr}");
        assert_eq!(
            text(&out.stdout),
            "[3]\nnull\nnull\n[1]\n",
            "{engine}: output stays aligned with the input"
        );
        let name = events.display();
        assert!(
            stderr.contains(&format!("{name}:2:10: invalid JSON")),
            "{stderr}"
        );
        assert!(
            stderr.contains(&format!("{name}:3: attribute `temp`")),
            "{stderr}"
        );
        assert!(stderr.contains("2 of 4 event line(s) were bad"), "{stderr}");
    }
    std::fs::remove_dir_all(d).ok();
}

#[test]
fn a_bad_subscription_line_stops_loading_with_its_position_and_exit_code_2() {
    let d = tmp("ccm-bad-sub");
    let subs = write(
        &d,
        "s.jsonl",
        format!("{CCM_SUBS}{{\"interface\": 1, \"filter\": [[\"a\", \"~\", 1]]}}\n"),
    );
    let events = write(&d, "e.jsonl", "{\"temp\": 35}\n");
    for engine in ["sff", "emu", "emu-index"] {
        let out = ccm_match(&["--engine", engine], &subs, &events);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{engine}: {stderr}");
        assert!(out.stdout.is_empty(), "{engine}");
        assert!(
            stderr.contains(&format!(
                "{}:4: constraint 1: unknown operator",
                subs.display()
            )),
            "{engine}: {stderr}"
        );
    }
    std::fs::remove_dir_all(d).ok();
}

#[test]
fn the_emulator_engines_streamed_in_windows_answer_as_the_cpu_engine_does() {
    let d = tmp("ccm-windows");
    let subs = write(&d, "s.jsonl", CCM_SUBS);
    let events: String = (0..40)
        .map(|i| format!("{{\"temp\": {}, \"area\": \"a{}\"}}\n", i * 3 - 40, i % 3))
        .collect();
    let events = write(&d, "e.jsonl", events);
    let run = |engine: &str, window: &str| {
        let out = ccm_match(&["--engine", engine, "--window", window], &subs, &events);
        assert!(out.status.success(), "{engine}: {}", text(&out.stderr));
        text(&out.stdout)
    };
    let want = run("sff", "8192");
    assert_eq!(want.lines().count(), 40);
    assert_eq!(run("emu", "7"), want);
    assert_eq!(run("emu-index", "7"), want);
    assert_eq!(run("sff", "3"), want);
    std::fs::remove_dir_all(d).ok();
}

#[test]
fn ccm_match_over_emulated_devices_answers_as_the_cpu_engine_and_refuses_bad_device_lists() {
    let d = tmp("ccm-devices");
    let subs = write(&d, "s.jsonl", CCM_SUBS);
    let events: String = (0..30)
        .map(|i| format!("{{\"temp\": {}, \"area\": \"a{}\"}}\n", i * 3 - 40, i % 3))
        .collect();
    let events = write(&d, "e.jsonl", events);
    let want = ccm_match(&["--engine", "sff"], &subs, &events);
    assert!(want.status.success(), "{}", text(&want.stderr));
    assert!(
        text(&want.stdout).lines().any(|l| l != "[]"),
        "nothing matched"
    );
    for devices in ["0,1", "2,0,1"] {
        let out = ccm_match(
            &[
                "--engine",
                "emu-index",
                "--devices",
                devices,
                "--window",
                "7",
            ],
            &subs,
            &events,
        );
        assert!(out.status.success(), "{devices}: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout), text(&want.stdout), "--devices {devices}");
    }
    for (flags, says) in [
        (&["--devices", "0,x"][..], "not a device ordinal"),
        (&["--devices", "1,1"][..], "named twice"),
        (
            &["--engine", "sff", "--devices", "0,1"][..],
            "pruning index",
        ),
    ] {
        let out = ccm_match(flags, &subs, &events);
        assert_usage_error(&out, flags, says);
    }
    std::fs::remove_dir_all(d).ok();
}

#[test]
fn window_1_answers_each_event_before_the_next_one_is_written() {
    let d = tmp("ccm-interactive");
    let subs = write(&d, "s.jsonl", CCM_SUBS);
    let mut child = harness()
        .args([
            "ccm", "match", "--engine", "sff", "--window", "1", "--events", "-",
        ])
        .arg("--subscriptions")
        .arg(&subs)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start harness");
    let mut input = child.stdin.take().expect("stdin");
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap_or_default()).is_err() {
                break;
            }
        }
    });
    let timeout = std::time::Duration::from_secs(60);
    input.write_all(b"{\"temp\": 35}\n").expect("write");
    input.flush().expect("flush");
    let first = rx.recv_timeout(timeout);
    input.write_all(b"{\"area\": \"a1\"}\n").expect("write");
    input.flush().expect("flush");
    let second = rx.recv_timeout(timeout);
    drop(input);
    let status = child.wait().expect("wait");
    assert_eq!(
        first.as_deref(),
        Ok("[3]"),
        "no answer while standard input is open"
    );
    assert_eq!(second.as_deref(), Ok("[1]"));
    assert!(status.success());
    std::fs::remove_dir_all(d).ok();
}

#[test]
fn a_utf8_byte_order_mark_before_the_first_json_line_is_accepted() {
    let d = tmp("bom");
    let subs = write(&d, "s.jsonl", format!("\u{FEFF}{CCM_SUBS}"));
    let events = write(&d, "e.jsonl", "\u{FEFF}{\"temp\": 35}\n");
    let out = ccm_match(&["--engine", "sff"], &subs, &events);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "[3]\n");
    let subs = write(
        &d,
        "cs.jsonl",
        "\u{FEFF}{\"subscription\": 7, \"filter\": [], \"area\": [0, 0, 5]}\n",
    );
    let mut cmd = harness();
    cmd.args([
        "clcb",
        "match",
        "--engine",
        "rtree",
        "--events",
        "-",
        "--subscriptions",
    ])
    .arg(&subs);
    let out = run_with_stdin(
        cmd,
        "\u{FEFF}{\"loc\": [1, 1], \"attrs\": {}}\n{\"loc\": [9, 9], \"attrs\": {}}\n".as_bytes(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "[7]\n[]\n");
    std::fs::remove_dir_all(d).ok();
}

#[test]
fn clcb_match_over_emulated_devices_answers_as_the_grid_and_refuses_cpu_engines() {
    let d = tmp("clcb-devices");
    let (subs, events) = clcb_files(&d, 40, 12);
    let clcb_match = |flags: &[&str]| clcb_match_files(&subs, &events, flags);
    let want = clcb_match(&["--engine", "grid"]);
    assert!(want.status.success(), "{}", text(&want.stderr));
    assert!(
        text(&want.stdout).lines().any(|l| l != "[]"),
        "nothing matched"
    );
    for devices in ["0,1", "0,1,2"] {
        let flags = ["--engine", "emu", "--window", "5", "--devices", devices];
        let out = clcb_match(&flags);
        assert!(out.status.success(), "{flags:?}: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout), text(&want.stdout), "{flags:?}");
    }
    let out = clcb_match(&["--engine", "rtree", "--devices", "0,1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("kernels"),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_dir_all(d).ok();
}

#[test]
fn clcb_match_streams_stdin_and_answers_a_bad_line_with_null() {
    let d = tmp("clcb-stdin");
    let subs = write(
        &d,
        "s.jsonl",
        "{\"subscription\": 7, \"filter\": [[\"n\", \"=\", 1]], \"area\": [0, 0, 5]}\n\
         {\"subscription\": 9, \"filter\": [], \"area\": [10, 10, 5]}\n",
    );
    for engine in ["rtree", "sff", "grid", "emu", "emu-cells"] {
        let mut cmd = harness();
        cmd.args([
            "clcb", "match", "--window", "2", "--events", "-", "--engine", engine,
        ])
        .arg("--subscriptions")
        .arg(&subs);
        let out = run_with_stdin(
            cmd,
            b"{\"loc\": [1, 1], \"attrs\": {\"n\": 1}}\n{\"loc\": [1]}\n{\"loc\": [11, 9], \"attrs\": {}}\n",
        );
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{engine}: {stderr}");
        assert_eq!(text(&out.stdout), "[7]\nnull\n[9]\n", "{engine}");
        assert!(
            stderr.contains("<stdin>:2: `loc` must be"),
            "{engine}: {stderr}"
        );
    }
    std::fs::remove_dir_all(d).ok();
}

/// Subscriptions read from standard input (read whole, not mapped) answer as the same
/// file does; a bad subscriptions line there stops the load, named `<stdin>:line:column`.
#[test]
fn clcb_match_reads_subscriptions_from_stdin_as_from_a_file() {
    let d = tmp("clcb-subs-stdin");
    let subs_text = "{\"subscription\": 9, \"filter\": [], \"area\": [10, 10, 5]}\n\n\
         {\"subscription\": 7, \"filter\": [[\"n\", \"=\", 1]], \"area\": [0, 0, 5]}\n\
         {\"subscription\": 9, \"filter\": [[\"s\", \"prefix\", \"ab\"]], \"area\": [0, 0, 1, 1]}\n";
    let subs = write(&d, "s.jsonl", subs_text);
    let events = write(
        &d,
        "e.jsonl",
        "{\"loc\": [1, 1], \"attrs\": {\"n\": 1}}\n{\"loc\": [0.5, 0.5], \"attrs\": {\"s\": \"abc\"}}\n{\"loc\": [11, 9]}\n",
    );
    for engine in ["grid", "emu-cells", "rtree"] {
        let from_file = harness()
            .args(["clcb", "match", "--engine", engine, "--events"])
            .arg(&events)
            .arg("--subscriptions")
            .arg(&subs)
            .output()
            .expect("run harness");
        assert_eq!(
            text(&from_file.stdout),
            "[7]\n[9]\n[9]\n",
            "{engine}: {}",
            text(&from_file.stderr)
        );
        let mut cmd = harness();
        cmd.args([
            "clcb",
            "match",
            "--subscriptions",
            "-",
            "--engine",
            engine,
            "--events",
        ])
        .arg(&events);
        let out = run_with_stdin(cmd, subs_text.as_bytes());
        assert_eq!(
            out.status.code(),
            Some(0),
            "{engine}: {}",
            text(&out.stderr)
        );
        assert_eq!(text(&out.stdout), text(&from_file.stdout), "{engine}");
    }
    let mut cmd = harness();
    cmd.args([
        "clcb",
        "match",
        "--subscriptions",
        "-",
        "--engine",
        "grid",
        "--events",
    ])
    .arg(&events);
    let out = run_with_stdin(
        cmd,
        format!("{subs_text}{{\"subscription\": 1, \"area\": [0, 0, 1]\n").as_bytes(),
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("<stdin>:5:"), "{stderr}");
    assert!(text(&out.stdout).is_empty());
    std::fs::remove_dir_all(d).ok();
}

const QUERIES: &str = "/r/b\n//Straße\n/r[b]//c\n";

#[test]
fn xml_filter_reports_a_bad_document_skips_it_filters_the_others_and_exits_2() {
    let d = tmp("xml-bad-doc");
    let q = write(&d, "q.txt", QUERIES);
    let good1 = write(&d, "good1.xml", "<r><b/></r>");
    let bad = write(&d, "bad.xml", "<r>\n  <b></c>\n</r>");
    let good2 = write(&d, "good2.xml", "<r><b><c/></b></r>");
    let missing = d.join("missing.xml");
    for engine in ["yfilter", "emu"] {
        let out = harness()
            .args(["xml", "filter", "--engine", engine, "--queries"])
            .arg(&q)
            .args([&good1, &bad, &missing, &good2])
            .output()
            .expect("run harness");
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{engine}: {stderr}");
        let lines: Vec<String> = text(&out.stdout).lines().map(String::from).collect();
        assert_eq!(lines.len(), 2, "{engine}: {lines:?}");
        assert!(lines[0].contains("good1.xml") && lines[0].ends_with("\"matches\":[0]}"));
        assert!(lines[1].contains("good2.xml") && lines[1].ends_with("\"matches\":[0,2]}"));
        assert!(
            stderr.contains(&format!("{}:2:", bad.display())),
            "{engine}: {stderr}"
        );
        assert!(stderr.contains("missing.xml: cannot read"), "{stderr}");
        assert!(stderr.contains("2 of 4 document(s) were bad"), "{stderr}");
    }
    std::fs::remove_dir_all(d).ok();
}

/// Filters one document with the NFA; returns (exit code, stdout, stderr).
fn filter_one(d: &Path, doc: &[u8]) -> (Option<i32>, String, String) {
    let q = write(d, "q.txt", QUERIES);
    let p = write(d, "doc.xml", doc);
    let out = harness()
        .args(["xml", "filter", "--engine", "yfilter", "--queries"])
        .arg(&q)
        .arg(&p)
        .output()
        .expect("run harness");
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn xml_filter_reads_utf16_documents_with_a_byte_order_mark() {
    let d = tmp("xml-utf16");
    let xml = "<?xml version=\"1.0\" encoding=\"UTF-16\"?>\n<r><b><c/></b><Straße/></r>";
    for big_endian in [false, true] {
        let mut bytes = Vec::new();
        for u in "\u{FEFF}".encode_utf16().chain(xml.encode_utf16()) {
            bytes.extend_from_slice(&if big_endian {
                u.to_be_bytes()
            } else {
                u.to_le_bytes()
            });
        }
        let (code, out, err) = filter_one(&d, &bytes);
        assert_eq!(code, Some(0), "big endian {big_endian}: {err}");
        assert!(out.ends_with("\"matches\":[0,1,2]}\n"), "{out}");
    }
    std::fs::remove_dir_all(d).ok();
}

#[test]
fn xml_filter_matches_non_ascii_tag_names_of_a_latin1_document() {
    let d = tmp("xml-latin1");
    let (code, out, err) = filter_one(
        &d,
        b"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><r><Stra\xDFe/></r>",
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(out.ends_with("\"matches\":[1]}\n"), "{out}");
    // An encoding that cannot be read is an error naming it, not a silent non-match.
    let (code, out, err) = filter_one(
        &d,
        b"<?xml version=\"1.0\" encoding=\"x-unknown-9\"?><r><Stra\xDFe/></r>",
    );
    assert_eq!(code, Some(2));
    assert!(out.is_empty());
    assert!(err.contains(":1:1: encoding \"x-unknown-9\""), "{err}");
    std::fs::remove_dir_all(d).ok();
}

#[test]
fn xml_filter_parses_a_doctype_whose_internal_subset_has_a_gt_in_a_comment() {
    let d = tmp("xml-doctype");
    let (code, out, err) = filter_one(&d, b"<!DOCTYPE r [<!-- > --><!ELEMENT r ANY>]><r><b/></r>");
    assert_eq!(code, Some(0), "{err}");
    assert!(out.ends_with("\"matches\":[0]}\n"), "{out}");
    std::fs::remove_dir_all(d).ok();
}

#[test]
fn xml_filter_reads_a_document_or_the_queries_from_stdin() {
    let d = tmp("xml-stdin");
    let q = write(&d, "q.txt", QUERIES);
    let mut cmd = harness();
    cmd.args(["xml", "filter", "--engine", "yfilter", "--queries"])
        .arg(&q)
        .arg("-");
    let out = run_with_stdin(cmd, b"<r><b/></r>");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "{\"doc\":\"-\",\"matches\":[0]}\n");
    let doc = write(&d, "d.xml", "<r><b/></r>");
    let mut cmd = harness();
    cmd.args(["xml", "filter", "--engine", "yfilter", "--queries", "-"])
        .arg(&doc);
    let out = run_with_stdin(cmd, QUERIES.as_bytes());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).ends_with("\"matches\":[0]}\n"));
    std::fs::remove_dir_all(d).ok();
}

#[test]
fn xml_filter_over_emulated_devices_answers_as_yfilter_and_refuses_cpu_engines() {
    let d = tmp("xml-devices");
    let out = harness()
        .args([
            "xml",
            "generate",
            "--queries",
            "12",
            "--docs",
            "5",
            "--doc-kb",
            "1",
            "--length",
            "5",
            "--out",
        ])
        .arg(&d)
        .output()
        .expect("run harness");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let docs: Vec<PathBuf> = (0..5).map(|i| d.join(format!("doc-{i:05}.xml"))).collect();
    let filter = |flags: &[&str]| {
        harness()
            .args(["xml", "filter", "--queries"])
            .arg(d.join("queries.txt"))
            .args(flags)
            .args(&docs)
            .output()
            .expect("run harness")
    };
    let want = filter(&["--engine", "yfilter"]);
    assert!(want.status.success(), "{}", text(&want.stderr));
    assert_eq!(text(&want.stdout).lines().count(), 5);
    assert!(
        text(&want.stdout)
            .lines()
            .any(|l| !l.ends_with("\"matches\":[]}")),
        "nothing matched: {}",
        text(&want.stdout)
    );
    // Windows of 3 documents: a second window of 2 over 3 devices leaves one idle.
    for devices in ["0,1", "0,1,2"] {
        let flags = ["--engine", "emu", "--window", "3", "--devices", devices];
        let out = filter(&flags);
        assert!(out.status.success(), "{flags:?}: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout), text(&want.stdout), "{flags:?}");
    }
    for (flags, says) in [
        (&["--engine", "emu", "--devices", "1,1"][..], "named twice"),
        (
            &["--engine", "lazy-dfa", "--devices", "0,1"][..],
            "whole-document kernels",
        ),
    ] {
        let out = filter(flags);
        assert_usage_error(&out, flags, says);
    }
    std::fs::remove_dir_all(d).ok();
}

#[test]
fn xml_generate_writes_a_figures_workload_that_xml_filter_reruns() {
    let d = tmp("xml-generate");
    let out = harness()
        .args([
            "xml",
            "generate",
            "--figure",
            "fig10a",
            "--quick",
            "--queries",
            "64",
            "--out",
        ])
        .arg(&d)
        .output()
        .expect("run harness");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let q = std::fs::read_to_string(d.join("queries.txt")).expect("queries.txt");
    assert_eq!(q.lines().count(), 2, "64 queries at quick sizes: 64 / 32");
    let docs: Vec<PathBuf> = (0..2).map(|i| d.join(format!("doc-{i:05}.xml"))).collect();
    let out = harness()
        .args(["xml", "filter", "--engine", "yfilter", "--queries"])
        .arg(d.join("queries.txt"))
        .args(&docs)
        .output()
        .expect("run harness");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).lines().count(), 2);
    // A flag the figure fixes is a usage error.
    let out = harness()
        .args([
            "xml", "generate", "--figure", "fig9", "--docs", "3", "--out",
        ])
        .arg(&d)
        .output()
        .expect("run harness");
    assert_eq!(out.status.code(), Some(2));
    std::fs::remove_dir_all(d).ok();
}

#[test]
fn ddm_match_reads_regions_from_stdin() {
    let mut cmd = harness();
    cmd.args([
        "ddm",
        "match",
        "--engine",
        "sort",
        "--pairs",
        "--regions",
        "-",
    ]);
    let out = run_with_stdin(
        cmd,
        "\u{FEFF}kind,id,lo0,hi0\npub,1,0,10\nsub,2,5,12\n".as_bytes(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "1,2\n");
}

#[test]
fn ddm_match_over_emulated_devices_answers_as_the_cpu_sort_and_refuses_cpu_engines() {
    let d = tmp("ddm-devices");
    let regions = d.join("r.csv");
    let out = harness()
        .args([
            "ddm",
            "generate",
            "--regions",
            "60",
            "--size",
            "300",
            "--out",
        ])
        .arg(&regions)
        .output()
        .expect("run harness");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let ddm_match = |flags: &[&str]| {
        harness()
            .args(["ddm", "match", "--regions"])
            .arg(&regions)
            .args(flags)
            .output()
            .expect("run harness")
    };
    for what in [&[][..], &["--pairs"][..]] {
        let want = ddm_match(&[&["--engine", "sort"][..], what].concat());
        assert!(want.status.success(), "{}", text(&want.stderr));
        assert_ne!(text(&want.stdout), "0\n", "nothing overlaps");
        for engine in ["emu-sweep", "emu-bisect"] {
            for devices in ["0,1", "0,1,2"] {
                let flags = [&["--engine", engine, "--devices", devices][..], what].concat();
                let out = ddm_match(&flags);
                assert!(out.status.success(), "{flags:?}: {}", text(&out.stderr));
                assert_eq!(text(&out.stdout), text(&want.stdout), "{flags:?}");
            }
        }
    }
    for (flags, says) in [
        (
            &["--engine", "emu-sweep", "--devices", "0,x"][..],
            "not a device ordinal",
        ),
        (
            &["--engine", "sort", "--devices", "0,1"][..],
            "device engines",
        ),
    ] {
        let out = ddm_match(flags);
        assert_usage_error(&out, flags, says);
    }
    std::fs::remove_dir_all(d).ok();
}

#[test]
fn a_misspelt_engine_is_a_usage_error_that_lists_the_names() {
    for args in [
        &[
            "ccm",
            "match",
            "--subscriptions",
            "s",
            "--events",
            "e",
            "--engine",
            "sfff",
        ][..],
        &[
            "clcb",
            "match",
            "--subscriptions",
            "s",
            "--events",
            "e",
            "--engine",
            "gpux",
        ],
        &[
            "xml",
            "filter",
            "--queries",
            "q",
            "--engine",
            "yfiltre",
            "d.xml",
        ],
        &["ddm", "match", "--regions", "r", "--engine", "gpu"],
        &["run", "ccm", "--quick", "--engines", "sff,bogus"],
    ] {
        let out = harness().args(args).output().expect("run harness");
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("invalid value"), "{args:?}: {stderr}");
        assert!(stderr.contains("possible values"), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn report_and_regress_on_a_missing_directory_are_errors() {
    let missing = std::env::temp_dir().join(format!("no-such-results-{}", std::process::id()));
    let out = harness()
        .args(["report", "--dir"])
        .arg(&missing)
        .output()
        .expect("run harness");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("no such directory"));
    let out = harness()
        .args(["regress", "--baseline"])
        .arg(&missing)
        .output()
        .expect("run harness");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[test]
fn an_io_error_prints_its_cause_once() {
    let d = tmp("io-once");
    let subs = write(&d, "s.jsonl", CCM_SUBS);
    let missing = d.join("missing.jsonl");
    let cases: Vec<Vec<std::ffi::OsString>> = vec![
        vec![
            "ccm".into(),
            "match".into(),
            "--engine".into(),
            "sff".into(),
            "--subscriptions".into(),
            subs.clone().into(),
            "--events".into(),
            missing.clone().into(),
        ],
        vec![
            "ccm".into(),
            "match".into(),
            "--engine".into(),
            "sff".into(),
            "--events".into(),
            subs.clone().into(),
            "--subscriptions".into(),
            missing.clone().into(),
        ],
        vec![
            "clcb".into(),
            "match".into(),
            "--engine".into(),
            "rtree".into(),
            "--subscriptions".into(),
            missing.clone().into(),
            "--events".into(),
            subs.clone().into(),
        ],
        vec![
            "xml".into(),
            "filter".into(),
            "--engine".into(),
            "yfilter".into(),
            "--queries".into(),
            missing.clone().into(),
            "d.xml".into(),
        ],
        vec![
            "ddm".into(),
            "match".into(),
            "--engine".into(),
            "sort".into(),
            "--regions".into(),
            missing.clone().into(),
        ],
    ];
    for args in cases {
        let out = harness().args(&args).output().expect("run harness");
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(
            stderr.matches("os error 2").count(),
            1,
            "{args:?}: {stderr}"
        );
        assert!(stderr.contains("missing.jsonl: cannot read"), "{stderr}");
    }
    std::fs::remove_dir_all(d).ok();
}

#[test]
fn without_a_gpu_the_default_engine_falls_back_to_the_cpu_with_one_note_giving_reason_and_fix() {
    if std::env::var_os("CUDA_VISIBLE_DEVICES").is_some() || Path::new("/dev/nvidia0").exists() {
        return; // a GPU machine: the default engine is the GPU
    }
    let d = tmp("fallback");
    let subs = write(&d, "s.jsonl", CCM_SUBS);
    let events = write(&d, "e.jsonl", "{\"temp\": 35}\n");
    let out = ccm_match(&[], &subs, &events);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(text(&out.stdout), "[3]\n");
    assert_eq!(stderr.matches("note:").count(), 1, "{stderr}");
    assert!(stderr.contains("`--engine hybrid`"), "{stderr}");
    std::fs::remove_dir_all(d).ok();
}

/// The peak resident set the harness reports with --stats, in MB.
fn peak_rss_mb(stderr: &str) -> f64 {
    stderr
        .lines()
        .find(|l| l.contains("peak RSS"))
        .and_then(|l| l.split_whitespace().rev().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS in: {stderr}"))
}

/// Streams `n` events through `ccm match --engine sff` on standard input; returns the
/// peak RSS (MB) the harness reports.
fn stream_events(subs: &Path, n: usize) -> f64 {
    let mut child = harness()
        .args([
            "ccm", "match", "--engine", "sff", "--stats", "--events", "-",
        ])
        .arg("--subscriptions")
        .arg(subs)
        // Windows of 8192 events: the shorter stream is then many windows long too.
        .args(["--window", "8192"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start harness");
    let mut input = std::io::BufWriter::new(child.stdin.take().expect("stdin"));
    let writer = std::thread::spawn(move || {
        for i in 0..n {
            writeln!(
                input,
                "{{\"temp\": {}, \"area\": \"a{}\", \"k\": \"value {i}\"}}",
                i % 70,
                i % 7
            )
            .expect("write an event");
        }
    });
    let mut stdout = child.stdout.take().expect("stdout");
    let counter = std::thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 16];
        let mut lines = 0usize;
        loop {
            match stdout.read(&mut buf) {
                Ok(0) | Err(_) => return lines,
                Ok(k) => lines += buf[..k].iter().filter(|&&b| b == b'\n').count(),
            }
        }
    });
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    writer.join().expect("writer");
    let status = child.wait().expect("wait");
    assert!(status.success(), "{stderr}");
    assert_eq!(counter.join().expect("counter"), n, "one answer per event");
    peak_rss_mb(&stderr)
}

#[test]
fn a_stream_of_a_million_events_runs_in_bounded_memory_on_the_cpu_engine() {
    let d = tmp("bounded");
    let subs = write(&d, "s.jsonl", CCM_SUBS);
    // Both streams are many windows long, so both reach the pipeline's steady state
    // (a window being read and parsed, one matched, one written, one in each channel):
    // memory that grew with the stream would show as a gap of tens of megabytes.
    let small = stream_events(&subs, 200_000);
    let large = stream_events(&subs, 1_000_000);
    // A million such events held at once take well over 100 MB; streamed in windows,
    // the peak stays that of the shorter stream (a margin for the allocator, which
    // keeps pages freed by one thread for that thread).
    assert!(
        large < small + 32.0 && large < 192.0,
        "peak RSS {large:.1} MB for 1M events vs {small:.1} MB for 200k"
    );
    std::fs::remove_dir_all(d).ok();
}

/// The default engine on a small regions file is the CPU's (no GPU is opened, so no note
/// about one missing), says so under --stats, and answers as `sort`.
#[test]
fn ddm_match_on_a_small_file_defaults_to_the_cpu_and_says_so() {
    let d = tmp("ddm-small");
    let regions = write(
        &d,
        "r.csv",
        "kind,id,lo0,hi0,lo1,hi1\npub,1,0,10,0,10\nsub,2,5,12,5,12\nsub,3,20,30,0,10\n",
    );
    let run = |flags: &[&str]| {
        harness()
            .args(["ddm", "match", "--pairs", "--regions"])
            .arg(&regions)
            .args(flags)
            .output()
            .expect("run harness")
    };
    let default = run(&["--stats"]);
    says_the_cpu_is_the_default(&default, "sbm");
    assert_eq!(
        text(&default.stdout),
        text(&run(&["--engine", "sort"]).stdout)
    );
    assert_eq!(text(&default.stdout), "1,2\n");
}

/// The default engine on small documents is lazy-dfa on the CPU (no GPU is opened, so no
/// note about one missing), says so under --stats, and answers as yfilter.
#[test]
fn xml_filter_on_small_documents_defaults_to_the_cpu_and_says_so() {
    let d = tmp("xml-small");
    let q = write(&d, "q.txt", "//a/b\n/a//c\n");
    let a = write(&d, "a.xml", "<a><b/><x><c/></x></a>");
    let b = write(&d, "b.xml", "<a><c/></a>");
    let run = |flags: &[&str]| {
        harness()
            .args(["xml", "filter", "--queries"])
            .arg(&q)
            .args(flags)
            .arg(&a)
            .arg(&b)
            .output()
            .expect("run harness")
    };
    let default = run(&["--stats"]);
    says_the_cpu_is_the_default(&default, "lazy-dfa");
    let want = run(&["--engine", "yfilter"]);
    assert_eq!(text(&default.stdout), text(&want.stdout));
    assert!(
        text(&want.stdout).contains("\"matches\":[0,1]"),
        "{}",
        text(&want.stdout)
    );
}

/// The default engine on a small events file is the CPU grid (no GPU is opened, so no
/// note about one missing), says so under --stats, and answers as the R*-tree.
#[test]
fn clcb_match_on_a_small_events_file_defaults_to_the_grid_and_says_so() {
    let d = tmp("clcb-small");
    let (subs, events) = clcb_files(&d, 30, 20);
    let run = |flags: &[&str]| clcb_match_files(&subs, &events, flags);
    let default = run(&["--stats"]);
    says_the_cpu_is_the_default(&default, "grid");
    let want = run(&["--engine", "rtree"]);
    assert!(want.status.success(), "{}", text(&want.stderr));
    assert_eq!(text(&default.stdout), text(&want.stdout));
    assert!(
        text(&want.stdout).lines().any(|l| l != "[]"),
        "nothing matched"
    );
    std::fs::remove_dir_all(d).ok();
}

/// `clcb generate`'s files in `d`: `subs` subscriptions whose areas cover 20% of the
/// world, `events` events that each match some; returns their paths.
fn clcb_files(d: &Path, subs: u32, events: u32) -> (PathBuf, PathBuf) {
    let (s, e) = (d.join("s.jsonl"), d.join("e.jsonl"));
    let (n_subs, n_events) = (subs.to_string(), events.to_string());
    let out = harness()
        .args(["clcb", "generate", "--subscriptions", &n_subs])
        .args(["--events", &n_events, "--area-percent", "20", "--all-match"])
        .arg("--out-subscriptions")
        .arg(&s)
        .arg("--out-events")
        .arg(&e)
        .output()
        .expect("run harness");
    assert!(out.status.success(), "{}", text(&out.stderr));
    (s, e)
}

/// `clcb match` of `subs` and `events` with `flags`.
fn clcb_match_files(subs: &Path, events: &Path, flags: &[&str]) -> Output {
    harness()
        .args(["clcb", "match", "--subscriptions"])
        .arg(subs)
        .arg("--events")
        .arg(events)
        .args(flags)
        .output()
        .expect("run harness")
}

/// `out` (a run with --stats and no --engine) succeeded on the CPU engine `engine`, which
/// --stats names as the default, without a note about a GPU missing (none was opened).
fn says_the_cpu_is_the_default(out: &Output, engine: &str) {
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("default engine") && err.contains(engine),
        "{err}"
    );
    assert!(!err.contains("note: the GPU cannot be used"), "{err}");
}
