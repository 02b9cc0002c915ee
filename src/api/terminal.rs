//! Each answer said in words for a terminal: what `runboard <command>`
//! prints without `--json`. One way per answer type (the command line is the
//! table's third surface: `server::cli` asks the operation, then prints this),
//! so a command and a composite that end in the same answer say it alike.

use crate::basics::numfmt::{bytes, count, decimal, money, thousands};
use crate::basics::timefmt::{duration_words, span_words};

/// An answer in words for a terminal: lines, each ending in a newline.
pub trait ForTerminal {
    fn for_terminal(&self) -> String;
}

impl ForTerminal for crate::auto::view::AutoView {
    fn for_terminal(&self) -> String {
        let v = self;
        let st = &v.state;
        let mut out = format!("auto mode: {}\n", st.mode.word());
        // The same headline as the Auto page: from the evaluation made now.
        out += &format!("{}\n", v.explain.headline());
        if let Some(h) = v.explain.hold.as_ref().filter(|h| st.hold.as_ref().is_none_or(|s| s.reason != h.reason)) {
            out += &format!(
                "(the last tick recorded {}; the next records {})\n",
                st.hold.as_ref().map_or("no hold", |s| s.reason.word()),
                h.reason.word()
            );
        }
        out += &format!("decision now: {}\n", v.explain.verdict);
        for p in &v.settings_problems {
            out += &format!("settings problem: {p}\n");
        }
        for l in &v.lanes {
            let since = l.idle_since.map(|t| format!(" (idle since {})", t.to_display())).unwrap_or_default();
            out += &format!(
                "lane {:16} {:14} {}{since}\n",
                l.lane,
                l.status.word(),
                l.unit.clone().or(l.idle_reason.clone()).unwrap_or_default()
            );
        }
        for c in &v.caps {
            out += &format!(
                "today {}: {} by auto{}, {} in all{}\n",
                c.model,
                c.auto_today,
                c.auto_cap.map(|x| format!(" of {x}")).unwrap_or_default(),
                c.all_today,
                c.catalogue_cap.map(|x| format!(" of {x}")).unwrap_or_default()
            );
        }
        for (m, f) in &st.credit_flags {
            out += &format!("credit flag: {m} until {} ({})\n", f.until.to_display(), f.reason);
        }
        for (e, f) in &st.endpoint_failures {
            out += &format!("quarantined: {e} until {} ({})\n", f.retry_at.to_display(), f.reason);
        }
        for b in &st.closeout_backfill {
            out += &format!("closeout to backfill: {} ({}: {})\n", b.run_set, b.stage, b.message);
        }
        out
    }
}

impl ForTerminal for crate::console::catalogue::CatalogueView {
    fn for_terminal(&self) -> String {
        let c = self;
        let mut out = format!("{}\n", c.note);
        if c.models.is_empty() && c.endpoints.is_empty() {
            out += "The catalogue (campaign.toml [[models]], [[endpoints]]) is empty.\n";
        }
        let used = |u: &crate::console::catalogue::Use| {
            format!(
                "{} run set(s), {} cells, {} tokens{}",
                thousands(u.run_sets as u64),
                thousands(u.cells as u64),
                thousands(u.tokens),
                u.cost.map(|x| format!(", cost {}", money(x, &c.currency))).unwrap_or_default()
            )
        };
        for m in &c.models {
            out += &format!("model {} ({}): {} {}\n", m.name, m.kind.as_str(), m.words, used(&m.used));
        }
        for e in &c.endpoints {
            out += &format!(
                "endpoint {} ({}, {}, serves {}): {} {}\n",
                e.name,
                e.url,
                e.backend,
                e.models.join(", "),
                e.words,
                used(&e.used)
            );
        }
        if !c.uncatalogued.is_empty() {
            out += &format!(
                "run sets naming a model or endpoint no longer in the catalogue: {}\n",
                c.uncatalogued.join(", ")
            );
        }
        out
    }
}

impl ForTerminal for crate::live::upkeep::UpkeepView {
    fn for_terminal(&self) -> String {
        let v = self;
        let mut out = String::new();
        if v.findings.is_empty() {
            out += "Nothing to clear up.\n";
        }
        for (i, f) in v.findings.iter().enumerate() {
            out += &format!("{:>3}. {} {} → {}\n", i + 1, f.id(), f.words, f.action.word());
        }
        if !v.findings.is_empty() {
            out +=
                "do one: runboard upkeep --do ID (or N, asked first on a terminal; --yes to skip asking, with an ID)\n";
        }
        out += &format!("disk: {} in {}\n", bytes(v.total_bytes), count(v.disk.len() as u64, "run set"));
        for d in &v.disk {
            out += &format!(
                "  {:40} {:>10}{} in {} files ({} of logs), {}\n",
                d.run_set,
                bytes(d.bytes),
                if d.partial { "+" } else { "" },
                thousands(d.files),
                bytes(d.log_bytes),
                d.state.word()
            );
        }
        out += &format!("{}\n", v.note);
        out
    }
}

