//! The matrix: every planned cell of a campaign, one row of `matrix.csv` each
//! (see `docs/formats.md`). A column per factor; the cell's id is derived from
//! its factors exactly as the driver derives it ([`crate::console::spec::cell_id`]), so a
//! run set's cell records match the matrix by id.
//!
//! Reading never fails as a whole: a row that cannot be a cell is reported
//! with its line and the reason, and the other rows are the matrix.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::console::spec::{cell_id, Cell};

/// The matrix's file name at the campaign root.
pub const MATRIX_FILE: &str = "matrix.csv";

/// The factors every matrix names (columns that must be present and filled).
pub const REQUIRED_FACTORS: [&str; 5] = ["condition", "task", "phase", "seed", "repetition"];

/// The optional column that repeats a row's cell id (checked, never trusted).
pub const ID_COLUMN: &str = "cell";

/// The planned cells, in file order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Matrix {
    /// The factor columns, in file order (`cell` excluded).
    pub factors: Vec<String>,
    pub cells: Vec<Cell>,
    /// Rows not taken, and why (`matrix.csv: line 7: seed is empty`).
    pub problems: Vec<String>,
}

impl Matrix {
    /// The distinct values each factor takes, in first-seen order.
    pub fn levels(&self) -> BTreeMap<String, Vec<Value>> {
        // A set of the values seen per factor, so a 100,000-row matrix with
        // hundreds of seeds is one pass, not a scan of the levels per row.
        let mut levels: BTreeMap<String, (Vec<Value>, std::collections::HashSet<Seen<'_>>)> = BTreeMap::new();
        for cell in &self.cells {
            for (k, v) in &cell.factors {
                let (order, seen) = match levels.get_mut(k) {
                    Some(l) => l,
                    None => levels.entry(k.clone()).or_default(),
                };
                if seen.insert(Seen::of(v)) {
                    order.push(v.clone());
                }
            }
        }
        levels.into_iter().map(|(k, (order, _))| (k, order)).collect()
    }
}

/// A factor value as a set key: equal keys for equal values, strings and
/// whole numbers without an allocation.
#[derive(PartialEq, Eq, Hash)]
enum Seen<'a> {
    Text(&'a str),
    Whole(i64),
    Other(String),
}

impl<'a> Seen<'a> {
    fn of(v: &'a Value) -> Self {
        match v {
            Value::String(s) => Seen::Text(s),
            Value::Number(n) => match n.as_i64() {
                Some(whole) => Seen::Whole(whole),
                None => Seen::Other(n.to_string()),
            },
            other => Seen::Other(other.to_string()),
        }
    }
}

/// Whether `v` reads as `text` (what [`value_text`] gives), without making
/// the text of a string value.
pub fn value_is(v: &Value, text: &str) -> bool {
    match v {
        Value::String(s) => s == text,
        other => text == value_text(other),
    }
}

/// A value as the matrix writes it: a whole number (`-?[0-9]+`, no leading
/// zero, fitting 64 bits) is a JSON number, anything else a string. The same
/// text therefore always gives the same cell id.
pub fn factor_value(text: &str) -> Value {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && text != "-0";
    match text.parse::<i64>() {
        Ok(n) if canonical => Value::from(n),
        _ => Value::String(text.to_owned()),
    }
}

/// A factor value as text (how pages and filters show and compare it).
pub fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Reads `matrix.csv`. A missing required column is one problem and no cells;
/// a bad row is a problem and is skipped.
pub fn parse(bytes: &[u8]) -> Matrix {
    let mut matrix = Matrix::default();
    let say = |line: u64, what: String| format!("{MATRIX_FILE}: line {line}: {what}");
    let mut reader = csv::ReaderBuilder::new().flexible(true).trim(csv::Trim::All).from_reader(bytes);
    let header: Vec<String> = match reader.headers() {
        Ok(h) => h.iter().map(str::to_owned).collect(),
        Err(e) => {
            matrix.problems.push(format!("{MATRIX_FILE}: the header cannot be read: {e}"));
            return matrix;
        }
    };
    if header.iter().all(String::is_empty) {
        matrix.problems.push(format!("{MATRIX_FILE}: empty (no header row)"));
        return matrix;
    }
    let mut seen_names = HashSet::new();
    for name in &header {
        if name.is_empty() || !seen_names.insert(name.as_str()) {
            matrix.problems.push(format!("{MATRIX_FILE}: line 1: column {name:?} is empty or named twice"));
            return matrix;
        }
    }
    let missing: Vec<&str> = REQUIRED_FACTORS.iter().copied().filter(|f| !header.iter().any(|h| h == f)).collect();
    if !missing.is_empty() {
        matrix.problems.push(format!("{MATRIX_FILE}: line 1: missing column(s) {}", missing.join(", ")));
        return matrix;
    }
    matrix.factors = header.iter().filter(|h| *h != ID_COLUMN).cloned().collect();
    let mut ids = HashSet::new();
    for record in reader.records() {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                let line = e.position().map_or(0, |p| p.line());
                matrix.problems.push(say(line, format!("cannot be read: {e}")));
                continue;
            }
        };
        let line = record.position().map_or(0, |p| p.line());
        if record.iter().all(str::is_empty) {
            continue; // a blank line
        }
        if record.len() != header.len() {
            matrix.problems.push(say(line, format!("{} values for {} columns", record.len(), header.len())));
            continue;
        }
        let mut factors = BTreeMap::new();
        let mut given_id = None;
        let mut empty_required = Vec::new();
        for (name, text) in header.iter().zip(record.iter()) {
            if name == ID_COLUMN {
                given_id = Some(text.to_owned()).filter(|t| !t.is_empty());
            } else if text.is_empty() {
                // An empty value in an optional column: that factor is absent
                // for this cell; in a required one, the row is not a cell.
                if REQUIRED_FACTORS.contains(&name.as_str()) {
                    empty_required.push(name.as_str());
                }
            } else {
                factors.insert(name.clone(), factor_value(text));
            }
        }
        if !empty_required.is_empty() {
            matrix.problems.push(say(line, format!("empty {}", empty_required.join(", "))));
            continue;
        }
        let id = cell_id(&factors);
        if let Some(given) = given_id.filter(|g| *g != id) {
            matrix.problems.push(say(line, format!("cell {given:?} does not match its factors (derived {id})")));
            continue;
        }
        if !ids.insert(id.clone()) {
            matrix.problems.push(say(line, format!("the same factors as an earlier row ({id}); skipped")));
            continue;
        }
        matrix.cells.push(Cell { id, factors });
    }
    matrix
}

