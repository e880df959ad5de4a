//! The house style checked on fixture rows: layouts, colours, marks, notes, legends.

use super::*;
#[test]
fn series_names_split_into_engine_and_second_factor() {
    let s = |n: &str| split_series(n);
    assert_eq!(s("gpu L=5"), ("gpu".into(), "L=5".into()));
    assert_eq!(
        s("gpu-block vs yfilter-mc"),
        ("gpu-block".into(), "vs yfilter-mc".into())
    );
    assert_eq!(
        s("gpu vs yfilter p=10%"),
        ("gpu".into(), "vs yfilter p=10%".into())
    );
    assert_eq!(
        s("gpu grid batched"),
        ("gpu grid batched".into(), "".into())
    );
    assert_eq!(
        s("gpu persistent p99.9"),
        ("gpu persistent".into(), "p99.9".into())
    );
    assert_eq!(s("sff all cores"), ("sff all cores".into(), "".into()));
    assert_eq!(
        s("gpu cells batched rect A=1%"),
        ("gpu cells batched".into(), "rect A=1%".into())
    );
    assert_eq!(
        s("gpu persistent events/s"),
        ("gpu persistent".into(), "events/s".into())
    );
    assert_eq!(
        s("gpu persistent p99 us"),
        ("gpu persistent".into(), "p99 us".into())
    );
}

#[test]
fn emulator_twins_share_their_gpu_engines_colour_and_unknown_engines_get_a_stable_one() {
    assert_eq!(engine_color("emu"), engine_color("gpu"));
    assert_eq!(engine_color("emu-seg"), engine_color("gpu-seg"));
    assert_eq!(engine_color("emu batched"), engine_color("gpu batched"));
    assert_eq!(engine_color("gpu copy in"), engine_color("copy in"));
    assert_eq!(
        engine_color("brand-new engine"),
        engine_color("brand-new engine")
    );
    assert_ne!(engine_color("gpu"), engine_color("gpu batched"));
    assert_ne!(engine_color("gpu persistent"), engine_color("gpu"));
}

#[test]
fn engines_that_share_a_figure_have_distinct_colours() {
    let figures: [&[&str]; 5] = [
        &[
            "gpu",
            "gpu batched",
            "gpu grouped",
            "gpu inline",
            "gpu latency",
            "gpu persistent",
            "sff",
            "sff all cores",
            "index",
            "index all cores",
            BEST_CPU,
        ],
        &[
            "gpu",
            "gpu batched",
            "gpu copies",
            "gpu grid",
            "gpu grid batched",
            "gpu grid latency",
            "gpu latency",
            "gpu persistent",
            "rtree",
            "sff",
        ],
        &["gpu", "gpu-block", "gpu-seg", "yfilter", "yfilter-mc"],
        &[
            "brute",
            "brute-par",
            "gpu-grid",
            "gpu-region",
            "gpu-region-sliced",
            "gpu-sweep",
            "gpu-sweep+upload",
            "grid",
            "grid-par",
            "sort",
            "sort-par",
            "sbm",
            "sbm-par",
            "itm",
            "itm-par",
            BEST_CPU,
        ],
        &[
            "copy in",
            "Loc",
            "Cont",
            "Zip",
            "copy out",
            "total",
            "latency kernel",
        ],
    ];
    for engines in figures {
        for (i, a) in engines.iter().enumerate() {
            for b in &engines[i + 1..] {
                assert_ne!(engine_color(a), engine_color(b), "{a} and {b}");
            }
        }
    }
}

