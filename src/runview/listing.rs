//! The run list as one asks for it: filtered, sorted and a page at a time, on
//! the server, so a campaign of 10,000 runs answers its first page without
//! sending every row. `ListParams` is the query as a URL carries it (raw text);
//! [`ListParams::parse`] is its one parser.

use serde::{Deserialize, Serialize};

use super::summary::{RunList, RunRow, SkippedFolder};
use super::trials::BadQuery;
use crate::Timestamp;

/// The run statuses a list can be filtered by.
pub const STATUSES: [&str; 6] = ["starting", "running", "finished", "stopped", "interrupted", "unreadable"];

/// `?status=&q=&sort=&offset=&limit=`, every value raw text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListParams {
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub q: Option<String>,
    #[serde(default)]
    pub sort: Option<String>,
    #[serde(default)]
    pub offset: Option<String>,
    #[serde(default)]
    pub limit: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ListSort {
    /// Latest written first, then by path (the default).
    #[default]
    Latest,
    /// Oldest written first, then by path.
    Oldest,
    /// By path.
    Path,
}

/// A parsed list query.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListQuery {
    pub status: Option<String>,
    /// Case-insensitive text in the run's path, model or status in words.
    pub text: Option<String>,
    pub sort: ListSort,
    pub offset: usize,
    /// `None`: every matching run.
    pub limit: Option<usize>,
}

impl ListParams {
    pub fn parse(&self) -> Result<ListQuery, BadQuery> {
        use super::trials::value::{bad, given, whole};
        let status = match given(&self.status) {
            None => None,
            Some(s) if STATUSES.contains(&s) => Some(s.to_owned()),
            Some(s) => return Err(bad("status", s, &format!("not one of {}", STATUSES.join(", ")))),
        };
        let sort = match given(&self.sort) {
            None | Some("latest") => ListSort::Latest,
            Some("oldest") => ListSort::Oldest,
            Some("path") => ListSort::Path,
            Some(s) => return Err(bad("sort", s, "not one of latest, oldest, path")),
        };
        let limit = whole::<usize>("limit", &self.limit)?;
        if limit == Some(0) {
            return Err(bad("limit", "0", "must be at least 1"));
        }
        Ok(ListQuery {
            status,
            text: given(&self.q).map(str::to_lowercase),
            sort,
            offset: whole("offset", &self.offset)?.unwrap_or(0),
            limit,
        })
    }
}

/// One page of the run list: the list's own fields, plus how many runs there
/// are (`total`), how many the filters keep (`matching`), and where the page
/// starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunPage {
    pub runs: Vec<RunRow>,
    pub skipped: Vec<SkippedFolder>,
    pub version: String,
    pub generated_at: Timestamp,
    pub total: usize,
    pub matching: usize,
    pub offset: usize,
    /// The list's `from_cache`: set while the rows come from the list saved
    /// before the server started and a walk is checking them.
    #[serde(default)]
    pub from_cache: Option<Timestamp>,
}

impl ListQuery {
    fn keeps(&self, r: &RunRow) -> bool {
        self.status.as_deref().is_none_or(|s| r.status.label() == s)
            && self.text.as_deref().is_none_or(|q| {
                r.path.to_lowercase().contains(q)
                    || r.model.as_deref().is_some_and(|m| m.to_lowercase().contains(q))
                    || r.status_text.to_lowercase().contains(q)
            })
    }
}

/// The page `q` asks for of `list` (whose rows come latest written first),
/// made at `now`. Only the rows the filters keep are looked at past the
/// filter, and only the page's rows are copied.
pub fn page(list: &RunList, q: &ListQuery, now: Timestamp) -> RunPage {
    let total = list.runs.len();
    let mut rows: Vec<&RunRow> = list.runs.iter().filter(|r| q.keeps(r)).collect();
    match q.sort {
        ListSort::Latest => {}
        ListSort::Oldest => rows.sort_by(|a, b| a.last_written.cmp(&b.last_written).then_with(|| a.path.cmp(&b.path))),
        ListSort::Path => rows.sort_by(|a, b| a.path.cmp(&b.path)),
    }
    let matching = rows.len();
    let runs: Vec<RunRow> = rows.into_iter().skip(q.offset).take(q.limit.unwrap_or(usize::MAX)).cloned().collect();
    RunPage {
        runs,
        skipped: list.skipped.clone(),
        version: list.version.clone(),
        generated_at: now,
        total,
        matching,
        offset: q.offset,
        from_cache: list.from_cache,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runview::{ProcessCheck, RunStatus};

    fn row(path: &str, at: i64, status: RunStatus, model: &str) -> RunRow {
        RunRow {
            name: path.rsplit('/').next().unwrap().into(),
            path: path.into(),
            last_written: Some(Timestamp(at)),
            status_text: status.describe(),
            status,
            rounds_written: None,
            rounds_planned: None,
            phase: None,
            model: Some(model.into()),
            process: ProcessCheck::NotRecorded,
            version: "v".into(),
        }
    }

    #[test]
    fn filters_sort_and_pages_are_done_here_and_bad_values_named() {
        let list = RunList {
            runs: vec![
                row("b/r3", 30, RunStatus::Running, "qwen"),
                row("a/r2", 20, RunStatus::Finished { reason: None }, "llama"),
                row("a/r1", 10, RunStatus::Running, "qwen"),
            ],
            skipped: Vec::new(),
            version: "x".into(),
            generated_at: Timestamp(40),
            from_cache: None,
        };
        let q = |pairs: &[(&str, &str)]| {
            let mut p = ListParams::default();
            for (k, v) in pairs {
                let v = Some((*v).to_owned());
                match *k {
                    "status" => p.status = v,
                    "q" => p.q = v,
                    "sort" => p.sort = v,
                    "offset" => p.offset = v,
                    _ => p.limit = v,
                }
            }
            p.parse()
        };
        let paths = |p: RunPage| p.runs.into_iter().map(|r| r.path).collect::<Vec<_>>();
        assert_eq!(paths(page(&list, &q(&[]).unwrap(), Timestamp(50))), ["b/r3", "a/r2", "a/r1"]);
        let running = page(&list, &q(&[("status", "running"), ("limit", "1")]).unwrap(), Timestamp(50));
        assert_eq!((running.total, running.matching, running.runs.len()), (3, 2, 1));
        assert_eq!(running.generated_at, Timestamp(50), "a page is stamped when it is made, not when the list was");
        let finished = page(&list, &q(&[("status", "finished")]).unwrap(), Timestamp(50));
        assert_eq!(paths(finished), ["a/r2"], "finished is a filter of its own");
        assert_eq!(
            paths(page(&list, &q(&[("q", "QWEN"), ("sort", "oldest")]).unwrap(), Timestamp(50))),
            ["a/r1", "b/r3"]
        );
        assert_eq!(
            paths(page(&list, &q(&[("sort", "path"), ("offset", "1")]).unwrap(), Timestamp(50))),
            ["a/r2", "b/r3"]
        );
        assert_eq!(
            q(&[("status", "dead")]).unwrap_err().to_string(),
            "status=\"dead\": not one of starting, running, finished, stopped, interrupted, unreadable"
        );
        assert_eq!(q(&[("limit", "0")]).unwrap_err().to_string(), "limit=\"0\": must be at least 1");
        assert_eq!(q(&[("sort", "size")]).unwrap_err().to_string(), "sort=\"size\": not one of latest, oldest, path");
    }
}
