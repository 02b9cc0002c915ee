//! Line-oriented JSON files that a writer may be appending to right now.
//!
//! A line is complete only when its newline has been written: the last line of a
//! file without a trailing `\n` is a write in progress (or a crash cut it short)
//! and is never shown.

/// Splits `bytes` into complete lines (without their `\n`), skipping the torn tail
/// and blank lines. Also returns how many bytes the complete lines cover, so a
/// reader can resume from there when the file grows.
pub fn complete_lines(bytes: &[u8]) -> (Vec<&[u8]>, usize) {
    let end = match bytes.iter().rposition(|&b| b == b'\n') {
        Some(i) => i + 1,
        None => return (Vec::new(), 0),
    };
    let lines = bytes[..end]
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .collect();
    (lines, end)
}

/// For a chunk read from the *end* of a file starting at byte `chunk_start`: the
/// complete lines in it. The first line is dropped unless the chunk starts the
/// file, since the chunk may have begun in the middle of it.
pub fn tail_lines(chunk: &[u8], chunk_start: u64) -> Vec<&[u8]> {
    let (mut lines, _) = complete_lines(chunk);
    // The chunk may have begun mid-line, and the chunk alone cannot tell; dropping
    // its first line is always safe because the caller reads further back (and
    // overlaps) when it needs more.
    if chunk_start > 0 && !lines.is_empty() {
        lines.remove(0);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_last_line_is_skipped() {
        let (lines, covered) = complete_lines(b"{\"a\":1}\n{\"a\":2}\n{\"a\":");
        assert_eq!(lines, vec![&b"{\"a\":1}"[..], &b"{\"a\":2}"[..]]);
        assert_eq!(covered, 16);
    }

    #[test]
    fn no_newline_means_nothing_complete() {
        assert_eq!(complete_lines(b"{\"a\":1}"), (Vec::<&[u8]>::new(), 0));
        assert_eq!(complete_lines(b""), (Vec::<&[u8]>::new(), 0));
    }

    #[test]
    fn blank_and_crlf_lines() {
        let (lines, _) = complete_lines(b"a\r\n\n  \nb\n");
        assert_eq!(lines, vec![&b"a"[..], &b"b"[..]]);
    }

    #[test]
    fn tail_chunks_drop_their_first_line_unless_at_file_start() {
        assert_eq!(tail_lines(b"x\"}\n{\"b\":1}\n", 100), vec![&b"{\"b\":1}"[..]]);
        assert_eq!(tail_lines(b"{\"a\":0}\n{\"b\":1}\n", 0).len(), 2);
    }
}
