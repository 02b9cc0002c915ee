//! The Research view, `/research`: the research state's summary — questions
//! (open first) with their hypotheses and status, the cohorts that bear on
//! each with their pass rates now, the latest decisions — a form to record a
//! decision, forms to add questions and hypotheses and to set their status
//! (each applies a [`ResearchEdit`] to the state as read and saves it whole,
//! so the save's checks answer in words and a stale copy is refused, never
//! written over a newer save), and the whole state to edit as JSON (refused
//! with every reason, nothing lost). Repairs made on loading are said.

use leptos::prelude::*;
use runboard::results::research::{
    cohort_list, DecisionRequest, HypothesisStatus, QuestionStatus, QuestionSummary, ResearchEdit, ResearchState,
    ResearchView,
};

use crate::api;
use crate::api::ApiError;
use crate::ui::loaded;

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
    let research = crate::codec::resource(move || refresh.get(), |_| api::research(api::Nothing {}));
    let said = RwSignal::new(None::<Result<String, ApiError>>);
    let decision = RwSignal::new(String::new());
    let question = RwSignal::new(String::new());
    let json = RwSignal::new(String::new());
    let decide = Action::new(|r: &DecisionRequest| {
        let r = r.clone();
        async move { api::research_decide(r).await.map(|_| "Decision recorded.".to_owned()) }
    });
    let save = Action::new(|s: &ResearchState| {
        let s = s.clone();
        async move { api::research_save(s).await.map(|_| "Research state saved.".to_owned()) }
    });
    let (new_q, new_q_text, new_q_cohorts) =
        (RwSignal::new(String::new()), RwSignal::new(String::new()), RwSignal::new(String::new()));
    let (h_question, new_h, new_h_text, new_h_cohorts) = (
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
    );
    // Whether the JSON editor holds text the reader typed (then a re-read
    // does not replace it).
    let json_typed = RwSignal::new(false);
    let answered = move |r: Result<String, ApiError>| {
        match &r {
            Ok(_) => {
                refresh.update(|n| *n += 1);
                json_typed.set(false);
                // A form that was saved starts empty again.
                for typed in [new_q, new_q_text, new_q_cohorts, new_h, new_h_text, new_h_cohorts, decision] {
                    typed.set(String::new());
                }
            }
            // Saved elsewhere since this page read it: read it again, keeping
            // what was typed, so the change can be made again on the new state.
            Err(e) if e.kind == crate::api::ErrorKind::Busy => refresh.update(|n| *n += 1),
            Err(_) => {}
        }
        said.set(Some(r));
    };
    crate::ui::on_answer(decide, answered);
    crate::ui::on_answer(save, answered);
    // The editor starts from the state as read (and follows a save) unless
    // the reader has typed in it.
    Effect::new(move |_| {
        if let Some(Ok(v)) = research.get() {
            if !json_typed.get_untracked() {
                json.set(serde_json::to_string_pretty(&v.state).unwrap_or_default());
            }
        }
    });
    let save_json = move || match serde_json::from_slice::<ResearchState>(json.get_untracked().as_bytes()) {
        Ok(s) => {
            save.dispatch(s);
        }
        Err(e) => {
            said.set(Some(Err(ApiError::refused(vec![format!("the JSON does not read as a research state: {e}")]))))
        }
    };
    // A form's edit, applied to the state as read and saved whole.
    let edit = move |e: ResearchEdit| {
        let Some(Ok(v)) = research.get_untracked() else { return };
        let mut state = v.state;
        match e.apply(&mut state) {
            Ok(()) => {
                save.dispatch(state);
            }
            Err(why) => said.set(Some(Err(ApiError::refused(why)))),
        }
    };
    // The question ids the hypothesis form offers. Set by an effect (after
    // hydration), never read from the resource outside the Transition: the
    // server renders the form before the state is read, and the browser's
    // first render must match it.
    let question_ids = RwSignal::new(Vec::<String>::new());
    Effect::new(move |_| {
        if let Some(Ok(v)) = research.get() {
            question_ids.set(v.state.questions.iter().map(|q| q.id.clone()).collect());
        }
    });
    view! {
        <section class="research">
            <h1>"Research"</h1>
            {move || said.get().map(|r| match r {
                Ok(t) => view! { <p class="said ok">{t}</p> }.into_any(),
                Err(e) => view! { <div class="said error research-refused"><p>{e.to_string()}</p>
                    <ul>{e.reasons.iter().map(|r| view! { <li class="reason">{r.clone()}</li> }).collect_view()}</ul></div> }.into_any(),
            })}
            {loaded(research, "Reading the research state…", "Could not read the research state", move |v| {
                summary_view(&v, edit).into_any()
            })}
            {question_form(edit, (new_q, new_q_text, new_q_cohorts))}
            {hypothesis_form(edit, question_ids, (h_question, new_h, new_h_text, new_h_cohorts))}
            {decision_form(decide, decision, question)}
            <details class="edit-json">
                <summary>"Edit the whole state as JSON"</summary>
                <textarea name="state" rows="18" cols="100" prop:value=move || json.get()
                    on:input=move |ev| {
                        json_typed.set(true);
                        json.set(event_target_value(&ev));
                    }></textarea>
                <button type="button" class="save-json" disabled=crate::role::viewer() on:click=move |_| save_json()>"Save"</button>
            </details>
        </section>
    }
}

