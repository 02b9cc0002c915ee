//! The Live view, `/live`: the batch's state in words (idle, starting,
//! running, stopped but resumable, aborted, launch failed and why, unknown),
//! its progress, time left, tokens and cost, every cell, and the controls
//! (Pause, Stop and abort, Resume). It follows the batch by push: the server
//! sends the live version when anything it shows may have changed (looked at
//! every 500 ms) and the view is read again only then.

use leptos::prelude::*;
use leptos_router::hooks::query_signal;
use runboard::basics::timefmt::duration_words;
use runboard::console::launch::{PauseRequest, ResumeRequest, StopCellRequest, StopReport, StopRequest};
use runboard::live::{LiveCell, LiveCellStatus, LiveParams, LiveState, LiveView, DEFAULT_LIVE_CELLS};

use crate::api;
use crate::api::ApiError;
use crate::tags::TagEditor;
use crate::ui::{confirm, loaded, on_answer, refusal};

#[component]
pub fn LivePage() -> impl IntoView {
    let refresh = RwSignal::new(0u64);
    // Which cells the view carries (a big batch is shown a page at a time),
    // in the URL so a filtered view is a link.
    let (cells_status, set_cells_status) = query_signal::<String>("cells");
    let (cells_page, set_cells_page) = query_signal::<usize>("cells_page");
    let live = crate::codec::resource(
        move || (refresh.get(), cells_status.get(), cells_page.get().unwrap_or(0)),
        |(_, status, page)| {
            api::live(LiveParams {
                cells_status: status,
                cells_offset: Some((page * DEFAULT_LIVE_CELLS).to_string()),
                cells_limit: None,
            })
        },
    );

    crate::ui::refresh_on(runboard::api::streams::LIVE_VERSION, refresh, move || {
        live.try_get_untracked().map(|r| r.and_then(Result::ok).map(|v| v.version))
    });

    // The batch on screen, changing only when another batch is shown.
    let run_set = Memo::new(move |_| live.get().and_then(Result::ok).and_then(|v| v.run_set));
    let mounted = RwSignal::new(false);
    Effect::new(move |_| mounted.set(true));
    // The log open, if any (one at a time): `cell-<id>`, a cluster process's, a unit's.
    let open_log = RwSignal::new(None::<String>);
    // What the last control did (or why it was refused), shown until the next.
    let said = RwSignal::new(None::<Result<String, ApiError>>);
    let after = move |r: Result<String, ApiError>| {
        said.set(Some(r));
        refresh.update(|n| *n += 1);
    };
    // Each control acts on the batch on screen, named in the request, and
    // asks first, naming what it will end.
    let pause = Action::new(move |run_set: &String| {
        let req = PauseRequest { run_set: Some(run_set.clone()) };
        async move { api::pause(req).await.map(|r| report_words("Paused", &r)) }
    });
    let stop = Action::new(move |run_set: &String| {
        let req = StopRequest { run_sets: vec![run_set.clone()] };
        async move { api::stop(req).await.map(|r| report_words("Stopped and aborted", &r)) }
    });
    let resume = Action::new(move |run_set: &String| {
        let req = ResumeRequest { run_set: run_set.clone(), skip_preflight: false };
        async move { api::resume(req).await.map(|l| format!("Resumed {} as unit {}.", l.run_set, l.unit)) }
    });
    // One stalled cell ended, its batch left running.
    let end_cell = Action::new(move |(run_set, cell): &(String, String)| {
        let req = StopCellRequest { run_set: run_set.clone(), cell: cell.clone() };
        async move { api::stop_cell(req).await.map(|r| r.words) }
    });
    on_answer(pause, after);
    on_answer(stop, after);
    on_answer(resume, after);
    on_answer(end_cell, after);
    let busy = move || pause.pending().get() || stop.pending().get() || resume.pending().get();

    view! {
        <section class="live">
            <div class="toolbar"><h1>"Live"</h1></div>
            {loaded(live, "Reading the live state…", "Could not read the live state", move |v| {
                let label = v.state.label();
                view! {
                    <div class=format!("live-state state-{label}") data-state=label>
                        {crate::ui::badge(label)}
                        " "
                        <span class="words">{v.words.clone()}</span>
                    </div>
                    {failure_panel(&v)}
                    {(!v.others.is_empty()).then(|| view! {
                        <div class="others">
                            <strong>"Also in flight"</strong>
                            <ul>{v.others.iter().map(|o| view! {
                                <li class=format!("other {}", o.state) data-unit=o.unit.clone()>
                                    {crate::ui::badge(o.state.word())}
                                    " "{o.words.clone()}" "
                                    <a href=format!("/reports/{}", runboard::results::url_segment(&o.run_set))>"report"</a>
                                </li>
                            }).collect_view()}</ul>
                        </div>
                    })}
                    {controls(&v, busy, (pause, stop, resume))}
                    {move || said.get().map(|r| match r {
                        Ok(text) => view! { <p class="said ok">{text}</p> }.into_any(),
                        Err(e) => refusal(&e).into_any(),
                    })}
                    {summary(&v, end_cell)}
                    {(v.totals.planned > 0).then(|| cells_toolbar(&v, cells_status, set_cells_status, set_cells_page))}
                    {cells_table(v.cells.clone(), v.currency.clone(), open_log)}
                    {(!v.problems.is_empty()).then(|| view! {
                        <div class="problems">
                            <strong>"Records that could not be read"</strong>
                            <ul>{v.problems.iter().map(|p| view! { <li class="problem">{p.clone()}</li> }).collect_view()}</ul>
                        </div>
                    })}
                }.into_any()

            })}
            // Outside the re-read view, so a live update never takes a tag
            // being typed: made again only when the batch shown changes.
            // Drawn once hydrated (the server's first render has no live
            // view yet, so drawing it earlier would not match).
            // The open log, outside the re-read view too: a live update
            // never resets its text or the reader's scroll.
            {move || mounted.get().then(|| run_set.get()).flatten().map(|rs| view! { <Endpoints run_set=rs/> })}
            {move || mounted.get().then(|| run_set.get()).flatten().map(|rs| view! { <ProcessLogs run_set=rs open_log=open_log/> })}
            {move || {
                let rs = mounted.get().then(|| run_set.get()).flatten()?;
                let name = open_log.get()?;
                Some(view! { <LogTail run_set=rs name=name close=move || open_log.set(None)/> })
            }}
            {move || mounted.get().then(|| run_set.get()).flatten().map(|rs| view! { <LiveTags run_set=rs/> })}
        </section>
    }
    .into_any()
}

