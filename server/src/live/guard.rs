//! The spend guard: a thread of `runboard serve` that, every `[budget]
//! poll_s` (default 2 s), reads what the batches in flight wrote since its
//! last pass, pauses a batch whose spend reached a cap and says each new
//! stall (`Campaign::guard_spend`); each event is logged and given to
//! `[hooks] notify` and the webhook, as is every batch's launch, end and
//! launch failure (`crate::live::notify`). It runs whether or not a page is open.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use crate::console::LocalConsole;
use crate::system::periodic::{guarded, First};

/// Starts the guard on a thread of its own; it ends when `stop` is set.
pub fn spawn(console: Arc<LocalConsole>, stop: Arc<AtomicBool>) {
    let reads = console.clone();
    let period = move || {
        let every = reads.campaign().config().map_or(runboard::campaign::DEFAULT_BUDGET_POLL_S, |c| c.budget.poll_s());
        Duration::from_secs_f64(every)
    };
    crate::system::periodic::spawn(
        "runboard-spend-guard",
        "the spend guard's pass",
        stop,
        First::Now,
        period,
        move || {
            let campaign = console.campaign();
            if let Ok(events) = guarded("the spend guard's reading", || campaign.guard_spend()) {
                let cfg = campaign.config().ok();
                for e in events {
                    tracing::warn!("{}", serde_json::to_string(&e).unwrap_or_default());
                    if let Some(cfg) = cfg.as_ref().filter(|c| c.hooks.notifies()) {
                        let mut body = serde_json::to_value(&e).unwrap_or_default();
                        body["at"] = crate::system::clock::now().to_rfc3339().into();
                        crate::live::notify::queue(campaign.root(), cfg, body);
                    }
                }
            }
            // Every batch's launch, end and launch failure, said once — even
            // after a reading that panicked.
            let _ = guarded("finding the batch events", || crate::live::notify::say_queued(campaign));
        },
    );
}
