//! Reads `tests/conformance/cases.txt` (its header describes the format) for the Rust drivers:
//! `core/tests/host_conformance.rs` and `cli/tests/cli_conformance.rs`.

use std::path::Path;

/// One case of the table.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    /// `(key, value)` in order; `{dir}` not yet replaced.
    pub set: Vec<(String, String)>,
    /// `(action, expect)` in order.
    pub steps: Vec<(String, String)>,
    /// Texts no error of the case may show.
    pub hidden: Vec<String>,
}

impl Case {
    /// A failure for each of the case's hidden texts that `shown` (what the language showed) contains.
    pub fn leaks(&self, what: &str, shown: &str) -> Vec<String> {
        self.hidden
            .iter()
            .filter(|h| shown.contains(h.as_str()))
            .map(|h| format!("{}: {what} shows {h:?}: {shown}", self.name))
            .collect()
    }
}

/// Every case of the table at `path`; panics (naming the line) on a line it cannot read.
pub fn read(path: &Path) -> Vec<Case> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut cases: Vec<Case> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let at = || format!("{}:{}: {line:?}", path.display(), n + 1);
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (word, rest) = line
            .split_once(' ')
            .unwrap_or_else(|| panic!("{}: no value", at()));
        if word == "case" {
            cases.push(Case {
                name: rest.to_owned(),
                set: Vec::new(),
                steps: Vec::new(),
                hidden: Vec::new(),
            });
            continue;
        }
        let case = cases
            .last_mut()
            .unwrap_or_else(|| panic!("{}: before the first case", at()));
        match word {
            "set" => {
                let (key, value) = rest
                    .split_once(' ')
                    .unwrap_or_else(|| panic!("{}: no value", at()));
                case.set.push((key.to_owned(), value.to_owned()));
            }
            "hidden" => case.hidden.push(rest.to_owned()),
            "start" | "next_id" | "slot" | "shutdown" | "fork_next_id" => {
                case.steps.push((word.to_owned(), rest.to_owned()))
            }
            other => panic!("{}: unknown directive {other:?}", at()),
        }
    }
    for c in &cases {
        assert_eq!(
            c.steps.first().map(|s| s.0.as_str()),
            Some("start"),
            "case {}: the first step must be `start`",
            c.name
        );
    }
    cases
}