/// A control acting on a run set: its answer in words, or the refusal.
type Control = Action<String, Result<String, ApiError>>;

/// The batch's controls: Pause and Stop and abort act on the batch on
/// screen, named in the request, and ask first, naming what they end; a
/// Resume for each stopped batch that can be.
fn controls(
    v: &LiveView,
    busy: impl Fn() -> bool + Copy + Send + Sync + 'static,
    (pause, stop, resume): (Control, Control, Control),
) -> impl IntoView {
    let can_pause = matches!(v.state, LiveState::Running { .. } | LiveState::Starting { .. });
    let can_stop = can_pause || v.resumable;
    let shown = v.run_set.clone().unwrap_or_default();
    let (pause_rs, stop_rs) = (shown.clone(), shown.clone());
    let others_running = v.others.len();
    view! {
        <div class="controls">
            <button class="pause" disabled=move || crate::role::viewer() || busy() || !can_pause
                title=format!("Stop {shown} now; it can be resumed")
                on:click=move |_| {
                    let ask = format!("Pause {pause_rs}? Its running cells are stopped now; Resume runs its unfinished cells later.{}",
                        others_note(others_running));
                    if confirm(&ask) { pause.dispatch(pause_rs.clone()); }
                }>"Pause"</button>
            <button class="stop" disabled=move || crate::role::viewer() || busy() || !can_stop
                title="End the batch and abort it: it will not be resumed, and auto mode is turned off"
                on:click=move |_| {
                    let ask = format!("Stop and abort {stop_rs}? Its running cells are ended, it can never be resumed, and auto mode is turned off.{}",
                        others_note(others_running));
                    if confirm(&ask) { stop.dispatch(stop_rs.clone()); }
                }>"Stop and abort"</button>
            {v.resumable_run_sets.iter().map(|rs| {
                let rs2 = rs.clone();
                view! {
                    <button class="resume" data-run-set=rs.clone() disabled=move || crate::role::viewer() || busy()
                        on:click=move |_| { resume.dispatch(rs2.clone()); }>
                        {format!("Resume {rs}")}
                    </button>
                }
            }).collect_view()}
        </div>
    }
}

