//! What the operator sees while a batch runs: the process table when it changes,
//! or with `-i` every log's new lines, prefixed by the process name (the log files
//! keep the full stream either way).

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

use super::supervisor::Supervisor;

#[derive(Default)]
pub struct Monitor {
    interactive: bool,
    last_table: String,
    offsets: HashMap<PathBuf, u64>,
    partial: HashMap<PathBuf, Vec<u8>>,
}

impl Monitor {
    pub fn new(interactive: bool) -> Self {
        Self { interactive, ..Self::default() }
    }

    /// Shows what changed since the last call.
    pub fn show(&mut self, sup: &Supervisor) {
        if self.interactive {
            self.stream(sup);
            return;
        }
        // Compare without uptimes, which change on every call.
        let key: String =
            sup.procs.iter().map(|p| format!("{}:{}:{:?};", p.name, p.status.label(), p.exit_code)).collect();
        if key != self.last_table {
            self.last_table = key;
            print!("{}", sup.table());
            let _ = std::io::stdout().flush();
        }
    }

    fn stream(&mut self, sup: &Supervisor) {
        let mut out = std::io::stdout().lock();
        for p in &sup.procs {
            let Ok(mut f) = std::fs::File::open(&p.log) else { continue };
            let off = self.offsets.entry(p.log.clone()).or_insert(0);
            if f.seek(SeekFrom::Start(*off)).is_err() {
                continue;
            }
            let mut buf = Vec::new();
            if f.read_to_end(&mut buf).is_err() {
                continue;
            }
            *off += buf.len() as u64;
            let pending = self.partial.entry(p.log.clone()).or_default();
            pending.extend_from_slice(&buf);
            while let Some(nl) = pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = pending.drain(..=nl).collect();
                let _ = write!(out, "[{}] {}", p.name, String::from_utf8_lossy(&line));
            }
        }
        let _ = out.flush();
    }

    /// The final view: the table (always), after any last log lines.
    pub fn finish(&mut self, sup: &Supervisor) {
        if self.interactive {
            self.stream(sup);
        }
        print!("{}", sup.table());
        let _ = std::io::stdout().flush();
    }
}
