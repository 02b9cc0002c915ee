//! The Evidence view, `/evidence?by=&scope=`: pass rates with 95 % Wilson
//! intervals by a factor (chosen in the URL), each level's difference to the
//! baseline with its Newcombe interval, per task and per model, and where the
//! failures fall (by factor, by reason), over the cells the scope selects.
//! The rates and the differences are drawn (server-side charts) above their
//! tables; the public export links carry the same scope.

use leptos::prelude::*;
use leptos_router::hooks::query_signal;
use runboard::results::paired::PairedComparison;
use runboard::results::stats::Proportion;
use runboard::results::{Evidence, Group};

use crate::api;
use crate::api::EvidenceQuery;
use crate::chart::ChartFigure;
use crate::scope::{use_scope, ScopeBar};
use crate::ui::loaded;

#[component]
pub fn EvidencePage() -> impl IntoView {
    let (by, set_by) = query_signal::<String>("by");
    let (scope, _) = use_scope();
    let evidence = crate::codec::resource(
        move || (by.get(), scope.get()),
        |(by, scope)| api::evidence(EvidenceQuery { by, scope }),
    );
    let form = crate::codec::resource(|| (), |_| api::draft_form(api::Nothing {}));
    view! {
        <section class="evidence">
            <div class="toolbar">
                <h1>"Evidence"</h1>
                <Transition fallback=|| ()>
                    {move || form.get().and_then(Result::ok).map(|f| {
                        let mut factors: Vec<String> = f.factors.iter().map(|(k, _)| k.clone()).collect();
                        factors.push("model".into());
                        view! {
                            <label>"By "
                                <select name="by" prop:value=move || by.get().unwrap_or_else(|| "condition".into())
                                    on:change=move |ev| set_by.set(Some(event_target_value(&ev)))>
                                    {factors.into_iter().map(|f| view! { <option value=f.clone()>{f.clone()}</option> }).collect_view()}
                                </select>
                            </label>
                        }
                    })}
                </Transition>
                <span class="exports">"Public export: "
                    <a class="export-csv" href=move || export_href("csv", scope.get()) rel="external">"CSV"</a>" · "
                    <a class="export-json" href=move || export_href("json", scope.get()) rel="external">"JSON"</a>
                </span>
            </div>
            <ScopeBar/>
            {loaded(evidence, "Reading the results…", "Could not read the results", move |e| {
                body(&e).into_any()
            })}
        </section>
    }
    .into_any()
}

/// The public export in `format`, over the scope shown.
fn export_href(format: &str, scope: Option<String>) -> String {
    let mut href = format!("/api/evidence/export?format={format}");
    if let Some(s) = scope.filter(|s| !s.trim().is_empty()) {
        href += &format!("&scope={}", crate::url::encode(&s));
    }
    href
}

fn pct(x: f64) -> String {
    format!("{:.0} %", x * 100.0)
}

/// `2/2 = 100 % [34 %–100 %]`: passes of n, the rate and its Wilson interval.
pub(crate) fn rate_words(p: &Proportion) -> String {
    match (p.rate, p.ci95) {
        (Some(r), Some(ci)) => format!("{}/{} = {} [{}–{}]", p.successes, p.n, pct(r), pct(ci.lo), pct(ci.hi)),
        _ => "no ended cell".into(),
    }
}