/// Which cells the view carries: a status filter and a pager (a big batch
/// is shown a page at a time), both in the URL.
fn cells_toolbar(
    v: &LiveView,
    cells_status: Memo<Option<String>>,
    set_cells_status: SignalSetter<Option<String>>,
    set_cells_page: SignalSetter<Option<usize>>,
) -> impl IntoView {
    let (matching, offset, shown) = (v.cells_matching, v.cells_offset, v.cells.len());
    let page = offset / DEFAULT_LIVE_CELLS;
    let pages = matching.div_ceil(DEFAULT_LIVE_CELLS).max(1);
    view! {
        <div class="toolbar cells-toolbar">
            <select class="cells-filter" prop:value=move || cells_status.get().unwrap_or_default()
                on:change=move |ev| {
                    let v = event_target_value(&ev);
                    set_cells_page.set(None);
                    set_cells_status.set(Some(v).filter(|s| !s.is_empty()));
                }>
                <option value="">"every cell"</option>
                {LiveCellStatus::ALL.map(|s| view! { <option value=s.word()>{s.word()}</option> })}
            </select>
            <span class="count">{if shown == 0 { format!("none of {matching}") } else { format!("cells {}–{} of {matching}", offset + 1, offset + shown) }}</span>
            {(pages > 1).then(|| crate::ui::pager(page, pages, ("← earlier", "later →"), format!("page {} of {pages}", page + 1),
                crate::ui::PageTo::Query { set: set_cells_page, per_page: 1 }))}
        </div>
    }
}

/// The most of a log the page keeps: older text is dropped from the top (the
/// whole log stays on disk, and in the API).
#[cfg(feature = "hydrate")]
const LOG_KEPT_BYTES: usize = 256 * 1024;

/// One log, tailing live: its last 16 KiB, then each chunk the server pushes
/// as it is written (`/api/logs/{run_set}/{name}/stream`). The text keeps the
/// reader's place: it follows the end only while the reader is at the end.
#[component]
fn LogTail(run_set: String, name: String, close: impl Fn() + 'static) -> impl IntoView {
    let pre = NodeRef::<leptos::html::Pre>::new();
    let note = RwSignal::new("Reading the log…".to_owned());
    #[cfg(feature = "hydrate")]
    {
        let url = runboard::api::streams::log(
            &runboard::results::url_segment(&run_set),
            &runboard::results::url_segment(&name),
        );
        Effect::new(move |started: Option<bool>| {
            if started == Some(true) {
                return true;
            }
            let Some(el) = pre.get() else { return false };
            tail_into(&url, el, note);
            true
        });
    }
    view! {
        <aside class="log-panel" data-log=name.clone() data-run-set=run_set.clone()>
            <div class="toolbar">
                <strong>{format!("Output of {name}")}</strong>
                <span class="log-note">{move || note.get()}</span>
                <button class="close" on:click=move |_| close()>"Close"</button>
            </div>
            <pre class="log-tail" node_ref=pre></pre>
        </aside>
    }
}