impl ForTerminal for crate::live::logs::LogsView {
    fn for_terminal(&self) -> String {
        let v = self;
        if v.logs.is_empty() {
            return format!("{} has no log yet.\n", v.run_set);
        }
        let mut out = String::new();
        for l in &v.logs {
            let size = match (l.bytes, l.rotated_bytes) {
                (Some(b), Some(r)) => format!("{} bytes (+ {} rotated)", thousands(b), thousands(r)),
                (Some(b), None) => format!("{} bytes", thousands(b)),
                (None, _) => "in the journal".to_owned(),
            };
            let when =
                l.modified.as_deref().map(|m| format!(", written {}", crate::basics::timefmt::display_rfc3339(m)));
            out += &format!("{:40} {} {size}{}\n", l.name, l.kind, when.unwrap_or_default());
        }
        out += &format!("read one: runboard logs {} NAME [--follow]\n", v.run_set);
        out
    }
}

impl ForTerminal for crate::results::timing::TimingView {
    fn for_terminal(&self) -> String {
        let t = self;
        let s = &t.summary;
        let mut out = format!(
            "Timings{}: {} cells count, {} do not.\n",
            if t.scope.is_empty() { String::new() } else { format!(" ({})", t.scope) },
            t.validity.counted,
            t.validity.not_counted
        );
        if let (Some(m), Some(p)) = (s.median_s, s.p90_s) {
            out += &format!("  duration: median {}, 90th percentile {}\n", span_words(m), span_words(p));
        }
        if let Some(r) = s.tokens_per_s {
            out += &format!("  throughput: {} tokens/s over {} tokens\n", decimal(r, 1), thousands(s.tokens));
        }
        for (e, es) in &t.by_endpoint {
            out += &format!(
                "  {e}: {} counted{}\n",
                es.counted,
                es.median_s.map(|m| format!(", median {}", span_words(m))).unwrap_or_default()
            );
        }
        for (reason, n) in &t.validity.reasons {
            out += &format!("  not counted, {reason}: {n}\n");
        }
        if let Some(rs) = &t.run_set {
            out += &format!("{rs}:\n");
            for c in &t.cells {
                let phases: Vec<String> =
                    c.segments.iter().map(|s| format!("{} {}", s.phase.word(), span_words(s.to - s.from))).collect();
                out += &format!(
                    "  {} {:?}: {}{}\n",
                    c.cell,
                    c.status,
                    phases.join(", "),
                    if c.counts { String::new() } else { format!(" — does not count: {}", c.why_not.join("; ")) }
                );
            }
        }
        out
    }
}

impl ForTerminal for crate::results::Evidence {
    fn for_terminal(&self) -> String {
        let e = self;
        let mut out = format!("{}; passed {} (95 % Wilson intervals)\n", e.counted_words(), rate_text(&e.overall));
        out += &format!("by {}:\n", e.by);
        for g in &e.groups {
            out += &format!("  {:20} {}\n", g.level, rate_text(&g.passes));
        }
        if e.family.comparisons > 0 {
            out += &format!("verdicts: {}\n", e.family.words());
        }
        for c in &e.comparisons {
            out += &format!("  {}\n", c.words());
        }
        for p in &e.paired {
            out += &format!("  paired: {}\n", p.words());
            for t in p.by_task.iter().filter(|t| t.table.b + t.table.c > 0) {
                out += &format!(
                    "    {:18} {} pairs: {} only {}, {} only {}\n",
                    t.task,
                    t.table.n(),
                    t.table.b,
                    p.level,
                    t.table.c,
                    p.baseline
                );
            }
        }
        for (title, groups) in [("by task", &e.by_task), ("by model", &e.by_model)] {
            out += &format!("{title}:\n");
            for g in groups {
                out += &format!("  {:20} {}\n", g.level, rate_text(&g.passes));
            }
        }
        if !e.not_passed_by_reason.is_empty() {
            out += "did not pass, by reason (failed: the cell's process failed):\n";
            for r in &e.not_passed_by_reason {
                let failed = match r.failed {
                    0 => String::new(),
                    f if f == r.cells => " (failed)".to_owned(),
                    f => format!(" ({f} failed)"),
                };
                out += &format!("  {:6}  {}{failed}\n", r.cells, r.reason);
            }
        }
        out
    }
}