/// Writes a matrix as `parse` reads it (the demo and tests make theirs so).
pub fn to_csv(factors: &[&str], rows: &[Vec<String>]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    // Writing to a Vec cannot fail.
    let _ = w.write_record(factors);
    for row in rows {
        let _ = w.write_record(row);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_become_cells_with_the_drivers_ids_and_bad_rows_are_named() {
        let text = "condition,task,phase,seed,repetition,model\n\
                    base,t1,warmup,1,0,qwen\n\
                    base,t1,main,1,0,\n\
                    base,t1,main,,0,qwen\n\
                    base,t1,warmup,1,0,qwen\n\
                    base,t1,main,1\n\
                    \n\
                    treat,t2,main,007,0,qwen\n";
        let m = parse(text.as_bytes());
        assert_eq!(m.factors, ["condition", "task", "phase", "seed", "repetition", "model"]);
        assert_eq!(m.cells.len(), 3, "{:?}", m.problems);
        assert_eq!(m.cells[0].factors["seed"], Value::from(1));
        assert!(!m.cells[1].factors.contains_key("model"), "an empty optional value is an absent factor");
        assert_eq!(m.cells[2].factors["seed"], Value::from("007"), "a leading zero keeps the text");
        assert_eq!(m.cells[0].id, cell_id(&m.cells[0].factors));
        assert_eq!(
            m.problems,
            [
                "matrix.csv: line 4: empty seed",
                &format!("matrix.csv: line 5: the same factors as an earlier row ({}); skipped", m.cells[0].id),
                "matrix.csv: line 6: 4 values for 6 columns",
            ]
        );
    }

    #[test]
    fn a_missing_column_or_a_wrong_id_is_refused() {
        let m = parse(b"condition,task,seed\nbase,t1,1\n");
        assert!(m.cells.is_empty());
        assert_eq!(m.problems, ["matrix.csv: line 1: missing column(s) phase, repetition"]);
        let m = parse(b"cell,condition,task,phase,seed,repetition\nc-000000000000,a,t,p,1,0\n");
        assert!(m.cells.is_empty());
        assert!(m.problems[0].contains("does not match its factors"), "{:?}", m.problems);
        assert_eq!(parse(b"").problems, ["matrix.csv: empty (no header row)"]);
    }

    #[test]
    fn whole_numbers_are_numbers_only_when_written_canonically() {
        assert_eq!(factor_value("12"), Value::from(12));
        assert_eq!(factor_value("-3"), Value::from(-3));
        for text in ["012", "-0", "1.5", "1e3", "", "x", "99999999999999999999"] {
            assert!(factor_value(text).is_string(), "{text}");
        }
    }

    #[test]
    fn what_to_csv_writes_parse_reads() {
        let text = to_csv(
            &["condition", "task", "phase", "seed", "repetition"],
            &[vec!["a,b".into(), "t".into(), "p".into(), "1".into(), "0".into()]],
        );
        let m = parse(text.as_bytes());
        assert_eq!(m.cells[0].factors["condition"], Value::from("a,b"));
    }
}
