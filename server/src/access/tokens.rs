//! The console's tokens on disk (the rules are the core's `runboard::access`).
//!
//! In the data folder (0700), each file readable by its user alone (0600,
//! whatever the umask):
//!
//! - `token` — the console token: 256 random bits as hex, made by the first
//!   `runboard serve` that finds none and kept, so the browser's cookie and
//!   `runboard open` stay good across restarts;
//! - `tokens.json` — the named tokens (`runboard token add`), as SHA-256 only;
//! - `console.json` — the console last started (`{url, root, pid}`, no
//!   token), for `runboard open`.

use std::io::{self, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use runboard::access::{Role, TokenBook, TokenEntry};
use sha2::{Digest, Sha256};

pub const TOKEN_FILE: &str = "token";
pub const TOKENS_FILE: &str = "tokens.json";
pub const CONSOLE_FILE: &str = "console.json";

/// `n` random bytes from the kernel, as lower-case hex.
pub fn random_hex(n: usize) -> io::Result<String> {
    let mut bytes = vec![0u8; n];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(hex(&bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 of a token, as the book keeps it.
pub fn hash(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

/// The console token of the data folder `data`: read when it is there (its
/// mode narrowed to 0600 if someone widened it), else made and kept. The
/// flag says it was made now.
pub fn console_token(data: &Path) -> anyhow::Result<(String, bool)> {
    use anyhow::Context;
    crate::files::atomic::create_private_dir(data)
        .with_context(|| format!("making the data folder {}", data.display()))?;
    let path = data.join(TOKEN_FILE);
    match read_private(&path) {
        Ok(text) => {
            let token = text.trim_end_matches('\n').to_owned();
            if let Some(problem) = runboard::access::token_problem(&token) {
                anyhow::bail!("{}: {problem}; delete it and a new token is made at the next start", path.display());
            }
            Ok((token, false))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let token = random_hex(32).context("reading /dev/urandom for the console token")?;
            let made = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(nix::libc::O_NOFOLLOW)
                .open(&path)
                .and_then(|mut f| f.write_all(format!("{token}\n").as_bytes()));
            match made {
                Ok(()) => Ok((token, true)),
                // Another server made it between our look and our write: theirs.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => console_token(data),
                Err(e) => Err(e).with_context(|| format!("keeping the console token in {}", path.display())),
            }
        }
        Err(e) => Err(e).with_context(|| format!("reading the console token {}", path.display())),
    }
}

/// A file of the data folder that holds a secret: not through a link, and
/// narrowed to 0600 when its mode lets anyone else read it.
fn read_private(path: &Path) -> io::Result<String> {
    let mut f = std::fs::OpenOptions::new().read(true).custom_flags(nix::libc::O_NOFOLLOW).open(path)?;
    let mode = f.metadata()?.permissions().mode();
    if mode & 0o077 != 0 {
        f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        eprintln!(
            "runboard: {} could be read by other accounts (mode {:o}); narrowed to 0600",
            path.display(),
            mode & 0o777
        );
    }
    let mut text = String::new();
    f.read_to_string(&mut text)?;
    Ok(text)
}

/// The named tokens of `data` (none when the book is not there).
pub fn book(data: &Path) -> anyhow::Result<TokenBook> {
    let path = data.join(TOKENS_FILE);
    match read_private(&path) {
        Ok(text) => serde_json::from_str(&text)
            .map_err(|e| anyhow::anyhow!("{}: {e} (fix or delete it; every named token is then gone)", path.display())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(TokenBook::default()),
        Err(e) => Err(anyhow::anyhow!("reading {}: {e}", path.display())),
    }
}

fn save_book(data: &Path, book: &TokenBook) -> anyhow::Result<()> {
    crate::files::atomic::create_private_dir(data)?;
    let bytes = serde_json::to_vec_pretty(book)?;
    crate::files::atomic::write_private(&data.join(TOKENS_FILE), &bytes)?;
    Ok(())
}

/// The lock beside the token book, held while it is read and written
/// again: two `runboard token add` at once each keep their token (without
/// it, the later write drops the earlier's). The operating system's lock, so
/// a killed command releases it; waited for at most [`BOOK_WAIT`].
const BOOK_LOCK: &str = "tokens.lock";

/// The longest a token command waits for another to finish with the book.
const BOOK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

fn lock_book(data: &Path) -> anyhow::Result<std::fs::File> {
    crate::files::atomic::create_private_dir(data)?;
    let path = data.join(BOOK_LOCK);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| anyhow::anyhow!("opening {}: {e}", path.display()))?;
    match crate::files::atomic::lock_waiting(&file, BOOK_WAIT) {
        Ok(true) => Ok(file),
        Ok(false) => anyhow::bail!(
            "another runboard token command holds {} (waited {} s); try again",
            path.display(),
            BOOK_WAIT.as_secs()
        ),
        Err(e) => anyhow::bail!("locking {}: {e}", path.display()),
    }
}

/// Makes a named token: kept as its hash, the token itself returned (to be
/// shown once).
pub fn add(data: &Path, name: &str, role: Role) -> anyhow::Result<String> {
    let _held = lock_book(data)?;
    let mut book = book(data)?;
    let token = random_hex(32)?;
    let entry = TokenEntry { name: name.to_owned(), role, sha256: hash(&token), created: crate::system::clock::now() };
    book.add(entry).map_err(anyhow::Error::msg)?;
    save_book(data, &book)?;
    Ok(token)
}

/// Revokes the token named `name`: refused from the next request on.
pub fn revoke(data: &Path, name: &str) -> anyhow::Result<TokenEntry> {
    let _held = lock_book(data)?;
    let mut book = book(data)?;
    let gone = book.revoke(name).map_err(anyhow::Error::msg)?;
    save_book(data, &book)?;
    Ok(gone)
}

/// What `runboard open` needs of the console last started.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct Started {
    /// `http://127.0.0.1:8850/`, without a token.
    pub url: String,
    pub root: PathBuf,
    pub pid: u32,
    /// The token was given (`--token`, `RUNBOARD_TOKEN`), not the folder's.
    pub token_given: bool,
}

pub fn note_started(data: &Path, started: &Started) -> io::Result<()> {
    crate::files::atomic::write_private(&data.join(CONSOLE_FILE), &serde_json::to_vec_pretty(started)?)
}

/// Forgets the console `pid` started (when it was the one last noted).
pub fn forget_started(data: &Path, pid: u32) {
    let path = data.join(CONSOLE_FILE);
    if last_started(data).is_some_and(|s| s.pid == pid) {
        let _ = std::fs::remove_file(path);
    }
}

/// The console last started from `data`, if its process still runs.
pub fn last_started(data: &Path) -> Option<Started> {
    let text = read_private(&data.join(CONSOLE_FILE)).ok()?;
    let started: Started = serde_json::from_str(&text).ok()?;
    crate::files::atomic::writer_alive(started.pid).then_some(started)
}

/// `runboard token …`: the named tokens of a data folder.
#[derive(Debug, clap::Subcommand)]
pub enum TokenCommand {
    /// Make a token for someone (printed once; kept only as its hash).
    Add {
        /// Its name, as the audit log will say who did what: letters, digits, '.', '_', '-'.
        name: String,
        /// Reads every page, stream and GET; refused every change (403, in words).
        #[arg(long, required_unless_present = "operate", conflicts_with = "operate")]
        view: bool,
        /// May do everything the console's user may.
        #[arg(long)]
        operate: bool,
        /// The data folder (default as `serve`'s).
        #[arg(long, env = "RUNBOARD_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// The named tokens: name, kind, when made (never the tokens).
    List {
        #[arg(long, env = "RUNBOARD_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Revoke a named token: refused from the next request on.
    Revoke {
        name: String,
        #[arg(long, env = "RUNBOARD_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
}

/// Runs `runboard token …`; `json` prints the book (list) as JSON.
pub fn run(cmd: TokenCommand, json: bool) -> anyhow::Result<()> {
    match cmd {
        TokenCommand::Add { name, view, operate: _, data_dir } => {
            let data = crate::files::data_folder::locate(data_dir.as_deref())?;
            let role = if view { Role::View } else { Role::Operate };
            let token = add(&data, &name, role)?;
            println!("{token}");
            eprintln!(
                "runboard: token {name:?} ({role}) made; it is shown this once — hand it over privately. \
                 Open the console with ?token=<it>, or send Authorization: Bearer <it>."
            );
        }
        TokenCommand::List { data_dir } => {
            let data = crate::files::data_folder::locate(data_dir.as_deref())?;
            let book = book(&data)?;
            if json {
                let rows: Vec<_> = book
                    .tokens
                    .iter()
                    .map(|t| serde_json::json!({"name": t.name, "role": t.role, "created": t.created.to_rfc3339()}))
                    .collect();
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else if book.tokens.is_empty() {
                println!("no named tokens (the console token is in {})", data.join(TOKEN_FILE).display());
            } else {
                for t in &book.tokens {
                    println!("{:24} {:8} made {}", t.name, t.role, t.created.to_rfc3339());
                }
            }
        }
        TokenCommand::Revoke { name, data_dir } => {
            let data = crate::files::data_folder::locate(data_dir.as_deref())?;
            let gone = revoke(&data, &name)?;
            println!("revoked {} ({}): refused from the next request on", gone.name, gone.role);
        }
    }
    Ok(())
}

/// `runboard open`: the address of the console last started from the data
/// folder, with its token; `browser` hands it to the desktop's opener.
pub fn open(data_dir: Option<&Path>, browser: bool) -> anyhow::Result<()> {
    let data = crate::files::data_folder::locate(data_dir)?;
    let Some(started) = last_started(&data) else {
        anyhow::bail!(
            "no console started from {} is running; start one with `runboard serve` (it prints the address too)",
            data.display()
        );
    };
    let url = if started.token_given {
        format!("{}?token=<the token given to serve>", started.url)
    } else {
        let (token, _) = console_token(&data)?;
        format!("{}?token={token}", started.url)
    };
    println!("{url}");
    if browser && !started.token_given {
        let opener = std::env::var("BROWSER").unwrap_or_else(|_| "xdg-open".into());
        if let Err(e) = std::process::Command::new(&opener).arg(&url).spawn() {
            anyhow::bail!("could not run {opener} to open it: {e}; open the address above yourself");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_console_token_is_made_once_and_kept_private() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let (t, made) = console_token(&data).unwrap();
        assert!(made && t.len() == 64 && t.bytes().all(|b| b.is_ascii_hexdigit()), "{t}");
        let mode = std::fs::metadata(data.join(TOKEN_FILE)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(std::fs::metadata(&data).unwrap().permissions().mode() & 0o777, 0o700);
        assert_eq!(console_token(&data).unwrap(), (t.clone(), false));
        // Widened by someone: narrowed again when read.
        std::fs::set_permissions(data.join(TOKEN_FILE), std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(console_token(&data).unwrap().0, t);
        assert_eq!(std::fs::metadata(data.join(TOKEN_FILE)).unwrap().permissions().mode() & 0o777, 0o600);
    }

    /// Sixteen `token add` at once, each by its own thread: every token is
    /// kept (the book is read and written again under its lock).
    #[test]
    fn tokens_added_at_once_are_all_kept() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().to_path_buf();
        let made: Vec<String> = std::thread::scope(|s| {
            let adds: Vec<_> = (0..16)
                .map(|i| {
                    s.spawn({
                        let data = &data;
                        move || add(data, &format!("t{i}"), Role::View).unwrap()
                    })
                })
                .collect();
            adds.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let kept = book(&data).unwrap();
        assert!(made.iter().all(|t| kept.find(&hash(t)).is_some()), "{kept:?}");
    }

    #[test]
    fn named_tokens_are_kept_as_hashes_only() {
        let dir = tempfile::tempdir().unwrap();
        let t = add(dir.path(), "ana", Role::View).unwrap();
        let text = std::fs::read_to_string(dir.path().join(TOKENS_FILE)).unwrap();
        assert!(!text.contains(&t) && text.contains(&hash(&t)), "{text}");
        assert_eq!(book(dir.path()).unwrap().find(&hash(&t)).map(|e| e.role), Some(Role::View));
        assert!(add(dir.path(), "ana", Role::Operate).unwrap_err().to_string().contains("exists already"));
        revoke(dir.path(), "ana").unwrap();
        assert!(book(dir.path()).unwrap().find(&hash(&t)).is_none());
        assert_eq!(hash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
