//! A cell's calls counted from what it writes in its own folder — its
//! progress file, else the call files of the run directory it owns — reading
//! only what was appended since the last read. The console's live spend
//! polls one reader per running cell; the driver counts each cell once more
//! when it ends, and that count is the record of what it spent
//! (`cells/<id>.json` → `counted`).

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use runboard::basics::timefmt::Timestamp;
use runboard::drive::records::{CountSource, Counted};
use runboard::live::spend::{self, CellTally};

/// The most of a progress file read at one poll (the rest at the next).
const MAX_READ_PER_POLL: u64 = 4 << 20;
/// The most call files read for one cell at one poll.
const MAX_CALL_FILES_PER_POLL: u32 = 2_000;
/// Gaps kept per task for its stall threshold (the newest).
pub const TASK_GAPS_KEPT: usize = 2_048;

/// What one cell has been read of so far.
#[derive(Default)]
pub struct CellReader {
    pub tally: CellTally,
    /// Where its calls were counted from.
    pub source: CountSource,
    /// The progress file read so far: its identity and the offset reached.
    progress: Option<((u64, u64), u64)>,
    /// The next call file to look for.
    next_call: Option<u32>,
    /// Its newest write seen: when, and what it was.
    pub last_write: Option<(Timestamp, &'static str)>,
    /// Lines of the progress file read so far (for a skipped line's number).
    lines: u64,
    /// Read once after its cell ended: nothing more will come.
    pub done: bool,
}

/// The files whose writes say a cell is alive, and what each write is.
const WRITES: [(&str, &str); 5] = [
    (spend::PROGRESS_FILE, "a progress line"),
    (runboard::drive::result::SAMPLES_FILE, "a samples report"),
    ("calls", "a call"),
    ("events.jsonl", "an event"),
    ("ledger.jsonl", "a ledger line"),
];

impl CellReader {
    /// Reads what `dir` gained since the last poll; whether it wrote
    /// anything (or more of it was read).
    pub fn poll(
        &mut self,
        within: &crate::files::fsread::Within,
        dir: &Path,
        task_gaps: &mut Vec<f64>,
        now: Timestamp,
    ) -> bool {
        let before = (self.last_write, self.tally.calls, self.progress, self.next_call);
        for (file, what) in WRITES {
            if let Some(s) = crate::files::fsread::stamp_of(&dir.join(file)) {
                let t = crate::files::fsread::stamp_time(&s);
                if self.last_write.is_none_or(|(l, _)| t > l) {
                    self.last_write = Some((t, what));
                }
            }
        }
        let mut gaps = Vec::new();
        let progress = dir.join(spend::PROGRESS_FILE);
        if progress.exists() {
            self.source = CountSource::Progress;
            self.read_progress(within, &progress, &mut gaps, now);
        } else if dir.join("calls").is_dir() {
            self.source = CountSource::Calls;
            self.read_calls(within, &dir.join("calls"), &mut gaps, now);
        }
        for g in gaps {
            if task_gaps.len() == TASK_GAPS_KEPT {
                task_gaps.remove(0);
            }
            task_gaps.push(g);
        }
        before != (self.last_write, self.tally.calls, self.progress, self.next_call)
    }

    fn read_progress(
        &mut self,
        within: &crate::files::fsread::Within,
        path: &Path,
        gaps: &mut Vec<f64>,
        now: Timestamp,
    ) {
        let (mut file, len) = match within.open(path) {
            Ok(f) => f,
            Err(e) => return self.tally.problem(format!("{}: {e}", spend::PROGRESS_FILE)),
        };
        let id = file.metadata().map(|m| (m.dev(), m.ino())).unwrap_or_default();
        let offset = match self.progress {
            // The same file, not shrunk: go on from where the last read ended.
            Some((was, off)) if was == id && off <= len => off,
            // Replaced or cut short: it is counted again from its start.
            Some(_) => {
                self.tally = CellTally::default();
                self.lines = 0;
                0
            }
            None => 0,
        };
        let want = (len - offset).min(MAX_READ_PER_POLL);
        let mut buf = Vec::with_capacity(want as usize);
        if file.seek(SeekFrom::Start(offset)).and_then(|_| file.take(want).read_to_end(&mut buf)).is_err() {
            return;
        }
        let (lines, covered) = runboard::runview::jsonl::complete_lines(&buf);
        for line in lines {
            self.lines += 1;
            match spend::progress_line(line) {
                Ok(call) => gaps.extend(self.tally.feed(&call, now)),
                Err(e) => self.tally.problem(format!("{} line {}: {e}; skipped", spend::PROGRESS_FILE, self.lines)),
            }
        }
        self.progress = Some((id, offset + covered as u64));
    }

    fn read_calls(&mut self, within: &crate::files::fsread::Within, calls: &Path, gaps: &mut Vec<f64>, now: Timestamp) {
        let name = |n: u32| calls.join(format!("{n:04}.json"));
        // Numbered from 1 (or from 0, when a writer starts there).
        let mut n = self.next_call.unwrap_or_else(|| if name(0).exists() { 0 } else { 1 });
        for _ in 0..MAX_CALL_FILES_PER_POLL {
            let Some(read) = within.read_opt(&name(n)) else { break };
            match read.map_err(|e| e.to_string()).and_then(|b| spend::call_file(&b)) {
                Ok(call) => gaps.extend(self.tally.feed(&call, now)),
                // Half-written, unless the next one exists already.
                Err(e) if name(n + 1).exists() => self.tally.problem(format!("calls/{n:04}.json: {e}")),
                Err(_) => break,
            }
            n += 1;
        }
        self.next_call = Some(n);
    }
}

/// Every call `dir` holds, read whole (its progress file to its last whole
/// line, else every call file).
pub fn read_cell(dir: &Path, now: Timestamp) -> CellReader {
    let within = crate::files::fsread::Within::new(dir);
    let mut reader = CellReader::default();
    let mut gaps = Vec::new();
    // Each poll reads a bounded part; a file is whole once a poll adds nothing.
    while reader.poll(&within, dir, &mut gaps, now) {
        gaps.clear();
    }
    reader
}

/// Every call `dir` holds, counted whole (the driver's count when a cell
/// ends); none when it wrote no call.
pub fn count_cell(dir: &Path, now: Timestamp) -> Option<Counted> {
    let reader = read_cell(dir, now);
    let t = reader.tally.tokens();
    (reader.tally.calls > 0).then_some(Counted {
        calls: reader.tally.calls,
        input_tokens: t.input,
        output_tokens: t.output,
        cached_tokens: t.cached,
        unsplit_tokens: t.unsplit,
        unmetered_calls: reader.tally.unmetered,
        source: reader.source,
    })
}
