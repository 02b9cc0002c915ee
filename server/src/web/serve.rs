//! `runboard serve`: the web console.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context;

use crate::access::auth::Access;
use crate::console::LocalConsole;
use crate::web::http::{app, AppState};

/// `runboard serve`'s options: the command line's flags, parsed by clap.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeOptions {
    /// The campaign folder to serve (the global `--root`; none: the demo).
    #[arg(skip)]
    pub root: Option<PathBuf>,
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    #[arg(long, default_value_t = 8850)]
    pub port: u16,
    /// Exit after this many minutes without a request (fractions allowed); 0 or less disables it.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub idle_minutes: f64,
    /// The console token to ask (default: the data folder's own, made once and kept) [env: RUNBOARD_TOKEN; set but empty counts as unset].
    #[arg(long)]
    pub token: Option<String>,
    /// Ask no token at all: any account on this machine may read and steer the console (loopback only).
    #[arg(long, conflicts_with = "token")]
    pub no_token: bool,
    /// A Host name to answer besides localhost, 127.0.0.1, ::1 and the bound address (repeatable).
    #[arg(long = "allow-host", value_name = "NAME")]
    pub allow_hosts: Vec<String>,
    /// Seconds a connection has to send a whole request head, from opening or its previous response.
    #[arg(long = "header-timeout", value_name = "SECONDS")]
    pub header_timeout_s: Option<f64>,
    /// Connections served at once (default 512, fewer under a low descriptor limit).
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
    /// The autopilot's tick, in seconds (it acts only while auto mode is on); 0 turns its loop off.
    #[arg(long = "auto-tick", value_name = "SECONDS", default_value_t = 30.0)]
    pub auto_tick_s: f64,
    /// Where runboard keeps its own data, such as the demo campaign.
    #[arg(long, env = "RUNBOARD_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// The built site (pkg/, public files); found beside the binary by default.
    #[arg(long)]
    pub site_root: Option<PathBuf>,
}

impl ServeOptions {
    /// The token from `--token`, else from `RUNBOARD_TOKEN`; exported empty, the
    /// variable is unset (how a shell clears it). Anything else is checked.
    pub fn with_env_token(mut self) -> Self {
        self.token = self.token.or_else(|| std::env::var("RUNBOARD_TOKEN").ok().filter(|t| !t.is_empty()));
        self
    }
}

/// Why the server stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Signal,
    Idle,
}

/// What a server serves: a campaign of the user's, or the demo of a data
/// folder, claimed for as long as the server runs.
enum Serving {
    Campaign(PathBuf),
    Demo { data: PathBuf, lease: crate::demo::DemoLease },
}

pub fn parse_host(host: &str) -> anyhow::Result<IpAddr> {
    if host == "localhost" {
        return Ok(IpAddr::from([127, 0, 0, 1]));
    }
    host.parse().with_context(|| format!("--host {host:?} is not an IP address (try 127.0.0.1)"))
}

