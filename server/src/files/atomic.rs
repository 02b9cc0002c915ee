//! Atomic replacement of a file: readers see the old whole file or the new whole
//! file, never a mix, and a crash leaves one of the two on disk. And the
//! bounded wait for a file's lock ([`lock_waiting`]): the campaign lock's
//! and the token book's.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Makes each temporary name unique within the process: two writers of one
/// file (two threads, two tasks) must never share a temporary file.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// Writes `bytes` to a temporary file beside `path`, fsyncs it, renames it over
/// `path`, then fsyncs the directory so the rename itself is durable.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_mode(path, bytes, None)
}

/// [`write_atomic`] for a file that holds a secret: readable and writable
/// by its user alone (0600) whatever the umask, from its first byte.
pub fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_mode(path, bytes, Some(0o600))
}

fn write_atomic_mode(path: &Path, bytes: &[u8], mode: Option<u32>) -> io::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(".{}.tmp-{}-{n}", name.to_string_lossy(), std::process::id()));
    let result = (|| {
        // `create_new`: a leftover of a crashed writer is never written through.
        let mut open = fs::OpenOptions::new();
        open.write(true).create_new(true);
        if let Some(m) = mode {
            std::os::unix::fs::OpenOptionsExt::mode(&mut open, m);
        }
        let mut f = open.open(&tmp)?;
        if let Some(m) = mode {
            // The umask may have taken bits away, never added: set it whole.
            f.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(m))?;
        }
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)?;
        File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Makes the folder `path` (and those above it that are missing) readable,
/// writable and searchable by its user alone (0700, whatever the umask) —
/// runboard's data folder. A folder that is already there keeps its mode.
pub fn create_private_dir(path: &Path) -> io::Result<()> {
    std::os::unix::fs::DirBuilderExt::mode(fs::DirBuilder::new().recursive(true), 0o700).create(path)
}

/// Writes `value` as pretty JSON to `path` with [`write_atomic`], making
/// its folder first.
pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> io::Result<()> {
    if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(dir)?;
    }
    write_atomic(path, &serde_json::to_vec_pretty(value).map_err(io::Error::other)?)
}

/// Removes the temporary files of `path` that writers which died before
/// their rename left behind (their process is gone). Best effort.
pub fn sweep_stale_temps(path: &Path) {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else { return };
    let prefix = format!(".{}.tmp-", name.to_string_lossy());
    let Ok(entries) = fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let file = e.file_name().to_string_lossy().into_owned();
        if !file.starts_with(&prefix) {
            continue;
        }
        if runboard::live::upkeep::temp_writer(&file).is_some_and(|p| !writer_alive(p)) {
            let _ = fs::remove_file(e.path());
        }
    }
}

/// Takes the operating system's lock on `file` (`flock`: a killed holder
/// releases it), trying again every 50 ms for at most `wait`: true once
/// held, false while another still holds it after `wait` (every wait
/// bounded: the caller says who holds it and to try again).
pub fn lock_waiting(file: &File, wait: std::time::Duration) -> io::Result<bool> {
    let deadline = std::time::Instant::now() + wait;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(true),
            Err(fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(50))
            }
            Err(fs::TryLockError::WouldBlock) => return Ok(false),
            Err(fs::TryLockError::Error(e)) => return Err(e),
        }
    }
}

/// Whether the process that writes a temporary file (the pid in its name,
/// `runboard::live::upkeep::temp_writer`) is alive on this host — this process
/// included.
pub fn writer_alive(pid: u32) -> bool {
    pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_whole_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("state.json");
        write_atomic(&p, b"{\"a\":1}").unwrap();
        write_atomic(&p, b"{\"a\":2}").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"{\"a\":2}");
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn a_private_file_is_its_users_alone_and_replaced_whole() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(".gateway.json");
        write_atomic(&p, b"old").unwrap();
        write_private(&p, b"{\"secret\": 1}").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"{\"secret\": 1}");
        assert_eq!(fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary file left");
    }

    #[test]
    fn a_private_folder_and_those_made_above_it_are_its_users_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("share/runboard");
        create_private_dir(&data.join("list-cache")).unwrap();
        for d in [dir.path().join("share"), data.clone(), data.join("list-cache")] {
            assert_eq!(fs::metadata(&d).unwrap().permissions().mode() & 0o777, 0o700, "{}", d.display());
        }
        create_private_dir(&data).unwrap();
    }

    #[test]
    fn two_writers_of_one_file_in_one_process_do_not_collide() {
        let dir = tempfile::tempdir().unwrap();
        let p = std::sync::Arc::new(dir.path().join("state.json"));
        let writers: Vec<_> = (0..8)
            .map(|i| {
                let p = p.clone();
                std::thread::spawn(move || {
                    let body = format!("{{\"writer\":{i},\"pad\":\"{}\"}}", "x".repeat(100_000));
                    for _ in 0..20 {
                        write_atomic(&p, body.as_bytes()).unwrap();
                        // Whatever is there is one writer's whole file.
                        let read = fs::read_to_string(&*p).unwrap();
                        assert!(read.ends_with("\"}") && read.len() > 100_000, "torn: {} bytes", read.len());
                    }
                })
            })
            .collect();
        writers.into_iter().for_each(|w| w.join().unwrap());
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1, "no temporary file left: {names:?}");
    }
}
