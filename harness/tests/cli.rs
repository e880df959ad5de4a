//! The harness binary end to end, as CI runs it: no GPU, so CPU engines + emulator.

use std::path::PathBuf;
use std::process::Command;

fn harness() -> Command {
    Command::new(env!("CARGO_BIN_EXE_harness"))
}

fn list() -> Vec<(String, String)> {
    let out = harness().arg("list").output().expect("run harness list");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?.to_string(), w.next()?.to_string()))
        })
        .collect()
}

/// Whether experiment id `e` covers the paper's figure `id`. An id may be split into
/// parts (`fig6b`, `scaleup_a1`): any id that starts with the figure's id and is not a
/// longer number (fig1 vs fig10) counts. One experiment may also draw two figures of
/// one sweep (`fig5_7` is the paper's Figs 5 and 7).
fn covers(e: &str, id: &str) -> bool {
    let starts = |e: &str| {
        e.strip_prefix(id)
            .is_some_and(|rest| !rest.starts_with(|c: char| c.is_ascii_digit()))
    };
    if starts(e) {
        return true;
    }
    let kind_len = e.find(|c: char| c.is_ascii_digit()).unwrap_or(e.len());
    let (kind, numbers) = e.split_at(kind_len);
    numbers
        .split('_')
        .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        .any(|n| starts(&format!("{kind}{n}")))
}

#[test]
fn list_names_every_table_and_figure_of_the_four_papers() {
    let have = list();
    let want: &[(&str, &[&str])] = &[
        (
            "ccm",
            &[
                "table2", "fig5", "fig6", "fig7", "fig8", "fig9", "fig10", "fig11",
            ],
        ),
        ("clcb", &["table2", "fig3", "fig4", "fig5", "fig6", "fig7"]),
        ("xml", &["fig7", "fig8", "fig9", "fig10", "fig11", "table5"]),
        (
            "ddm",
            &[
                "fig5", "fig6", "fig7", "fig8", "fig9", "fig10", "fig11", "fig12", "scaleup",
            ],
        ),
    ];
    for (paper, ids) in want {
        for id in *ids {
            let found = have.iter().any(|(p, e)| p == paper && covers(e, id));
            assert!(found, "`harness list` lacks {paper} {id}; it has {have:?}");
        }
    }
}

#[test]
#[ignore = "long on the host emulator (seconds to tens of seconds each): .ci/run runs it, with the other ignored tests, after the README's test command"]
fn run_all_quick_passes_without_a_gpu_and_writes_a_csv_and_figures_that_plot_restores() {
    let out = std::env::temp_dir().join(format!("harness-quick-{}", std::process::id()));
    let run = harness()
        .args(["run", "all", "--quick", "--seeds", "1", "--out"])
        .arg(&out)
        .output()
        .expect("run harness");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success(),
        "harness run all --quick failed:\n{stderr}"
    );
    // The run ends with a summary table: a row per experiment with its answer checks,
    // then the pointer to `plot` and `report`, and last where the files went. No emulator
    // series is turned into a speedup.
    let stdout = String::from_utf8_lossy(&run.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    let head = lines
        .iter()
        .rposition(|l| l.starts_with("summary: "))
        .unwrap_or_else(|| panic!("no summary in:\n{stdout}"));
    assert!(lines[head].contains(" 0 disagree"), "{}", lines[head]);
    let table = &lines[head..];
    for (paper, id) in list() {
        let name = format!("{paper}/{id}");
        let row = table
            .iter()
            .find(|l| l.split_whitespace().next() == Some(name.as_str()))
            .unwrap_or_else(|| panic!("summary lacks {name}:\n{}", table.join("\n")));
        assert!(row.contains(" ok "), "{row}");
        assert!(row.contains(" agree") || row.contains(" none "), "{row}");
    }
    // It ends with where the files went (a sentence that may wrap onto a second line),
    // every line readable in 100 columns.
    let files = table
        .iter()
        .rev()
        .take(2)
        .find(|l| l.starts_with("files: "))
        .copied()
        .unwrap_or_default();
    assert!(
        files.contains(&*out.to_string_lossy()),
        "{}",
        table.join("\n")
    );
    assert!(
        table.contains(
            &"redraw figures: harness plot; regenerate results/README.md: harness report"
        ),
        "{}",
        table.join("\n")
    );
    for l in table {
        assert!(l.chars().count() <= 100, "wider than 100 columns: {l}");
    }
    for l in lines.iter().filter(|l| l.contains("speedup over")) {
        assert!(!l.contains("emu"), "an emulator speedup: {l}");
    }
    for (paper, id) in list() {
        let csv: PathBuf = out.join(&paper).join(format!("{id}.csv"));
        assert!(csv.exists(), "{} missing; stderr:\n{stderr}", csv.display());
        assert!(
            csv.with_extension("png").exists(),
            "{} has no plot",
            csv.display()
        );
    }
    // Figures are a pure function of the CSVs: delete every PNG and SVG, and `plot`
    // restores them all, a recorded run nested one level below included.
    let (paper, id) = &list()[0];
    let nested = out.join("nested").join(paper);
    std::fs::create_dir_all(&nested).unwrap();
    std::fs::copy(
        out.join(paper).join(format!("{id}.csv")),
        nested.join(format!("{id}.csv")),
    )
    .unwrap();
    for (paper, id) in list() {
        for ext in ["png", "svg"] {
            std::fs::remove_file(out.join(&paper).join(format!("{id}.{ext}"))).ok();
        }
    }
    let plot = harness()
        .args(["plot", "--dir"])
        .arg(&out)
        .output()
        .expect("run harness plot");
    assert!(
        plot.status.success(),
        "harness plot failed:\n{}",
        String::from_utf8_lossy(&plot.stderr)
    );
    for (paper, id) in list() {
        for ext in ["png", "svg"] {
            let f = out.join(&paper).join(format!("{id}.{ext}"));
            assert!(f.exists(), "harness plot did not restore {}", f.display());
        }
    }
    assert!(nested.join(format!("{id}.svg")).exists());
    std::fs::remove_dir_all(out).ok();
}