/// Follows a log stream into `el` until the component goes.
#[cfg(feature = "hydrate")]
fn tail_into(url: &str, el: web_sys::HtmlPreElement, note: RwSignal<String>) {
    use futures_util::future::abortable;
    use futures_util::stream::StreamExt;
    use gloo_net::eventsource::futures::EventSource;

    let Ok(mut source) = EventSource::new(url) else {
        note.set("The log cannot be followed in this browser.".into());
        return;
    };
    let (Ok(chunks), Ok(unreadable)) = (source.subscribe("chunk"), source.subscribe("unreadable")) else { return };
    let (task, handle) = abortable(async move {
        let mut kept = String::new();
        let mut trimmed = false;
        let mut events = futures_util::stream::select(chunks, unreadable);
        while let Some(event) = events.next().await {
            // A dropped connection is an error: the browser reconnects by
            // itself (from the last chunk's id), so it is not the end.
            let Ok((kind, event)) = event else { continue };
            let data = event.data().as_string().unwrap_or_default();
            if kind == "unreadable" {
                note.set(format!("The log cannot be read: {data}"));
                break;
            }
            let Ok(chunk) = serde_json::from_slice::<runboard::live::logs::LogChunk>(data.as_bytes()) else { continue };
            let at_end = el.scroll_top() + el.client_height() >= el.scroll_height() - 8;
            kept.push_str(&chunk.text);
            if kept.len() > LOG_KEPT_BYTES {
                // Drop from the top, to a line start.
                let cut = kept.len() - LOG_KEPT_BYTES * 3 / 4;
                let cut = kept[cut..].find('\n').map_or(cut, |i| cut + i + 1);
                let cut = (cut..=kept.len()).find(|&i| kept.is_char_boundary(i)).unwrap_or(kept.len());
                kept.drain(..cut);
                trimmed = true;
            }
            el.set_text_content(Some(&kept));
            if at_end {
                el.set_scroll_top(el.scroll_height());
            }
            let words = match (&chunk.reset, chunk.missing, chunk.earlier || trimmed) {
                (Some(why), _, _) => format!("Output was lost: {why}."),
                (None, true, _) => "No output yet.".to_owned(),
                (None, false, true) => format!("Earlier output is not shown (the whole log: {}).", chunk.source),
                (None, false, false) if kept.is_empty() => {
                    "Nothing written yet: its output appears here as it is written.".to_owned()
                }
                (None, false, false) => String::new(),
            };
            note.set(words);
        }
        drop(source);
    });
    leptos::task::spawn_local(async move {
        let _ = task.await;
    });
    on_cleanup(move || handle.abort());
}

/// The endpoints the batch on screen uses, now: its cells' calls of the last
/// minute and each engine's own metrics (read every 5 s while the page is
/// visible, outside the re-read view). Nothing is shown for a batch on no
/// catalogue endpoint.
#[component]
fn Endpoints(run_set: String) -> impl IntoView {
    let ask = RwSignal::new(0u64);
    let now = crate::codec::resource(move || ask.get(), |_| api::telemetry(api::Nothing {}));
    #[cfg(feature = "hydrate")]
    crate::live::every_while_visible(std::time::Duration::from_secs(5), move || {
        ask.try_update(|n| *n += 1);
    });
    view! {
        <Transition fallback=|| ()>
            {let rs = run_set.clone(); move || now.get().map(|r| match r {
                Err(e) => view! { <p class="error endpoints-error">"Endpoint telemetry cannot be read: " {e.to_string()}</p> }.into_any(),
                Ok(t) => {
                    let rows: Vec<_> = t.endpoints.into_iter().filter(|e| e.run_sets.contains(&rs)).collect();
                    (!rows.is_empty()).then(|| view! {
                        <div class="endpoints">
                            <strong>"Endpoints"</strong>
                            <span class="note">{t.note.clone()}</span>
                            <table class="endpoints-table">
                                <thead><tr>
                                    <th>"endpoint"</th><th>"calls (last min)"</th><th title="every batch's calls on this endpoint in the last minute">"tokens/s (last min, all its batches)"</th><th>"latency p50 / p95"</th>
                                    <th>"in flight"</th><th>"engine: running / waiting"</th><th>"KV cache"</th><th>"generated tokens/s"</th>
                                </tr></thead>
                                <tbody>{rows.into_iter().map(endpoint_row).collect_view()}</tbody>
                            </table>
                        </div>
                    }).into_any()
                }
            })}
        </Transition>
    }
}

