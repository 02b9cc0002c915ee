//! **The systemd launcher**: each unit is a transient service of the
//! systemd user manager, started, read and stopped over D-Bus (zbus; no
//! `systemd-run` or `systemctl`).
//!
//! - *Start*: `StartTransientUnit("<unit>.service", "fail", …)` running
//!   `runboard drive …` with the campaign root as working directory, the
//!   unit's environment (a transient unit does not inherit the server's),
//!   `KillMode=control-group` (a stop reaches every process of the batch,
//!   also one that left its process group with `setsid`), a stop timeout
//!   equal to the grace, `Type=exec` (the start fails when the driver
//!   cannot be executed) and `RemainAfterExit=yes`: an ended unit stays
//!   loaded with its exit status until runboard has written it into the unit
//!   record and unloads it ([`Launcher::forget`]) — so a server that was down
//!   when the batch ended still learns how it ended. Bounded at 60 s.
//! - *State*: the unit's `ActiveState`, `SubState`, `Result`,
//!   `ExecMainStatus`, `ExecMainCode` and timestamps, each read bounded by
//!   the query timeout (10 s by default). A bus that cannot be reached or a
//!   read that does not answer gives `unknown`, never `failed`.
//! - *Stop*: `StopUnit`; the manager sends SIGTERM to the unit's cgroup,
//!   SIGKILL after the stop timeout.
//! - *Why it died*: the last lines of its journal (`journalctl
//!   --user-unit`, bounded at 20 s).
//!
//! The bus is the server's session bus (`DBUS_SESSION_BUS_ADDRESS`, else
//! `$XDG_RUNTIME_DIR/bus`). D-Bus calls run on a small runtime of their own,
//! so a launcher can be called from any thread and every wait is bounded
//! there, whatever the bus does.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use runboard::campaign::LauncherKind;
use runboard::live::Observation;
use runboard::runsets::{UnitHandle, UnitRecord};
use runboard::Timestamp;
use zbus::zvariant::{OwnedObjectPath, OwnedValue, Value};

use super::{Launcher, LauncherError, Stopped, UnitRequest};
use crate::campaign::records::Records;

const DEST: &str = "org.freedesktop.systemd1";
const MANAGER_PATH: &str = "/org/freedesktop/systemd1";
const MANAGER: &str = "org.freedesktop.systemd1.Manager";
/// How long a launch may take (the manager accepting the unit and the
/// driver being executed).
pub const LAUNCH_LIMIT: Duration = Duration::from_secs(60);
/// How long reading a unit's journal may take.
pub const JOURNAL_LIMIT: Duration = Duration::from_secs(20);

/// The connection to the user manager: a runtime of its own and the
/// connection it keeps (made again after a failure).
pub struct SystemdBus {
    rt: tokio::runtime::Runtime,
    conn: std::sync::Arc<Mutex<Option<zbus::Connection>>>,
}

impl SystemdBus {
    pub fn new() -> Result<Self, String> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("runboard-dbus")
            .enable_all()
            .build()
            .map_err(|e| format!("starting the D-Bus runtime: {e}"))?;
        Ok(Self { rt, conn: Default::default() })
    }

    /// Runs `call` with the connection, all of it (connecting included)
    /// bounded by `limit`; its error in words.
    fn call<T, F, Fut>(&self, limit: Duration, call: F) -> Result<T, BusError>
    where
        T: Send + 'static,
        F: FnOnce(zbus::Connection) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = zbus::Result<T>> + Send,
    {
        let held = self.conn.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        self.rt.spawn(async move {
            let work = async {
                let cached = held.lock().unwrap_or_else(|p| p.into_inner()).clone();
                let conn = match cached {
                    Some(c) => c,
                    None => {
                        let c = zbus::Connection::session().await.map_err(BusError::Unreachable)?;
                        *held.lock().unwrap_or_else(|p| p.into_inner()) = Some(c.clone());
                        c
                    }
                };
                call(conn).await.map_err(BusError::from_zbus)
            };
            let out = match tokio::time::timeout(limit, work).await {
                Ok(r) => r,
                Err(_) => Err(BusError::TimedOut(limit)),
            };
            if matches!(out, Err(BusError::Unreachable(_) | BusError::TimedOut(_))) {
                // A connection that failed or hung is not used again.
                *held.lock().unwrap_or_else(|p| p.into_inner()) = None;
            }
            let _ = tx.send(out);
        });
        rx.recv_timeout(limit + Duration::from_secs(1)).unwrap_or(Err(BusError::TimedOut(limit)))
    }
}

