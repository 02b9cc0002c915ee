//! Line-by-line comparison of two texts (memory versions), by longest common
//! subsequence. Memory files are small; past a size limit the comparison is
//! refused rather than made slow.

use serde::{Deserialize, Serialize};

/// The most lines either side may have for a comparison.
pub const MAX_LINES: usize = 4000;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", content = "line", rename_all = "snake_case")]
pub enum DiffLine {
    Same(String),
    Added(String),
    Removed(String),
}

/// The lines of `new` compared with `old`; `None` when either is too long.
pub fn diff_lines(old: &str, new: &str) -> Option<Vec<DiffLine>> {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    if a.len() > MAX_LINES || b.len() > MAX_LINES {
        return None;
    }
    // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::with_capacity(a.len().max(b.len()));
    while i < a.len() && j < b.len() {
        if a[i] == b[j] {
            out.push(DiffLine::Same(a[i].to_owned()));
            i += 1;
            j += 1;
        } else if lcs[i + 1][j] >= lcs[i][j + 1] {
            out.push(DiffLine::Removed(a[i].to_owned()));
            i += 1;
        } else {
            out.push(DiffLine::Added(b[j].to_owned()));
            j += 1;
        }
    }
    out.extend(a[i..].iter().map(|l| DiffLine::Removed((*l).to_owned())));
    out.extend(b[j..].iter().map(|l| DiffLine::Added((*l).to_owned())));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use DiffLine::*;

    #[test]
    fn changed_lines_are_removed_then_added() {
        let d = diff_lines("a\nb\nc\n", "a\nB\nc\nd\n").unwrap();
        assert_eq!(d, [Same("a".into()), Removed("b".into()), Added("B".into()), Same("c".into()), Added("d".into())]);
        assert_eq!(diff_lines("", "x").unwrap(), [Added("x".into())]);
        assert_eq!(diff_lines("x\n", "").unwrap(), [Removed("x".into())]);
    }

    #[test]
    fn huge_texts_are_not_compared() {
        let big = "x\n".repeat(MAX_LINES + 1);
        assert_eq!(diff_lines(&big, "x"), None);
    }
}
