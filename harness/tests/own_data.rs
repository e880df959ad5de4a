//! What the users' commands forgive and what they refuse, end to end on the built binary
//! (no GPU: the CPU engines and the emulator): blank lines skipped, an empty
//! subscriptions file warned about, every bad line of a subscriptions or regions file
//! reported in one run, CLCB events of location only, and the fallback engines named.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn harness(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(args)
        .output()
        .expect("run harness")
}

/// A fresh temporary directory for one test, with `files` written in it.
fn dir_with(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let d = std::env::temp_dir().join(format!("harness-own-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).expect("create the test directory");
    for (f, text) in files {
        std::fs::write(d.join(f), text).expect("write a test file");
    }
    d
}

/// `harness PAPER match --engine ENGINE` over `s.jsonl` and `e.jsonl` of `d`.
fn match_files(paper: &str, engine: &str, d: &Path) -> Output {
    harness(&[
        paper,
        "match",
        "--engine",
        engine,
        "--subscriptions",
        &path(d, "s.jsonl"),
        "--events",
        &path(d, "e.jsonl"),
    ])
}

fn path(d: &Path, f: &str) -> String {
    d.join(f).display().to_string()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const CCM_SUBS: &str = "{\"interface\": 3, \"filter\": [[\"temp\", \">\", 30]]}\n\
{\"interface\": 1, \"filter\": [[\"area\", \"=\", \"a1\"]]}\n";

#[test]
fn blank_lines_in_events_are_skipped_and_a_trailing_one_is_no_error() {
    let d = dir_with(
        "blank",
        &[
            ("s.jsonl", &format!("\n{CCM_SUBS}\n")),
            ("e.jsonl", "{\"temp\": 35}\n\n  \n{\"area\": \"a1\"}\n\n"),
        ],
    );
    for engine in ["hybrid", "emu-index"] {
        let out = match_files("ccm", engine, &d);
        assert!(out.status.success(), "{engine}: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "[3]\n[1]\n", "{engine}");
    }
    std::fs::remove_dir_all(d).ok();
}

#[test]
fn an_empty_subscriptions_file_is_warned_about() {
    let d = dir_with(
        "empty",
        &[("s.jsonl", "\n"), ("e.jsonl", "{\"temp\": 35}\n")],
    );
    for engine in ["hybrid", "emu-index"] {
        let out = match_files("ccm", engine, &d);
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{engine}: {stderr}");
        assert_eq!(text(&out.stdout), "[]\n", "{engine}");
        assert!(
            stderr.contains("warning:") && stderr.contains("no subscriptions"),
            "{stderr}"
        );
    }
    std::fs::remove_dir_all(d).ok();
}

#[test]
fn every_bad_subscription_line_is_reported_in_one_run() {
    let bad = "{\"interface\": 1, \"filter\": [[\"a\", \"~\", 1]]}\n";
    let d = dir_with(
        "bad-subs",
        &[
            ("s.jsonl", &format!("{CCM_SUBS}{bad}{CCM_SUBS}{bad}")),
            ("e.jsonl", "{\"temp\": 35}\n"),
        ],
    );
    for engine in ["hybrid", "emu", "emu-index"] {
        let out = match_files("ccm", engine, &d);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{engine}: {stderr}");
        assert!(out.stdout.is_empty(), "{engine}");
        let s = path(&d, "s.jsonl");
        assert!(stderr.contains(&format!("{s}:3: constraint 1")), "{stderr}");
        assert!(stderr.contains(&format!("{s}:6: constraint 1")), "{stderr}");
        assert!(stderr.contains("2 bad line(s)"), "{stderr}");
    }
    std::fs::remove_dir_all(d).ok();
}

#[test]
fn every_bad_regions_line_is_reported_in_one_run() {
    let d = dir_with(
        "bad-regions",
        &[(
            "r.csv",
            "kind,id,lo0,hi0\npub,1,0,x\n\npub,2,0,3\nsub,1,5\npub,2,0,1\nsub,2,0,4\n",
        )],
    );
    let out = harness(&[
        "ddm",
        "match",
        "--engine",
        "bisect",
        "--regions",
        &path(&d, "r.csv"),
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let r = path(&d, "r.csv");
    for want in [
        format!("{r}:2:9: bound `x`"),
        format!("{r}:5:1: 3 fields"),
        format!("{r}:6:5: pub id 2 appears twice"),
        "3 bad line(s)".to_string(),
    ] {
        assert!(stderr.contains(&want), "{want}: {stderr}");
    }
    std::fs::remove_dir_all(d).ok();
}

#[test]
fn a_clcb_event_of_location_only_matches_the_filters_without_constraints() {
    let d = dir_with(
        "clcb-loc",
        &[
            (
                "s.jsonl",
                "{\"subscription\": 7, \"filter\": [], \"area\": [0, 0, 5]}\n\
                 {\"subscription\": 8, \"filter\": [[\"n\", \"=\", 1]], \"area\": [0, 0, 5]}\n",
            ),
            (
                "e.jsonl",
                "{\"loc\": [1, 1]}\n{\"loc\": [1, 1], \"attrs\": {\"n\": 1}}\n",
            ),
        ],
    );
    // (`emu-cells`: the cell index laid out on the host before the device is taken.)
    for engine in ["grid", "emu", "emu-cells"] {
        let out = match_files("clcb", engine, &d);
        assert!(out.status.success(), "{engine}: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "[7]\n[7,8]\n", "{engine}");
    }
    std::fs::remove_dir_all(d).ok();
}

/// The sorting device engines on the emulator (the regions copied to the device from the
/// set's own memory) count and list the pairs the CPU engine does.
#[test]
fn ddm_sorting_device_engines_answer_as_the_cpu() {
    let d = dir_with(
        "ddm-emu",
        &[(
            "r.csv",
            "kind,id,lo0,hi0,lo1,hi1
pub,1,0,10,0,10
pub,3,20,30,0,10
             sub,2,5,15,5,15
sub,4,25,26,5,6
",
        )],
    );
    for engine in ["sbm", "emu-bisect", "emu-sweep"] {
        let r = path(&d, "r.csv");
        let out = harness(&["ddm", "match", "--engine", engine, "--regions", &r]);
        assert!(out.status.success(), "{engine}: {}", text(&out.stderr));
        assert_eq!(
            text(&out.stdout),
            "2
",
            "{engine}"
        );
        let out = harness(&[
            "ddm",
            "match",
            "--pairs",
            "--engine",
            engine,
            "--regions",
            &r,
        ]);
        assert!(out.status.success(), "{engine}: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "1,2\n3,4\n", "{engine}");
    }
    std::fs::remove_dir_all(d).ok();
}

/// A small regions file (with or without a GPU) is matched by the strongest CPU engine
/// for its dimensions, named under --stats (the GPU is not opened: no fallback note).
#[test]
fn small_regions_files_default_to_the_strongest_cpu_engines() {
    let d = dir_with(
        "fallbacks",
        &[
            ("r1.csv", "kind,id,lo0,hi0\npub,1,0,10\nsub,2,5,15\n"),
            (
                "r2.csv",
                "kind,id,lo0,hi0,lo1,hi1\npub,1,0,10,0,10\nsub,2,5,15,5,15\n",
            ),
        ],
    );
    for (file, engine) in [("r1.csv", "bisect"), ("r2.csv", "sbm")] {
        let out = harness(&["ddm", "match", "--stats", "--regions", &path(&d, file)]);
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert_eq!(text(&out.stdout), "1\n");
        assert!(stderr.contains("default engine"), "{stderr}");
        assert!(
            stderr.contains(&format!("({engine}: a file under")),
            "{stderr}"
        );
        assert!(!stderr.contains("note:"), "{stderr}");
    }
    std::fs::remove_dir_all(d).ok();
}
