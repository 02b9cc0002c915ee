//! The Research view, `/research`: the research state's summary — questions
//! (open first) with their hypotheses and status, the cohorts that bear on
//! each with their pass rates now, the latest decisions — a form to record a
//! decision, and the whole state to edit as JSON (refused with every reason,
//! nothing lost). Repairs made on loading are said.

use leptos::prelude::*;
use runboard::results::research::{DecisionRequest, QuestionSummary, ResearchState, ResearchView};

use crate::api::{get_research, research_decide, research_save, ApiError};

fn linked(list: &[(String, Option<runboard::results::stats::Proportion>)]) -> String {
    list.iter()
        .map(|(name, p)| match p.as_ref().and_then(|p| p.rate.map(|r| (r, p.n))) {
            Some((rate, n)) => format!("{name}: {:.0} % of {n}", rate * 100.0),
            None => format!("{name}: no figures"),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[component]
pub fn ResearchPage() -> impl IntoView {
    let refresh = RwSignal::new(0u64);
    let research = Resource::new(move || refresh.get(), |_| get_research());
    let said = RwSignal::new(None::<Result<String, ApiError>>);
    let decision = RwSignal::new(String::new());
    let question = RwSignal::new(String::new());
    let json = RwSignal::new(String::new());
    let decide = Action::new(|r: &DecisionRequest| {
        let r = r.clone();
        async move { research_decide(r).await.map(|_| "Decision recorded.".to_owned()) }
    });
    let save = Action::new(|s: &ResearchState| {
        let s = s.clone();
        async move { research_save(s).await.map(|_| "Research state saved.".to_owned()) }
    });
    let answered = move |r: Result<String, ApiError>| {
        if r.is_ok() {
            refresh.update(|n| *n += 1);
        }
        said.set(Some(r));
    };
    Effect::new(move |_| {
        if let Some(r) = decide.value().get() {
            answered(r);
        }
    });
    Effect::new(move |_| {
        if let Some(r) = save.value().get() {
            answered(r);
        }
    });
    // The editor starts from the state as read (and follows a save).
    Effect::new(move |_| {
        if let Some(Ok(v)) = research.get() {
            json.set(serde_json::to_string_pretty(&v.state).unwrap_or_default());
        }
    });
    let save_json = move || match serde_json::from_str::<ResearchState>(&json.get_untracked()) {
        Ok(s) => {
            save.dispatch(s);
        }
        Err(e) => {
            said.set(Some(Err(ApiError::refused(vec![format!("the JSON does not read as a research state: {e}")]))))
        }
    };
    view! {
        <section class="research">
            <h1>"Research"</h1>
            {move || said.get().map(|r| match r {
                Ok(t) => view! { <p class="said ok">{t}</p> }.into_any(),
                Err(e) => view! { <div class="said error research-refused"><p>{e.to_string()}</p>
                    <ul>{e.reasons.iter().map(|r| view! { <li class="reason">{r.clone()}</li> }).collect_view()}</ul></div> }.into_any(),
            })}
            <Transition fallback=|| view! { <p class="loading">"Reading the research state…"</p> }>
                {move || research.get().map(|res| match res {
                    Err(e) => view! { <p class="error">{e.to_string()}</p> }.into_any(),
                    Ok(v) => summary_view(&v).into_any(),
                })}
            </Transition>
            <h2>"Record a decision"</h2>
            <form class="decide" on:submit=move |ev| {
                ev.prevent_default();
                let q = question.get_untracked();
                decide.dispatch(DecisionRequest { text: decision.get_untracked(), question: (!q.trim().is_empty()).then_some(q) });
            }>
                <input type="text" name="decision" size="60" placeholder="what was decided, and why"
                    prop:value=move || decision.get() on:input=move |ev| decision.set(event_target_value(&ev))/>
                <input type="text" name="question" size="10" placeholder="question id"
                    prop:value=move || question.get() on:input=move |ev| question.set(event_target_value(&ev))/>
                <button type="submit">"Record"</button>
            </form>
            <details class="edit-json">
                <summary>"Edit the whole state as JSON"</summary>
                <textarea name="state" rows="18" cols="100" prop:value=move || json.get()
                    on:input=move |ev| json.set(event_target_value(&ev))></textarea>
                <button type="button" class="save-json" on:click=move |_| save_json()>"Save"</button>
            </details>
        </section>
    }
}

fn question_view(q: &QuestionSummary) -> impl IntoView {
    let status = format!("{:?}", q.status).to_lowercase();
    view! {
        <li class=format!("question {status}") data-id=q.id.clone()>
            <strong>{format!("{} ({status})", q.id)}</strong>" " {q.text.clone()}
            {(!q.answer.is_empty()).then(|| view! { <p class="answer">"Answer: " {q.answer.clone()}</p> })}
            {(!q.cohorts.is_empty()).then(|| view! { <p class="cohorts">"Cohorts: " {linked(&q.cohorts)}</p> })}
            <ul class="hypotheses">
                {q.hypotheses.iter().map(|h| view! {
                    <li class="hypothesis" data-id=h.id.clone()>
                        {format!("{} [{}] {}", h.id, format!("{:?}", h.status).to_lowercase(), h.text)}
                        {(!h.cohorts.is_empty()).then(|| view! { <span class="cohorts">" — " {linked(&h.cohorts)}</span> })}
                    </li>
                }).collect_view()}
            </ul>
        </li>
    }
}

fn summary_view(v: &ResearchView) -> impl IntoView {
    let s = &v.summary;
    let counts = |m: &std::collections::BTreeMap<String, u64>| {
        m.iter().map(|(k, n)| format!("{n} {k}")).collect::<Vec<_>>().join(", ")
    };
    view! {
        {(!v.repaired.is_empty()).then(|| view! {
            <div class="problems repaired"><p>"The research state file was repaired on reading (saved whole at the next change):"</p>
                <ul>{v.repaired.iter().map(|r| view! { <li class="problem">{r.clone()}</li> }).collect_view()}</ul></div>
        })}
        <dl class="facts">
            <dt>"Questions"</dt><dd class="question-counts">{if s.questions.is_empty() { "none yet".into() } else { counts(&s.questions_by_status) }}</dd>
            <dt>"Hypotheses"</dt><dd class="hypothesis-counts">{counts(&s.hypotheses_by_status)}</dd>
            <dt>"Settings"</dt><dd>{s.settings_keys.join(", ")}</dd>
            <dt>"Updated"</dt><dd>{v.state.updated_at.map(|t| t.to_display()).unwrap_or_else(|| "never".into())}</dd>
        </dl>
        {if s.questions.is_empty() {
            view! { <p class="empty">"No question yet: add one in the JSON below (questions: [{id, text, hypotheses: [{id, text, status, cohorts}]}])."</p> }.into_any()
        } else {
            view! { <ul class="questions">{s.questions.iter().map(question_view).collect_view()}</ul> }.into_any()
        }}
        <h2>"Latest decisions"</h2>
        <ul class="decisions">
            {s.latest_decisions.iter().map(|d| view! {
                <li class="decision">{format!("{} — {}{}", d.at.to_display(), d.text,
                    d.question.as_ref().map(|q| format!(" ({q})")).unwrap_or_default())}</li>
            }).collect_view()}
        </ul>
    }
}
