//! The rounds tab: each written round counted (its t threshold and its plan),
//! then its trials filtered and a page at a time. The filters live in the URL,
//! so a filtered page is a link.

use leptos::prelude::*;
use leptos_router::hooks::query_signal;
use runboard::runview::admission::ThresholdSource;
use runboard::runview::trials::{TrialPage, DEFAULT_PAGE};
use runboard::runview::view::RunRounds;

use super::num;
use crate::api;
use crate::api::TrialParams;
use crate::ui::loaded;

fn source(s: Option<ThresholdSource>) -> &'static str {
    match s {
        Some(ThresholdSource::AdmissionEvent) => "admission event",
        Some(ThresholdSource::AcceptedFactor) => "accepted factor",
        Some(ThresholdSource::Refusal) => "quoted by a refusal",
        Some(ThresholdSource::CarriedOver) => "carried over",
        None => "not given",
    }
}

/// The tab, made once per run: a new version of the run re-reads its tables
/// in place, so the reader's scroll and what they type in the filters stay.
#[component]
pub(super) fn RoundsTab(name: String, version: Signal<String>, written: Signal<usize>) -> impl IntoView {
    let any = Memo::new(move |_| written.get() > 0);
    view! {
        <Show when=move || any.get() fallback=|| view! { <p class="empty">"No round written yet."</p> }>
            <RoundCounts name=name.clone() version=version/>
            <Trials name=name.clone() version=version/>
        </Show>
    }
}

/// The per-round table, its own read: it grows with the run, and the view a
/// live page polls does not carry it.
#[component]
fn RoundCounts(name: String, version: Signal<String>) -> impl IntoView {
    let counts = crate::codec::resource(
        move || (name.clone(), version.get()),
        |(n, _)| api::run_rounds(api::RunName { name: n }),
    );
    // With a round chosen the table folds away, so that round's trials come
    // right under it (a 40-round table would push them out of sight).
    let (round, _) = query_signal::<String>("round");
    view! {
        {loaded(counts, "Counting the rounds…", "Could not count the rounds", move |r| {
            round_table(r, round.get().is_none()).into_any()
        })}
    }
}

