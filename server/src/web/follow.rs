//! Following what changes on disk, shared: one watcher per followed thing (a
//! run, or the whole list), however many pages follow it.
//!
//! A watcher is a task that looks at a version (`stat` only) every so often and
//! publishes it on a `watch` channel; every open version stream of that thing
//! subscribes to the channel. 200 pages following one run cost one stat loop,
//! not 200. A watcher ends when its last follower leaves (or the server shuts
//! down), and the next follower starts a new one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// What a watcher publishes: `None` before its first look, then the version;
/// `Some(None)` once the thing is gone (and the watcher has ended).
pub type Seen = Option<Option<String>>;

/// The live watchers, by what they follow.
#[derive(Default, Clone)]
pub struct Watchers {
    live: Arc<Mutex<HashMap<String, Arc<watch::Sender<Seen>>>>>,
}

impl Watchers {
    /// Follows `key`: joins its watcher, or starts one that calls `version` every
    /// `every` (on the blocking pool) until no follower is left, `version`
    /// returns `None` (gone), or `shutdown`.
    pub fn follow(
        &self,
        key: &str,
        every: Duration,
        shutdown: &CancellationToken,
        version: impl Fn() -> Option<String> + Clone + Send + Sync + 'static,
    ) -> watch::Receiver<Seen> {
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(tx) = live.get(key) {
            return tx.subscribe();
        }
        let tx = Arc::new(watch::Sender::<Seen>::new(None));
        let rx = tx.subscribe();
        live.insert(key.to_owned(), tx.clone());
        let (live_map, key, shutdown) = (self.live.clone(), key.to_owned(), shutdown.clone());
        tokio::spawn(async move {
            loop {
                let look = version.clone();
                let seen = tokio::task::spawn_blocking(look).await.ok().flatten();
                let gone = seen.is_none();
                tx.send_if_modified(|old| {
                    let changed = old.as_ref() != Some(&seen);
                    *old = Some(seen.clone());
                    changed
                });
                let ending = tokio::select! {
                    _ = tokio::time::sleep(every), if !gone => false,
                    _ = shutdown.cancelled() => true,
                    // Every follower left.
                    _ = tx.closed() => true,
                    _ = std::future::ready(()), if gone => true,
                };
                if ending {
                    // Leave the map under its lock, unless a follower joined
                    // meanwhile (then go on watching for it).
                    let mut live = live_map.lock().unwrap_or_else(|p| p.into_inner());
                    if !gone && !shutdown.is_cancelled() && tx.receiver_count() > 0 {
                        continue;
                    }
                    if live.get(&key).is_some_and(|t| Arc::ptr_eq(t, &tx)) {
                        live.remove(&key);
                    }
                    break;
                }
            }
        });
        rx
    }

    /// How many things are being watched now.
    pub fn count(&self) -> usize {
        self.live.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn many_followers_share_one_watcher_which_ends_with_the_last() {
        let w = Watchers::default();
        let looks = Arc::new(AtomicUsize::new(0));
        let stop = CancellationToken::new();
        let counter = looks.clone();
        let version = move || {
            counter.fetch_add(1, Ordering::Relaxed);
            Some("v1".to_owned())
        };
        let mut followers: Vec<_> =
            (0..200).map(|_| w.follow("run:a", Duration::from_millis(20), &stop, version.clone())).collect();
        assert_eq!(w.count(), 1, "one watcher for 200 followers");
        followers[0].changed().await.unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        let n = looks.load(Ordering::Relaxed);
        assert!((2..=15).contains(&n), "{n} looks in 200 ms at one every 20 ms: one loop, not 200");
        assert_eq!(*followers[199].borrow(), Some(Some("v1".to_owned())));
        followers.clear();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(w.count(), 0, "the watcher ended with its last follower");
    }

    #[tokio::test]
    async fn a_gone_thing_is_said_once_and_its_watcher_ends() {
        let w = Watchers::default();
        let mut rx = w.follow("run:b", Duration::from_millis(10), &CancellationToken::new(), || None);
        rx.changed().await.unwrap();
        assert_eq!(*rx.borrow(), Some(None));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(w.count(), 0);
    }
}