fn endpoint_row(e: runboard::live::telemetry::EndpointTelemetry) -> impl IntoView {
    use runboard::basics::numfmt::decimal;
    let c = &e.calls;
    let one = |x: f64| decimal(x, if x < 10.0 { 1 } else { 0 });
    let opt = |x: Option<f64>| x.map(one).unwrap_or_else(|| "–".into());
    let latency = match (c.latency_p50_s, c.latency_p95_s) {
        (Some(a), Some(b)) => format!("{} s / {} s", one(a), one(b)),
        _ => "–".into(),
    };
    let (queue, kv, generated) = match (&e.engine, &e.engine_error) {
        (Some(en), _) => (
            format!(
                "{} / {}",
                en.running.map(|x| decimal(x, 0)).unwrap_or("–".into()),
                en.waiting.map(|x| decimal(x, 0)).unwrap_or("–".into())
            ),
            en.kv_cache_use.map(|k| format!("{}%", decimal(k * 100.0, 0))).unwrap_or("–".into()),
            opt(en.generation_tokens_per_s),
        ),
        (None, Some(why)) => (format!("unreadable: {why}"), "–".into(), "–".into()),
        (None, None) => ("not read".into(), "–".into(), "–".into()),
    };
    view! {
        <tr class=if e.busy.is_some() { "endpoint busy" } else { "endpoint" } data-endpoint=e.endpoint.clone() title=e.words.clone()>
            <td>{e.endpoint.clone()}{e.busy.clone().map(|b| view! { <span class="badge busy" title=b>"busy"</span> })}</td>
            <td class="num calls">{runboard::basics::numfmt::thousands(c.calls)}</td>
            <td class="num tokens-per-s">{one(c.tokens_per_s)}</td>
            <td class="num latency">{latency}</td>
            <td class="num in-flight">{opt(c.in_flight)}</td>
            <td class="engine-queue">{queue}</td>
            <td class="num kv">{kv}</td>
            <td class="num generated">{generated}</td>
        </tr>
    }
}

/// The batch's logs other than its cells' (each cell has its Log button):
/// its cluster processes' (manager, rooms, players) and its unit's; read
/// every 10 s while visible. Each opens in the log panel.
#[component]
fn ProcessLogs(run_set: String, open_log: RwSignal<Option<String>>) -> impl IntoView {
    let ask = RwSignal::new(0u64);
    let rs = run_set.clone();
    let logs = crate::codec::resource(
        move || ask.get(),
        move |_| api::logs(runboard::live::logs::LogsQuery { run_set: rs.clone() }),
    );
    #[cfg(feature = "hydrate")]
    crate::live::every_while_visible(std::time::Duration::from_secs(10), move || {
        ask.try_update(|n| *n += 1);
    });
    view! {
        <Transition fallback=|| ()>
            {move || logs.get().and_then(Result::ok).map(|v| {
                let others: Vec<_> = v.logs.into_iter().filter(|l| !l.name.starts_with("cell-")).collect();
                (!others.is_empty()).then(|| view! {
                    <div class="process-logs">
                        <strong>"Other logs"</strong>
                        {others.into_iter().map(|l| {
                            let name = l.name.clone();
                            let size = l.bytes.map(|b| format!(" ({} bytes)", runboard::basics::numfmt::thousands(b))).unwrap_or_default();
                            view! {
                                <button class="log open-log" data-log=l.name.clone()
                                    on:click=move |_| open_log.set(Some(name.clone()))>{format!("{}{size}", l.name)}</button>
                            }
                        }).collect_view()}
                    </div>
                })
            })}
        </Transition>
    }
}

/// The tags of the batch on screen, editable.
#[component]
fn LiveTags(run_set: String) -> impl IntoView {
    let tags = crate::codec::resource(|| (), |_| api::tags(api::Nothing {}));
    view! {
        <div class="live-tags">
            <strong>"Tags of " {run_set.clone()} ": "</strong>
            <Transition fallback=|| ()>
                {let rs = run_set.clone(); move || tags.get().map(|r| match r {
                    Err(e) => view! { <span class="error">{e.to_string()}</span> }.into_any(),
                    Ok(v) => {
                        let held: Vec<String> = v.tags.iter().filter(|t| t.run_sets.contains(&rs)).map(|t| t.name.clone()).collect();
                        view! { <TagEditor run_set=rs.clone() tags=held/> }.into_any()
                    }
                })}
            </Transition>
        </div>
    }
}

fn report_words(what: &str, r: &StopReport) -> String {
    let mut parts = vec![format!("{what}.")];
    parts.extend(r.units.iter().map(|u| format!("Unit {u}.")));
    if let Some(h) = &r.lease {
        parts.push(if h.ok {
            "The lease was released.".into()
        } else {
            format!("The lease release failed ({}).", h.status)
        });
    }
    parts.extend(r.aborted.iter().map(|a| format!("{a}.")));
    if r.auto_off {
        parts.push("Auto mode was turned off.".into());
    }
    parts.join(" ")
}

/// What a confirmation adds when other batches are in flight: they run on.
fn others_note(n: usize) -> String {
    match n {
        0 => String::new(),
        1 => " The other batch in flight is not touched.".into(),
        n => format!(" The {n} other batches in flight are not touched."),
    }
}

