//! Measurement notes: prose about recorded runs (why a target is missed, what a run's
//! time split showed), kept as data beside the CSVs they describe (`results/notes.toml`),
//! not in the code. `harness report` prints each note under its target's goal or in its
//! experiment's section, and says when a note was written for an older recording than
//! the CSV it explains.

use crate::results::{self, Row};
use anyhow::Context;
use serde::Deserialize;
use std::path::Path;

/// The notes file's name, inside the results directory.
pub const FILE: &str = "notes.toml";

/// One note.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Note {
    /// The target goals it explains (each a goal of `targets::TARGETS`, word for word).
    #[serde(default)]
    pub goals: Vec<String>,
    /// The experiments it describes (`paper/id`), shown in their sections.
    #[serde(default)]
    pub experiments: Vec<String>,
    /// The CSVs (`paper/id`) whose recording its figures come from.
    pub csv: Vec<String>,
    /// The date of that recording (`YYYY-MM-DD`).
    pub recorded: String,
    /// The note itself (Markdown, one paragraph).
    pub text: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NotesFile {
    #[serde(default)]
    note: Vec<Note>,
}

/// Every note of `<dir>/notes.toml`; none when the file is absent.
pub fn read(dir: &Path) -> anyhow::Result<Vec<Note>> {
    let path = dir.join(FILE);
    if !path.exists() {
        return Ok(Vec::new());
    }
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    parse(&text).with_context(|| format!("in {}", path.display()))
}

/// Parses the notes file's text.
pub fn parse(text: &str) -> anyhow::Result<Vec<Note>> {
    let file: NotesFile = toml::from_str(text)?;
    for n in &file.note {
        anyhow::ensure!(
            !n.goals.is_empty() || !n.experiments.is_empty(),
            "a note explains no goal and no experiment: {}",
            n.text.chars().take(60).collect::<String>()
        );
        anyhow::ensure!(
            is_date(&n.recorded),
            "`recorded = \"{}\"`: not a YYYY-MM-DD date",
            n.recorded
        );
    }
    Ok(file.note)
}

fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b.iter().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }
        })
}

impl Note {
    /// The latest recording date among the CSVs the note explains, if any is newer than
    /// the note's: `Some((csv, date))`.
    pub fn newer_csv(&self, dir: &Path) -> anyhow::Result<Option<(String, String)>> {
        let mut newest: Option<(String, String)> = None;
        for id in &self.csv {
            let Some((paper, exp)) = id.split_once('/') else {
                anyhow::bail!("note csv `{id}`: not `paper/experiment`");
            };
            let path = results::csv_path(dir, paper, exp);
            if !path.exists() {
                continue;
            }
            let rows: Vec<Row> = results::read_csv(&path)?;
            if let Some(d) = rows.iter().map(|r| r.date.as_str()).max() {
                if d > self.recorded.as_str() && newest.as_ref().is_none_or(|(_, n)| d > n.as_str())
                {
                    newest = Some((id.clone(), d.to_string()));
                }
            }
        }
        Ok(newest)
    }

    /// The note as one Markdown paragraph: its text, the recording it describes, and a
    /// warning when a CSV it explains was recorded since.
    pub fn markdown(&self, dir: &Path) -> anyhow::Result<String> {
        let mut md = format!(
            "{} *(note on the recording of {}",
            self.text.trim(),
            self.recorded
        );
        match self.newer_csv(dir)? {
            Some((csv, date)) => md.push_str(&format!(
                "; **older than its CSV**: `{csv}` was recorded {date}, so this note may no longer hold)*"
            )),
            None => md.push_str(")*"),
        }
        Ok(md)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_note_in_the_repository_names_a_goal_or_experiment_that_exists() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results");
        let notes = read(&dir).unwrap();
        assert!(
            !notes.is_empty(),
            "results/notes.toml holds the measurement notes"
        );
        let exps = crate::runner::all_experiments();
        let mut seen: Vec<&str> = Vec::new();
        for n in &notes {
            for g in &n.goals {
                assert!(
                    crate::targets::TARGETS.iter().any(|t| t.goal == g),
                    "a note for no goal: {g}"
                );
                assert!(!seen.contains(&g.as_str()), "two notes for one goal: {g}");
                seen.push(g);
            }
            for e in n.experiments.iter().chain(&n.csv) {
                assert!(
                    exps.iter()
                        .any(|x| format!("{}/{}", x.paper.name(), x.id) == *e),
                    "a note names no experiment: {e}"
                );
            }
        }
    }

    #[test]
    fn a_note_older_than_its_csv_says_so() {
        let dir = std::env::temp_dir().join(format!("harness-notes-{}", std::process::id()));
        std::fs::remove_dir_all(&dir).ok();
        let row = Row {
            paper: "ccm".into(),
            experiment: "fig6".into(),
            series: "gpu".into(),
            x: 1.0,
            date: "2026-11-27".into(),
            ..Row::default()
        };
        results::write_csv(&results::csv_path(&dir, "ccm", "fig6"), &[row]).unwrap();
        let notes = parse(
            "[[note]]\nexperiments = [\"ccm/fig6\"]\ncsv = [\"ccm/fig6\"]\nrecorded = \"2026-11-26\"\ntext = \"slow.\"\n\
             [[note]]\nexperiments = [\"ccm/fig6\"]\ncsv = [\"ccm/fig6\"]\nrecorded = \"2026-11-27\"\ntext = \"fast.\"\n",
        )
        .unwrap();
        let old = notes[0].markdown(&dir).unwrap();
        assert!(
            old.contains("older than its CSV") && old.contains("2026-11-27"),
            "{old}"
        );
        let current = notes[1].markdown(&dir).unwrap();
        assert!(!current.contains("older"), "{current}");
        assert!(parse("[[note]]\ncsv = []\nrecorded = \"2026-11-26\"\ntext = \"x\"\n").is_err());
        assert!(parse(
            "[[note]]\ngoals = [\"g\"]\ncsv = []\nrecorded = \"yesterday\"\ntext = \"x\"\n"
        )
        .is_err());
        std::fs::remove_dir_all(dir).ok();
    }
}
