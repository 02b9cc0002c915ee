//! Who opened the page: an operator steers, a viewer only reads. The server
//! knows from the request's token (`server::access::auth`) and renders the page for
//! it (`<body data-role="view">`); the browser reads that mark when the app
//! takes over, so both render the same controls. A viewer's controls are
//! shown disabled, with why — the server refuses them anyway (403, in words).

use leptos::prelude::*;
use runboard::access::Role;

/// The role the page was opened with; `Operate` when the server asks no token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Opened(pub Role);

/// The role of the request being rendered (server), or the one the server
/// rendered the page for (browser).
pub fn of_request() -> Role {
    #[cfg(feature = "ssr")]
    {
        use_context::<http::request::Parts>().and_then(|p| p.extensions.get::<Role>().copied()).unwrap_or(Role::Operate)
    }
    #[cfg(not(feature = "ssr"))]
    {
        #[cfg(feature = "hydrate")]
        {
            let body = web_sys::window().and_then(|w| w.document()).and_then(|d| d.body());
            if body.and_then(|b| b.get_attribute("data-role")).as_deref() == Some(Role::View.word()) {
                return Role::View;
            }
        }
        Role::Operate
    }
}

/// True when the page was opened with a viewer's token: every control is
/// disabled.
pub fn viewer() -> bool {
    use_context::<Opened>().map_or(Role::Operate, |o| o.0) == Role::View
}

/// What a disabled control says to a viewer.
pub const VIEWER_TITLE: &str = "You opened this console with a viewer's token: you can read everything, not steer";
