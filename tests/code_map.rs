//! ARCHITECTURE.md's code map names every source file: a newcomer can find
//! each capability from the tree, and a file added without a line on the map
//! fails here, naming it.
//!
//! A file is on the map when the map names it in backticks — its path or a
//! tail of it with a folder (`campaign/pool.rs`) — or when the row of a
//! folder it is in names its module (`supervisor` in the `server/src/drive/`
//! row), or it is a folder's `mod.rs`/`lib.rs`/`main.rs` and the folder (or
//! its crate) has a row.
//!
//! Likewise docs/formats.md lists and describes every operation of the table.

use std::path::{Path, PathBuf};

/// The folders whose Rust files the map must cover.
const COVERED: &[&str] = &["src", "app/src", "frontend/src", "server/src", "server/tests", "server/benches", "tests"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code map's rows: (first cell without backticks, the rest of the row).
fn rows(map: &str) -> Vec<(String, String)> {
    map.lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once("` |"))
        .map(|(path, rest)| (path.to_owned(), rest.to_owned()))
        .collect()
}

fn on_map(rel: &str, map: &str, rows: &[(String, String)]) -> bool {
    let parts: Vec<&str> = rel.split('/').collect();
    // Its path, or a tail of it with at least one folder, in backticks.
    if (0..parts.len().saturating_sub(1)).any(|i| map.contains(&format!("`{}`", parts[i..].join("/")))) {
        return true;
    }
    let stem = parts[parts.len() - 1].trim_end_matches(".rs");
    // A folder it is in has a row naming its module (or the sub-folder it is in).
    (1..parts.len()).any(|depth| {
        let folder = format!("{}/", parts[..depth].join("/"));
        let Some((_, text)) = rows.iter().find(|(p, _)| *p == folder) else { return false };
        let first = parts[depth].trim_end_matches(".rs");
        let direct = depth == parts.len() - 1;
        (direct && matches!(stem, "mod" | "lib" | "main"))
            || [first, stem].iter().any(|name| {
                [format!("`{name}`"), format!("`{name}/`"), format!("`{name}.rs`"), format!("`{name}` (")]
                    .iter()
                    .any(|n| text.contains(n.as_str()))
            })
    })
}

#[test]
fn every_source_file_is_on_the_code_map() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let map = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let rows = rows(&map);
    let mut files = Vec::new();
    for dir in COVERED {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 100, "only {} files found under {COVERED:?}", files.len());
    let mut missing: Vec<String> = files
        .iter()
        .map(|f| f.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/"))
        .filter(|rel| !on_map(rel, &map, &rows))
        .collect();
    missing.sort();
    assert!(missing.is_empty(), "files on no line of ARCHITECTURE.md's code map:\n  {}", missing.join("\n  "));
}

#[test]
fn the_rule_finds_a_file_the_map_does_not_name() {
    let map = "| `server/src/drive/` | `supervisor` (spawn) |\n| `src/` | core |\n";
    let rows = rows(map);
    assert!(on_map("server/src/drive/supervisor.rs", map, &rows));
    assert!(on_map("server/src/drive/mod.rs", map, &rows));
    assert!(!on_map("server/src/drive/stray.rs", map, &rows));
    assert!(!on_map("src/stray.rs", map, &rows));
}

/// docs/formats.md, which outside clients are written from, names every
/// operation of the table with its method and path (`GET /api/runs`) and its
/// row in the operations table: an operation added without its doc fails
/// here, naming it.
#[test]
fn every_operation_is_in_the_formats_doc() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/formats.md")).unwrap();
    let missing: Vec<String> = runboard::api::OPERATIONS
        .iter()
        .filter(|o| {
            let route = format!("{} {}", o.method.word(), o.path);
            !doc.contains(&format!("| `{}` | `{route}` |", o.name)) || doc.matches(&format!("`{route}")).count() < 2
        })
        .map(|o| format!("{} ({} {})", o.name, o.method.word(), o.path))
        .collect();
    assert!(missing.is_empty(), "docs/formats.md does not describe: {}", missing.join(", "));
}

/// A third-party reader of `auto/log.jsonl` learns every event kind, and every
/// hold reason, from the docs.
#[test]
fn every_auto_event_and_hold_reason_is_in_the_formats_doc() {
    use runboard::auto::{AutoEvent, HoldReason};
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/formats.md")).unwrap();
    let missing: Vec<&str> =
        AutoEvent::KINDS.iter().copied().filter(|k| !doc.contains(&format!("| `{k}` | "))).collect();
    assert!(missing.is_empty(), "docs/formats.md's events table lacks: {}", missing.join(", "));
    let line = doc.lines().find(|l| l.starts_with("| `hold` | `{reason, words, since}`")).expect("the hold row");
    let missing: Vec<&str> =
        HoldReason::ALL.iter().map(|r| r.word()).filter(|w| !line.contains(&format!("`{w}`"))).collect();
    assert!(missing.is_empty(), "the hold row lacks: {}", missing.join(", "));
}

/// Issue 40 (item 20): every status the run list gives — and filters by —
/// is named by the run list's section of docs/formats.md, in its filter's
/// list and with a line of its own under `status.kind`.
#[test]
fn every_run_list_status_is_in_the_formats_doc() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/formats.md")).unwrap();
    let section =
        doc.split("## The run list").nth(1).and_then(|s| s.split("\n## ").next()).expect("the run list section");
    let filter = section.split("`status` one of").nth(1).and_then(|s| s.split(';').next()).expect("the filter's list");
    for s in runboard::runview::listing::STATUSES {
        assert!(filter.contains(&format!("`{s}`")), "the status filter's list lacks {s}: {filter}");
        assert!(section.contains(&format!("  - `{s}`")), "status.kind lacks a line for {s}");
    }
}
