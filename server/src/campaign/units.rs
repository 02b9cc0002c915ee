//! The units a campaign launched, as their backends see them: the launcher
//! of each backend, observing a unit (cached: a slow backend is asked at most
//! once a second whatever the pollers), harvesting ended units' records, and
//! the units still in flight.

use std::time::{Duration, Instant};

use runboard::api::ApiError;
use runboard::campaign::{CampaignConfig, LauncherKind};
use runboard::runsets::UnitRecord;

use super::launcher::{Launcher, SlurmLauncher, SystemdBus, SystemdLauncher};

use super::{launcher, Campaign};

/// What the units' backends said, kept so a slow backend is not asked again
/// for every poll of every page.
#[derive(Default)]
pub(super) struct UnitsMemo {
    /// The D-Bus connection of the systemd launcher, made when first needed.
    systemd_bus: std::sync::OnceLock<Result<SystemdBus, String>>,
    /// What each unit's launcher last said of it, and when: a D-Bus read or
    /// an `squeue` is not made again for every poll of every page.
    pub(super) observed: std::sync::Mutex<std::collections::HashMap<String, (Instant, runboard::live::Observation)>>,
    /// One observation at a time: pollers arriving while one is made wait
    /// for it and share it, instead of each asking a slow backend.
    observing: std::sync::Mutex<()>,
}

impl Campaign {
    /// The launcher new batches start with (`[launcher] kind`).
    pub(super) fn launcher(&self, cfg: &CampaignConfig) -> Result<Box<dyn Launcher + '_>, ApiError> {
        self.launcher_of(cfg.launcher.kind, cfg).map_err(|e| ApiError::refused(vec![e]))
    }

    /// The launcher of a unit's backend, with the campaign's settings now
    /// (a unit keeps being observed by its own backend after the campaign
    /// changed `kind`).
    pub(super) fn launcher_of(
        &self,
        backend: LauncherKind,
        cfg: &CampaignConfig,
    ) -> Result<Box<dyn Launcher + '_>, String> {
        let l = &cfg.launcher;
        match backend {
            LauncherKind::Local => Ok(Box::new(&self.local)),
            LauncherKind::Systemd => {
                let bus = self.units_seen.systemd_bus.get_or_init(SystemdBus::new).as_ref().map_err(Clone::clone)?;
                Ok(Box::new(SystemdLauncher {
                    bus,
                    query_timeout: l.query_timeout(),
                    journal_dir: l.systemd.journal_dir.clone(),
                    environment: launcher::unit_environment(&l.environment),
                }))
            }
            LauncherKind::Slurm => {
                Ok(Box::new(SlurmLauncher { query_timeout: l.query_timeout(), settings: l.slurm.clone() }))
            }
        }
    }

    /// What a unit's launcher says of it. A remote backend is asked at most
    /// once a second (Slurm: every two seconds) whatever the number of pollers.
    pub(super) fn observe(&self, rec: &UnitRecord, cfg: &CampaignConfig) -> runboard::live::Observation {
        use runboard::live::Observation;
        let fresh_for = match rec.backend() {
            LauncherKind::Local => return self.local.observe(rec),
            LauncherKind::Slurm => Duration::from_secs(2),
            LauncherKind::Systemd => Duration::from_secs(1),
        };
        if let Some(end) = rec.recorded_end() {
            return end;
        }
        let cached = |m: &std::sync::Mutex<std::collections::HashMap<String, (Instant, Observation)>>| {
            m.lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&rec.unit)
                .filter(|(at, _)| at.elapsed() < fresh_for)
                .map(|(_, o)| o.clone())
        };
        if let Some(o) = cached(&self.units_seen.observed) {
            return o;
        }
        let _one = self.units_seen.observing.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(o) = cached(&self.units_seen.observed) {
            return o;
        }
        let obs = match self.launcher_of(rec.backend(), cfg) {
            Ok(l) => l.observe(rec),
            Err(reason) => Observation::Unknown { reason },
        };
        self.units_seen
            .observed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(rec.unit.clone(), (Instant::now(), obs.clone()));
        obs
    }

    /// Writes the end of every ended unit of a remote backend into its
    /// record and lets the backend forget it (systemd unloads the unit it
    /// kept to be read). Under the campaign lock, before a launch or control.
    pub(super) fn harvest(&self, cfg: &CampaignConfig) {
        for rec in self.records.units().iter().filter(|r| r.end.is_none() && r.backend() != LauncherKind::Local) {
            self.units_seen.observed.lock().unwrap_or_else(|p| p.into_inner()).remove(&rec.unit);
            let obs = self.observe(rec, cfg);
            let Some(done) = launcher::ended(rec, &obs) else { continue };
            if let Err(e) = launcher::write_record(&self.records.unit_path(&rec.unit), &done) {
                tracing::error!("recording the end of {}: {e}", rec.unit);
                continue;
            }
            if let Ok(l) = self.launcher_of(rec.backend(), cfg) {
                if let Err(e) = l.forget(&done) {
                    tracing::warn!("{}: {e}", rec.unit);
                }
            }
        }
    }

    /// The units that may still be running: active or pending, or whose
    /// state cannot be read now (a stop is still tried on those).
    pub(super) fn running_units(&self, cfg: &CampaignConfig) -> Vec<UnitRecord> {
        self.in_flight(cfg).into_iter().map(|(rec, _)| rec).collect()
    }

    /// The units that may still be running, with what their launchers say.
    pub(super) fn in_flight(&self, cfg: &CampaignConfig) -> Vec<(UnitRecord, runboard::live::Observation)> {
        use runboard::live::Observation;
        self.records
            .units()
            .iter()
            .filter(|r| r.end.is_none() || r.backend() == LauncherKind::Local)
            .filter_map(|r| {
                let obs = self.observe(r, cfg);
                matches!(obs, Observation::Active { .. } | Observation::Pending { .. } | Observation::Unknown { .. })
                    .then(|| (r.clone(), obs))
            })
            .collect()
    }

    /// The latest unit launched for `run_set`, if any.
    pub(super) fn unit_of(&self, run_set: &str) -> Option<UnitRecord> {
        self.records.units().iter().rev().find(|r| r.run_set == run_set).cloned()
    }
}
