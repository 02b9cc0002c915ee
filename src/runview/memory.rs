//! The distiller's memory versions (`memory/round_NN.md`, each written before
//! round NN), kept between reads of a growing run: a version is read and
//! compared with the one before only when its file changed or a version
//! appeared before it, so reading a run that gained a round costs that round,
//! not every round again.

use std::sync::Arc;

use super::diff::diff_lines;
use super::rows::MemoryVersion;

/// What the reader knows of the memory folder: each file by round, with a token
/// that changes when the file does (the adapter's `stat`), and what was read.
#[derive(Debug, Clone, Default)]
pub struct MemoryLog {
    /// `(round, token, text or why it cannot be read)`, in round order.
    files: Vec<(u32, String, Result<Arc<str>, String>)>,
    /// The readable versions, each compared with the readable one before it.
    versions: Arc<Vec<MemoryVersion>>,
}

impl MemoryLog {
    /// A log read at once from texts (for callers without stamps).
    pub fn from_texts(mut texts: Vec<(u32, Result<String, String>)>) -> Self {
        texts.sort_by_key(|(n, _)| *n);
        let mut log = Self::default();
        let listing: Vec<(u32, String)> = texts.iter().map(|(n, _)| (*n, String::new())).collect();
        let mut by_round: std::collections::BTreeMap<u32, Result<String, String>> = texts.into_iter().collect();
        log.refresh(&listing, |n| by_round.remove(&n).unwrap_or_else(|| Err("not listed".into())));
        log
    }

    /// Brings the log up to `listing` (`(round, token)` of each file now), calling
    /// `load(round)` only for a file that is new or whose token changed. Returns
    /// whether anything changed.
    pub fn refresh(&mut self, listing: &[(u32, String)], mut load: impl FnMut(u32) -> Result<String, String>) -> bool {
        let mut listing = listing.to_vec();
        listing.sort_by_key(|(n, _)| *n);
        listing.dedup_by_key(|(n, _)| *n);
        let unchanged = listing.len() == self.files.len()
            && listing.iter().zip(&self.files).all(|((n, t), (m, u, _))| n == m && t == u && !t.is_empty());
        if unchanged {
            return false;
        }
        let mut old = std::mem::take(&mut self.files).into_iter().peekable();
        let mut files = Vec::with_capacity(listing.len());
        for (round, token) in listing {
            while old.peek().is_some_and(|(n, _, _)| *n < round) {
                old.next();
            }
            let kept = match old.peek() {
                Some((n, t, text)) if *n == round && *t == token && !token.is_empty() => Some(text.clone()),
                _ => None,
            };
            let text = kept.unwrap_or_else(|| load(round).map(Arc::from));
            files.push((round, token, text));
        }
        // Versions: reuse a version (and its diff) whose text and predecessor's
        // text are the same objects as before; compare the rest again.
        let before: Vec<&MemoryVersion> = self.versions.iter().collect();
        let mut versions: Vec<MemoryVersion> = Vec::with_capacity(files.len());
        let mut prev: Option<&str> = None;
        for (round, _, text) in &files {
            let Ok(text) = text else { continue };
            let reused = before.iter().position(|v| v.round == *round).and_then(|i| {
                let v = before[i];
                let same_prev = match i.checked_sub(1) {
                    Some(j) => prev == Some(before[j].text.as_str()),
                    None => prev.is_none(),
                };
                (v.text.as_str() == &**text && same_prev).then(|| v.clone())
            });
            let version = reused.unwrap_or_else(|| MemoryVersion {
                round: *round,
                text: text.to_string(),
                diff: prev.and_then(|p| diff_lines(p, text)),
            });
            versions.push(version);
            prev = Some(text);
        }
        self.files = files;
        self.versions = Arc::new(versions);
        true
    }

    /// The readable versions, in round order, each with its diff.
    pub fn versions(&self) -> &Arc<Vec<MemoryVersion>> {
        &self.versions
    }

    /// `(round, reason)` of each version that could not be read.
    pub fn problems(&self) -> impl Iterator<Item = (u32, &str)> {
        self.files.iter().filter_map(|(n, _, t)| t.as_ref().err().map(|e| (*n, e.as_str())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runview::diff::DiffLine;

    #[test]
    fn only_new_or_changed_files_are_read_and_compared_again() {
        let mut log = MemoryLog::default();
        let mut reads = Vec::new();
        let text = |n: u32| format!("# before round {n}\nsame\n");
        assert!(log.refresh(&[(1, "a".into()), (2, "b".into())], |n| {
            reads.push(n);
            Ok(text(n))
        }));
        assert_eq!(reads, [1, 2]);
        assert!(!log.refresh(&[(1, "a".into()), (2, "b".into())], |_| unreachable!("nothing changed")));
        reads.clear();
        assert!(log.refresh(&[(1, "a".into()), (2, "b".into()), (3, "c".into())], |n| {
            reads.push(n);
            Ok(text(n))
        }));
        assert_eq!(reads, [3], "only the new version is read");
        let v = log.versions();
        assert_eq!(v.len(), 3);
        assert!(v[2].diff.as_ref().unwrap().contains(&DiffLine::Added("# before round 3".into())));
        // A version that cannot be read is a problem and is skipped in the comparison.
        let log = MemoryLog::from_texts(vec![(4, Ok("x\n".into())), (2, Err("not a regular file".into()))]);
        assert_eq!(log.problems().collect::<Vec<_>>(), [(2, "not a regular file")]);
        assert_eq!(log.versions()[0].diff, None);
    }
}
