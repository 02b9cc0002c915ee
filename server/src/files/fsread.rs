//! Read-only file primitives for everything runboard reads from a campaign: the
//! run readers and the batch driver.
//!
//! Two rules hold for every read here:
//!
//! - **Never open a non-regular file.** Opening a FIFO blocks until a writer
//!   appears (forever, deaf to signals handled on the same thread), a device may
//!   do anything. Files are `stat`ed first, opened with `O_NONBLOCK`, and `fstat`ed
//!   again, so a FIFO swapped in between is still refused without blocking.
//! - **Files read from a campaign resolve inside its root** ([`Within`]). A
//!   symlink in a run folder leading to `/etc/passwd` is that part's problem
//!   ("leads outside the campaign root"), never read. The check is made on the
//!   path the open descriptor really refers to (`/proc/self/fd`), so swapping a
//!   folder for a symlink between the check and the open does not get around it.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use runboard::runview::{FileStamp, ProcessCheck};
use runboard::Timestamp;

/// The largest whole file the list reads (a snapshot or state file). Beyond this a
/// file is reported as too large rather than read into memory.
pub const MAX_WHOLE_FILE: u64 = 64 << 20;

/// `stat` of a path, following symlinks; `None` when it does not exist or cannot
/// be stat'ed (a dangling link).
pub fn stamp_of(path: &Path) -> Option<FileStamp> {
    fs::metadata(path).ok().map(|md| stamp_of_metadata(&md))
}

/// The stamp of what `md` describes (identity, size, change time).
pub fn stamp_of_metadata(md: &fs::Metadata) -> FileStamp {
    FileStamp { len: md.len(), mtime_ns: mtime_ns(md), dev: md.dev(), ino: md.ino() }
}

pub fn mtime_ns(md: &fs::Metadata) -> i128 {
    i128::from(md.mtime()) * 1_000_000_000 + i128::from(md.mtime_nsec())
}

pub fn stamp_time(stamp: &FileStamp) -> Timestamp {
    Timestamp((stamp.mtime_ns / 1_000_000) as i64)
}

/// Why a file was not read. Its words are what a page or the CLI shows
/// beside the part that could not be read; callers that only say it may
/// take them as a `String` (`?` converts).
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The system's answer (it does not exist, no permission, …).
    #[error("{0}")]
    Io(#[from] io::Error),
    /// Not a regular file: a folder, a FIFO (which would block), a socket, a
    /// device — never opened to be read.
    #[error("not a regular file{}", .0.map(|what| format!(" ({what})")).unwrap_or_default())]
    NotRegular(Option<&'static str>),
    /// Larger than runboard reads whole.
    #[error("{len} bytes is larger than the {} MiB runboard reads whole", .max >> 20)]
    TooLarge { len: u64, max: u64 },
    /// It resolves outside the campaign root (a symlink).
    #[error("{}", OUTSIDE_ROOT)]
    Outside,
}

impl From<ReadError> for String {
    fn from(e: ReadError) -> Self {
        e.to_string()
    }
}

/// What a path is when it is not a regular file.
fn not_regular(md: &fs::Metadata) -> ReadError {
    use std::os::unix::fs::FileTypeExt;
    let ft = md.file_type();
    ReadError::NotRegular(if ft.is_dir() {
        Some("a folder")
    } else if ft.is_fifo() {
        Some("a FIFO")
    } else if ft.is_socket() {
        Some("a socket")
    } else if ft.is_block_device() || ft.is_char_device() {
        Some("a device")
    } else {
        None
    })
}

/// Opens `path` for reading only if it is a regular file, without ever blocking
/// on a FIFO; returns the file and its length.
pub fn open_file(path: &Path) -> Result<(File, u64), ReadError> {
    let md = fs::metadata(path)?;
    if !md.is_file() {
        return Err(not_regular(&md));
    }
    let file = OpenOptions::new().read(true).custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits()).open(path)?;
    let md = file.metadata()?;
    if !md.is_file() {
        return Err(not_regular(&md));
    }
    Ok((file, md.len()))
}

fn read_whole(file: File, len: u64) -> Result<Vec<u8>, ReadError> {
    read_whole_up_to(file, len, MAX_WHOLE_FILE)
}

fn read_whole_up_to(mut file: File, len: u64, max: u64) -> Result<Vec<u8>, ReadError> {
    if len > max {
        return Err(ReadError::TooLarge { len, max });
    }
    let mut buf = Vec::with_capacity(len as usize);
    file.read_to_end(&mut buf)?;
    Ok(buf)
}

/// Reads a whole regular file. Anything else (a FIFO, which would block; a
/// folder; a device) is refused with a reason instead of being opened. For
/// files given on the command line; files of a campaign go through [`Within`].
pub fn read_regular(path: &Path) -> Result<Vec<u8>, ReadError> {
    let (file, len) = open_file(path)?;
    read_whole(file, len)
}

/// [`read_regular`] with a bound of its own: for runboard's own files that
/// grow with the campaign (the run list's cache is ~0.8 KiB a run: 80 MiB at
/// 100,000 runs, past [`MAX_WHOLE_FILE`]).
pub fn read_regular_up_to(path: &Path, max: u64) -> Result<Vec<u8>, ReadError> {
    let (file, len) = open_file(path)?;
    read_whole_up_to(file, len, max)
}

