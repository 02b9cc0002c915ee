//! A batch's logs as a reader sees them, while other programs write them:
//! which logs a run set has, and the next chunk of one from where the reader
//! stands — appended bytes only, never the whole file.
//!
//! A process's log is `logs/<name>.log` in its run set, rotated by the
//! driver to `logs/<name>.log.1` at a cap (see `docs/formats.md`, *Process
//! logs*). A reader's place is a [`Position`]: the file (device and inode) and
//! the byte offset in it, handed to the client as an opaque token and given
//! back to read on. Because the file is named by identity, not by path, a
//! rotation is seen (the path now names another file) and the rest of the
//! old file is still read from `.1`: nothing between two reads is lost
//! unless the log was rotated twice in between, and then the chunk says so.
//!
//! Everything here is a decision over what the adapter found on disk
//! ([`Found`]); the adapter reads the bytes [`plan`] names.

use serde::{Deserialize, Serialize};

/// The most a chunk carries: a reader far behind catches up a chunk at a time.
pub const CHUNK_MAX: u64 = 64 * 1024;
/// Where a reader with no position starts: the last 16 KiB, from a line's start.
pub const TAIL_BYTES: u64 = 16 * 1024;

/// A file, by what the filesystem calls it: device, inode, and when it was
/// made. An inode number is reused once its file is deleted — a log rotated
/// twice may come back under the number its first part had — so the birth
/// time tells that new file from the old one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
    /// Its birth time, nanoseconds since the epoch (0: the filesystem does
    /// not say, and files are told apart by device and inode alone).
    pub born: u64,
}

/// Where a reader stands: a file and the offset of the next byte to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub file: FileId,
    pub offset: u64,
}

impl Position {
    /// The token a client gives back: `<dev>.<ino>.<born>.<offset>`, decimal.
    pub fn token(&self) -> String {
        format!("{}.{}.{}.{}", self.file.dev, self.file.ino, self.file.born, self.offset)
    }

    /// A token read back; `None` when it is not one.
    pub fn parse(token: &str) -> Option<Position> {
        let mut parts = token.trim().split('.').map(|p| p.parse::<u64>().ok());
        let (dev, ino, born, offset) = (parts.next()??, parts.next()??, parts.next()??, parts.next()??);
        parts.next().is_none().then_some(Position { file: FileId { dev, ino, born }, offset })
    }
}

/// What is on disk now: the log and its rotated part, each with its size.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Found {
    pub current: Option<(FileId, u64)>,
    pub rotated: Option<(FileId, u64)>,
}

/// Which file a read is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// `<name>.log`
    Current,
    /// `<name>.log.1`
    Rotated,
}

/// The next read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Neither file is there (yet).
    NoLog,
    /// Read `[start, end)` of `part`. `earlier`: output before `start` is
    /// not sent (a tail, or a reset); `from_line`: drop the bytes up to the
    /// first line end (the start fell inside a line); `reset`: why the
    /// reader's position could not be followed; `then`: where the reader
    /// stands after these bytes when they end the part (the rotated part
    /// read to its end continues at the start of the current one).
    Read { part: Part, file: FileId, start: u64, end: u64, earlier: bool, from_line: bool, reset: Option<String> },
}