impl ForTerminal for super::CellSamples {
    fn for_terminal(&self) -> String {
        let s = self;
        let mut out = format!(
            "{}/{}: {} from {} ({}); {} of {} scored passed\n",
            s.run_set,
            s.cell,
            count(s.total as u64, "sample"),
            s.log,
            s.format,
            s.passed,
            s.scored
        );
        if let Some(a) = &s.against {
            out += &format!("against {a}: {} flipped\n", s.flipped);
        }
        for (i, r) in s.samples.iter().enumerate() {
            let there = match (&s.against, s.against_passed.get(i)) {
                (Some(_), Some(p)) => format!(" (there: {})", crate::harness::samples::verdict_words(*p)),
                _ => String::new(),
            };
            let score = r
                .score
                .as_deref()
                .map(|v| format!(" {}={v}", r.scorer.as_deref().unwrap_or("score")))
                .unwrap_or_default();
            out += &format!(
                "  {} epoch {}: {}{there}{score}\n",
                r.id,
                r.epoch,
                crate::harness::samples::verdict_words(r.passed)
            );
            out += &format!("    input:  {}\n    target: {}\n    output: {}\n", r.input, r.target, r.output);
            if let Some(e) = &r.error {
                out += &format!("    error:  {e}\n");
            }
        }
        let shown_to = s.offset + s.samples.len();
        if shown_to < s.total {
            out += &format!("… {} more (--offset {shown_to})\n", s.total - shown_to);
        }
        for p in &s.problems {
            out += &format!("problem: {p}\n");
        }
        out
    }
}

impl ForTerminal for crate::results::propose::Proposals {
    fn for_terminal(&self) -> String {
        let p = self;
        let mut out = format!("{}\nroute: {}\n", p.how, p.route);
        for note in &p.notes {
            out += &format!("{note}\n");
        }
        for (i, x) in p.proposals.iter().enumerate() {
            out += &format!("\n{}. {}\n", i + 1, x.words);
            if let Some(n) = x.cells_needed {
                let settle = x
                    .cells_to_settle
                    .map(|m| format!("about {m} cells per {} for its verdict to settle it in 80 % of cases; ", p.by))
                    .unwrap_or_default();
                out += &format!(
                    "   to tell a {:.0} pp difference from {}: {settle}one fixed look at 95 % confidence and 80 % power needs {n}; counted now {} and {}\n",
                    p.delta_pp, x.baseline, x.n_compared, x.n_baseline
                );
            }
            match &x.prediction {
                Some(pr) => {
                    out += &format!("   predicted: {}", pr.words());
                    out += &pr.range_words().map(|r| format!("; range {r}")).unwrap_or_default();
                    out += "\n";
                }
                None => out += &format!("   cannot be drafted as it is: {}\n", x.refused.join("; ")),
            }
            let route = if x.prediction.is_none() { " and a route (--model, --endpoint)" } else { "" };
            out += &format!("   draft it: this command again with --save {}{route}\n", i + 1);
        }
        out
    }
}

impl ForTerminal for crate::runsets::TagsView {
    fn for_terminal(&self) -> String {
        let v = self;
        // An edit's answer says what it changed before the tags as they are.
        let changed: String = v.changed.iter().map(|c| format!("{c}\n")).collect();
        changed + &tags(v)
    }
}

fn tags(v: &crate::runsets::TagsView) -> String {
    if v.tags.is_empty() {
        return "no tags yet (a launch tags its run set: console by default, --tag NAME, auto for the autopilot)\n"
            .into();
    }
    v.tags
        .iter()
        .map(|t| {
            let note = if t.note.is_empty() { String::new() } else { format!(" — {}", t.note.replace('\n', " ")) };
            format!(
                "{}{note}: {}\n",
                t.name,
                if t.run_sets.is_empty() { "(no run set)".into() } else { t.run_sets.join(", ") }
            )
        })
        .collect()
}

impl ForTerminal for crate::auto::view::TickReport {
    fn for_terminal(&self) -> String {
        let r = self;
        let mut out = format!("{}\n", r.verdict);
        for g in &r.guards {
            out += &format!("  [{}] {}: {}\n", if g.ok { "ok" } else { "holds" }, g.name, g.value);
        }
        for l in &r.launches {
            out += &format!("  launch {} ({} cells of {} on {}): {}\n", l.label, l.cells, l.model, l.lane, l.why);
        }
        for e in &r.events {
            out += &format!("  event {}: {}\n", e.event.kind(), e.event.words());
        }
        out
    }
}