/// Adds a question: its id, text and linked cohorts.
fn question_form(
    edit: impl Fn(ResearchEdit) + Copy + Send + Sync + 'static,
    (new_q, new_q_text, new_q_cohorts): (RwSignal<String>, RwSignal<String>, RwSignal<String>),
) -> impl IntoView {
    view! {
    <h2>"Add a question"</h2>
    <form class="add-question" on:submit=move |ev| {
        ev.prevent_default();
        edit(ResearchEdit::AddQuestion { id: new_q.get_untracked(), text: new_q_text.get_untracked(), cohorts: cohort_list(&new_q_cohorts.get_untracked()) });
    }>
        <TextField label="Id" name="id" size=8 placeholder="q1" value=new_q required=true/>
        <TextField label="Question" name="text" size=50 placeholder="does memory help on reversal?" value=new_q_text required=true/>
        <TextField label="Cohorts" name="cohorts" size=20 placeholder="preset names, comma-separated" value=new_q_cohorts required=false/>
        <button type="submit" disabled=crate::role::viewer()>"Add question"</button>
    </form>
    }
}

/// Adds a hypothesis to one of the questions (`question_ids`, set once the
/// state is read).
fn hypothesis_form(
    edit: impl Fn(ResearchEdit) + Copy + Send + Sync + 'static,
    question_ids: RwSignal<Vec<String>>,
    (h_question, new_h, new_h_text, new_h_cohorts): (
        RwSignal<String>,
        RwSignal<String>,
        RwSignal<String>,
        RwSignal<String>,
    ),
) -> impl IntoView {
    view! {
    <h2>"Add a hypothesis"</h2>
    <form class="add-hypothesis" on:submit=move |ev| {
        ev.prevent_default();
        edit(ResearchEdit::AddHypothesis { question: h_question.get_untracked(), id: new_h.get_untracked(), text: new_h_text.get_untracked(), cohorts: cohort_list(&new_h_cohorts.get_untracked()) });
    }>
        <label>"To question " <select name="question" on:change=move |ev| h_question.set(event_target_value(&ev))
            prop:value=move || h_question.get()>
            <option value="">"(pick one)"</option>
            {move || question_ids.get().into_iter().map(|id| view! { <option value=id.clone()>{id.clone()}</option> }).collect_view()}
        </select></label>
        <TextField label="Id" name="id" size=8 placeholder="h1" value=new_h required=true/>
        <TextField label="Hypothesis" name="text" size=50 placeholder="memory lifts reversal by 10 pp" value=new_h_text required=true/>
        <TextField label="Cohorts" name="cohorts" size=20 placeholder="preset names, comma-separated" value=new_h_cohorts required=false/>
        <button type="submit" disabled=crate::role::viewer()>"Add hypothesis"</button>
    </form>
    }
}

/// Records a decision, for a question or the campaign.
fn decision_form(
    decide: Action<DecisionRequest, Result<String, ApiError>>,
    decision: RwSignal<String>,
    question: RwSignal<String>,
) -> impl IntoView {
    view! {
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
        <button type="submit" disabled=crate::role::viewer()>"Record"</button>
    </form>
    }
}