/// Why a D-Bus call gave no answer.
#[derive(Debug)]
enum BusError {
    /// The bus could not be connected to.
    Unreachable(zbus::Error),
    /// No answer in time.
    TimedOut(Duration),
    /// The manager does not have the unit loaded.
    NoSuchUnit,
    /// The manager answered with an error.
    Refused(String),
}

impl BusError {
    fn from_zbus(e: zbus::Error) -> Self {
        match &e {
            zbus::Error::MethodError(name, msg, _) => {
                if name.as_str() == "org.freedesktop.systemd1.NoSuchUnit" {
                    Self::NoSuchUnit
                } else {
                    Self::Refused(format!("{}: {}", name.as_str(), msg.as_deref().unwrap_or("")))
                }
            }
            zbus::Error::InputOutput(_) => Self::Unreachable(e),
            _ => Self::Refused(e.to_string()),
        }
    }
}

impl std::fmt::Display for BusError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unreachable(e) => write!(f, "the systemd user manager's bus cannot be reached ({e})"),
            Self::TimedOut(d) => write!(f, "the systemd user manager did not answer within {} s", d.as_secs_f64()),
            Self::NoSuchUnit => write!(f, "the user manager has no such unit loaded"),
            Self::Refused(e) => write!(f, "the user manager refused: {e}"),
        }
    }
}

/// The unit's properties runboard reads.
#[derive(Debug, Clone, Default, PartialEq)]
struct UnitProps {
    active_state: String,
    sub_state: String,
    result: String,
    exec_main_status: i32,
    /// `CLD_EXITED` (1), `CLD_KILLED` (2), `CLD_DUMPED` (3); 0 before it ran.
    exec_main_code: i32,
    main_pid: u32,
    active_enter_us: u64,
    inactive_enter_us: u64,
    exec_main_exit_us: u64,
}

fn string(map: &HashMap<String, OwnedValue>, key: &str) -> String {
    match map.get(key).map(|v| &**v) {
        Some(Value::Str(s)) => s.as_str().to_owned(),
        _ => String::new(),
    }
}

fn number(map: &HashMap<String, OwnedValue>, key: &str) -> i64 {
    match map.get(key).map(|v| &**v) {
        Some(Value::I32(n)) => i64::from(*n),
        Some(Value::U32(n)) => i64::from(*n),
        Some(Value::U64(n)) => i64::try_from(*n).unwrap_or(i64::MAX),
        Some(Value::I64(n)) => *n,
        _ => 0,
    }
}

fn at(us: u64) -> Option<Timestamp> {
    (us > 0).then_some(Timestamp((us / 1000) as i64))
}

impl UnitProps {
    /// What the launcher says of the unit, from its properties.
    fn observation(&self) -> Observation {
        // How its main process ended (a signal: 128 + the signal, as a shell says).
        let status = match self.exec_main_code {
            1 => Some(self.exec_main_status),
            2 | 3 => Some(128 + self.exec_main_status),
            _ => None,
        };
        let finished = |result: &str, us: u64| Observation::Finished {
            exit_status: status,
            result: if result.is_empty() { "unknown".into() } else { result.to_owned() },
            at: at(us).or(at(self.exec_main_exit_us)),
        };
        match (self.active_state.as_str(), self.sub_state.as_str()) {
            // RemainAfterExit: the driver ended; the unit stays to be read.
            ("active", "exited") => finished(&self.result, self.exec_main_exit_us),
            ("active" | "reloading" | "deactivating", _) => Observation::Active { since: at(self.active_enter_us) },
            ("activating", sub) => Observation::Pending { reason: Some(format!("systemd: activating ({sub})")) },
            ("failed", _) => finished(&self.result, self.inactive_enter_us),
            ("inactive", _) if self.exec_main_code != 0 => finished(&self.result, self.inactive_enter_us),
            // Loaded, never ran: the start job has not run yet.
            ("inactive", _) => Observation::Pending { reason: Some("systemd: start job queued".into()) },
            (state, sub) => Observation::Unknown { reason: format!("systemd reports the unit {state} ({sub})") },
        }
    }
}