fn failure_panel(v: &LiveView) -> Option<impl IntoView> {
    let LiveState::LaunchFailed { failure, .. } = &v.state else { return None };
    let status = match (failure.exit_status, failure.result.as_str()) {
        (Some(c), r) if !r.is_empty() => format!("exit status {c} ({r})"),
        (Some(c), _) => format!("exit status {c}"),
        (None, r) => r.to_owned(),
    };
    Some(view! {
        <div class="launch-failure">
            <h2>{failure.title.clone()}</h2>
            {failure.reason.clone().map(|r| view! { <p class="reason">{r}</p> })}
            <p class="unit">{format!("Unit {}: {status}.", failure.unit)}</p>
            {(!failure.summary.is_empty()).then(|| view! {
                <details open>
                    <summary>"The end of its log"</summary>
                    <pre class="log-tail">{failure.summary.join("\n")}</pre>
                </details>
            })}
        </div>
    })
}

fn summary(v: &LiveView, end_cell: Action<(String, String), Result<String, ApiError>>) -> impl IntoView {
    let t = v.totals;
    let pct = (v.progress * 100.0).round();
    let unit = v.unit.as_ref().map(|u| format!("{} ({}), spec {}", u.unit, u.backend, u.spec));
    let cost = t.cost.map(|c| runboard::basics::numfmt::money(c, &v.currency)).unwrap_or_else(|| "–".into());
    view! {
        <dl class="facts live-facts">
            <dt>"Run set"</dt><dd class="run-set">{v.run_set.clone().unwrap_or_else(|| "none".into())}</dd>
            <dt>"Unit"</dt><dd>{unit.unwrap_or_else(|| "none launched".into())}</dd>
            <dt>"Progress"</dt>
            <dd class="progress">
                <progress max="100" value=pct></progress>
                {format!(" {} of {} cells ended ({} done, {} failed); {} running, {} waiting, {} stopped",
                    t.done + t.failed, t.planned, t.done, t.failed, t.running, t.pending, t.stopped)}
            </dd>
            <dt>"Time left"</dt><dd class="eta">{v.eta_s.map(duration_words).map(|d| format!("about {d}")).unwrap_or_else(|| "–".into())}</dd>
            <dt>"Tokens"</dt><dd class="tokens">{runboard::basics::numfmt::thousands(t.tokens)}{v.spend.as_ref().map(split_words)}</dd>
            <dt>"Cost"</dt><dd class="cost">{cost}</dd>
            {v.spend.as_ref().and_then(|s| runboard::live::spend::unmetered_words(s.unmetered_calls)).map(|w| view! { <dt>"Unmetered"</dt><dd class="unmetered">{w}</dd> })}
            {v.spend.as_ref().and_then(|s| rate_words(s, &v.currency)).map(|r| view! { <dt>"Average rate"</dt><dd class="rate">{r}</dd> })}
            {v.spend.as_ref().and_then(|s| projection_words(s, &v.currency)).map(|p| view! { <dt>"At its end"</dt><dd class="projection">{p}</dd> })}
            {v.spend.as_ref().filter(|s| !s.caps.is_empty()).map(|s| view! {
                <dt>"Budget"</dt>
                <dd class="caps"><ul>{s.caps.iter().map(|c| view! {
                    <li class=if c.reached { "cap reached" } else { "cap" } data-cap=c.key.clone()>{c.words.clone()}{c.reached.then_some(" — reached")}</li>
                }).collect_view()}</ul></dd>
            })}
            {(!v.stalls.is_empty()).then(|| {
                let rs = v.run_set.clone().unwrap_or_default();
                view! {
                    <dt>"Stalled"</dt>
                    <dd class="stalls">
                        <ul>{v.stalls.iter().map(|st| {
                            let (rs, cell) = (rs.clone(), st.cell.clone());
                            view! {
                                <li class="stall" data-cell=st.cell.clone()>{st.words.clone()}" "
                                    <button type="button" class="end-cell" disabled=move || crate::role::viewer() || end_cell.pending().get()
                                        on:click=move |_| {
                                            let ask = format!("End cell {cell} of {rs}? Its processes are sent SIGTERM now and it is recorded failed; the rest of the batch runs on, and Resume runs it again later.");
                                            if confirm(&ask) { end_cell.dispatch((rs.clone(), cell.clone())); }
                                        }>"End this cell"</button>
                                </li>
                            }
                        }).collect_view()}</ul>
                        <p class="note">"With " <code>"[stall] action = \"stop\""</code> " in campaign.toml, runboard ends a stalled cell by itself."</p>
                    </dd>
                }
            })}
            {v.calls_unseen.clone().map(|w| view! { <dt>"Calls"</dt><dd class="calls-unseen">{w}</dd> })}
            {v.rate_limits.values().any(|e| e.worth_saying()).then(|| view! {
                <dt>"Rate limits"</dt>
                <dd class="rate-limits"><ul>{v.rate_limits.iter().filter(|(_, e)| e.worth_saying()).map(|(name, e)| view! {
                    <li data-endpoint=name.clone()>{limit_words(name, e, v.generated_at)}</li>
                }).collect_view()}</ul></dd>
            })}
            // A batch still running has no outcome yet: its record says
            // `running` until the driver writes its end (the state says the rest).
            {v.outcome.as_ref().filter(|o| o.status != runboard::drive::records::BatchStatus::Running).map(|o| view! {
                <dt>"Outcome"</dt>
                <dd class="outcome">{runboard::live::outcome_text(o, matches!(v.state, LiveState::Aborted { .. }))}</dd>
            })}
        </dl>
    }
}