/// A labelled one-line text input bound to `value`.
#[component]
fn TextField(
    label: &'static str,
    name: &'static str,
    size: u32,
    placeholder: &'static str,
    value: RwSignal<String>,
    required: bool,
) -> impl IntoView {
    view! {
        <label>{label}" "
            <input type="text" name=name size=size placeholder=placeholder required=required
                prop:value=move || value.get() on:input=move |ev| value.set(event_target_value(&ev))/>
        </label>
    }
}

/// A status's word, as stored (`open`, `supported`, …).
fn word<T: serde::Serialize>(t: &T) -> String {
    serde_json::to_value(t).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

/// A status from its word (the select offers only known words).
fn from_word<T: serde::de::DeserializeOwned>(w: String) -> Option<T> {
    serde_json::from_value(serde_json::Value::String(w)).ok()
}

/// A `<select>` of `options`' words with `current` chosen.
fn status_options<T: serde::Serialize + PartialEq>(options: &[T], current: &T) -> impl IntoView {
    options.iter().map(|o| view! { <option value=word(o) selected=o == current>{word(o)}</option> }).collect_view()
}

fn question_view(q: &QuestionSummary, edit: impl Fn(ResearchEdit) + Copy + Send + Sync + 'static) -> impl IntoView {
    use HypothesisStatus as H;
    use QuestionStatus as Q;
    let status = word(&q.status);
    let id = q.id.clone();
    let chosen = RwSignal::new(status.clone());
    let answer = RwSignal::new(q.answer.clone());
    view! {
        <li class=format!("question {status}") data-id=q.id.clone()>
            <strong>{format!("{} ({status})", q.id)}</strong>" " {q.text.clone()}
            {(!q.answer.is_empty()).then(|| view! { <p class="answer">"Answer: " {q.answer.clone()}</p> })}
            {(!q.cohorts.is_empty()).then(|| view! { <p class="cohorts">"Cohorts: " {linked(&q.cohorts)}</p> })}
            <form class="set-question" on:submit=move |ev| {
                ev.prevent_default();
                if let Some(status) = from_word(chosen.get_untracked()) {
                    edit(ResearchEdit::SetQuestion { id: id.clone(), status, answer: answer.get_untracked() });
                }
            }>
                <select name="status" aria-label="status" on:change=move |ev| chosen.set(event_target_value(&ev))>
                    {status_options(&[Q::Open, Q::Answered, Q::Dropped], &q.status)}
                </select>
                <input type="text" name="answer" size="40" placeholder="the answer, once answered" aria-label="answer"
                    prop:value=move || answer.get() on:input=move |ev| answer.set(event_target_value(&ev))/>
                <button type="submit" disabled=crate::role::viewer()>"Set"</button>
            </form>
            <ul class="hypotheses">
                {q.hypotheses.iter().map(|h| {
                    let hid = h.id.clone();
                    view! {
                    <li class="hypothesis" data-id=h.id.clone()>
                        {format!("{} [{}] {}", h.id, word(&h.status), h.text)}
                        {(!h.cohorts.is_empty()).then(|| view! { <span class="cohorts">" — " {linked(&h.cohorts)}</span> })}
                        " "
                        <select name="hypothesis-status" aria-label=format!("status of {}", h.id) on:change=move |ev| {
                            if let Some(status) = from_word(event_target_value(&ev)) {
                                edit(ResearchEdit::SetHypothesis { id: hid.clone(), status });
                            }
                        }>
                            {status_options(&[H::Proposed, H::Supported, H::Refuted, H::Inconclusive], &h.status)}
                        </select>
                    </li>
                }}).collect_view()}
            </ul>
        </li>
    }
}

fn summary_view(v: &ResearchView, edit: impl Fn(ResearchEdit) + Copy + Send + Sync + 'static) -> impl IntoView {
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
            view! { <p class="empty">"No question yet: add one with the form below."</p> }.into_any()
        } else {
            view! { <ul class="questions">{s.questions.iter().map(|q| question_view(q, edit)).collect_view()}</ul> }.into_any()
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