/// The systemd user-manager launcher, with the campaign's settings.
pub struct SystemdLauncher<'a> {
    pub bus: &'a SystemdBus,
    /// The bound on each state read.
    pub query_timeout: Duration,
    /// `journalctl -D` folder; none: the journals journalctl finds.
    pub journal_dir: Option<String>,
    /// The variables the unit is given (name, value).
    pub environment: Vec<(String, String)>,
}

/// The systemd unit name of a runboard unit.
pub fn service_name(unit: &str) -> String {
    format!("{unit}.service")
}

impl SystemdLauncher<'_> {
    /// The unit's properties, or why they could not be read.
    fn props(&self, name: &str, limit: Duration) -> Result<UnitProps, BusError> {
        let name = name.to_owned();
        self.bus.call(limit, move |c| async move {
            let reply = c.call_method(Some(DEST), MANAGER_PATH, Some(MANAGER), "GetUnit", &(name.as_str(),)).await?;
            let path: OwnedObjectPath = reply.body().deserialize()?;
            let get_all = |iface: &'static str| {
                let c = c.clone();
                let path = path.clone();
                async move {
                    let r = c
                        .call_method(
                            Some(DEST),
                            path.as_str(),
                            Some("org.freedesktop.DBus.Properties"),
                            "GetAll",
                            &(iface,),
                        )
                        .await?;
                    r.body().deserialize::<HashMap<String, OwnedValue>>()
                }
            };
            let unit = get_all("org.freedesktop.systemd1.Unit").await?;
            let service = get_all("org.freedesktop.systemd1.Service").await?;
            Ok(UnitProps {
                active_state: string(&unit, "ActiveState"),
                sub_state: string(&unit, "SubState"),
                active_enter_us: number(&unit, "ActiveEnterTimestamp") as u64,
                inactive_enter_us: number(&unit, "InactiveEnterTimestamp") as u64,
                result: string(&service, "Result"),
                exec_main_status: number(&service, "ExecMainStatus") as i32,
                exec_main_code: number(&service, "ExecMainCode") as i32,
                main_pid: number(&service, "MainPID") as u32,
                exec_main_exit_us: number(&service, "ExecMainExitTimestamp") as u64,
            })
        })
    }

    fn manager_call(&self, method: &'static str, name: &str, limit: Duration) -> Result<(), BusError> {
        let name = name.to_owned();
        self.bus.call(limit, move |c| async move {
            let args: (&str, &str) = (name.as_str(), "replace");
            if method == "ResetFailedUnit" {
                c.call_method(Some(DEST), MANAGER_PATH, Some(MANAGER), method, &(name.as_str(),)).await?;
            } else {
                c.call_method(Some(DEST), MANAGER_PATH, Some(MANAGER), method, &args).await?;
            }
            Ok(())
        })
    }
}