#[test]
fn second_factor_values_take_dash_styles_in_natural_order() {
    let series: Vec<String> = ["gpu L=10", "gpu L=5", "yfilter L=15", "yfilter L=5"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let st = styles(&series);
    let dash = |n: &str| st.iter().find(|(s, _)| s == n).unwrap().1.dash;
    assert_eq!(dash("gpu L=5"), Dash::Solid);
    assert_eq!(dash("yfilter L=5"), Dash::Solid);
    assert_eq!(dash("gpu L=10"), Dash::Dashed);
    assert_eq!(dash("yfilter L=15"), Dash::Dotted);
}

#[test]
fn axis_numbers_read_1_10_100_1k_10k_1m() {
    let f: Vec<String> = [
        1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6, 2.5e3, 32768.0, 262144.0, 0.05, 0.001, 1048576.0,
        7.19,
    ]
    .iter()
    .map(|v| fmt_num(*v))
    .collect();
    assert_eq!(
        f,
        [
            "1", "10", "100", "1k", "10k", "100k", "1M", "2.5k", "32768", "262k", "0.05", "0.001",
            "1.05M", "7.19"
        ]
    );
}

#[test]
fn numbered_x_labels_are_tables_and_others_are_lines() {
    assert_eq!(
        categories("row (1: time, 2: deployment, 3: size, 4: Zipf time)").unwrap(),
        [
            (1.0, "time".into()),
            (2.0, "deployment".into()),
            (3.0, "size".into()),
            (4.0, "Zipf time".into())
        ]
    );
    assert_eq!(
        categories("factor (1 doc size 64k->1M, 2 queries 64->512)").unwrap()[1],
        (2.0, "queries 64->512".to_string())
    );
    assert!(categories("subscriptions (10 filters each)").is_none());
    assert!(categories("regions (half publications)").is_none());
    assert!(categories("numerical constraints (%)").is_none());
}

#[test]
fn a_scaling_figure_draws_rates_and_speedups_on_panels_of_their_own() {
    // DDM's scaling records matchings/s and the speedup over one GPU side by side:
    // one panel each (the speedups, ~1-5, were flat at 0 on the rates' axis), and
    // the speedup panel carries the parity line.
    let exp = crate::runner::all_experiments()
        .into_iter()
        .find(|e| e.paper.name() == "ddm" && e.id == "scaling")
        .expect("ddm's scaling experiment");
    let mut rows = Vec::new();
    for k in [1.0, 2.0, 4.0] {
        let rate = "gpu multi bisect by-slab count regions=1M matchings/s";
        let speedup = "gpu multi bisect by-slab count regions=1M speedup";
        rows.push(fixture_row("ddm", "scaling", rate, k, 1500.0 * k));
        rows.push(fixture_row("ddm", "scaling", speedup, k, k));
    }
    let fig = figure(&exp, &rows, &[]);
    let panels: Vec<&LinePanel> = fig
        .panels
        .iter()
        .map(|p| match p {
            Panel::Lines(l) => l,
            _ => panic!("lines expected"),
        })
        .collect();
    assert_eq!(panels.len(), 2);
    assert!(panels[0]
        .lines
        .iter()
        .all(|l| l.series.ends_with("matchings/s")));
    assert!(!panels[0].unity);
    assert!(panels[1]
        .lines
        .iter()
        .all(|l| l.series.ends_with("speedup")));
    assert!(panels[1].unity);
    assert_eq!(panels[1].y_label, "speedup over one GPU (x)");
}

fn fixture_row(paper: &str, exp: &str, series: &str, x: f64, mean: f64) -> Row {
    Row {
        paper: paper.into(),
        experiment: exp.into(),
        series: series.into(),
        x,
        mean,
        min: mean * 0.9,
        max: mean * 1.1,
        n: 3,
        unit: "u".into(),
        device: "fixture".into(),
        ..Row::default()
    }
}

/// Fixture CSVs for three experiments of different layouts: lines with a speedup
/// panel (ccm fig8), a table (ccm table2), lines with a second factor and emulator
/// twins (xml fig7).
fn fixture_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("harness-plot-{tag}-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    let mut fig8 = Vec::new();
    for x in [250.0, 1000.0, 10000.0, 250000.0] {
        fig8.push(fixture_row("ccm", "fig8", "sff", x, x / 1e4));
        fig8.push(fixture_row("ccm", "fig8", "gpu", x, 0.03));
        fig8.push(fixture_row("ccm", "fig8", "gpu batched", x, 0.0002));
        fig8.push(fixture_row("ccm", "fig8", BEST_CPU, x, x / 1e5));
    }
    let mut table2 = Vec::new();
    for (x, v) in [(1.0, 0.1), (2.0, 400.0), (3.0, 30.0), (4.0, 0.4)] {
        table2.push(fixture_row("ccm", "table2", "sff", x, v));
        table2.push(fixture_row("ccm", "table2", "gpu", x, v / 4.0));
        if x == 1.0 || x == 4.0 {
            table2.push(fixture_row("ccm", "table2", BEST_CPU, x, v / 2.0));
        }
    }
    let mut fig7 = Vec::new();
    for x in [32.0, 256.0, 2048.0] {
        for l in ["L=5", "L=10"] {
            fig7.push(fixture_row(
                "xml",
                "fig7",
                &format!("yfilter {l}"),
                x,
                100.0 / x,
            ));
            fig7.push(fixture_row("xml", "fig7", &format!("gpu {l}"), x, 800.0));
            fig7.push(fixture_row("xml", "fig7", &format!("emu {l}"), x, 0.5));
        }
    }
    for (id, rows) in [("fig8", &fig8), ("table2", &table2)] {
        crate::results::write_csv(&crate::results::csv_path(&dir, "ccm", id), rows).unwrap();
    }
    crate::results::write_csv(&crate::results::csv_path(&dir, "xml", "fig7"), &fig7).unwrap();
    dir
}

fn fixture_experiments() -> Vec<Experiment> {
    crate::runner::all_experiments()
        .into_iter()
        .filter(|e| {
            matches!(
                (e.paper.name(), e.id),
                ("ccm", "fig8") | ("ccm", "table2") | ("xml", "fig7")
            )
        })
        .collect()
}

#[test]
fn redraw_renders_fixture_csvs_to_png_and_svg_in_the_layout_the_metadata_picks() {
    let dir = fixture_dir("render");
    let exps = fixture_experiments();
    let refs: Vec<&Experiment> = exps.iter().collect();
    let files = redraw(&refs, &dir).unwrap();
    assert_eq!(files.len(), 6, "{files:?}");
    for f in &files {
        let bytes = std::fs::metadata(f).unwrap().len();
        assert!(bytes > 5_000, "{} has {bytes} bytes", f.display());
    }
    let table2 = exps.iter().find(|e| e.id == "table2").unwrap();
    assert!(matches!(layout(table2, &[]), Layout::Bars(_)));
    let rows = crate::results::read_csv(&crate::results::csv_path(&dir, "ccm", "table2")).unwrap();
    let fig = figure(table2, &rows, &[]);
    // Table 2 mixes ms and MB: one panel per unit, and the speedup over the best CPU.
    assert_eq!(fig.panels.len(), 3);
    assert!(fig.panels.iter().all(|p| matches!(p, Panel::Bars(_))));
    let fig8 = exps.iter().find(|e| e.id == "fig8").unwrap();
    let rows = crate::results::read_csv(&crate::results::csv_path(&dir, "ccm", "fig8")).unwrap();
    let fig = figure(fig8, &rows, &[]);
    assert_eq!(
        fig.panels.len(),
        3,
        "values, speedup over sff, speedup over {BEST_CPU}"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn an_engine_has_the_same_colour_in_every_panel_of_every_figure() {
    let dir = fixture_dir("colour");
    let exps = fixture_experiments();
    let refs: Vec<&Experiment> = exps.iter().collect();
    let files = redraw(&refs, &dir).unwrap();
    let gpu = engine_color("gpu");
    let sff = engine_color("sff");
    for exp in &exps {
        let csv = crate::results::csv_path(&dir, exp.paper.name(), exp.id);
        let rows = crate::results::read_csv(&csv).unwrap();
        let fig = figure(exp, &rows, &[]);
        for (series, color) in fig.colors() {
            let engine = split_series(&series).0;
            if matches!(engine.as_str(), "gpu" | "emu") {
                assert_eq!(color, gpu, "{} {series}", exp.id);
            }
            if engine == "sff" {
                assert_eq!(color, sff, "{} {series}", exp.id);
            }
        }
    }
    // And in the files themselves: every SVG draws the gpu series in gpu's colour.
    for svg in files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "svg"))
    {
        let text = std::fs::read_to_string(svg).unwrap();
        assert!(
            text.contains(&gpu.hex()),
            "{} lacks {}",
            svg.display(),
            gpu.hex()
        );
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn paper_numbers_are_overlaid_on_the_panel_of_their_unit() {
    let dir = fixture_dir("paper");
    let exps = fixture_experiments();
    let fig8 = exps.iter().find(|e| e.id == "fig8").unwrap();
    let rows = crate::results::read_csv(&crate::results::csv_path(&dir, "ccm", "fig8")).unwrap();
    let paper = crate::results::read_papers(Path::new("/nonexistent"), "ccm").unwrap();
    let fig = figure(fig8, &rows, &paper);
    let Panel::Lines(values) = &fig.panels[0] else {
        panic!("lines")
    };
    let Panel::Lines(speed) = &fig.panels[1] else {
        panic!("lines")
    };
    // "below 0.05 ms" on the time panel; "overcomes 13x" and the crossover on the
    // speedup panel.
    assert!(values
        .paper
        .iter()
        .any(|m| m.kind == MarkKind::AtMost && m.y == Some(0.05)));
    assert!(speed
        .paper
        .iter()
        .any(|m| m.kind == MarkKind::AtLeast && m.y == Some(13.0)));
    assert!(speed
        .paper
        .iter()
        .any(|m| m.kind == MarkKind::AtX && m.x == 1000.0));
    assert!(speed.unity);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn best_cpu_rows_add_a_panel_of_each_gpu_series_speedup_over_it_with_parity_at_1() {
    let dir = fixture_dir("bestcpu");
    let exps = fixture_experiments();
    let fig8 = exps.iter().find(|e| e.id == "fig8").unwrap();
    let csv = crate::results::csv_path(&dir, "ccm", "fig8");
    let rows = crate::results::read_csv(&csv).unwrap();
    let fig = figure(fig8, &rows, &[]);
    let Panel::Lines(best) = &fig.panels[2] else {
        panic!("lines")
    };
    assert_eq!(best.y_label, format!("speedup over {BEST_CPU} (x)"));
    assert!(best.unity && best.log_y);
    // GPU series only, each its time divided into the best CPU's at the same x, with
    // the conservative min-max whisker.
    let names: Vec<&str> = best.lines.iter().map(|l| l.series.as_str()).collect();
    assert_eq!(names, ["gpu", "gpu batched"]);
    let gpu = &best.lines[0];
    assert_eq!(gpu.pts.len(), 4);
    let p = gpu.pts[3];
    assert_eq!(p.x, 250000.0);
    assert!((p.y - 2.5 / 0.03).abs() < 1e-9, "{p:?}");
    assert!(p.lo < p.y && p.y < p.hi, "{p:?}");
    // The best CPU is drawn dashed in its own near-black colour in the value panel.
    let Some((_, Key::Series(st))) = fig.legend.iter().find(|(s, _)| s == BEST_CPU) else {
        panic!("{BEST_CPU} in the legend")
    };
    assert_eq!(st.dash, Dash::Dashed);
    assert!(st.halo, "drawn under the engine it coincides with");
    assert_eq!(st.color, Rgb(17, 17, 17));
    // And the panel is in the file: its axis label, and the best CPU's colour.
    let (_, svg) = write(&fig, &csv).unwrap();
    let text = std::fs::read_to_string(svg).unwrap();
    assert!(text.contains("speedup over sff"), "baseline panel kept");
    assert!(
        text.contains("speedup over best CPU"),
        "best-CPU panel drawn"
    );
    assert!(text.contains(&engine_color(BEST_CPU).hex()));
    // Table 2: bars of the speedup over the best CPU in its rows (1 and 4).
    let table2 = exps.iter().find(|e| e.id == "table2").unwrap();
    let rows = crate::results::read_csv(&crate::results::csv_path(&dir, "ccm", "table2")).unwrap();
    let fig = figure(table2, &rows, &[]);
    let Some(Panel::Bars(bars)) = fig.panels.last() else {
        panic!("bars")
    };
    assert_eq!(bars.y_label, format!("speedup over {BEST_CPU} (x)"));
    let groups: Vec<&str> = bars.groups.iter().map(|g| g.0.as_str()).collect();
    assert_eq!(groups, ["time", "Zipf time"]);
    assert!(bars
        .groups
        .iter()
        .all(|g| g.1.len() == 1 && g.1[0].mean == 2.0));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn emulator_series_have_a_panel_of_their_own_and_never_enter_a_speedup_panel() {
    let exps = fixture_experiments();
    let fig8 = exps.iter().find(|e| e.id == "fig8").unwrap();
    let mut rows = Vec::new();
    for x in [250.0, 1000.0] {
        rows.push(fixture_row("ccm", "fig8", "sff", x, 1.0));
        rows.push(fixture_row("ccm", "fig8", "sff all cores", x, 0.5));
        rows.push(fixture_row("ccm", "fig8", BEST_CPU, x, 0.4));
        rows.push(fixture_row("ccm", "fig8", "gpu", x, 0.01));
        for emu in ["emu", "emu batched", "emu index"] {
            rows.push(fixture_row("ccm", "fig8", emu, x, 100.0));
        }
    }
    let fig = figure(fig8, &rows, &[]);
    let mut speedup_panels = 0;
    for p in &fig.panels {
        let Panel::Lines(p) = p else { panic!("lines") };
        let names: Vec<&str> = p.lines.iter().map(|l| l.series.as_str()).collect();
        if p.y_label.contains("speedup") {
            speedup_panels += 1;
            assert!(
                names.iter().all(|n| !n.starts_with("emu")),
                "{}: {names:?}",
                p.y_label
            );
            assert!(names.contains(&"gpu"), "{}: {names:?}", p.y_label);
        } else if p.y_label.starts_with("host emulator") {
            assert_eq!(names, ["emu", "emu batched", "emu index"]);
        } else {
            assert!(names.iter().all(|n| !n.starts_with("emu")), "{names:?}");
        }
    }
    assert_eq!(speedup_panels, 2, "over sff and over the best CPU");
    // A CPU-only run: the emulator alone draws no speedup panel over the best CPU.
    let rows: Vec<Row> = rows.into_iter().filter(|r| r.series != "gpu").collect();
    let fig = figure(fig8, &rows, &[]);
    let labels: Vec<String> = fig
        .panels
        .iter()
        .map(|p| match p {
            Panel::Lines(p) => p.y_label.clone(),
            Panel::Bars(p) => p.y_label.clone(),
        })
        .collect();
    assert!(!labels.iter().any(|l| l.contains(BEST_CPU)), "{labels:?}");
    // The table layout: no emulator bar over the best CPU.
    let table2 = exps.iter().find(|e| e.id == "table2").unwrap();
    let rows = vec![
        fixture_row("ccm", "table2", "sff", 1.0, 1.0),
        fixture_row("ccm", "table2", BEST_CPU, 1.0, 0.5),
        fixture_row("ccm", "table2", "emu index", 1.0, 90.0),
    ];
    let fig = figure(table2, &rows, &[]);
    assert!(fig.panels.iter().all(|p| match p {
        Panel::Bars(b) => !b.y_label.contains("speedup"),
        Panel::Lines(_) => true,
    }));
}

fn experiment(paper: &str, id: &str) -> Experiment {
    crate::runner::all_experiments()
        .into_iter()
        .find(|e| e.paper.name() == paper && e.id == id)
        .expect("a known experiment")
}

/// Rows of a run without a GPU: device `none`, quick sizes.
fn no_gpu(mut rows: Vec<Row>) -> Vec<Row> {
    for r in &mut rows {
        r.device = "none".into();
        r.sizes = crate::results::QUICK.into();
    }
    rows
}

fn panel_labels(fig: &Figure) -> Vec<String> {
    fig.panels
        .iter()
        .map(|p| match p {
            Panel::Lines(p) => p.y_label.clone(),
            Panel::Bars(p) => p.y_label.clone(),
        })
        .collect()
}

#[test]
fn a_run_without_a_gpu_says_so_under_the_title_and_a_gpu_run_does_not() {
    let exp = experiment("ddm", "fig5_7");
    let rows = vec![
        fixture_row("ddm", "fig5_7", "brute", 48.0, 1.0),
        fixture_row("ddm", "fig5_7", "emu-region", 48.0, 50.0),
    ];
    let fig = figure(&exp, &no_gpu(rows.clone()), &[]);
    let note = &fig.notes[0];
    assert!(
        note.starts_with("Run without a GPU at quick sizes"),
        "{note}"
    );
    assert!(note.contains("correctness runs, not speeds"), "{note}");
    let fig = figure(&exp, &rows, &[]);
    assert!(fig.notes.is_empty(), "{:?}", fig.notes);
}

#[test]
fn paper_numbers_beyond_the_measured_x_are_notes_not_points_at_the_edge_of_the_axis() {
    // Quick sizes (48, 96 regions) against the paper's 150-200x at 32768.
    let exp = experiment("ddm", "fig5_7");
    let paper = crate::results::read_papers(Path::new("/nonexistent"), "ddm").unwrap();
    let mut rows = Vec::new();
    for x in [48.0, 96.0] {
        rows.push(fixture_row("ddm", "fig5_7", "brute", x, x / 10.0));
        rows.push(fixture_row("ddm", "fig5_7", "sort", x, x / 100.0));
        rows.push(fixture_row("ddm", "fig5_7", "emu-region", x, 50.0));
        rows.push(fixture_row("ddm", "fig5_7", "emu-grid", x, 60.0));
    }
    let fig = figure(&exp, &no_gpu(rows), &paper);
    assert_eq!(fig.paper_marks().count(), 0, "no point drawn off the axes");
    assert!(
        fig.notes
            .iter()
            .any(|n| n
                == "paper (gpu-region vs brute, gpu-grid vs brute): 150-200x at 32768 regions"),
        "{:?}",
        fig.notes
    );
    // At the paper's sizes the same numbers are points on the speedup panel.
    let mut rows = Vec::new();
    for x in [16384.0, 32768.0] {
        rows.push(fixture_row("ddm", "fig5_7", "brute", x, x / 10.0));
        rows.push(fixture_row("ddm", "fig5_7", "gpu-region", x, 1.0));
        rows.push(fixture_row("ddm", "fig5_7", "gpu-grid", x, 1.0));
    }
    let fig = figure(&exp, &rows, &paper);
    let on_speedup: Vec<f64> = fig
        .panels
        .iter()
        .filter_map(|p| match p {
            Panel::Lines(l) if l.y_label.starts_with("speedup over brute") => Some(l),
            _ => None,
        })
        .flat_map(|l| l.paper.iter().filter_map(|m| m.y))
        .collect();
    assert!(
        on_speedup.contains(&200.0) && on_speedup.contains(&150.0),
        "{on_speedup:?}"
    );
    assert!(
        !fig.notes.iter().any(|n| n.contains("32768")),
        "{:?}",
        fig.notes
    );
}

#[test]
fn emulator_times_are_drawn_apart_from_gpu_times_and_the_papers_gpu_numbers() {
    // A table (CCM Fig. 5) of emulator steps only: the paper's GPU numbers on one
    // panel, the emulator's times on one of their own, labelled as correctness runs.
    let exp = experiment("ccm", "fig5");
    let paper = crate::results::read_papers(Path::new("/nonexistent"), "ccm").unwrap();
    let rows = no_gpu(vec![
        fixture_row("ccm", "fig5", "emu copy in", 1.0, 0.003),
        fixture_row("ccm", "fig5", "emu kernel", 1.0, 12.0),
    ]);
    let fig = figure(&exp, &rows, &paper);
    for p in &fig.panels {
        let Panel::Bars(b) = p else { panic!("bars") };
        let emu = b
            .groups
            .iter()
            .flat_map(|g| g.1.iter())
            .any(|bar| bar.series.starts_with("emu"));
        let marks = b.groups.iter().any(|g| !g.2.is_empty());
        assert!(
            !(emu && marks),
            "{}: emulator bars beside paper marks",
            b.y_label
        );
        assert_eq!(emu, b.y_label.starts_with("host emulator"), "{}", b.y_label);
    }
    assert!(
        fig.paper_marks().count() > 0,
        "the paper's GPU numbers are drawn"
    );
    // Lines (CCM Fig. 8) with a GPU series and its emulator twin: never one panel.
    let exp = experiment("ccm", "fig8");
    let mut rows = Vec::new();
    for x in [250.0, 1000.0] {
        rows.push(fixture_row("ccm", "fig8", "sff", x, 1.0));
        rows.push(fixture_row("ccm", "fig8", "gpu", x, 0.01));
        rows.push(fixture_row("ccm", "fig8", "emu", x, 90.0));
    }
    let fig = figure(&exp, &rows, &[]);
    for p in &fig.panels {
        let Panel::Lines(l) = p else { panic!("lines") };
        let emu = l.lines.iter().any(|l| l.series.starts_with("emu"));
        let gpu = l.lines.iter().any(|l| l.series.starts_with("gpu"));
        assert!(!(emu && gpu), "{}", l.y_label);
    }
    assert!(panel_labels(&fig)
        .iter()
        .any(|l| l.starts_with("host emulator")));
    // A speedup experiment run on the emulator only: no panel, a note naming them.
    let exp = experiment("xml", "fig10a");
    let rows = no_gpu(vec![fixture_row(
        "xml",
        "fig10a",
        "emu vs yfilter",
        32.0,
        0.01,
    )]);
    let fig = figure(&exp, &rows, &[]);
    assert!(fig.panels.is_empty(), "{:?}", panel_labels(&fig));
    assert!(fig.legend.is_empty(), "{:?}", fig.legend);
    assert!(
        fig.notes.iter().any(|n| {
            n
            == "Emulator engines (emu) checked answers only; their speedups mean nothing and are not drawn."
        }),
        "{:?}",
        fig.notes
    );
    let dir = std::env::temp_dir().join(format!("harness-plot-empty-{}", std::process::id()));
    let (png, _) = write(&fig, &dir.join("fig10a.png")).unwrap();
    assert!(std::fs::metadata(png).unwrap().len() > 1_000);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_legend_of_many_series_with_second_factors_folds_into_engines_and_factors() {
    let mut series: Vec<String> = Vec::new();
    for l in ["L=5", "L=10", "L=15"] {
        for e in [
            "yfilter",
            "lazy-dfa",
            "lazy-dfa-mc",
            "gpu",
            "gpu-block",
            BEST_CPU,
        ] {
            series.push(format!("{e} {l}"));
        }
    }
    let folded = legend(&styles(&series));
    let labels: Vec<&str> = folded.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(
        labels,
        [
            "yfilter",
            "lazy-dfa",
            "lazy-dfa-mc",
            "gpu",
            "gpu-block",
            BEST_CPU,
            "L=5",
            "L=10",
            "L=15"
        ]
    );
    let dash = |name: &str| match &folded.iter().find(|(s, _)| s == name).unwrap().1 {
        Key::Factor(st) => st.dash,
        k => panic!("{k:?}"),
    };
    assert_eq!(
        [dash("L=5"), dash("L=10"), dash("L=15")],
        [Dash::Solid, Dash::Dashed, Dash::Dotted]
    );
    // A few series stay one entry each.
    let few: Vec<String> = series[..6].to_vec();
    assert!(legend(&styles(&few))
        .iter()
        .all(|(_, k)| matches!(k, Key::Series(_))));
    // The best CPU lies under the others (a halo), so that the engine it equals shows.
    let st = styles(&series);
    assert!(st.iter().all(|(s, st)| st.halo == s.starts_with(BEST_CPU)));
}

#[test]
fn new_engines_of_one_figure_get_colours_apart_and_a_unit_word_is_no_factor() {
    let mut series: Vec<String> = Vec::new();
    for e in [
        "gpu multi sweep count",
        "gpu multi sweep pairs",
        "gpu multi bisect count",
    ] {
        for f in ["regions=1M", "regions=4M"] {
            for u in ["matchings/s", "speedup"] {
                series.push(format!("{e} {f} {u}"));
            }
        }
    }
    let more: Vec<String> = (0..10).map(|i| format!("new-engine-{i}")).collect();
    series.extend(more.iter().cloned());
    let st = styles(&series);
    let color = |e: &str| st.iter().find(|(s, _)| s.starts_with(e)).unwrap().1.color;
    let mut engines: Vec<&str> = vec![
        "gpu multi sweep count",
        "gpu multi sweep pairs",
        "gpu multi bisect count",
    ];
    engines.extend(more.iter().map(String::as_str));
    for (i, a) in engines.iter().enumerate() {
        for b in &engines[i + 1..] {
            assert_ne!(color(a), color(b), "{a} and {b}");
        }
    }
    // One dash per region count, on the rates' panel and the speedups' alike.
    assert_eq!(
        factor("gpu multi sweep count regions=4M speedup"),
        "regions=4M"
    );
    let dash = |s: &str| st.iter().find(|(n, _)| n == s).unwrap().1.dash;
    assert_eq!(
        dash("gpu multi sweep count regions=4M speedup"),
        dash("gpu multi sweep count regions=4M matchings/s")
    );
    assert_ne!(
        dash("gpu multi sweep count regions=4M speedup"),
        dash("gpu multi sweep count regions=1M speedup")
    );
}

#[test]
fn a_scaling_run_without_a_gpu_draws_the_emulators_rates_on_their_own_panel() {
    // Without a GPU the scaling experiments record emulated rates and no speedup over one
    // GPU: the rates are drawn (labelled as a correctness run), not dropped as speedups.
    let exp = experiment("ccm", "scaling");
    let rows = no_gpu(
        [1.0, 2.0]
            .iter()
            .map(|k| {
                fixture_row(
                    "ccm",
                    "scaling",
                    "emu multi model=table2 F=200 events/s",
                    *k,
                    20.0,
                )
            })
            .collect(),
    );
    let fig = figure(&exp, &rows, &[]);
    let labels = panel_labels(&fig);
    assert_eq!(labels.len(), 1, "{labels:?}");
    assert!(
        labels[0].starts_with("host emulator") && labels[0].ends_with("events/s"),
        "{labels:?}"
    );
}

#[test]
fn the_whiskers_caption_is_true_to_the_seeds_run() {
    assert_eq!(seeds_caption((3, 3)).0, "min-max over 3 seeds");
    assert_eq!(seeds_caption((1, 1)).0, "one seed: no min-max");
    assert_eq!(seeds_caption((2, 5)).0, "min-max over 2-5 seeds");
    let exp = experiment("ccm", "fig8");
    let mut one = fixture_row("ccm", "fig8", "sff", 250.0, 1.0);
    one.n = 1;
    let fig = figure(&exp, &[one], &[]);
    assert_eq!(fig.seeds, (1, 1));
    let rows = legend_rows(&fig);
    assert!(rows.iter().any(|(l, _)| l == "one seed: no min-max"));
    assert!(!rows.iter().any(|(l, _)| l.contains("min-max over")));
}

#[test]
fn labels_go_to_the_first_free_place() {
    let mut taken = Taken::default();
    assert_eq!(taken.place(50, 10, &[(0, 0), (0, 20)]), (0, 0));
    assert_eq!(taken.place(50, 10, &[(10, 5), (10, 20)]), (10, 20));
    assert_eq!(taken.place(50, 10, &[(100, 0)]), (100, 0));
}

#[test]
fn dashes_cut_a_polyline_into_pieces_and_solid_keeps_it_whole() {
    let line = [(0, 0), (100, 0)];
    assert_eq!(dash_pieces(&line, Dash::Solid).len(), 1);
    let d = dash_pieces(&line, Dash::Dashed);
    assert!(d.len() >= 5, "{d:?}");
    assert!(d.iter().all(|p| p.len() >= 2));
}
