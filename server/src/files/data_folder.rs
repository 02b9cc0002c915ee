//! The data folder: where runboard keeps its own data (the demo campaign,
//! the run list's cache, the console token and the token book, the console
//! last started) — made readable by its user alone (`atomic::create_private_dir`).

use std::path::{Path, PathBuf};

use anyhow::Context;

/// The folder runboard keeps its own data in: `--data-dir`, else
/// `$RUNBOARD_DATA_DIR`, else `$XDG_DATA_HOME/runboard`, else `~/.local/share/runboard`.
pub fn locate(explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(p) = explicit {
        return Ok(p.to_path_buf());
    }
    if let Some(p) = std::env::var_os("RUNBOARD_DATA_DIR") {
        return Ok(PathBuf::from(p));
    }
    if let Some(p) = std::env::var_os("XDG_DATA_HOME") {
        return Ok(PathBuf::from(p).join("runboard"));
    }
    let home = std::env::var_os("HOME").context("neither RUNBOARD_DATA_DIR nor HOME is set; pass --data-dir")?;
    Ok(PathBuf::from(home).join(".local/share/runboard"))
}
