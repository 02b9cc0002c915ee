//! Run-set tags edited in place: a run set's tags as chips, each with ×
//! (untag), and a field to tag it (`POST /api/tags`: the launch's name rule,
//! every refusal shown beside the field). Used by Reports, a report and Live;
//! its own state, so a page's live re-read never takes what is being typed.

use leptos::prelude::*;
use runboard::runsets::{TagEdit, TagsView};

use crate::api;

/// The tags `view` says hold `run_set`.
fn held_by(view: &TagsView, run_set: &str) -> Vec<String> {
    view.tags.iter().filter(|t| t.run_sets.iter().any(|r| r == run_set)).map(|t| t.name.clone()).collect()
}

/// `run_set`'s tags, editable; `tags` as the page last read them.
#[component]
pub fn TagEditor(run_set: String, tags: Vec<String>) -> impl IntoView {
    let held = RwSignal::new(tags);
    let typed = RwSignal::new(String::new());
    let edit = Action::new(|e: &TagEdit| {
        let e = e.clone();
        async move { api::tag_edit(e).await }
    });
    let rs = run_set.clone();
    Effect::new(move |_| {
        if let Some(Ok(v)) = edit.value().get() {
            held.set(held_by(&v, &rs));
            typed.set(String::new());
        }
    });
    let (add_rs, remove_rs) = (run_set.clone(), run_set.clone());
    let add = move || {
        let tag = typed.get_untracked().trim().to_owned();
        edit.dispatch(TagEdit { tag, add: vec![add_rs.clone()], ..Default::default() });
    };
    let add_key = add.clone();
    view! {
        <span class="tag-editor" data-run-set=run_set.clone()>
            <For each=move || held.get() key=|t| t.clone() let:t>
                {
                    let (name, rs) = (t.clone(), remove_rs.clone());
                    view! {
                        <span class="tag" data-tag=t.clone()>{t.clone()}
                            <button type="button" class="untag" title=format!("Untag {rs} from {t}") aria-label=format!("Untag {rs} from {t}")
                                disabled=move || crate::role::viewer() || edit.pending().get()
                                on:click=move |_| { edit.dispatch(TagEdit { tag: name.clone(), remove: vec![rs.clone()], ..Default::default() }); }>"×"</button>
                        </span>
                    }
                }
            </For>
            <input class="add-tag" name="tag" placeholder="add a tag" size="10" prop:value=move || typed.get()
                on:input=move |ev| typed.set(event_target_value(&ev))
                on:keydown=move |ev| if ev.key() == "Enter" { add_key() }/>
            <button type="button" class="tag-add" disabled=move || crate::role::viewer() || edit.pending().get() || typed.with(|t| t.trim().is_empty())
                on:click=move |_| add()>"Tag"</button>
            {move || edit.value().get().and_then(Result::err).map(|e| {
                let why = if e.reasons.is_empty() { e.error.clone() } else { e.reasons.join("; ") };
                view! { <span class="error tag-refused" role="alert">{why}</span> }
            })}
        </span>
    }
}

/// Every tag with its note, each note editable (Reports).
#[component]
pub fn TagNotes() -> impl IntoView {
    let tags = crate::codec::resource(|| (), |_| api::tags(api::Nothing {}));
    view! {
        <Transition fallback=|| ()>
            {move || tags.get().map(|r| match r {
                Err(e) => view! { <p class="error">"Could not read the tags: " {e.to_string()}</p> }.into_any(),
                Ok(v) if v.tags.is_empty() => ().into_any(),
                Ok(v) => view! {
                    <details class="tag-notes">
                        <summary>{format!("Tags ({}) and their notes", v.tags.len())}</summary>
                        <ul>{v.tags.into_iter().map(|t| view! { <NoteEditor name=t.name note=t.note run_sets=t.run_sets.len()/> }).collect_view()}</ul>
                    </details>
                }.into_any(),
            })}
        </Transition>
    }
}

#[component]
fn NoteEditor(name: String, note: String, run_sets: usize) -> impl IntoView {
    let text = RwSignal::new(note.clone());
    let saved = RwSignal::new(note);
    let edit = Action::new(|e: &TagEdit| {
        let e = e.clone();
        async move { api::tag_edit(e).await }
    });
    let n = name.clone();
    Effect::new(move |_| {
        if let Some(Ok(v)) = edit.value().get() {
            if let Some(t) = v.tags.iter().find(|t| t.name == n) {
                saved.set(t.note.clone());
            }
        }
    });
    let tag = name.clone();
    view! {
        <li class="tag-note" data-tag=name.clone()>
            <strong>{name.clone()}</strong>{format!(" — {run_sets} run set(s) · ")}
            <a href=format!("/evidence?scope=tag%3D{}", crate::url::encode(&name))>"its evidence"</a>
            <p class="note">{move || { let s = saved.get(); if s.is_empty() { "(no note)".to_owned() } else { s } }}</p>
            <textarea class="note-text" rows="2" maxlength=runboard::runsets::TAG_NOTE_MAX.to_string() prop:value=move || text.get()
                on:input=move |ev| text.set(event_target_value(&ev))></textarea>
            <button type="button" class="save-note" disabled=move || crate::role::viewer() || edit.pending().get() || text.get() == saved.get()
                on:click=move |_| { edit.dispatch(TagEdit { tag: tag.clone(), note: Some(text.get_untracked()), ..Default::default() }); }>"Save the note"</button>
            {move || edit.value().get().and_then(Result::err).map(|e| view! { <span class="error" role="alert">{e.reasons.join("; ")}</span> })}
        </li>
    }
}