impl ForTerminal for crate::console::launch::Launched {
    fn for_terminal(&self) -> String {
        let l = self;
        let p = l.prediction.as_ref().map(|p| format!("\npredicted: {}", p.words())).unwrap_or_default();
        format!(
            "launched {} as unit {} (spec {}, tag {}){p}\nfollow it: runboard status\n",
            l.run_set, l.unit, l.spec, l.tag
        )
    }
}

impl ForTerminal for crate::console::launch::StopReport {
    fn for_terminal(&self) -> String {
        let r = self;
        let mut out = String::new();
        for u in &r.units {
            out += &format!("unit {u}\n");
        }
        if let Some(h) = &r.lease {
            out += &format!("lease release: {} ({})\n", if h.ok { "done" } else { "FAILED" }, h.status);
            if !h.ok && !h.output.is_empty() {
                out += &format!("  {}\n", h.output.trim());
            }
        }
        for a in &r.aborted {
            out += &format!("{a}\n");
        }
        if r.auto_off {
            out += "auto mode turned off\n";
        }
        if let Some(m) = r.marker {
            out += &format!(
                "marker: {}\n",
                serde_json::to_value(m).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
            );
        }
        out
    }
}

fn rate_text(p: &crate::results::stats::Proportion) -> String {
    match (p.rate, p.ci95) {
        (Some(r), Some(ci)) => {
            format!("{}/{} = {:.0} % [{:.0}–{:.0} %]", p.successes, p.n, r * 100.0, ci.lo * 100.0, ci.hi * 100.0)
        }
        _ => "no ended cell".into(),
    }
}

/// The live spend's lines of `runboard status`: cost, rate, projection, caps.
fn spend_text(s: &crate::live::spend::BatchSpend, currency: &str) -> String {
    let cash = |x: f64| money(x, currency);
    let mut out = format!(
        "spend: {} tokens{}{}",
        thousands(s.total_tokens),
        s.tokens.split_words().map(|w| format!(" ({w})")).unwrap_or_default(),
        // Cells that report their own totals are counted no calls: none said.
        if s.calls > 0 { format!(" over {}", count(s.calls, "call")) } else { String::new() }
    );
    if let Some(c) = s.cost {
        out += &format!(", {}", cash(c));
    }
    if let Some(r) = s.tokens_per_min {
        out += &format!("; {} tokens/min", thousands(r.round() as u64));
        if let Some(h) = s.cost_per_hour {
            out += &format!(", {}/h", cash(h));
        }
    }
    if let Some(t) = s.projected_tokens {
        out += &format!("; about {} tokens", thousands(t));
        if let Some(c) = s.projected_cost {
            out += &format!(", {}", cash(c));
        }
        out += " at its end";
    }
    out.push('\n');
    if let Some(w) = crate::live::spend::unmetered_words(s.unmetered_calls) {
        out += &format!("{w}\n");
    }
    for c in &s.caps {
        out += &format!("budget: {}{}\n", c.words, if c.reached { " — reached" } else { "" });
    }
    out
}

impl ForTerminal for crate::live::LiveView {
    fn for_terminal(&self) -> String {
        let v = self;
        let mut out = format!("{}\n", v.words);
        if v.totals.planned > 0 {
            let t = &v.totals;
            out += &format!(
                "cells: {} planned, {} done, {} failed, {} running, {} pending, {} stopped; {} tokens{}\n",
                thousands(t.planned as u64),
                thousands(t.done as u64),
                thousands(t.failed as u64),
                thousands(t.running as u64),
                thousands(t.pending as u64),
                thousands(t.stopped as u64),
                thousands(t.tokens),
                v.eta_s.map(|s| format!("; about {} left", duration_words(s))).unwrap_or_default()
            );
            if let Some(s) = &v.spend {
                out += &spend_text(s, &v.currency);
            }
            for c in v.cells.iter().filter(|c| c.status != crate::live::LiveCellStatus::Done) {
                let stalled = if c.stall.is_some() { " (stalled)" } else { "" };
                let quiet = c
                    .so_far
                    .map(|r| format!(" — {}", r.words()))
                    .into_iter()
                    .chain(c.quiet.as_ref().map(|q| format!(" — {}", q.words())))
                    .collect::<String>();
                out += &format!("  {} {:8}{stalled} attempts {}{quiet}\n", c.cell, c.status, c.attempts);
            }
        }
        if let Some(w) = &v.calls_unseen {
            out += &format!("{w}\n");
        }
        for (name, e) in v.rate_limits.iter().filter(|(_, e)| e.worth_saying()) {
            let limit = e.limit.map_or_else(|| "no limit".to_owned(), |l| format!("{l} at once"));
            out += &format!(
                "rate limit {name}: {limit}, {} in flight, {} waiting, {} × 429/503 in the last minute\n",
                e.in_flight, e.waiting, e.overloads_last_min
            );
        }
        for st in &v.stalls {
            out += &format!("stalled: {}\n", st.words);
        }
        if let crate::live::LiveState::LaunchFailed { failure, .. } = &v.state {
            for l in &failure.summary {
                out += &format!("  | {l}\n");
            }
        }
        for o in &v.others {
            out += &format!("also in flight: {}\n", o.words);
        }
        for p in &v.problems {
            out += &format!("problem: {p}\n");
        }
        out
    }
}

