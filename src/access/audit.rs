//! The record of every control: each state-changing request — a page's, the
//! command line's, a REST client's — is one line of the campaign's audit log
//! (`.runboard/audit.jsonl`, append-only, readable by its user alone): when,
//! which operation with which arguments, who (a token's name, the command
//! line's user), from where, and how it was answered. A refused request is a
//! line too. This module holds the line and the page of lines a reader asks
//! for; writing them is the server's (`server::access::audit`).

use serde::{Deserialize, Serialize};

use crate::runview::trials::BadQuery;
use crate::Timestamp;

/// The audit log, relative to the campaign root.
pub const AUDIT_FILE: &str = ".runboard/audit.jsonl";
/// The longest request body kept in a line; a longer one is cut (and says so).
pub const ARGS_KEPT: usize = 4096;
/// Lines a page lists by default, and at most.
pub const DEFAULT_AUDIT_LINES: usize = 100;
pub const MAX_AUDIT_LINES: usize = 1000;

/// Where a control came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Surface {
    /// The REST API (`/api/…`), or a request no operation answers.
    Rest,
    /// A page of the console (its server functions, `/sfn/…`).
    Page,
    /// The `runboard` command line.
    Cli,
}

impl Surface {
    pub const fn word(self) -> &'static str {
        match self {
            Self::Rest => "rest",
            Self::Page => "page",
            Self::Cli => "cli",
        }
    }
}

crate::display_as_word!(Surface);

/// One control, as the audit log keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    #[serde(with = "crate::basics::timefmt::rfc3339")]
    pub at: Timestamp,
    /// The operation (`stop`, `auto_mode`, …); `POST /path` for a request
    /// no operation answers.
    pub op: String,
    /// Its input: the body as sent (cut past [`ARGS_KEPT`] bytes) with the
    /// path's parameters (`{"mode": "on"}` for `POST /api/auto/on`).
    pub args: serde_json::Value,
    /// Who: a token's name (`console` for the console token), `cli:<user>`,
    /// `anyone (no token asked)` for a server started with `--no-token`, or
    /// `no valid token` for a request refused for want of one.
    pub by: String,
    /// From: the client's address, or `cli`.
    pub from: String,
    pub surface: Surface,
    /// The answer's HTTP status (the command line's: what REST would answer).
    pub status: u16,
    /// `ok`, or the refusal's words.
    pub answer: String,
}

impl AuditEntry {
    /// The arguments as one line of JSON; empty when there are none.
    pub fn args_words(&self) -> String {
        match &self.args {
            serde_json::Value::Object(m) if m.is_empty() => String::new(),
            serde_json::Value::Null => String::new(),
            v => v.to_string(),
        }
    }

    /// The line in words, for a terminal.
    pub fn words(&self) -> String {
        let args = self.args_words();
        let args = if args.is_empty() { args } else { format!(" {args}") };
        format!(
            "{} {}{args} by {} from {} ({}): {} {}",
            self.at.to_display(),
            self.op,
            self.by,
            self.from,
            self.surface,
            self.status,
            self.answer
        )
    }
}

/// `GET /api/audit?since=&offset=&limit=`, `runboard audit [--since …]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct AuditQuery {
    /// Only controls at or after this: a UTC day (`2026-12-06`) or an
    /// RFC 3339 time.
    #[serde(default)]
    #[cfg_attr(feature = "cli", arg(long))]
    pub since: Option<String>,
    /// Lines skipped, newest first (default 0).
    #[serde(default)]
    #[cfg_attr(feature = "cli", arg(long))]
    pub offset: Option<usize>,
    /// How many lines: 1–1,000 (default 100).
    #[serde(default)]
    #[cfg_attr(feature = "cli", arg(long))]
    pub limit: Option<usize>,
}

/// An [`AuditQuery`], read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditAsk {
    pub since: Option<Timestamp>,
    pub offset: usize,
    pub limit: usize,
}

impl AuditQuery {
    pub fn parse(&self) -> Result<AuditAsk, BadQuery> {
        use crate::runview::trials::value::{bad, given};
        let since = match given(&self.since).map(str::trim).filter(|s| !s.is_empty()) {
            None => None,
            Some(s) => {
                let day = (s.len() == 10).then(|| Timestamp::parse_rfc3339(&format!("{s}T00:00:00Z"))).flatten();
                Some(
                    day.or_else(|| Timestamp::parse_rfc3339(s))
                        .ok_or_else(|| bad("since", s, "not a day (YYYY-MM-DD) or an RFC 3339 time"))?,
                )
            }
        };
        let limit = self.limit.unwrap_or(DEFAULT_AUDIT_LINES);
        if !(1..=MAX_AUDIT_LINES).contains(&limit) {
            return Err(bad("limit", &limit.to_string(), &format!("must be between 1 and {MAX_AUDIT_LINES}")));
        }
        Ok(AuditAsk { since, offset: self.offset.unwrap_or(0), limit })
    }
}

/// A page of the audit log, newest first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AuditPage {
    /// Lines matching (`since`), of which `entries` from `offset`.
    pub total: usize,
    pub offset: usize,
    pub entries: Vec<AuditEntry>,
    /// Lines that could not be read (a line cut by a crash is skipped).
    pub unreadable: usize,
}