#[test]
fn regress_that_compares_nothing_fails_unless_allowed_and_says_so_on_standard_output() {
    // A baseline with no recording of the experiment: nothing to compare.
    let base = std::env::temp_dir().join(format!("harness-empty-base-{}", std::process::id()));
    let out = std::env::temp_dir().join(format!("harness-regress-out-{}", std::process::id()));
    std::fs::create_dir_all(&base).unwrap();
    let regress = |extra: &[&str]| {
        harness()
            .args(["regress", "--samples", "2", "--baseline"])
            .arg(&base)
            .arg("--out")
            .arg(&out)
            .args(extra)
            .args(["clcb", "fig7"])
            .output()
            .expect("run harness regress")
    };
    let run = regress(&[]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(1), "{stdout}");
    assert!(
        stdout
            .contains("| clcb/fig7 | 0 | 0 | 0 | nothing compared: no recording in the baseline |"),
        "{stdout}"
    );
    assert!(stdout.contains("NOTHING COMPARED"), "{stdout}");
    assert!(String::from_utf8_lossy(&run.stderr).contains("--allow-empty"));
    // Its own files, in its own folder.
    assert!(out.join("clcb").join("fig7.csv").exists());
    let run = regress(&["--allow-empty"]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(String::from_utf8_lossy(&run.stdout).contains("NOTHING COMPARED"));
    std::fs::remove_dir_all(base).ok();
    std::fs::remove_dir_all(out).ok();
}

#[test]
fn an_unknown_paper_is_a_usage_error_with_exit_code_2() {
    let out = harness()
        .args(["run", "nosuchpaper"])
        .output()
        .expect("run harness");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown paper `nosuchpaper`"));
}

#[test]
fn selftest_passes_on_the_emulator_when_there_is_no_gpu() {
    let out = harness().arg("selftest").output().expect("run harness");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    // Every self-test of gpu-selftest (struct_params and persistent_sum included).
    assert_eq!(stdout.matches("PASS").count(), 7, "{stdout}");
    assert!(!stdout.contains("FAIL"), "{stdout}");
}

#[test]
fn a_regions_file_with_only_its_header_has_zero_pairs_on_every_engine() {
    // Fuzz finding ddm_diff-2: the device engines panicked on an engine of no region.
    let path = std::env::temp_dir().join(format!("harness-empty-{}.csv", std::process::id()));
    std::fs::write(&path, "kind,id,lo0,hi0\n").expect("write the regions file");
    for engine in ["emu-region", "emu-grid", "brute", "grid", "sort"] {
        let out = harness()
            .args(["ddm", "match", "--regions"])
            .arg(&path)
            .args(["--engine", engine])
            .output()
            .expect("run harness ddm match");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{engine}: {stderr}");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "0", "{engine}");
        let pairs = harness()
            .args(["ddm", "match", "--pairs", "--regions"])
            .arg(&path)
            .args(["--engine", engine])
            .output()
            .expect("run harness ddm match --pairs");
        assert!(pairs.status.success(), "{engine} --pairs");
        assert!(pairs.stdout.is_empty(), "{engine} --pairs");
    }
    let _ = std::fs::remove_file(&path);
}