impl ForTerminal for crate::console::coverage::CoverageView {
    fn for_terminal(&self) -> String {
        let v = self;
        let mut out = format!("{} ({} run sets)\n", v.words, v.run_sets);
        for factor in &v.factors {
            let Some(levels) = v.by_factor.get(factor) else { continue };
            out += &format!("{factor}:\n");
            for l in levels {
                out += &format!("  {:20} {}\n", l.level, l.counts.words());
            }
        }
        for p in &v.problems {
            out += &format!("problem: {p}\n");
        }
        out
    }
}

impl ForTerminal for crate::live::telemetry::TelemetryView {
    fn for_terminal(&self) -> String {
        let mut out = format!("{}\n", self.note);
        if self.endpoints.is_empty() {
            out += "No endpoint in the catalogue (campaign.toml [[endpoints]]).\n";
        }
        for e in &self.endpoints {
            let serving =
                if e.run_sets.is_empty() { String::new() } else { format!(" serving {}", e.run_sets.join(", ")) };
            out += &format!("{} ({}){serving}: {}\n", e.endpoint, e.backend, e.words);
        }
        out
    }
}

impl ForTerminal for crate::live::upkeep::UpkeepDone {
    fn for_terminal(&self) -> String {
        let freed = if self.freed_bytes > 0 { format!(" ({} freed)", bytes(self.freed_bytes)) } else { String::new() };
        format!("{}{freed}\n", self.words)
    }
}

impl ForTerminal for crate::console::draft::SavedDraft {
    fn for_terminal(&self) -> String {
        format!("saved {} ({} cells)\nlaunch it: {}\n", self.path, self.cells, self.launch_hint)
    }
}

impl ForTerminal for crate::console::draft::DraftPreview {
    fn for_terminal(&self) -> String {
        let p = self;
        let mut out = format!(
            "{} cells drafted of {} eligible; predicted {}\n",
            p.draft.spec.cells.len(),
            p.draft.eligible,
            p.prediction.words()
        );
        for c in &p.draft.spec.cells {
            let f: Vec<String> =
                c.factors.iter().map(|(k, v)| format!("{k}={}", crate::console::matrix::value_text(v))).collect();
            out += &format!("  {} {}\n", c.id, f.join(" "));
        }
        for h in &p.draft.held_back {
            out += &format!("held back: {} cell(s): {} (e.g. {})\n", h.cells, h.reason, h.example);
        }
        out += "(not saved: add --save)\n";
        out
    }
}

impl ForTerminal for crate::auto::view::LogPage {
    fn for_terminal(&self) -> String {
        self.events.iter().map(|e| format!("{} {}: {}\n", e.at.to_display(), e.event.kind(), e.event.words())).collect()
    }
}

impl ForTerminal for crate::results::publish::PublishStatus {
    fn for_terminal(&self) -> String {
        format!("{}\n", self.words)
    }
}

impl ForTerminal for crate::access::audit::AuditPage {
    fn for_terminal(&self) -> String {
        let mut out: String = self.entries.iter().map(|e| format!("{}\n", e.words())).collect();
        if self.entries.is_empty() {
            out += "no control recorded (yet)\n";
        }
        let shown_to = self.offset + self.entries.len();
        if shown_to < self.total {
            out += &format!("… {} more (--offset {shown_to})\n", self.total - shown_to);
        }
        if self.unreadable > 0 {
            out += &format!("{} line(s) of the audit log could not be read\n", self.unreadable);
        }
        out
    }
}
