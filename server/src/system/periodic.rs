//! One way to run a background loop, for every loop `serve` starts (the spend
//! guard, the autopilot's tick, the run list's safety-net walk): a pass every
//! period until a stop flag is set; a pass that panics is caught, logged with
//! its message, and the loop goes on (one bad record must not end a guard);
//! the wait between passes is cut into short steps, so a stop is seen within
//! [`STEP`].

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The longest a loop sleeps without looking at its stop flag.
pub const STEP: Duration = Duration::from_millis(100);

/// When a loop's first pass runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum First {
    Now,
    AfterOnePeriod,
}

/// A panic's message, in words.
pub fn panic_words(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "a panic without a message".into())
}

/// Runs `f`, catching a panic: logged as `what` panicking, and answered as
/// its message.
pub fn guarded<T>(what: &str, f: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        let why = panic_words(&*p);
        tracing::error!("{what} panicked ({why}); it goes on");
        why
    })
}

/// Sleeps `d`, in steps; `true` when `stop` was set (then at once).
pub fn wait(stop: &AtomicBool, d: Duration) -> bool {
    let until = Instant::now() + d;
    loop {
        if stop.load(Ordering::Relaxed) {
            return true;
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        std::thread::sleep(left.min(STEP));
    }
}

/// On this thread until `stop`: `pass` every `period()` (read before each
/// pass, so a changed setting applies at the next), measured from a pass's
/// start — but after a pass that took longer, still a tenth of the period's
/// rest, so a slow pass never runs back to back with the next.
pub fn every(
    stop: &AtomicBool,
    what: &str,
    first: First,
    mut period: impl FnMut() -> Duration,
    mut pass: impl FnMut(),
) {
    if first == First::AfterOnePeriod && wait(stop, period()) {
        return;
    }
    while !stop.load(Ordering::Relaxed) {
        let next = period();
        let began = Instant::now();
        let _ = guarded(what, &mut pass);
        if wait(stop, next.saturating_sub(began.elapsed()).max(next / 10)) {
            return;
        }
    }
}

/// [`every`] on a thread of its own, named `thread` (as `ps -T` and a
/// debugger show it).
pub fn spawn(
    thread: &str,
    what: &'static str,
    stop: Arc<AtomicBool>,
    first: First,
    period: impl FnMut() -> Duration + Send + 'static,
    pass: impl FnMut() + Send + 'static,
) {
    std::thread::Builder::new()
        .name(thread.into())
        .spawn(move || every(&stop, what, first, period, pass))
        .unwrap_or_else(|e| panic!("starting the thread {thread}: {e}"));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn a_panicking_pass_is_caught_and_the_loop_goes_on_until_stopped() {
        let stop = Arc::new(AtomicBool::new(false));
        let passes = Arc::new(AtomicUsize::new(0));
        let (s, p) = (stop.clone(), passes.clone());
        let looping = std::thread::spawn(move || {
            every(
                &s,
                "the test's pass",
                First::Now,
                || Duration::from_millis(5),
                || {
                    if p.fetch_add(1, Ordering::SeqCst) % 2 == 0 {
                        panic!("every other pass");
                    }
                },
            )
        });
        while passes.load(Ordering::SeqCst) < 6 {
            std::thread::sleep(Duration::from_millis(1));
        }
        stop.store(true, Ordering::SeqCst);
        looping.join().expect("the loop itself never panics");
        assert!(passes.load(Ordering::SeqCst) >= 6);
    }

    #[test]
    fn a_stop_is_seen_within_a_step_of_a_long_wait() {
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(50));
                stop.store(true, Ordering::SeqCst);
            });
            assert!(wait(&stop, Duration::from_secs(3600)), "the wait ends at the stop, not after an hour");
        });
        assert_eq!(panic_words(&"words"), "words");
        assert_eq!(panic_words(&String::from("owned")), "owned");
    }
}