/// An endpoint's limit at the gateway in words: "paid-api: 4 calls at once
/// (max_concurrency 16, lowered after 5 × 429/503 in the last minute), 4 in
/// flight, 3 waiting — held 2 s more as it asked".
fn limit_words(name: &str, e: &runboard::gateway::calls::EndpointCalls, now: runboard::Timestamp) -> String {
    let limit = match (e.limit, e.max) {
        (Some(l), Some(m)) if l < m => {
            format!(
                "{} at once (max_concurrency {m}, lowered after overloads)",
                runboard::basics::numfmt::count(l.into(), "call")
            )
        }
        (Some(l), _) => format!("{} at once", runboard::basics::numfmt::count(l.into(), "call")),
        (None, _) => "no limit".to_owned(),
    };
    let mut out = format!("{name}: {limit}, {} in flight, {} waiting", e.in_flight, e.waiting);
    if e.overloads_last_min > 0 {
        out += &format!(", {} × 429/503 in the last minute", e.overloads_last_min);
    }
    if let Some(t) = e.held_until.filter(|t| *t > now) {
        out += &format!(" — held {} more as it asked (Retry-After)", duration_words((t.0 - now.0) as f64 / 1000.0));
    }
    out
}

/// Tokens by kind, when any was counted apart: " (12,000 in, 3,400 out, 800 cached; 42 calls)".
fn split_words(s: &runboard::live::spend::BatchSpend) -> Option<String> {
    s.tokens.split_words().map(|w| format!(" ({w}; {} calls)", runboard::basics::numfmt::thousands(s.calls)))
}

/// "38.3 tokens/s, 1.20 USD/h — this batch's average since its first call":
/// in tokens/s, as the endpoints' figures are, and saying its window (theirs
/// is the last minute, every batch on the endpoint).
fn rate_words(s: &runboard::live::spend::BatchSpend, currency: &str) -> Option<String> {
    let tps = s.tokens_per_min? / 60.0;
    let per_hour =
        s.cost_per_hour.map(|c| format!(", {}/h", runboard::basics::numfmt::money(c, currency))).unwrap_or_default();
    let tps = runboard::basics::numfmt::decimal(tps, if tps < 10.0 { 1 } else { 0 });
    Some(format!("{tps} tokens/s{per_hour} — this batch's average since its first call"))
}

/// "about 48,000 tokens, 2.40 USD".
fn projection_words(s: &runboard::live::spend::BatchSpend, currency: &str) -> Option<String> {
    let tokens = s.projected_tokens?;
    let cost =
        s.projected_cost.map(|c| format!(", {}", runboard::basics::numfmt::money(c, currency))).unwrap_or_default();
    Some(format!("about {} tokens{cost}, at the rate so far", runboard::basics::numfmt::thousands(tokens)))
}