/// The reason a path read from a campaign is refused because it leaves the root.
pub const OUTSIDE_ROOT: &str = "leads outside the campaign root (a symlink); not read";

/// Reads confined to one campaign root: every file must resolve inside it.
#[derive(Debug, Clone)]
pub struct Within {
    /// The root with every symlink resolved.
    root: PathBuf,
}

impl Within {
    /// Confines reads to `root` (resolved; as given when it cannot be).
    pub fn new(root: &Path) -> Self {
        Self { root: fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf()) }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether `path`, resolved, is inside the root (`Ok`), or why not.
    pub fn check(&self, path: &Path) -> Result<PathBuf, ReadError> {
        let real = fs::canonicalize(path)?;
        if real.starts_with(&self.root) {
            Ok(real)
        } else {
            Err(ReadError::Outside)
        }
    }

    /// Opens a regular file inside the root for reading; returns it and its length.
    ///
    /// The check is made on what the open descriptor refers to
    /// (`/proc/self/fd/N`, one `readlink`), not on the path beforehand: it
    /// costs one system call instead of a `realpath`'s one per path component
    /// (10,000 runs list 30,000 files), and a folder swapped for a symlink
    /// between a check and the open cannot get around it. Opening a regular
    /// file for reading (never a FIFO: see [`open_file`]) does nothing to it,
    /// so a file outside is opened, found outside, and closed unread.
    pub fn open(&self, path: &Path) -> Result<(File, u64), ReadError> {
        let (file, len) = open_file(path)?;
        let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
        let real = match fs::read_link(format!("/proc/self/fd/{fd}")) {
            Ok(p) => p,
            // No /proc: resolve the path instead.
            Err(_) => self.check(path)?,
        };
        if real.starts_with(&self.root) {
            Ok((file, len))
        } else {
            Err(ReadError::Outside)
        }
    }

    /// Reads a whole regular file inside the root.
    pub fn read(&self, path: &Path) -> Result<Vec<u8>, ReadError> {
        let (file, len) = self.open(path)?;
        read_whole(file, len)
    }

    /// Reads a whole regular file inside the root; `None` when it does not exist.
    pub fn read_opt(&self, path: &Path) -> Option<Result<Vec<u8>, ReadError>> {
        fs::symlink_metadata(path).ok()?;
        Some(self.read(path))
    }
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
    /// elsewhere it is unknown, never gone. Hosts are compared by
    /// their short names, case-insensitively: a writer that records its full
    /// domain name (`box.lab.example`) is on the host named `box`.
    pub fn check(&self, host: &str, pid: u32) -> ProcessCheck {
        let (host, pid) = (host.to_owned(), pid);
        if !same_host(&host, &self.host) {
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

/// When process `pid` started, in clock ticks since boot (`/proc/PID/stat`,
/// field 22): with the PID, what identifies a process — a PID alone may be
/// reused by an unrelated process after the first one ended.
pub fn process_start(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: the fields
    // after it start behind the last ')'; starttime is the 20th of those.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Whether two host names name the same machine: their first labels (before
/// any `.`), compared case-insensitively. An empty name is no host.
pub fn same_host(a: &str, b: &str) -> bool {
    let short = |h: &str| h.trim().split('.').next().unwrap_or("").to_ascii_lowercase();
    let (a, b) = (short(a), short(b));
    !a.is_empty() && a == b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_known_by_its_start_time() {
        let me = process_start(std::process::id()).expect("this process has a start time");
        assert_eq!(process_start(std::process::id()), Some(me), "stable");
        assert!(process_start(u32::MAX).is_none());
    }

    #[test]
    fn hosts_are_compared_by_short_name_case_insensitively() {
        assert!(same_host("box", "box"));
        assert!(same_host("Box.lab.example", "box"));
        assert!(same_host("box", "BOX.local"));
        assert!(!same_host("box2", "box"));
        assert!(!same_host("", ""));
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("f.json");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let refused = read_regular(&fifo).unwrap_err();
        assert!(matches!(refused, ReadError::NotRegular(Some("a FIFO"))), "{refused:?}");
        assert_eq!(refused.to_string(), "not a regular file (a FIFO)");
        assert_eq!(Within::new(dir.path()).read(&fifo).unwrap_err().to_string(), "not a regular file (a FIFO)");
    }

    #[test]
    fn a_file_symlinked_from_outside_the_root_is_not_read() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s3cret").unwrap();
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("inside"), "ok").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), root.path().join("link")).unwrap();
        std::os::unix::fs::symlink(root.path().join("inside"), root.path().join("good-link")).unwrap();
        let w = Within::new(root.path());
        let refused = w.read(&root.path().join("link")).unwrap_err();
        assert!(matches!(refused, ReadError::Outside) && refused.to_string() == OUTSIDE_ROOT, "{refused:?}");
        assert_eq!(w.read(&root.path().join("good-link")).unwrap(), b"ok");
        // A symlinked folder leading out: its files are outside too.
        std::os::unix::fs::symlink(outside.path(), root.path().join("dir")).unwrap();
        assert!(matches!(w.read(&root.path().join("dir/secret")).unwrap_err(), ReadError::Outside));
        assert!(w.read_opt(&root.path().join("missing")).is_none());
    }
}
