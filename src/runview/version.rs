//! A run's version: a short text that changes whenever the run writes, computed
//! from file sizes and modification times alone (no file is opened), so a page
//! can poll it cheaply before reading the run again.

use serde::{Deserialize, Serialize};

use crate::basics::hash::Fnv1a;

/// What `stat` says of one file: enough to notice any write. `None` fields mean
/// the file does not exist.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FileStamp {
    pub len: u64,
    pub mtime_ns: i128,
    /// Device and inode: a replaced file (atomic rename) changes identity even
    /// when its size and time happen to match.
    pub dev: u64,
    pub ino: u64,
}

/// The version of a run, or of a whole list of runs.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RunVersion(pub String);

impl RunVersion {
    /// Combines the stamps of a run's versioned files (see `files::VERSIONED`), in
    /// that order; a missing file contributes a marker of its absence.
    pub fn of_files(stamps: &[Option<FileStamp>]) -> Self {
        let mut h = Fnv1a::new();
        for stamp in stamps {
            match stamp {
                None => h.write(&[0]),
                Some(s) => {
                    h.write(&[1]);
                    h.write(&s.len.to_le_bytes());
                    h.write(&s.mtime_ns.to_le_bytes());
                    h.write(&s.dev.to_le_bytes());
                    h.write(&s.ino.to_le_bytes());
                }
            }
        }
        Self(format!("{:016x}", h.finish()))
    }

    /// Combines `(path, version)` pairs of a list into one version of the list: it
    /// changes when any run writes, appears or disappears.
    pub fn of_list<'a>(runs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut h = Fnv1a::new();
        let mut count = 0u64;
        for (path, version) in runs {
            h.write(path.as_bytes());
            h.write(&[0xff]);
            h.write(version.as_bytes());
            h.write(&[0xfe]);
            count += 1;
        }
        h.write(&count.to_le_bytes());
        Self(format!("{:016x}", h.finish()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_stat_change_changes_the_version() {
        let base = FileStamp { len: 10, mtime_ns: 1_000, dev: 1, ino: 7 };
        let v0 = RunVersion::of_files(&[Some(base), None]);
        let variants = [
            [Some(FileStamp { len: 11, ..base }), None],
            [Some(FileStamp { mtime_ns: 1_001, ..base }), None],
            [Some(FileStamp { ino: 8, ..base }), None],
            [Some(base), Some(base)],
            [None, Some(base)],
        ];
        for v in variants {
            assert_ne!(RunVersion::of_files(&v), v0, "{v:?}");
        }
        assert_eq!(RunVersion::of_files(&[Some(base), None]), v0);
    }

    #[test]
    fn list_version_sees_appearance_and_order() {
        let a = RunVersion::of_list([("a", "1"), ("b", "2")]);
        assert_ne!(a, RunVersion::of_list([("a", "1")]));
        assert_ne!(a, RunVersion::of_list([("a", "1"), ("b", "3")]));
        assert_ne!(RunVersion::of_list([("ab", "")]), RunVersion::of_list([("a", "b")]));
    }
}