fn rates_table(class: &'static str, title: String, groups: &[Group]) -> impl IntoView {
    view! {
        <h2>{title}</h2>
        <table class=format!("rates {class}")>
            <thead><tr><th>"Level"</th><th>"Passed"</th><th>"n"</th><th>"Rate [95 % Wilson]"</th></tr></thead>
            <tbody>
                {groups.iter().map(|g| view! {
                    <tr data-level=g.level.clone()>
                        <td>{g.level.clone()}</td>
                        <td class="passes">{g.passes.successes}</td>
                        <td class="num n">{runboard::basics::numfmt::thousands(g.passes.n)}</td>
                        <td class="rate">{rate_words(&g.passes)}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
}

/// How many discordant pairs a comparison lists on the page (the export
/// and the API carry the counts; the API every pair).
const PAIRS_SHOWN: usize = 50;

/// Each level against the baseline over the cells run on both (every other
/// factor equal): the paired difference, the tasks that drive it, and the
/// pairs that disagree.
fn paired_view(paired: &[PairedComparison]) -> impl IntoView {
    view! {
        <h2>"Paired: the same cells otherwise"</h2>
        <p class="hint">"A pair is a level's cell and the baseline's with every other factor equal (task, phase, seed, repetition…). The verdict is read from the pairs that disagree, in the order they were completed, by a test that holds however often this page is read; its interval is the same test's, so it excludes 0 exactly when the verdict is clear."</p>
        {paired.iter().map(|p| {
            let shown: Vec<_> = p.discordant.iter().take(PAIRS_SHOWN).cloned().collect();
            let more = p.discordant.len().saturating_sub(PAIRS_SHOWN);
            view! {
                <div class="paired" data-level=p.level.clone()>
                    <p class="paired-words" class:clear=p.clear>{p.words()}</p>
                    <p class="fixed-look">{format!("Fixed-look 95 % interval (Newcombe, paired; valid for one look at a size set in advance, not the verdict): {:+.0} to {:+.0} points", p.ci95.lo * 100.0, p.ci95.hi * 100.0)}</p>
                    <table class="paired-tasks">
                        <thead><tr><th>"Task"</th><th>"Pairs"</th><th>{format!("Only {}", p.level)}</th><th>{format!("Only {}", p.baseline)}</th><th>"Both"</th><th>"Neither"</th><th>"Difference"</th></tr></thead>
                        <tbody>{p.by_task.iter().map(|t| view! {
                            <tr data-task=t.task.clone()><td>{t.task.clone()}</td><td>{t.table.n()}</td><td>{t.table.b}</td><td>{t.table.c}</td><td>{t.table.a}</td><td>{t.table.d}</td>
                            <td>{format!("{:+.0} pp", t.difference * 100.0)}</td></tr>
                        }).collect_view()}</tbody>
                    </table>
                    {(!shown.is_empty()).then(|| view! {
                        <details class="discordant">
                            <summary>{format!("{} pairs that disagree", p.discordant.len())}</summary>
                            <ul>{shown.into_iter().map(|d| {
                                // The level cell's samples against its twin's: which flipped.
                                let href = format!(
                                    "/samples/{}/{}?against={}&flipped=1",
                                    crate::url::encode(&d.level_run_set), crate::url::encode(&d.level_cell),
                                    crate::url::encode(&format!("{}/{}", d.baseline_run_set, d.baseline_cell))
                                );
                                view! {
                                    <li>{format!("{}{}: {} passed ", d.key, d.sample.as_ref().map(|s| format!(", sample {s}")).unwrap_or_default(), if d.level_passed { &p.level } else { &p.baseline })}
                                        <a class="to-samples" href=href>"samples that flipped"</a></li>
                                }
                            }).collect_view()}</ul>
                            {(more > 0).then(|| view! { <p class="more">{format!("and {more} more (GET /api/evidence lists every pair)")}</p> })}
                        </details>
                    })}
                </div>
            }
        }).collect_view()}
    }
}

fn body(e: &Evidence) -> impl IntoView {
    if e.n == 0 {
        let why = if e.scope.is_empty() {
            "No cell has ended yet: there is nothing to count.".to_owned()
        } else {
            format!("No ended cell in the scope {}.", e.scope)
        };
        return view! { <p class="empty">{why}</p> }.into_any();
    }
    view! {
        <p class="overall">{format!("{}{}; passed {}.", e.counted_words(),
            if e.scope.is_empty() { String::new() } else { format!(" in {}", e.scope) }, rate_words(&e.overall))}</p>
        <div class="charts">
            <ChartFigure chart=e.charts.rates.clone() empty="" class="rates-chart"/>
            <ChartFigure chart=e.charts.differences.clone() empty="" class="differences-chart"/>
        </div>
        {rates_table("by-factor", format!("By {}", e.by), &e.groups)}
        {(!e.comparisons.is_empty()).then(|| view! {
            <h2>{format!("Against {}", e.comparisons[0].baseline)}</h2>
            <p class="family">{e.family.words()}</p>
            <table class="comparisons">
                <thead><tr><th>"Level"</th><th>"Difference"</th><th>"Verdict"</th><th>"Fixed-look 95 % interval (Newcombe)"</th></tr></thead>
                <tbody>
                    {e.comparisons.iter().map(|c| view! {
                        <tr data-level=c.level.clone() class:clear=c.clear>
                            <td>{format!("{} − {}", c.level, c.baseline)}</td>
                            <td class="difference">{format!("{:+.0} points", c.difference * 100.0)}</td>
                            <td class="verdict">{c.verdict_words()}</td>
                            <td class="fixed-look">{format!("{:+.0} to {:+.0} points", c.ci95.lo * 100.0, c.ci95.hi * 100.0)}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
            <p class="hint">"The verdict holds however often this page is read, batch after batch; the fixed-look interval only for one look at a size set in advance — read after every batch it excludes 0 by chance far more often than one time in twenty."</p>
        })}
        {(!e.paired.is_empty()).then(|| paired_view(&e.paired))}
        {(!e.comparisons.is_empty()).then(|| view! {
            <p class="hint">"Which cells would narrow these intervals most? "<a class="to-next" href=if e.by == "model" { "/next".to_owned() } else { format!("/next?by={}", crate::url::encode(&e.by)) }>"The proposal guide"</a>" ranks the next batches by it."</p>
        })}
        {rates_table("by-task", "By task".into(), &e.by_task)}
        {rates_table("by-model", "By model".into(), &e.by_model)}
        <h2>"Where the cells that did not pass fall"</h2>
        <p class="hint">"A cell did not pass when it ran and did not pass, or when its process failed (counted under Failed)."</p>
        {e.not_passed_by_reason.is_empty().then(|| view! { <p class="empty all-passed">"Every counted cell passed."</p> })}
        <table class="not-passed-reasons" class:hidden=e.not_passed_by_reason.is_empty()>
            <thead><tr><th>"Reason"</th><th>"Cells"</th><th>"Failed"</th></tr></thead>
            <tbody>
                {e.not_passed_by_reason.iter().map(|r| view! {
                    <tr data-reason=r.reason.clone()><td>{r.reason.clone()}</td><td>{r.cells}</td><td>{r.failed}</td></tr>
                }).collect_view()}
            </tbody>
        </table>
        <table class="not-passed-axes" class:hidden=e.not_passed_by_reason.is_empty()>
            <thead><tr><th>"Factor"</th><th>"Level"</th><th>"Not passed"</th><th>"Failed"</th><th>"of"</th></tr></thead>
            <tbody>
                {e.not_passed_by_factor.iter().flat_map(|(f, levels)| levels.iter().filter(|l| l.not_passed > 0).map(|l| view! {
                    <tr><td>{f.clone()}</td><td>{l.level.clone()}</td><td>{l.not_passed}</td><td>{l.failed}</td><td>{l.n}</td></tr>
                }).collect::<Vec<_>>()).collect_view()}
            </tbody>
        </table>
        <p class="hint">"Operational signals (launches, holds, quarantines) are on the Auto page; they are not results."</p>
    }
    .into_any()
}