/// The page `ask` wants of the lines of an audit log, in file order.
pub fn page(lines: &[&[u8]], ask: &AuditAsk) -> AuditPage {
    let mut unreadable = 0;
    let mut kept: Vec<AuditEntry> = Vec::new();
    for line in lines.iter().filter(|l| !l.iter().all(u8::is_ascii_whitespace)) {
        match serde_json::from_slice::<AuditEntry>(line) {
            Ok(e) if ask.since.is_none_or(|s| e.at >= s) => kept.push(e),
            Ok(_) => {}
            Err(_) => unreadable += 1,
        }
    }
    let total = kept.len();
    let entries = kept.into_iter().rev().skip(ask.offset).take(ask.limit).collect();
    AuditPage { total, offset: ask.offset, entries, unreadable }
}

/// A request body as an entry's arguments: its JSON (a page's server
/// function sends `{"input": …}`: the input), else its text; cut past
/// [`ARGS_KEPT`] bytes.
pub fn args_of(body: &[u8], page: bool) -> serde_json::Value {
    if body.len() > ARGS_KEPT {
        let cut = String::from_utf8_lossy(&body[..ARGS_KEPT]).into_owned();
        return serde_json::json!({ "cut": format!("{} bytes, the first {ARGS_KEPT} kept", body.len()), "body": cut });
    }
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(serde_json::Value::Object(mut m)) if page && m.contains_key("input") => {
            m.remove("input").unwrap_or_default()
        }
        Ok(v) => v,
        Err(_) if body.is_empty() => serde_json::json!({}),
        Err(_) => serde_json::Value::String(String::from_utf8_lossy(body).into_owned()),
    }
}

/// The `{parameters}` of an operation's path template as `path` gives them
/// (`/api/auto/{mode}` and `/api/auto/on` → `mode: on`); none when the path
/// is not the template's.
pub fn path_params(template: &str, path: &str) -> Option<serde_json::Map<String, serde_json::Value>> {
    let (t, p): (Vec<&str>, Vec<&str>) = (template.split('/').collect(), path.split('/').collect());
    if t.len() != p.len() {
        return None;
    }
    let mut out = serde_json::Map::new();
    for (t, p) in t.iter().zip(&p) {
        match t.strip_prefix('{').and_then(|n| n.strip_suffix('}')) {
            Some(name) => {
                out.insert(name.to_owned(), serde_json::Value::String((*p).to_owned()));
            }
            None if t == p => {}
            None => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(at: i64, op: &str) -> String {
        let e = AuditEntry {
            at: Timestamp(at),
            op: op.into(),
            args: serde_json::json!({}),
            by: "console".into(),
            from: "127.0.0.1:5000".into(),
            surface: Surface::Rest,
            status: 200,
            answer: "ok".into(),
        };
        serde_json::to_string(&e).unwrap()
    }

    #[test]
    fn a_page_is_newest_first_from_since_and_a_cut_line_is_counted() {
        let day = Timestamp::parse_rfc3339("2026-12-06T00:00:00Z").unwrap().0;
        let lines = [entry(day - 1, "pause"), entry(day, "stop"), entry(day + 5, "resume"), "{\"at\": \"2026".into()];
        let lines: Vec<&[u8]> = lines.iter().map(|l| l.as_bytes()).collect();
        let ask = AuditQuery { since: Some("2026-12-06".into()), ..Default::default() }.parse().unwrap();
        let p = page(&lines, &ask);
        let ops: Vec<&str> = p.entries.iter().map(|e| e.op.as_str()).collect();
        assert_eq!((ops, p.total, p.unreadable), (vec!["resume", "stop"], 2, 1));
        let all = page(&lines, &AuditQuery::default().parse().unwrap());
        assert_eq!(all.total, 3);
        let bad = AuditQuery { since: Some("yesterday".into()), ..Default::default() }.parse().unwrap_err();
        assert_eq!(bad.to_string(), "since=\"yesterday\": not a day (YYYY-MM-DD) or an RFC 3339 time");
        assert!(AuditQuery { limit: Some(0), ..Default::default() }.parse().is_err());
    }

    #[test]
    fn arguments_are_the_body_with_the_paths_parameters() {
        assert_eq!(args_of(br#"{"input": {"run_set": "r1"}}"#, true), serde_json::json!({"run_set": "r1"}));
        assert_eq!(args_of(br#"{"run_sets": ["r1"]}"#, false), serde_json::json!({"run_sets": ["r1"]}));
        assert_eq!(args_of(b"", false), serde_json::json!({}));
        assert_eq!(args_of(b"not json", false), serde_json::json!("not json"));
        let long = vec![b'x'; ARGS_KEPT + 10];
        assert!(args_of(&long, false)["cut"].as_str().unwrap().starts_with("4106 bytes"));
        let p = path_params("/api/auto/{mode}", "/api/auto/on").unwrap();
        assert_eq!(p["mode"], "on");
        assert!(path_params("/api/auto/{mode}", "/api/tags").is_none());
        assert_eq!(path_params("/api/tags", "/api/tags").unwrap().len(), 0);
    }
}