pub async fn serve(opts: ServeOptions) -> anyhow::Result<Ended> {
    // Every option is checked before anything is opened, prepared or said.
    let (ip, limits) = checked(&opts)?;
    let leptos = crate::web::site::options(opts.site_root.as_deref())?;
    if let Some(root) = &opts.root {
        anyhow::ensure!(root.is_dir(), "campaign root {} does not exist or is not a folder", root.display());
    }
    // Every check that can refuse comes before anything is written: the
    // address bound (a port in use refuses it), the demo's folder claimed
    // (another server of it refuses this one); only then is a demo made.
    let listener = bind(SocketAddr::new(ip, opts.port)).await?;
    // The data folder, once: the demo's home (which needs it), the list
    // cache and the tokens (which do without).
    let located = crate::files::data_folder::locate(opts.data_dir.as_deref());
    let data = located.as_ref().ok().cloned();
    let serving = match &opts.root {
        Some(root) => Serving::Campaign(root.clone()),
        None => {
            let data = located?;
            let lease = crate::demo::DemoLease::claim(&data)?;
            Serving::Demo { data, lease }
        }
    };
    // Who may talk to it, before anything is prepared or launched: a token
    // file that cannot be read stops the start here.
    let hosts = crate::access::auth::AllowedHosts::new(ip, &opts.allow_hosts);
    let (access, signed) = access(&opts, data.as_deref(), hosts)?;
    let (root, demo, writer) = match &serving {
        Serving::Campaign(root) => (root.clone(), false, None),
        Serving::Demo { data, lease } => {
            let (root, writer) = crate::demo::prepare(data, lease).await?;
            (root, true, Some(writer))
        }
    };
    let auto_tick = (opts.auto_tick_s > 0.0).then(|| Duration::from_secs_f64(opts.auto_tick_s));
    let console = std::sync::Arc::new(open_console(&root, demo, data.as_deref(), auto_tick)?);
    // The threads of `serve` (ARCHITECTURE.md): off the async runtime, each
    // ending with the server.
    let auto_stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    start_threads(&console, auto_tick, &auto_stop)?;
    // The demo launches its next batch through the one launch path, so the
    // Live view has something to show at once.
    if demo {
        let c = console.clone();
        match tokio::task::spawn_blocking(move || crate::demo::launch_batch(&c)).await {
            Ok(Ok(run_set)) => tracing::info!("the demo launched {run_set}"),
            Ok(Err(e)) => eprintln!("runboard: {e:#}"),
            Err(e) => eprintln!("runboard: launching the demo batch: {e}"),
        }
    }

    let local = listener.local_addr()?;
    let state = AppState::new(leptos, console.clone(), access);
    let shutdown = state.shutdown.clone();
    let ended = std::sync::Arc::new(std::sync::Mutex::new(Ended::Signal));

    // Signals: SIGINT (ctrl-c) and SIGTERM both shut down gracefully, caught
    // from here on (before the address is printed).
    {
        let shutdown = shutdown.clone();
        let signals = crate::system::signals::Terminated::register();
        tokio::spawn(async move {
            signals.wait().await;
            shutdown.cancel();
        });
    }
    if opts.idle_minutes > 0.0 {
        watch_idle(opts.idle_minutes, &state, ended.clone());
    }

    let url = format!("http://{local}/");
    println!("runboard: serving {} ({}) at {url}", if demo { "the demo campaign" } else { "campaign" }, root.display());
    say_how_to_open(&url, &signed);
    if let Some(data) = &data {
        let started = crate::access::tokens::Started {
            url: url.clone(),
            root: root.clone(),
            pid: std::process::id(),
            token_given: matches!(signed, Signed::Given),
        };
        if let Err(e) = crate::access::tokens::note_started(data, &started) {
            eprintln!("runboard: noting the console for `runboard open` in {}: {e}", data.display());
        }
    }
    crate::web::listen::serve(listener, app(state), limits, shutdown.clone()).await;
    if let Some(data) = &data {
        crate::access::tokens::forget_started(data, std::process::id());
    }
    auto_stop.store(true, Ordering::Relaxed);
    if let Some(w) = writer {
        w.stop().await;
    }
    if demo {
        // The demo's batch belongs to this server: it ends with it.
        let c = console.clone();
        let _ = tokio::task::spawn_blocking(move || c.campaign().end_running_units()).await;
    }
    let why = *ended.lock().unwrap_or_else(|p| p.into_inner());
    // The demo's folder is free for the next server only now.
    drop(serving);
    Ok(why)
}

/// The listening socket; a port in use refuses the start in words.
async fn bind(addr: SocketAddr) -> anyhow::Result<tokio::net::TcpListener> {
    match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => Ok(l),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => anyhow::bail!(
            "port {} on {} is already in use (another runboard?); choose another with --port",
            addr.port(),
            addr.ip()
        ),
        Err(e) => Err(e).with_context(|| format!("binding {addr}")),
    }
}

/// The console over `root`: its run list's parse kept in the data folder
/// between starts (a restarted server opens only the files that changed;
/// without a data folder the list works the same, only a first list after a
/// start is slower), and the autopilot's tick when it has one.
fn open_console(
    root: &std::path::Path,
    demo: bool,
    data: Option<&std::path::Path>,
    auto_tick: Option<Duration>,
) -> anyhow::Result<LocalConsole> {
    let mut console = LocalConsole::open(root, demo)?;
    if let Some(data) = data {
        let key = runboard::basics::hash::fnv1a(console.root().as_os_str().as_encoded_bytes());
        console = console.with_list_cache(data.join("list-cache").join(format!("{key:016x}.json")));
    }
    if let Some(every) = auto_tick {
        console = console.with_auto_tick(every);
    }
    Ok(console)
}

/// The options, each checked, before anything is opened: the address to
/// bind and the connection limits.
fn checked(opts: &ServeOptions) -> anyhow::Result<(std::net::IpAddr, crate::web::listen::Limits)> {
    let ip = parse_host(&opts.host)?;
    let mut limits = crate::web::listen::Limits::standard();
    if let Some(s) = opts.header_timeout_s {
        anyhow::ensure!(s > 0.0 && s <= 3600.0, "--header-timeout {s} must be more than 0 and at most 3600 seconds");
        limits.header_read = Duration::from_secs_f64(s);
    }
    if let Some(n) = opts.max_connections {
        anyhow::ensure!(n >= 1, "--max-connections must be at least 1");
        limits.max_connections = n;
    }
    anyhow::ensure!(
        opts.auto_tick_s == 0.0 || (0.2..=3600.0).contains(&opts.auto_tick_s),
        "--auto-tick {} must be 0 (no autopilot loop) or between 0.2 and 3600 seconds",
        opts.auto_tick_s
    );
    if let Some(t) = &opts.token {
        if let Some(problem) = runboard::access::token_problem(t) {
            anyhow::bail!("--token / RUNBOARD_TOKEN cannot be used: {problem}; give a non-empty token without surrounding whitespace");
        }
    }
    for name in &opts.allow_hosts {
        anyhow::ensure!(
            !name.trim().is_empty() && !name.contains(['/', ' ', '@']),
            "--allow-host {name:?} is not a host name"
        );
    }
    if !ip.is_loopback() && opts.no_token {
        anyhow::bail!(
            "binding {ip} makes the console reachable from other machines: it cannot be served with --no-token"
        );
    }
    Ok((ip, limits))
}