impl Launcher for SystemdLauncher<'_> {
    fn backend(&self) -> LauncherKind {
        LauncherKind::Systemd
    }

    fn start(&self, req: &UnitRequest) -> Result<UnitRecord, LauncherError> {
        let name = service_name(&req.unit);
        let Some((program, _)) = req.command.split_first() else { return Err(LauncherError::NoCommand) };
        let mut rec = super::first_record(req, LauncherKind::Systemd);
        // Its output goes to the journal, not to a log file of its own.
        rec.log = None;
        super::write_record(&req.record, &rec)?;
        let exec: Vec<(String, Vec<String>, bool)> = vec![(program.clone(), req.command.clone(), false)];
        let env: Vec<String> = self.environment.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let props: Vec<(&'static str, OwnedValue)> = [
            ("Description", Value::from(format!("runboard batch {} ({})", req.run_set, req.spec))),
            ("ExecStart", Value::from(exec)),
            ("WorkingDirectory", Value::from(req.root.to_string_lossy().into_owned())),
            ("Environment", Value::from(env)),
            ("Type", Value::from("exec")),
            ("RemainAfterExit", Value::from(true)),
            ("KillMode", Value::from("control-group")),
            ("TimeoutStopUSec", Value::from(req.grace.as_micros() as u64)),
            ("SendSIGKILL", Value::from(true)),
        ]
        .into_iter()
        .map(|(k, v)| v.try_into().map(|v| (k, v)))
        .collect::<Result<_, _>>()
        .map_err(|e: zbus::zvariant::Error| LauncherError::Backend(format!("building the unit's properties: {e}")))?;
        let deadline = Instant::now() + LAUNCH_LIMIT;
        let unit_name = name.clone();
        let started = self.bus.call(LAUNCH_LIMIT, move |c| async move {
            let aux: Vec<(&str, Vec<(&str, OwnedValue)>)> = Vec::new();
            let props: Vec<(&str, &OwnedValue)> = props.iter().map(|(k, v)| (*k, v)).collect();
            let reply = c
                .call_method(
                    Some(DEST),
                    MANAGER_PATH,
                    Some(MANAGER),
                    "StartTransientUnit",
                    &(unit_name.as_str(), "fail", props, aux),
                )
                .await?;
            let job: OwnedObjectPath = reply.body().deserialize()?;
            Ok(job)
        });
        if let Err(e) = started {
            let why = LauncherError::Backend(format!("systemd did not start {name}: {e}"));
            // The record says the unit never started, so nothing waits for it.
            if let Some(done) = super::ended(
                &rec,
                &Observation::Finished { exit_status: None, result: "never-started".into(), at: None },
            ) {
                let _ = super::write_record(&req.record, &done);
            }
            return Err(why);
        }
        // Accepted is not surviving: wait (bounded) until the driver runs or
        // the unit ended, and record its main PID.
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.props(&name, left.min(self.query_timeout)) {
                Ok(p) if !matches!(p.observation(), Observation::Pending { .. }) => {
                    rec.handle = UnitHandle::Systemd { main_pid: (p.main_pid > 0).then_some(p.main_pid) };
                    let _ = super::write_record(&req.record, &rec);
                    return Ok(rec);
                }
                // Unloaded already: it ended and was collected (a stop raced it).
                Err(BusError::NoSuchUnit) => return Ok(rec),
                Ok(_) | Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
                Ok(_) => return Ok(rec),
                Err(e) => {
                    return Err(LauncherError::NotSeen(format!(
                        "{name} was accepted, but its state could not be read: {e}"
                    )))
                }
            }
        }
    }

    fn observe(&self, rec: &UnitRecord) -> Observation {
        if let Some(end) = rec.recorded_end() {
            return end;
        }
        match self.props(&service_name(&rec.unit), self.query_timeout) {
            Ok(p) => p.observation(),
            // Asked, and the manager has no such unit: it is not running. Its
            // end was not recorded (the unit was reset or collected by
            // someone else), so how it ended is not known.
            Err(BusError::NoSuchUnit) => Observation::Finished { exit_status: None, result: "gone".into(), at: None },
            Err(e) => Observation::Unknown { reason: e.to_string() },
        }
    }

    fn stop(&self, rec: &UnitRecord, grace: Duration) -> Stopped {
        let unit = rec.unit.clone();
        let name = service_name(&rec.unit);
        let before = self.observe(rec);
        if matches!(before, Observation::Finished { .. }) {
            return Stopped { unit, was_running: false, ended: true, detail: "it had already ended".into() };
        }
        if let Err(e) = self.manager_call("StopUnit", &name, self.query_timeout.max(Duration::from_secs(10))) {
            if !matches!(e, BusError::NoSuchUnit) {
                return Stopped { unit, was_running: true, ended: false, detail: format!("StopUnit failed: {e}") };
            }
        }
        // The manager sends SIGTERM to the cgroup, SIGKILL after the stop
        // timeout (the grace); wait for that and a little more.
        let deadline = Instant::now() + grace + Duration::from_secs(10);
        while Instant::now() < deadline {
            match self.props(&name, self.query_timeout) {
                Err(BusError::NoSuchUnit) => {
                    return Stopped { unit, was_running: true, ended: true, detail: "stopped by systemd".into() }
                }
                Ok(p) if matches!(p.active_state.as_str(), "inactive" | "failed") => {
                    return Stopped {
                        unit,
                        was_running: true,
                        ended: true,
                        detail: format!("stopped by systemd ({}, result {})", p.active_state, p.result),
                    }
                }
                _ => std::thread::sleep(Duration::from_millis(100)),
            }
        }
        Stopped { unit, was_running: true, ended: false, detail: format!("still stopping after {} s", grace.as_secs()) }
    }

    fn log_tail(&self, rec: &UnitRecord, records: &Records, n: usize) -> Vec<String> {
        let mut args = vec![
            format!("--user-unit={}", service_name(&rec.unit)),
            "--no-pager".into(),
            "-o".into(),
            "cat".into(),
            "-n".into(),
            n.to_string(),
        ];
        if let Some(dir) = &self.journal_dir {
            args.extend(["-D".into(), dir.clone()]);
        }
        match crate::system::command::run_bounded("journalctl", &args, None, JOURNAL_LIMIT) {
            Ok(out) if out.status.success() => {
                let lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .map(|l| l.trim_end().to_owned())
                    .filter(|l| !l.is_empty() && l != "-- No entries --")
                    .collect();
                if lines.is_empty() {
                    records_tail(rec, records, n)
                } else {
                    lines
                }
            }
            Ok(out) => {
                vec![format!("(its journal could not be read: {})", crate::system::command::why("journalctl", &out))]
            }
            Err(e) => vec![format!("(its journal could not be read: journalctl: {e})")],
        }
    }

    fn forget(&self, rec: &UnitRecord) -> Result<(), LauncherError> {
        let name = service_name(&rec.unit);
        let said = |e: BusError| LauncherError::Backend(e.to_string());
        match self.props(&name, self.query_timeout) {
            Err(BusError::NoSuchUnit) => Ok(()),
            Err(e) => Err(said(e)),
            // Failed units stay loaded until reset; a remaining one until stopped.
            Ok(p) if p.active_state == "failed" => {
                self.manager_call("ResetFailedUnit", &name, self.query_timeout).map_err(said)
            }
            Ok(p) if p.active_state == "active" && p.sub_state == "exited" => {
                self.manager_call("StopUnit", &name, self.query_timeout).map_err(said)
            }
            Ok(_) => Ok(()),
        }
    }
}

