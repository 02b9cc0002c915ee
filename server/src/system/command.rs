//! Running an outside command with a bound on its time: its output drained
//! while it runs (a full pipe must not stall it), killed when the bound
//! passes, and why it failed said in words.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// How a bounded command ended when it did not give an output.
#[derive(Debug, Clone, PartialEq)]
pub enum Failed {
    /// It could not be started (not installed, not executable).
    NotStarted(String),
    /// It ran past its bound and was killed; what it wrote until then.
    TimedOut { after: Duration, output: Vec<u8> },
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotStarted(e) => write!(f, "{e}"),
            Self::TimedOut { after, .. } => write!(f, "no answer within {} s (killed)", after.as_secs_f64()),
        }
    }
}

/// Runs `program args…` (in `cwd`, stdin closed), waiting at most `limit`.
pub fn run_bounded(program: &str, args: &[String], cwd: Option<&Path>, limit: Duration) -> Result<Output, Failed> {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(program);
    // Its own process group: at the bound the whole group is killed (a child
    // it started holds the output pipes open).
    cmd.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    let child = cmd.spawn().map_err(|e| Failed::NotStarted(format!("could not start {program}: {e}")))?;
    let pid = child.id();
    wait_bounded(child, pid, program, limit)
}

/// [`run_bounded`] with `input` written to the command's standard input
/// (then closed).
pub fn run_bounded_with_input(
    program: &str,
    args: &[String],
    cwd: Option<&Path>,
    input: &[u8],
    limit: Duration,
) -> Result<Output, Failed> {
    use std::io::Write;
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(program);
    cmd.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    let mut child = cmd.spawn().map_err(|e| Failed::NotStarted(format!("could not start {program}: {e}")))?;
    let pid = child.id();
    let stdin = child.stdin.take();
    let input = input.to_vec();
    // Written from a thread of its own: a command that does not read must
    // not stall this one.
    std::thread::spawn(move || {
        if let Some(mut s) = stdin {
            let _ = s.write_all(&input);
        }
    });
    wait_bounded(child, pid, program, limit)
}

/// Runs `program args…` in `cwd` with `env` added, its standard output and
/// error written into one pipe (interleaved as written), at most `limit`;
/// at the bound its whole process group is killed. Returns its exit code
/// (none: ended by a signal) and what it wrote.
pub fn run_bounded_merged(
    program: &str,
    args: &[String],
    cwd: &Path,
    env: &[(String, String)],
    limit: Duration,
) -> Result<(Option<i32>, Vec<u8>), Failed> {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    let (mut reader, writer) =
        std::io::pipe().map_err(|e| Failed::NotStarted(format!("could not make a pipe for {program}: {e}")))?;
    let writer2 = writer.try_clone().map_err(|e| Failed::NotStarted(format!("{program}: {e}")))?;
    let mut cmd = Command::new(program);
    cmd.args(args).current_dir(cwd).stdin(Stdio::null()).stdout(writer).stderr(writer2).process_group(0);
    cmd.envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let spawned = cmd.spawn();
    // The command holds our copies of the pipe's writing end: drop it, so the
    // reader ends when the child (and its children) have closed theirs.
    drop(cmd);
    let mut child = spawned.map_err(|e| Failed::NotStarted(format!("could not start {program}: {e}")))?;
    let pid = child.id();
    let read = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = reader.read_to_end(&mut out);
        out
    });
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let collect = |read: std::thread::JoinHandle<Vec<u8>>| {
        // Bounded too: a grandchild that left the group may hold the pipe.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(read.join().unwrap_or_default());
        });
        rx.recv_timeout(Duration::from_secs(5)).unwrap_or_default()
    };
    match rx.recv_timeout(limit) {
        Ok(Ok(status)) => Ok((status.code(), collect(read))),
        Ok(Err(e)) => Err(Failed::NotStarted(format!("{program}: {e}"))),
        Err(_) => {
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL);
            Err(Failed::TimedOut { after: limit, output: collect(read) })
        }
    }
}

fn wait_bounded(child: std::process::Child, pid: u32, program: &str, limit: Duration) -> Result<Output, Failed> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(Ok(out)) => Ok(out),
        Ok(Err(e)) => Err(Failed::NotStarted(format!("{program}: {e}"))),
        Err(_) => {
            // Only the group this call started, by its PID (its waiter thread
            // has not reaped the leader: the group is still ours).
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL);
            let out = rx.recv_timeout(Duration::from_secs(5)).ok().and_then(Result::ok);
            Err(Failed::TimedOut {
                after: limit,
                output: out.map(|o| [o.stdout, o.stderr].concat()).unwrap_or_default(),
            })
        }
    }
}

/// The first line of a command's error output (or its status), for a reason.
pub fn why(program: &str, out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    if line.is_empty() {
        format!("{program} ended with {}", out.status)
    } else {
        format!("{program}: {}", runboard::console::spec::shorten(line))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_past_its_bound_is_killed_and_says_so() {
        let t0 = std::time::Instant::now();
        let r = run_bounded("sh", &["-c".into(), "echo before; sleep 30".into()], None, Duration::from_millis(300));
        assert!(t0.elapsed() < Duration::from_secs(5));
        match r {
            Err(Failed::TimedOut { output, .. }) => assert_eq!(String::from_utf8_lossy(&output), "before\n"),
            other => panic!("{other:?}"),
        }
        let missing = run_bounded("/nonexistent/squeue", &[], None, Duration::from_secs(1)).unwrap_err();
        assert!(missing.to_string().contains("could not start /nonexistent/squeue"), "{missing}");
        let out =
            run_bounded("sh", &["-c".into(), "echo oops >&2; exit 3".into()], None, Duration::from_secs(5)).unwrap();
        assert_eq!(why("sh", &out), "sh: oops");
    }

    #[test]
    fn a_merged_command_interleaves_its_output_and_is_bounded() {
        let dir = std::env::temp_dir();
        let env = [("RB_WORD".to_string(), "hello".to_string())];
        let (code, out) = run_bounded_merged(
            "sh",
            &["-c".into(), "echo one; echo two >&2; echo $RB_WORD; exit 4".into()],
            &dir,
            &env,
            Duration::from_secs(5),
        )
        .unwrap();
        assert_eq!((code, String::from_utf8_lossy(&out).as_ref()), (Some(4), "one\ntwo\nhello\n"));
        let t0 = std::time::Instant::now();
        let r = run_bounded_merged(
            "sh",
            &["-c".into(), "echo started; sleep 30 & wait".into()],
            &dir,
            &[],
            Duration::from_millis(300),
        );
        assert!(t0.elapsed() < Duration::from_secs(5));
        match r {
            Err(Failed::TimedOut { output, .. }) => assert_eq!(String::from_utf8_lossy(&output), "started\n"),
            other => panic!("{other:?}"),
        }
    }
}