/// The next chunk for a reader at `after` (none: a new reader, who gets the
/// tail).
pub fn plan(found: &Found, after: Option<Position>) -> Plan {
    let tail = |reset: Option<String>| match found.current.or(found.rotated) {
        None => Plan::NoLog,
        Some((file, size)) => {
            let start = size.saturating_sub(TAIL_BYTES);
            Plan::Read {
                part: if found.current.is_some() { Part::Current } else { Part::Rotated },
                file,
                start,
                end: size.min(start + CHUNK_MAX),
                earlier: start > 0 || reset.is_some(),
                from_line: start > 0,
                reset,
            }
        }
    };
    let Some(at) = after else { return tail(None) };
    let read = |part, file, start: u64, size: u64, reset: Option<String>| Plan::Read {
        part,
        file,
        start,
        end: size.min(start + CHUNK_MAX),
        earlier: reset.is_some(),
        from_line: false,
        reset,
    };
    match (found.current, found.rotated) {
        (Some((file, size)), _) if file == at.file => {
            if at.offset <= size {
                read(Part::Current, file, at.offset, size, None)
            } else {
                read(Part::Current, file, 0, size, Some("the log was cut short (truncated): it is read from its start".into()))
            }
        }
        (_, Some((file, size))) if file == at.file && at.offset < size => {
            read(Part::Rotated, file, at.offset, size, None)
        }
        // The rotated part was read to its end: the current one follows it.
        (Some((file, size)), Some((old, old_size))) if old == at.file && at.offset >= old_size => {
            read(Part::Current, file, 0, size, None)
        }
        (None, Some((file, size))) if file == at.file => read(Part::Rotated, file, at.offset.min(size), size, None),
        (None, None) => Plan::NoLog,
        _ => tail(Some(
            "the log was rotated more than once since this position (or replaced): what came between is not kept; read on from its newest part".into(),
        )),
    }
}

/// Where the reader stands after a read of `[start, start + taken)` of
/// `file` (taken: the bytes used, see [`usable`]).
pub fn after_read(found: &Found, part: Part, file: FileId, start: u64, taken: u64) -> Position {
    let offset = start + taken;
    match (part, found.rotated, found.current) {
        // The rotated part is done: go straight on into the current one.
        (Part::Rotated, Some((old, size)), Some((cur, _))) if old == file && offset >= size => {
            Position { file: cur, offset: 0 }
        }
        _ => Position { file, offset },
    }
}

/// How many of `bytes` a chunk sends, and from where: from the first line's
/// start when `from_line` (unless no line ends in them), and up to the last
/// complete UTF-8 character (the rest is read with the next chunk). Returns
/// `(skip, take)`: the text is `bytes[skip..take]`.
pub fn usable(bytes: &[u8], from_line: bool) -> (usize, usize) {
    let skip = if from_line { bytes.iter().position(|&b| b == b'\n').map_or(0, |i| i + 1) } else { 0 };
    let mut take = bytes.len();
    // An unfinished multi-byte character at the end waits for the next chunk:
    // find the last lead byte among the last three and see if it is whole.
    let lead =
        (bytes.len().saturating_sub(3).max(skip)..bytes.len()).rev().find(|&i| bytes[i] & 0b1100_0000 != 0b1000_0000);
    if let Some(i) = lead {
        let need = match bytes[i] {
            0xc0..=0xdf => 2,
            0xe0..=0xef => 3,
            0xf0..=0xf7 => 4,
            _ => 1,
        };
        if i + need > bytes.len() {
            take = i;
        }
    }
    (skip, take.max(skip))
}

/// Where a log's previous part goes when it is rotated: `<name>.log.1` beside
/// `<name>.log` (the driver writes it, the reader reads it).
pub fn rotated_path(log: &std::path::Path) -> std::path::PathBuf {
    let mut p = log.as_os_str().to_owned();
    p.push(".1");
    p.into()
}

/// A log's name as the API takes it: a process's (`cell-c-…`, `manager`,
/// `room-0`, `player`: its file is `logs/<name>.log`) or a unit's
/// (`unit:<unit>`). `None` when it is neither.
pub fn parse_name(name: &str) -> Option<LogName> {
    match name.strip_prefix("unit:") {
        Some(unit) => plain_name(unit).then(|| LogName::Unit(unit.to_owned())),
        None => plain_name(name).then(|| LogName::Process(name.to_owned())),
    }
}

/// A name that is no path: letters, digits, `-`, `_`, `.`, not starting with
/// `.`, at most 160 bytes — a process's, a unit's, a cell id as the driver
/// makes them (a log's name, a path part of the batch gateway).
pub fn plain_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 160
        && !s.starts_with('.')
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Which log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogName {
    Process(String),
    Unit(String),
}