/// A record's own log, when the journal has nothing (an older record).
fn records_tail(rec: &UnitRecord, records: &Records, n: usize) -> Vec<String> {
    rec.log.as_deref().map(|l| records.tail_lines(l, n)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(active: &str, sub: &str, result: &str, code: i32, status: i32) -> UnitProps {
        UnitProps {
            active_state: active.into(),
            sub_state: sub.into(),
            result: result.into(),
            exec_main_code: code,
            exec_main_status: status,
            ..Default::default()
        }
    }

    #[test]
    fn unit_properties_map_to_observations() {
        let fin = |s: Option<i32>, r: &str| Observation::Finished { exit_status: s, result: r.into(), at: None };
        let cases = [
            (props("active", "running", "success", 0, 0), Observation::Active { since: None }),
            (props("deactivating", "stop-sigterm", "success", 0, 0), Observation::Active { since: None }),
            (props("active", "exited", "success", 1, 0), fin(Some(0), "success")),
            (props("failed", "failed", "exit-code", 1, 2), fin(Some(2), "exit-code")),
            (props("failed", "failed", "signal", 2, 9), fin(Some(137), "signal")),
            (props("inactive", "dead", "success", 1, 0), fin(Some(0), "success")),
        ];
        for (p, want) in cases {
            assert_eq!(p.observation(), want, "{p:?}");
        }
        assert!(matches!(props("activating", "start", "", 0, 0).observation(), Observation::Pending { .. }));
        assert!(matches!(props("inactive", "dead", "", 0, 0).observation(), Observation::Pending { .. }));
        assert!(matches!(props("maintenance", "x", "", 0, 0).observation(), Observation::Unknown { .. }));
    }
}