/// How the console's token came to be, for what `serve` says at start.
enum Signed {
    /// `--no-token`: none asked.
    Nobody,
    /// `--token` or `RUNBOARD_TOKEN`.
    Given,
    /// The data folder's own (`made`: just now), or one made for this run
    /// only when there is no data folder.
    Folder { token: String, made: bool, kept: Option<PathBuf> },
}

/// Who the server lets in: the token given, else the data folder's own
/// (made once), else (no data folder) one made for this run only.
fn access(
    opts: &ServeOptions,
    data: Option<&std::path::Path>,
    hosts: crate::access::auth::AllowedHosts,
) -> anyhow::Result<(Access, Signed)> {
    if opts.no_token {
        return Ok((Access::open(hosts), Signed::Nobody));
    }
    let book = data.map(std::path::Path::to_path_buf);
    if let Some(t) = &opts.token {
        return Ok((Access::with_token(t.clone(), book, hosts), Signed::Given));
    }
    let (token, made, kept) = match data {
        Some(d) => {
            let (token, made) = crate::access::tokens::console_token(d)?;
            (token, made, Some(d.join(crate::access::tokens::TOKEN_FILE)))
        }
        None => (crate::access::tokens::random_hex(32)?, true, None),
    };
    Ok((Access::with_token(token.clone(), book, hosts), Signed::Folder { token, made, kept }))
}

/// The address to open, with its token when the server knows it, said once
/// at start (the line after the address); `--no-token` said loudly.
fn say_how_to_open(url: &str, signed: &Signed) {
    match signed {
        Signed::Nobody => {
            let warning = "runboard: WARNING: --no-token: no token is asked — every account on this machine \
                           can read every result and launch, pause or stop this console's batches";
            println!("{warning}");
            eprintln!("{warning}");
        }
        Signed::Given => println!("runboard: open {url}?token=<the token given> once in your browser"),
        Signed::Folder { token, made, kept } => {
            println!("runboard: open {url}?token={token}");
            match kept {
                Some(path) if *made => {
                    println!("runboard: a new console token was made and kept in {} (yours alone)", path.display())
                }
                Some(path) => println!(
                    "runboard: the console token is kept in {}; `runboard open` prints this address again",
                    path.display()
                ),
                None => println!("runboard: no data folder, so this token lasts as long as this server"),
            }
        }
    }
}

/// The background threads of a server (ARCHITECTURE.md, "The threads of
/// `serve`"), each ending when `stop` is set: the autopilot's loop (when it
/// ticks), the run list kept current, the spend guard.
fn start_threads(
    console: &std::sync::Arc<LocalConsole>,
    auto_tick: Option<Duration>,
    stop: &std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> anyhow::Result<()> {
    if let Some(every) = auto_tick {
        let c = console.clone();
        let pass = move || crate::auto::autopilot::loop_pass(c.campaign());
        let first = crate::system::periodic::First::AfterOnePeriod;
        crate::system::periodic::spawn(
            "runboard-autopilot",
            "the autopilot's loop",
            stop.clone(),
            first,
            move || every,
            pass,
        );
    }
    // The run list: answered from the list cache at once while one walk
    // checks it, and kept current from then on (`RunIndex::keep_current`).
    let (c, list_stop) = (console.clone(), stop.clone());
    std::thread::Builder::new()
        .name("runboard-run-list".into())
        .spawn(move || c.runs().keep_current(&list_stop))
        .map_err(|e| anyhow::anyhow!("starting the run list's thread: {e}"))?;
    // The spend guard (caps and stalls), whether or not auto mode is on.
    crate::live::guard::spawn(console.clone(), stop.clone());
    Ok(())
}

/// The idle watchdog (`--idle-minutes`): shuts the server down once no
/// request came for `minutes` — an open version stream counts as a reader —
/// and says why it ended.
fn watch_idle(minutes: f64, state: &AppState, ended: std::sync::Arc<std::sync::Mutex<Ended>>) {
    let idle_ms = (minutes * 60_000.0) as i64;
    let (last_request, open_streams) = (state.last_request.clone(), state.open_streams.clone());
    let shutdown = state.shutdown.clone();
    // Check four times per timeout, at most once a minute.
    let every = Duration::from_millis((idle_ms / 4).clamp(200, 60_000) as u64);
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = shutdown.cancelled() => return,
            }
            // An open stream (a page following a run, the list or the
            // live state) is a reader: the server stays.
            if open_streams.load(Ordering::Relaxed) > 0 {
                last_request.store(crate::system::clock::now().millis(), Ordering::Relaxed);
            }
            let quiet = crate::system::clock::now().millis() - last_request.load(Ordering::Relaxed);
            if quiet >= idle_ms {
                eprintln!("runboard: no request for {minutes} min; exiting (--idle-minutes)");
                *ended.lock().unwrap_or_else(|p| p.into_inner()) = Ended::Idle;
                shutdown.cancel();
                return;
            }
        }
    });
}
