//! The web console: `runboard serve` (binding, access, shutdown, the idle
//! watchdog), accepting connections within bounds, the router (pages,
//! server functions, the JSON API, static files), revalidated static files,
//! the Leptos site options, the shared version watchers the streams follow,
//! and the one HTTP error type.

pub mod assets;
pub mod error;
pub mod follow;
pub mod http;
pub mod listen;
pub mod serve;
pub mod site;
