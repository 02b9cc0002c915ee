//! The Leptos site options the server starts with.
//!
//! They come from `Leptos.toml`, embedded at build time so the binary does not
//! depend on its working directory. `LEPTOS_*` environment variables (which
//! cargo-leptos sets when it runs the server) override the file. The site root is
//! then resolved to an absolute folder that holds the built `pkg/`.

use std::path::{Path, PathBuf};

use leptos::config::LeptosOptions;

/// `Leptos.toml` at the workspace root, as it was when this binary was built.
pub const LEPTOS_TOML: &str = include_str!("../../../Leptos.toml");

/// Site options with an absolute site root. `site_root` (from `--site-root`) wins,
/// then `LEPTOS_SITE_ROOT`, then the `site` folder beside the binary's target
/// folder, then the one in the workspace this binary was built from.
pub fn options(site_root: Option<&Path>) -> anyhow::Result<LeptosOptions> {
    let mut opts =
        leptos_config::get_config_from_str(LEPTOS_TOML).map_err(|e| anyhow::anyhow!("Leptos.toml (embedded): {e}"))?;
    let root = match site_root {
        Some(p) => p.to_path_buf(),
        None => match std::env::var_os("LEPTOS_SITE_ROOT") {
            Some(p) => PathBuf::from(p),
            None => default_site_root(&opts.site_root),
        },
    };
    let root = std::path::absolute(&root).unwrap_or(root);
    opts.site_root = root.to_string_lossy().into_owned().into();
    Ok(opts)
}

fn default_site_root(configured: &str) -> PathBuf {
    let beside_binary = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().and_then(Path::parent).map(|target| target.join("site")));
    if let Some(dir) = beside_binary.filter(|d| d.join("pkg").is_dir()) {
        return dir;
    }
    let built_from = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(configured);
    if built_from.join("pkg").is_dir() {
        return built_from;
    }
    PathBuf::from(configured)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Leptos.toml and cargo-leptos's workspace metadata must name the same files,
    /// or the server would link a bundle the build never produced.
    #[test]
    fn leptos_toml_agrees_with_the_workspace_metadata() {
        let file: toml::Value = toml::from_str(LEPTOS_TOML).unwrap();
        let file = &file["package"]["metadata"]["leptos"];
        let cargo: toml::Value = toml::from_str(include_str!("../../../Cargo.toml")).unwrap();
        let meta = &cargo["workspace"]["metadata"]["leptos"][0];
        for key in ["output-name", "site-root", "site-pkg-dir", "site-addr", "reload-port"] {
            assert_eq!(file.get(key), meta.get(key), "{key} differs between Leptos.toml and Cargo.toml");
        }
    }

    #[test]
    fn an_explicit_site_root_is_made_absolute() {
        let opts = options(Some(Path::new("some/site"))).unwrap();
        assert!(Path::new(&*opts.site_root).is_absolute());
        assert!(opts.site_root.ends_with("some/site"));
        assert_eq!(&*opts.output_name, "runboard");
    }
}