fn round_table(r: RunRounds, open: bool) -> impl IntoView {
    let RunRounds { round_counts, plans, thresholds } = r;
    let counts: Vec<_> = round_counts.into_iter().rev().collect();
    view! {
        <details class="round-counts" open=open>
            <summary>{format!("{} written rounds", counts.len())}</summary>
            <table class="rounds">
                <thead><tr><th>"Round"</th><th>"Attempts"</th><th>"Scored"</th><th>"Accepted"</th><th>"Tokens"</th><th>"t threshold"</th><th>"Plan (picked parents)"</th></tr></thead>
                <tbody>
                    {counts.into_iter().map(|c| {
                        let th = thresholds.iter().find(|t| t.round == c.round).copied();
                        let plan = plans.iter().find(|p| p.round == c.round).map(|p| {
                            p.slots.iter().map(|s| match &s.picked {
                                Some(parents) if !parents.is_empty() => format!("{}: {}", s.slot, parents.join("+")),
                                _ => s.slot.to_string(),
                            }).collect::<Vec<_>>().join(" · ")
                        });
                        view! {
                            <tr class="round-count" data-round=c.round>
                                <td><a href=format!("?tab=rounds&round={}", c.round) title="Show this round's trials">{c.round}</a></td>
                                <td>{c.attempts}</td>
                                <td>{c.scored}</td>
                                <td>{c.accepted}</td>
                                <td class="num">{runboard::basics::numfmt::thousands(c.tokens)}</td>
                                <td class="threshold" title=source(th.and_then(|t| t.source))>{num(th.and_then(|t| t.t))}</td>
                                <td class="plan">{plan.unwrap_or_else(|| "no plan recorded".into())}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </details>
    }
}

#[component]
fn Trials(name: String, version: Signal<String>) -> impl IntoView {
    // The filters travel as the URL gives them; the server's one parser reads
    // them, so a bad value is refused with the same words as over REST.
    let (round, _) = query_signal::<String>("round");
    let (stage, _) = query_signal::<String>("stage");
    let (outcome, _) = query_signal::<String>("outcome");
    let (text, _) = query_signal::<String>("q");
    let (page, _) = query_signal::<usize>("page");
    let key = move || (round.get(), stage.get(), outcome.get(), text.get(), page.get().unwrap_or(0));
    let run = name.clone();
    let trials = crate::codec::resource(
        move || (key(), version.get()),
        move |((round, stage, outcome, q, page), _)| {
            let params = TrialParams {
                round,
                stage,
                outcome,
                q,
                intraday: None,
                offset: Some((page * DEFAULT_PAGE).to_string()),
                limit: Some(DEFAULT_PAGE.to_string()),
            };
            api::run_trials(api::RunTrials { name: run.clone(), params })
        },
    );
    // A round (or filter) chosen after the page opened: its trials are
    // brought into view where the reader is looking.
    crate::reveal::reveal_on_change(move || round.get(), "trials");
    view! {
        <section id="trials" class="trials-section">
        <h3 class="trials-heading">{move || match round.get().filter(|r| !r.is_empty()) {
            Some(r) => format!("Trials of round {r}"),
            None => "Trials".to_owned(),
        }}</h3>
        <form class="trial-filters" method="get">
            <input type="hidden" name="tab" value="rounds"/>
            <label>"Round "<input type="number" name="round" min="0" prop:value=move || round.get().unwrap_or_default()/></label>
            <label>"Stage "<input type="text" name="stage" list="stages" prop:value=move || stage.get().unwrap_or_default()/></label>
            <label>"Outcome "
                <select name="outcome" prop:value=move || outcome.get().unwrap_or_default()>
                    <option value="">"any"</option>
                    <option value="accepted">"accepted"</option>
                    <option value="refused">"refused after scoring"</option>
                    <option value="unscored">"never scored"</option>
                </select>
            </label>
            <label>"Text "<input type="search" name="q" placeholder="trial, factor, reason, code" prop:value=move || text.get().unwrap_or_default()/></label>
            <button type="submit">"Filter"</button>
            <a href="?tab=rounds">"clear"</a>
        </form>
        {loaded(trials, "Reading the trials…", "Could not read the trials", move |p| {
            trial_table(p, page.get().unwrap_or(0), move |n| {
                    let mut q = vec!["tab=rounds".to_owned()];
                    if let Some(r) = round.get_untracked() { q.push(format!("round={r}")); }
                    for (k, v) in [("stage", stage.get_untracked()), ("outcome", outcome.get_untracked()), ("q", text.get_untracked())] {
                        if let Some(v) = v.filter(|v| !v.is_empty()) { q.push(format!("{k}={}", crate::url::encode(&v))); }
                    }
                    q.push(format!("page={n}"));
                    format!("?{}", q.join("&"))
                }).into_any()
        })}
        </section>
    }
}

fn trial_table(p: TrialPage, page: usize, link: impl Fn(usize) -> String + Send + Sync + 'static) -> impl IntoView {
    let pages = p.matching.div_ceil(DEFAULT_PAGE).max(1);
    let shown = format!(
        "{}–{} of {} matching ({} attempts in all)",
        if p.trials.is_empty() { 0 } else { p.offset + 1 },
        p.offset + p.trials.len(),
        p.matching,
        p.total
    );
    view! {
        <datalist id="stages">{p.stages.iter().map(|s| view! { <option value=s.clone()/> }).collect_view()}</datalist>
        <p class="trial-count">{shown}</p>
        {crate::ui::pager(page, pages, ("← newer", "older →"), format!("page {} of {pages}", page + 1),
            crate::ui::PageTo::Href(Callback::new(link)))}
        <table class="trials">
            <thead><tr><th>"Round"</th><th>"Slot"</th><th>"Trial"</th><th>"Attempt"</th><th>"t (directed)"</th><th>"max |corr|"</th><th>"Tokens"</th><th>"Stage"</th><th>"Outcome"</th><th></th></tr></thead>
            <tbody>
                {p.trials.into_iter().map(|row| {
                    let t = row.trial;
                    let lineage = t.trial.clone().map(|n| format!("?tab=lineage&trial={}", crate::url::encode(&n)));
                    view! {
                        <tr class="trial" class:accepted=t.is_accepted() data-round=t.round>
                            <td>{t.round}</td>
                            <td>{t.slot.map(|s| s.to_string())}</td>
                            <td class="trial-name">{t.trial.clone()}{t.factor.clone().map(|f| view! { <span class="factor">{format!(" → {f}")}</span> })}</td>
                            <td>{t.attempt.map(|a| a.to_string())}</td>
                            <td>{num(row.directed_t)}</td>
                            <td>{num(t.max_abs_corr)}</td>
                            <td class="num">{t.tokens.map(runboard::basics::numfmt::thousands)}</td>
                            <td>{t.stage.clone()}</td>
                            <td class="outcome">{t.outcome_text()}</td>
                            <td>{row.intraday.then(|| view! { <span class="badge intraday">"intraday"</span> })}
                                {lineage.map(|href| view! { <a class="lineage-link" href=href>"lineage"</a> })}</td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
}