fn cells_table(cells: Vec<LiveCell>, currency: String, open_log: RwSignal<Option<String>>) -> impl IntoView {
    /// A score, with the samples behind it when the cell reported them.
    fn score_words(score: Option<f64>, samples: Option<runboard::drive::result::Samples>) -> String {
        match (score, samples) {
            (Some(s), Some(n)) => format!("{s:.2} ({} of {} samples)", n.passed, n.total),
            (None, Some(n)) => format!("{} of {} samples", n.passed, n.total),
            (Some(s), None) => format!("{s:.2}"),
            (None, None) => String::new(),
        }
    }
    if cells.is_empty() {
        return view! { <p class="empty">"No cells to show."</p> }.into_any();
    }
    view! {
        <table class="cells">
            <thead><tr>
                <th>"Cell"</th><th>"Factors"</th><th>"Status"</th><th>"Attempts"</th>
                <th>"Tokens"</th><th>"Cost"</th><th>"Duration"</th><th>"Score"</th><th>"Run"</th><th>"Log"</th>
            </tr></thead>
            <tbody>
                {cells.into_iter().map(|c| {
                    let factors = c.factors.iter().map(|(k, v)| format!("{k}={}", runboard::console::matrix::value_text(v))).collect::<Vec<_>>().join(" ");
                    let run = c.run.map(|r| {
                        let rounds = match (r.rounds_written, r.rounds_planned) {
                            (Some(w), Some(p)) => format!("round {w} of {p}"),
                            (Some(w), None) => format!("{w} rounds"),
                            _ => "started".to_owned(),
                        };
                        let rounds = match r.trials {
                            Some(t) => format!("{rounds}, {t} trials"),
                            None => rounds,
                        };
                        view! { <a href=crate::url::run_href(&r.path) title=r.status_text>{rounds}</a> }
                    });
                    let (id, id_attr, log_cell) = (c.cell.clone(), c.cell.clone(), c.cell.clone());
                    // A cell that never started (planned, or pending) has no log yet.
                    let has_log = c.status.started();
                    let stalled = c.stall.is_some();
                    let (status, status_attr, row_class, badge_class) = (
                        if stalled { format!("{} (stalled)", c.status) } else { c.status.word().to_owned() },
                        c.status.word(),
                        format!("cell status-{}{}", c.status, if stalled { " stalled" } else { "" }),
                        format!("badge {}", if stalled { "stalled" } else { c.status.word() }),
                    );
                    let stall_title = c.stall.as_ref().map(|s| s.words.clone());
                    // Why a running cell is quiet, when its gateway knows.
                    let quiet = c.quiet.as_ref().map(|q| {
                        let class = match q {
                            runboard::gateway::calls::Quiet::InFlight { long: true, .. } => "quiet long",
                            _ => "quiet",
                        };
                        view! { <span class=class>{q.words().to_owned()}</span> }
                    });
                    view! {
                        <tr class=row_class data-cell=id_attr data-status=status_attr>
                            <td><code>{id}</code></td>
                            <td class="factors">{factors}</td>
                            <td><span class=badge_class title=stall_title>{status}</span>{quiet}</td>
                            <td>{c.attempts}</td>
                            <td class="num">{c.tokens.map(runboard::basics::numfmt::thousands).unwrap_or_default()}
                                {c.spend.as_ref().filter(|s| s.unmetered_calls > 0).map(|s| view! {
                                    <span class="unmetered" title="calls whose answer reported no usage: their tokens are not counted">
                                        {format!(" + {} without usage", runboard::basics::numfmt::count(s.unmetered_calls, "call"))}
                                    </span>
                                })}</td>
                            <td class="num">{c.cost.map(|x| runboard::basics::numfmt::money(x, &currency)).unwrap_or_default()}</td>
                            <td>{c.duration_s.map(duration_words).unwrap_or_default()}</td>
                            <td class="score">{score_words(c.score, c.samples)}{c.so_far.map(|r| view! { <span class="so-far">{r.words()}</span> })}</td>
                            <td>{run}{c.failure.map(|f| view! { <span class="failure">{f}</span> })}</td>
                            <td>{has_log.then(|| view! {
                                <button class="log" title="Show this cell's output as it is written"
                                    on:click=move |_| open_log.set(Some(format!("cell-{log_cell}")))>"Log"</button>
                            })}</td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}