/// `GET /api/logs/{run_set}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogsQuery {
    pub run_set: String,
}

/// `GET /api/logs/{run_set}/{name}?after=`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogQuery {
    pub run_set: String,
    pub name: String,
    /// The `next` of the chunk read before; none: the log's tail.
    #[serde(default)]
    pub after: Option<String>,
}

/// A run set's logs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LogsView {
    pub run_set: String,
    pub logs: Vec<LogEntry>,
}

/// Whose log it is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogKind {
    /// A cell's or a cluster process's (`logs/<name>.log` in the run set).
    #[default]
    Process,
    /// The driving unit's own (its log file, or systemd's journal).
    Unit,
}

impl LogKind {
    pub const fn word(self) -> &'static str {
        match self {
            Self::Process => "process",
            Self::Unit => "unit",
        }
    }
}

crate::display_as_word!(LogKind);

/// One log a run set has.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LogEntry {
    /// What to ask for (`cell-c-…`, `manager`, `unit:<unit>`).
    pub name: String,
    pub kind: LogKind,
    /// Where it is: `logs/<name>.log` in the run set, `.runboard/units/<unit>.log`,
    /// or `journal` (a systemd unit's).
    pub source: String,
    /// Its size in bytes (none for the journal).
    pub bytes: Option<u64>,
    /// The size of its rotated part (`.log.1`), when there is one.
    pub rotated_bytes: Option<u64>,
    /// When it was last written (RFC 3339, UTC).
    pub modified: Option<String>,
}

