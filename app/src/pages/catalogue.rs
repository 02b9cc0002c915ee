//! The Catalogue view, `/catalogue`: every model and endpoint the campaign
//! names, whether each can be used now and why not (an endpoint that does
//! not answer or does not report its models, the autopilot's quarantine, a
//! credit flag, a daily cap reached), and what each has been used for.
//! Operational signals, labelled so. Read again every 30 s while visible;
//! "Probe again" asks every endpoint now.

use leptos::prelude::*;
use runboard::console::catalogue::{CatalogueView, EndpointRow, ModelRow, Use};

use crate::api;
use crate::api::CatalogueQuery;
use crate::ui::loaded;

#[component]
pub fn CataloguePage() -> impl IntoView {
    // (reads so far, whether this read probes again)
    let ask = RwSignal::new((0u64, false));
    let view_now = crate::codec::resource(
        move || ask.get(),
        |(_, fresh)| api::catalogue(CatalogueQuery { fresh: fresh.then(|| "true".to_owned()) }),
    );
    #[cfg(feature = "hydrate")]
    crate::live::every_while_visible(std::time::Duration::from_secs(30), move || {
        ask.try_update(|(n, fresh)| {
            *n += 1;
            *fresh = false;
        });
    });
    view! {
        <section class="catalogue">
            <div class="toolbar">
                <h1>"Catalogue"</h1>
                <button type="button" class="probe" on:click=move |_| ask.update(|(n, fresh)| { *n += 1; *fresh = true; })>
                    "Probe again"
                </button>
            </div>
            {loaded(view_now, "Reading the catalogue and probing its endpoints…", "Could not read the catalogue", move |c| {
                body(&c).into_any()
            })}
        </section>
    }
}

fn used_cells(u: &Use) -> impl IntoView {
    view! {
        <td class="num run-sets">{u.run_sets}</td>
        <td class="num cells">{runboard::basics::numfmt::thousands(u.cells as u64)}</td>
        <td class="num tokens">{runboard::basics::numfmt::thousands(u.tokens)}</td>
        <td class="last-used">{u.last_used.map(|t| t.to_display()).unwrap_or_else(|| "never".into())}</td>
    }
}

fn availability(available: bool, words: &str) -> impl IntoView {
    let class = if available { "status available" } else { "status unavailable" };
    view! { <td class=class>{words.to_owned()}</td> }
}

fn model_row(m: &ModelRow, currency: &str) -> impl IntoView {
    let currency = currency.to_owned();
    view! {
        <tr class="model" data-name=m.name.clone() data-available=m.available.to_string()>
            <td class="name">{m.name.clone()}</td>
            <td class="kind">{m.kind.as_str()}</td>
            <td class="num price">{if m.price_per_1k_tokens > 0.0 { format!("{:.4}", m.price_per_1k_tokens) } else { "–".into() }}</td>
            <td class="cap">{match m.daily_cap {
                Some(cap) => format!("{} of {cap}", m.launched_today),
                None => format!("{} (no cap)", m.launched_today),
            }}</td>
            <td class="endpoints">{if m.endpoints.is_empty() { "–".to_owned() } else { m.endpoints.join(", ") }}</td>
            {used_cells(&m.used)}
            <td class="num cost">{m.used.cost.map(|c| runboard::basics::numfmt::money(c, &currency)).unwrap_or_else(|| "–".into())}</td>
            {availability(m.available, &m.words)}
        </tr>
    }
}

fn endpoint_row(e: &EndpointRow) -> impl IntoView {
    let probe = match &e.probe {
        None => "not probed".to_owned(),
        Some(p) if !p.answers => format!("no answer: {}", p.error.clone().unwrap_or_default()),
        Some(p) if p.reported.is_empty() => "answers, reports no model".to_owned(),
        Some(p) => format!("reports {}", p.reported.join(", ")),
    };
    view! {
        <tr class="endpoint" data-name=e.name.clone() data-available=e.available.to_string()>
            <td class="name">{e.name.clone()}</td>
            <td class="url"><code>{e.url.clone()}</code></td>
            <td class="backend">{e.backend.clone()}</td>
            <td class="serves">{e.models.join(", ")}</td>
            <td class="preset">{e.request_preset.clone().unwrap_or_else(|| "–".into())}</td>
            <td class="probe">{probe}</td>
            <td class="quarantine">{e.quarantine.as_ref().map(|q| format!("until {} ({} failure(s))", q.retry_at.to_display(), q.failures)).unwrap_or_else(|| "–".into())}</td>
            {used_cells(&e.used)}
            {availability(e.available, &e.words)}
        </tr>
    }
}

fn body(c: &CatalogueView) -> impl IntoView {
    let empty = c.models.is_empty() && c.endpoints.is_empty();
    view! {
        <p class="note operational">{c.note.clone()}
            {c.probed_at.map(|t| format!(" Endpoints probed {}.", t.to_display()))}
        </p>
        {empty.then(|| view! {
            <p class="empty">"The catalogue is empty: campaign.toml names no [[models]] and no [[endpoints]]."</p>
        })}
        {(!c.models.is_empty()).then(|| view! {
            <h2>"Models"</h2>
            <table class="models">
                <thead><tr>
                    <th>"Model"</th><th>"Kind"</th><th>"Price / 1k tokens"</th><th>"Launched today (UTC)"</th>
                    <th>"Endpoints"</th><th>"Run sets"</th><th>"Cells"</th><th>"Tokens"</th><th>"Last used"</th>
                    <th>"Cost"</th><th>"Now"</th>
                </tr></thead>
                <tbody>{c.models.iter().map(|m| model_row(m, &c.currency)).collect_view()}</tbody>
            </table>
        })}
        {(!c.endpoints.is_empty()).then(|| view! {
            <h2>"Endpoints"</h2>
            <table class="endpoints">
                <thead><tr>
                    <th>"Endpoint"</th><th>"URL"</th><th>"Backend"</th><th>"Serves"</th><th>"Request preset"</th>
                    <th>"At /models"</th><th>"Quarantine"</th><th>"Run sets"</th><th>"Cells"</th><th>"Tokens"</th>
                    <th>"Last used"</th><th>"Now"</th>
                </tr></thead>
                <tbody>{c.endpoints.iter().map(endpoint_row).collect_view()}</tbody>
            </table>
        })}
        {(!c.uncatalogued.is_empty()).then(|| view! {
            <p class="uncatalogued">"Run sets naming a model or endpoint no longer in the catalogue: "
                {c.uncatalogued.join(", ")}</p>
        })}
    }
}
