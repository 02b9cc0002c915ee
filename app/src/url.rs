//! Links the pages build: query values and run paths, percent-encoded.

/// Percent-encodes a query value or a path segment (letters, digits and `-_.~`
/// stay as they are).
pub fn encode(s: &str) -> String {
    runboard::results::url_segment(s)
}

/// The page of the run at `path` (relative to the root): each segment encoded,
/// the slashes kept, so the link is unambiguous where folder names repeat.
pub fn run_href(path: &str) -> String {
    let segments: Vec<String> = path.split('/').map(encode).collect();
    format!("/runs/{}", segments.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_links_keep_slashes_and_encode_the_rest() {
        assert_eq!(run_href("runs/a/first"), "/runs/runs/a/first");
        assert_eq!(run_href("batch 1/seed#2"), "/runs/batch%201/seed%232");
        assert_eq!(encode("a&b=c"), "a%26b%3Dc");
    }
}