/// The next chunk of a log.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LogChunk {
    pub run_set: String,
    pub name: String,
    /// The file the text is from (relative to the campaign root), or `journal`.
    pub source: String,
    /// The bytes, as UTF-8 (invalid bytes as U+FFFD); may end inside a line.
    pub text: String,
    /// Give this back as `after` to read on (opaque).
    pub next: String,
    /// Output before `text` is not sent: a first read (the last 16 KiB) or a reset.
    pub earlier: bool,
    /// More is ready now: ask again at once.
    pub more: bool,
    /// Why the position given could not be followed (rotated twice, truncated).
    pub reset: Option<String>,
    /// The log has no file yet (a process not started): `text` is empty.
    pub missing: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: FileId = FileId { dev: 1, ino: 10, born: 100 };
    const B: FileId = FileId { dev: 1, ino: 11, born: 200 };
    const C: FileId = FileId { dev: 1, ino: 12, born: 300 };

    fn at(file: FileId, offset: u64) -> Option<Position> {
        Some(Position { file, offset })
    }

    fn span(p: &Plan) -> (Part, FileId, u64, u64, bool) {
        match p {
            Plan::Read { part, file, start, end, earlier, .. } => (*part, *file, *start, *end, *earlier),
            Plan::NoLog => panic!("no log"),
        }
    }

    #[test]
    fn tokens_round_trip_and_junk_is_refused() {
        let p = Position { file: A, offset: 77 };
        assert_eq!(Position::parse(&p.token()), Some(p));
        for bad in ["", "1.2", "1.2.3", "1.2.3.4.5", "a.b.c.d", "1.2.3.-3"] {
            assert_eq!(Position::parse(bad), None, "{bad:?}");
        }
    }

    /// Issue 40 (item 5): a log rotated twice whose new file got the inode
    /// number of the reader's file is a new file, said as a reset — never
    /// read on silently from the old offset.
    #[test]
    fn a_reused_inode_number_is_a_new_file_and_a_reset() {
        let reused = FileId { born: 999, ..A };
        let found = Found { current: Some((reused, 5_000)), rotated: Some((C, 9_000)) };
        match plan(&found, at(A, 4_000)) {
            Plan::Read { part: Part::Current, file, start: 0, reset: Some(why), earlier: true, .. } => {
                assert_eq!(file, reused);
                assert!(why.contains("rotated more than once"), "{why}");
            }
            p => panic!("{p:?}"),
        }
    }

    #[test]
    fn a_new_reader_gets_the_tail_from_a_line_start_and_a_follower_the_appended_bytes() {
        let found = Found { current: Some((A, 100_000)), rotated: None };
        let p = plan(&found, None);
        assert_eq!(span(&p), (Part::Current, A, 100_000 - TAIL_BYTES, 100_000, true));
        assert!(matches!(p, Plan::Read { from_line: true, .. }));
        // A small log is read whole.
        let small = Found { current: Some((A, 500)), rotated: None };
        assert_eq!(span(&plan(&small, None)), (Part::Current, A, 0, 500, false));
        // Following: only what was appended, a chunk at most.
        assert_eq!(span(&plan(&found, at(A, 99_000))), (Part::Current, A, 99_000, 100_000, false));
        assert_eq!(span(&plan(&found, at(A, 0))), (Part::Current, A, 0, CHUNK_MAX, false));
        // Nothing new: an empty read at the end.
        assert_eq!(span(&plan(&found, at(A, 100_000))), (Part::Current, A, 100_000, 100_000, false));
        assert_eq!(plan(&Found::default(), None), Plan::NoLog);
    }

    #[test]
    fn after_a_rotation_the_rest_of_the_old_file_comes_first_then_the_new_one() {
        // The reader was at 900 of A; A became .1 (1,000 bytes) and B is new.
        let found = Found { current: Some((B, 300)), rotated: Some((A, 1_000)) };
        let p = plan(&found, at(A, 900));
        assert_eq!(span(&p), (Part::Rotated, A, 900, 1_000, false));
        let next = after_read(&found, Part::Rotated, A, 900, 100);
        assert_eq!(next, Position { file: B, offset: 0 });
        assert_eq!(span(&plan(&found, Some(next))), (Part::Current, B, 0, 300, false));
        // A reader that had read A to its end goes on in B.
        assert_eq!(span(&plan(&found, at(A, 1_000))), (Part::Current, B, 0, 300, false));
    }

    #[test]
    fn a_position_in_a_file_rotated_away_twice_or_past_a_truncation_says_so() {
        let found = Found { current: Some((C, 300)), rotated: Some((B, 1_000)) };
        let p = plan(&found, at(A, 5));
        assert!(matches!(&p, Plan::Read { reset: Some(r), earlier: true, .. } if r.contains("rotated more than once")));
        assert_eq!(span(&p).1, C);
        let cut = Found { current: Some((A, 10)), rotated: None };
        let p = plan(&cut, at(A, 500));
        assert!(matches!(&p, Plan::Read { reset: Some(r), start: 0, .. } if r.contains("truncated")));
    }

    #[test]
    fn a_chunk_never_ends_inside_a_character_and_a_tail_starts_at_a_line() {
        let text = "ab\ncd é".as_bytes();
        // 'é' is two bytes: cut after its first byte, it waits for the next chunk.
        let cut = &text[..text.len() - 1];
        assert_eq!(usable(cut, false), (0, cut.len() - 1));
        assert_eq!(usable(text, false), (0, text.len()));
        assert_eq!(usable(text, true), (3, text.len()));
        // No line end at all: nothing is skipped.
        assert_eq!(usable(b"abc", true), (0, 3));
        let euro = "€".as_bytes();
        assert_eq!(usable(&euro[..2], false), (0, 0));
        assert_eq!(usable(euro, false), (0, 3));
    }

    #[test]
    fn names_are_a_process_or_a_unit_and_nothing_that_leaves_the_folder() {
        assert_eq!(parse_name("cell-c-0123456789ab"), Some(LogName::Process("cell-c-0123456789ab".into())));
        assert_eq!(parse_name("unit:rb-b1-20261204T120000"), Some(LogName::Unit("rb-b1-20261204T120000".into())));
        for bad in ["", "../x", "a/b", ".hidden", "unit:", "unit:../x", "x y"] {
            assert_eq!(parse_name(bad), None, "{bad:?}");
        }
    }
}
