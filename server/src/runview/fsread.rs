//! Small read-only file primitives used by the run readers.

use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use runboard::runview::{FileStamp, ProcessCheck};
use runboard::Timestamp;

/// The largest whole file the list reads (a snapshot or state file). Beyond this a
/// file is reported as too large rather than read into memory.
pub const MAX_WHOLE_FILE: u64 = 64 << 20;

/// `stat` of a path, following symlinks; `None` when it does not exist or cannot
/// be stat'ed (a dangling link).
pub fn stamp_of(path: &Path) -> Option<FileStamp> {
    let md = fs::metadata(path).ok()?;
    Some(FileStamp { len: md.len(), mtime_ns: mtime_ns(&md), dev: md.dev(), ino: md.ino() })
}

pub fn mtime_ns(md: &fs::Metadata) -> i128 {
    i128::from(md.mtime()) * 1_000_000_000 + i128::from(md.mtime_nsec())
}

pub fn stamp_time(stamp: &FileStamp) -> Timestamp {
    Timestamp((stamp.mtime_ns / 1_000_000) as i64)
}

/// Reads a whole regular file. Anything else (a FIFO, which would block; a
/// directory; a device) is refused with a reason instead of being opened.
pub fn read_regular(path: &Path) -> Result<Vec<u8>, String> {
    let md = fs::metadata(path).map_err(|e| e.to_string())?;
    if !md.is_file() {
        return Err("not a regular file".to_owned());
    }
    if md.len() > MAX_WHOLE_FILE {
        return Err(format!("{} bytes is larger than the {} MiB a list reads", md.len(), MAX_WHOLE_FILE >> 20));
    }
    fs::read(path).map_err(|e| e.to_string())
}

/// Reads up to `len` bytes ending at `end` of a regular file. Returns the bytes and
/// the offset they start at.
pub fn read_tail(file: &mut File, end: u64, len: u64) -> io::Result<(Vec<u8>, u64)> {
    let start = end.saturating_sub(len);
    file.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::with_capacity((end - start) as usize);
    file.by_ref().take(end - start).read_to_end(&mut buf)?;
    Ok((buf, start))
}

/// Opens a regular file for reading only, refusing FIFOs and the like (opening a
/// FIFO would block the scan).
pub fn open_regular(path: &Path) -> Result<(File, u64), String> {
    let md = fs::metadata(path).map_err(|e| e.to_string())?;
    if !md.is_file() {
        return Err("not a regular file".to_owned());
    }
    let file = File::open(path).map_err(|e| e.to_string())?;
    Ok((file, md.len()))
}

/// Whether a process is alive, asked only about this host's processes.
#[derive(Debug, Clone)]
pub struct ProcessProbe {
    pub host: String,
}

impl ProcessProbe {
    pub fn this_host() -> Self {
        let host = nix::unistd::gethostname().ok().and_then(|h| h.into_string().ok()).unwrap_or_default();
        Self { host }
    }

    /// What is known of process `pid` on `host`: looked for only on this host;
    /// elsewhere it is unknown, never gone (seed 001).
    pub fn check(&self, host: &str, pid: u32) -> ProcessCheck {
        let (host, pid) = (host.to_owned(), pid);
        if host != self.host {
            ProcessCheck::OtherHost { host, pid }
        } else if self.alive(pid) {
            ProcessCheck::Alive { host, pid }
        } else {
            ProcessCheck::Gone { host, pid }
        }
    }

    /// `kill(pid, 0)`: delivered or refused for permission means the pid exists.
    pub fn alive(&self, pid: u32) -> bool {
        let Ok(pid) = i32::try_from(pid) else {
            return false;
        };
        if pid <= 0 {
            return false;
        }
        match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
            Ok(()) => true,
            Err(nix::errno::Errno::EPERM) => true,
            Err(_) => false,
        }
    }
}
