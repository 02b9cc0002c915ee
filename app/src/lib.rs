//! runboard's web app: the single-page console (Leptos), rendered on the server
//! and hydrated in the browser.
//!
//! - [`api`] — server functions: the browser's typed calls into the console. On
//!   the server they reach the adapters through the [`api::ssr::Console`] trait,
//!   which the `server` crate implements (so this crate never touches files).
//! - [`pages`] — one module per view.
//! - [`chart`] — a chart the server drew, with its numbers as a table.
//! - [`scope`] — the scope bar the results views share, kept in the URL.
//! - [`url`] — the links pages build.
// Leptos views are deeply nested types; the coverage page's goes past the
// default limit when it is laid out for the browser.
#![recursion_limit = "256"]

pub mod api;
pub mod chart;
pub mod codec;
pub mod guide;
pub mod live;
pub mod pages;
pub mod reveal;
pub mod role;
pub mod scope;
pub mod tags;
pub mod ui;
pub mod url;

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Stylesheet, Title};
use leptos_router::components::{Route, Router, Routes, A};
use leptos_router::path;

/// The HTML document the server renders around the app.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <link rel="icon" href="/favicon.ico"/>
                <AutoReload options=options.clone()/>
                <HydrationScripts options/>
                <MetaTags/>
            </head>
            <body data-role=role::of_request().word()>
                <App/>
            </body>
        </html>
    }
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    provide_context(role::Opened(role::of_request()));
    // Set only in the browser, once the WASM app has taken over the page: the
    // end-to-end tests wait for it, and it cannot be set by server rendering.
    Effect::new(move |_| {
        #[cfg(feature = "hydrate")]
        if let Some(body) = web_sys::window().and_then(|w| w.document()).and_then(|d| d.body()) {
            let _ = body.set_attribute("data-hydrated", "true");
        }
    });
    let campaign = crate::codec::resource(|| (), |_| api::campaign(api::Nothing {}));
    view! {
        <Stylesheet id="leptos" href="/pkg/runboard.css"/>
        <Title text="runboard"/>
        <Router>
            <a class="skip-link" href="#main">"Skip to the content"</a>
            <header class="topbar">
                <a class="brand" href="/">"runboard"</a>
                <Transition fallback=|| ()>
                    {move || campaign.get().and_then(Result::ok).map(|c| view! {
                        <span class="campaign" title=c.root.clone()>
                            {c.name.clone()}
                            {c.demo.then_some(view! { <span class="badge demo">"demo"</span> })}
                        </span>
                    })}
                </Transition>
                <Nav/>
                {role::viewer().then(|| view! {
                    <span class="badge viewer" title=role::VIEWER_TITLE>"viewing only"</span>
                })}
            </header>
            <Transition fallback=|| ()>
                {move || campaign.get().and_then(Result::ok).map(|c| view! { <guide::Guide demo=c.demo/> })}
            </Transition>
            <main id="main" tabindex="-1">
                <Routes fallback=|| view! {
                    <section class="not-found">
                        <h1>"No such page"</h1>
                        <p>"runboard has no page at this address. The pages are in the navigation above; "
                           <a href="/">"the Overview"</a>" says what needs attention."</p>
                    </section>
                }>
                    <Route path=path!("/") view=pages::overview::OverviewPage/>
                    <Route path=path!("/live") view=pages::live::LivePage/>
                    <Route path=path!("/coverage") view=pages::coverage::CoveragePage/>
                    <Route path=path!("/next") view=pages::next::NextPage/>
                    <Route path=path!("/auto") view=pages::auto::AutoPage/>
                    <Route path=path!("/catalogue") view=pages::catalogue::CataloguePage/>
                    <Route path=path!("/evidence") view=pages::evidence::EvidencePage/>
                    <Route path=path!("/timing") view=pages::timing::TimingPage/>
                    <Route path=path!("/reports") view=pages::reports::ReportsPage/>
                    <Route path=path!("/publish") view=pages::publish::PublishPage/>
                    <Route path=path!("/cohorts") view=pages::cohorts::CohortsPage/>
                    <Route path=path!("/research") view=pages::research::ResearchPage/>
                    <Route path=path!("/reports/:run_set") view=pages::reports::ReportPage/>
                    <Route path=path!("/samples/:run_set/:cell") view=pages::samples::SamplesPage/>
                    <Route path=path!("/runs") view=pages::runs::RunsPage/>
                    <Route path=path!("/upkeep") view=pages::upkeep::UpkeepPage/>
                    // A run is named by its path relative to the root (folder names
                    // repeat across batches); a bare folder name also finds it.
                    <Route path=path!("/runs/*name") view=pages::run::RunPage/>
                </Routes>
            </main>
        </Router>
    }
}

/// The views. The results views' links carry the scope in use, so moving
/// between them keeps looking at the same cells.
#[component]
fn Nav() -> impl IntoView {
    let (scope, _) = scope::use_scope();
    let scoped = move |path: &'static str| move || scope::with_scope(path, scope.get().as_deref());
    view! {
        <nav>
            <A href="/" exact=true>"Overview"</A>
            <A href="/live">"Live"</A>
            <A href="/coverage">"Coverage"</A>
            <A href="/next">"Next"</A>
            <A href="/auto">"Auto"</A>
            <A href="/catalogue">"Catalogue"</A>
            <A href=scoped("/evidence")>"Evidence"</A>
            <A href=scoped("/timing")>"Timing"</A>
            <A href=scoped("/reports")>"Reports"</A>
            <A href=scoped("/cohorts")>"Cohorts"</A>
            <A href="/research">"Research"</A>
            <A href="/publish">"Publish"</A>
            <A href="/runs">"Runs"</A>
            <A href="/upkeep">"Upkeep"</A>
        </nav>
    }
}
