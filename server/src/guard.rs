//! The spend guard: a thread of `runboard serve` that, every `[budget]
//! poll_s` (default 2 s), reads what the batches in flight wrote since its
//! last pass, pauses a batch whose spend reached a cap and says each new
//! stall (`Campaign::guard_spend`); each event is logged and given to
//! `[hooks] notify` and the webhook, as is every batch's launch, end and
//! launch failure (`crate::notify`). It runs whether or not a page is open.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::console::LocalConsole;

/// Starts the guard on a thread of its own; it ends when `stop` is set.
pub fn spawn(console: Arc<LocalConsole>, stop: Arc<AtomicBool>) {
    std::thread::Builder::new()
        .name("runboard-spend-guard".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let campaign = console.campaign();
                let every = campaign.config().map_or(runboard::campaign::DEFAULT_BUDGET_POLL_S, |c| c.budget.poll_s());
                let until = Instant::now() + Duration::from_secs_f64(every);
                let pass = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| campaign.guard_spend()));
                match pass {
                    Ok(events) => {
                        let cfg = campaign.config().ok();
                        for e in events {
                            tracing::warn!("{}", serde_json::to_string(&e).unwrap_or_default());
                            if let Some(cfg) = cfg.as_ref().filter(|c| c.hooks.notifies()) {
                                let mut body = serde_json::to_value(&e).unwrap_or_default();
                                body["at"] = crate::clock::now().to_rfc3339().into();
                                crate::notify::queue(campaign.root(), cfg, body);
                            }
                        }
                    }
                    Err(_) => tracing::error!("the spend guard's pass panicked; it goes on"),
                }
                // Every batch's launch, end and launch failure, said once.
                if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| crate::notify::say_queued(campaign)))
                    .is_err()
                {
                    tracing::error!("finding the batch events panicked; the guard goes on");
                }
                while Instant::now() < until {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        })
        .expect("starting the spend guard's thread");
}
