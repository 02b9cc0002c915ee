//! Secure by default: a real `runboard serve` asks a token on loopback too.
//! Every route the operation table serves (REST, the pages' server
//! functions) and every stream is tried by a stranger (no token, a wrong
//! one), a viewer (`runboard token add --view`), an operator
//! (`--operate`) and the console token; the table of what each got is
//! printed and checked, and the audit log holds a line per control tried.

use crate::common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::served::{serve, token_of, BIN};
use runboard::api::operations::OPERATIONS;
use runboard::api::Method;

/// The version streams and the log stream: served beside the table.
const STREAMS: [&str; 5] = [
    "/api/runs/version/stream",
    "/api/runs/x/version/stream",
    "/api/live/version/stream",
    "/api/auto/version/stream",
    "/api/logs/x/x/stream",
];

/// One request with `token` as the bearer (or none); the status and the body.
fn ask(addr: &str, method: &str, path: &str, token: Option<&str>) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    let body = if method == "POST" { "{}" } else { "" };
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    // A stream that was let in never ends: its head is enough.
    let mut text = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => text.extend_from_slice(&buf[..n]),
            Err(_) => break,
        }
        if path.ends_with("/stream") && text.windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
    }
    let text = String::from_utf8_lossy(&text).into_owned();
    let code = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (code, text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default())
}

/// A template path with each `{param}` filled.
fn filled(path: &str) -> String {
    path.split('/').map(|seg| if seg.starts_with('{') { "x" } else { seg }).collect::<Vec<_>>().join("/")
}

/// Every route class with its requests: (class, method, path).
fn routes() -> Vec<(&'static str, &'static str, String)> {
    let mut all = Vec::new();
    for o in OPERATIONS {
        let (method, rest, page) = match o.method {
            Method::Get => ("GET", "REST read", "page read (server function)"),
            Method::Post => ("POST", "REST control", "page control (server function)"),
        };
        all.push((rest, method, filled(o.path)));
        all.push((page, method, format!("/sfn/{}", o.name)));
    }
    all.extend(STREAMS.iter().map(|s| ("stream", "GET", (*s).to_owned())));
    all.push(("page", "GET", "/live".to_owned()));
    all
}

fn token_cli(data: &Path, args: &[&str]) -> String {
    let out = Command::new(BIN).arg("token").args(args).arg("--data-dir").arg(data).output().unwrap();
    assert!(out.status.success(), "runboard token {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

fn audit_lines(root: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(root.join(runboard::access::audit::AUDIT_FILE)).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strangers_viewers_and_operators_get_what_their_token_allows() {
    let (tmp, root) = common::campaign().await;
    let data = tmp.path().join("data");
    let s = serve(&root, &data);
    let console = token_of(&s.addr).expect("serve printed the address with its token");
    assert_eq!(console.len(), 64, "256 bits as hex: {console}");
    let kept = std::fs::read_to_string(data.join("token")).unwrap();
    assert_eq!(kept.trim(), console, "the printed token is the one kept in the data folder");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(data.join("token")).unwrap().permissions().mode() & 0o777, 0o600);

    let viewer = token_cli(&data, &["add", "ana", "--view"]);
    let operator = token_cli(&data, &["add", "bo", "--operate"]);
    let listed = token_cli(&data, &["list"]);
    assert!(listed.contains("ana") && listed.contains("view") && listed.contains("bo") && !listed.contains(&viewer));
    let book = std::fs::read_to_string(data.join("tokens.json")).unwrap();
    assert!(!book.contains(&viewer) && !book.contains(&operator), "the book keeps hashes only");

    // `runboard open`: the same address, from the data folder.
    let out = Command::new(BIN).args(["open", "--data-dir"]).arg(&data).output().unwrap();
    let opened = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        opened.trim(),
        format!("http://{}/?token={console}", s.addr),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The same user's command line needs no token: it works on the files.
    let out = Command::new(BIN).args(["status", "--root"]).arg(&root).env_remove("RUNBOARD_TOKEN").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let before = audit_lines(&root).len();
    let callers: [(&str, Option<&str>); 5] = [
        ("stranger (no token)", None),
        ("stranger (wrong token)", Some("0123456789abcdef")),
        ("viewer", Some(&viewer)),
        ("operator", Some(&operator)),
        ("console token", Some(&console)),
    ];
    // class → caller → the statuses seen.
    let mut table: BTreeMap<&str, BTreeMap<&str, std::collections::BTreeSet<u16>>> = BTreeMap::new();
    let mut controls_tried = 0;
    for (class, method, path) in routes() {
        for (who, token) in callers {
            // Operators' controls are not sent: they would act (launch, stop)
            // on the campaign; one is sent below.
            if method == "POST" && matches!(who, "operator" | "console token") {
                continue;
            }
            let (code, body) = ask(&s.addr, method, &path, token);
            table.entry(class).or_default().entry(who).or_default().insert(code);
            if method == "POST" {
                controls_tried += 1;
            }
            match who {
                "stranger (no token)" | "stranger (wrong token)" => {
                    assert_eq!(code, 401, "{who} {method} {path}: {body}");
                    assert!(body.contains("needs its token"), "{body}");
                }
                "viewer" if method == "POST" => {
                    assert_eq!(code, 403, "viewer {method} {path}: {body}");
                    assert!(body.contains("ana is a viewer's token"), "refused in words: {body}");
                }
                _ => assert!(![401, 403].contains(&code), "{who} {method} {path} refused: {code} {body}"),
            }
        }
    }
    // One control by the operator's named token, one by the console token.
    assert_eq!(ask(&s.addr, "POST", "/api/auto/off", Some(&operator)).0, 200);
    assert_eq!(ask(&s.addr, "POST", "/api/auto/off", Some(&console)).0, 200);
    eprintln!("| route class | {} |", callers.map(|c| c.0).join(" | "));
    for (class, by) in &table {
        let cells: Vec<String> = callers
            .iter()
            .map(|(who, _)| by.get(who).map_or("not sent (acts)".into(), |codes| format!("{codes:?}")))
            .collect();
        eprintln!("| {class} | {} |", cells.join(" | "));
    }

    // The audit log: a line per control tried, refused ones included, each
    // naming who.
    let lines = audit_lines(&root);
    let new = &lines[before..];
    assert_eq!(new.len(), controls_tried + 2, "one line per control tried");
    let by = |name: &str| new.iter().filter(|l| l["by"] == name).count();
    assert_eq!(by("ana"), controls_tried / 3, "the viewer's refused controls");
    assert_eq!(by("no valid token"), 2 * controls_tried / 3, "the strangers' refused controls");
    assert_eq!((by("bo"), by("console")), (1, 1));
    assert!(new.iter().filter(|l| l["by"] == "ana").all(|l| l["status"] == 403));

    // Revoked: refused at once, the others unchanged.
    assert_eq!(ask(&s.addr, "GET", "/api/live", Some(&viewer)).0, 200);
    token_cli(&data, &["revoke", "ana"]);
    assert_eq!(ask(&s.addr, "GET", "/api/live", Some(&viewer)).0, 401);
    assert_eq!(ask(&s.addr, "GET", "/api/live", Some(&operator)).0, 200);

    // A viewer's page renders every control disabled; the address with a
    // token is traded for the cookie.
    let viewer2 = token_cli(&data, &["add", "cy", "--view"]);
    let (code, html) = ask(&s.addr, "GET", "/live", Some(&viewer2));
    assert_eq!(code, 200);
    assert!(html.contains("data-role=\"view\"") && html.contains("viewing only"), "{html}");
    let (code, html) = ask(&s.addr, "GET", "/live", Some(&operator));
    assert!(code == 200 && html.contains("data-role=\"operate\"") && !html.contains("viewing only"));
}

#[test]
fn no_token_is_loud_and_loopback_only() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["serve", "--no-token", "--host", "0.0.0.0", "--port", "0", "--root", "."])
        .arg("--data-dir")
        .arg(tmp.path())
        .env_remove("RUNBOARD_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("binding 0.0.0.0") && err.contains("cannot be served with --no-token"), "{err}");
    let out =
        Command::new(BIN).args(["token", "add", "console", "--view", "--data-dir"]).arg(tmp.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("console token's own name"));
    let out = Command::new(BIN).args(["open", "--data-dir"]).arg(tmp.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no console started from"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_token_anyone_is_let_in_and_warned_of() {
    let (tmp, root) = common::campaign().await;
    let mut cmd = common::served::serve_command(BIN, &root);
    cmd.arg("--no-token").arg("--data-dir").arg(tmp.path().join("data"));
    let s = common::served::served(cmd.spawn().unwrap());
    assert!(token_of(&s.addr).is_none());
    assert_eq!(ask(&s.addr, "GET", "/api/live", None).0, 200);
    assert_eq!(ask(&s.addr, "POST", "/api/auto/off", None).0, 200);
    let lines = audit_lines(&root);
    assert_eq!(lines.last().unwrap()["by"], "anyone (no token asked)");
}

/// What another account of this machine gets: made with `useradd` for the
/// test (root is needed, as for the daemons' suite under the same feature)
/// and removed after. With a batch running behind its gateway, it asks every
/// route of the console over loopback with Python's `http.client` (Debian's
/// `/usr/bin/python3`), calls the batch gateway without its secret and with
/// a wrong one, and tries to read the console token and the gateway's
/// secret, whose folders are opened to it (0711) so that only the files' own
/// modes stand in its way.
#[cfg(feature = "daemon-tests")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_account_on_this_machine_gets_nothing() {
    use std::os::unix::fs::PermissionsExt;
    struct Account(String);
    impl Drop for Account {
        fn drop(&mut self) {
            let _ = Command::new("userdel").arg(&self.0).status();
        }
    }
    let name = format!("rbstranger{}", std::process::id() % 100_000);
    let made = Command::new("useradd")
        .args(["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", &name])
        .status()
        .unwrap();
    assert!(made.success(), "useradd {name} (the test runs as root)");
    let account = Account(name);

    let tmp = tempfile::tempdir().unwrap();
    let root = common::served::campaign(tmp.path(), 60.0);
    let data = tmp.path().join("data");
    let s = serve(&root, &data);
    let spec =
        common::served::draft(&s.addr, serde_json::json!({"label": "stranger", "max_cells": 1, "endpoint": "gpu-a"}));
    let (code, launched) = common::served::post(&s.addr, "/api/control/start", serde_json::json!({"path": spec}));
    assert_eq!(code, 200, "{launched}");
    let kept = root.join("runsets").join(launched["run_set"].as_str().unwrap()).join(".gateway.json");
    common::wait_for("the batch's gateway", Duration::from_secs(30), || kept.exists());
    let gateway: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&kept).unwrap()).unwrap();
    let gateway_addr = format!("127.0.0.1:{}", gateway["port"]);
    for dir in [tmp.path(), data.as_path()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o711)).unwrap();
    }

    let routes: Vec<(&str, String)> = routes().into_iter().map(|(_, m, p)| (m, p)).collect();
    let gateway_paths = ["/v1/models", "/0123456789abcdef0123456789abcdef/c-1/gpu-a/v1/models"];
    let script = r#"
import http.client, json, sys
def ask(addr, method, path):
    host, port = addr.rsplit(":", 1)
    c = http.client.HTTPConnection(host, int(port), timeout=30)
    c.request(method, path, body="{}" if method == "POST" else None, headers={"Content-Type": "application/json"})
    status = c.getresponse().status
    c.close()
    return status
def read(path):
    try:
        open(path).read()
        return "read"
    except PermissionError:
        return "refused"
console, gateway, routes, gateway_paths = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
print(json.dumps({
    "console": [[m, p, ask(console, m, p)] for m, p in routes],
    "gateway": [[p, ask(gateway, "GET", p)] for p in gateway_paths],
    "token_file": read(sys.argv[5]),
    "gateway_file": read(sys.argv[6]),
}))
"#;
    let out = Command::new("runuser")
        .args(["-u", &account.0, "--", "/usr/bin/python3", "-c", script, &s.addr, &gateway_addr])
        .arg(serde_json::to_string(&routes).unwrap())
        .arg(serde_json::to_string(&gateway_paths).unwrap())
        .arg(data.join("token"))
        .arg(&kept)
        .output()
        .unwrap();
    // The batch is ended whatever the account got.
    let (stopped, _) = common::served::post(&s.addr, "/api/control/stop", serde_json::json!({}));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stopped, 200);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let seen = v["console"].as_array().unwrap();
    assert_eq!(seen.len(), routes.len());
    let let_in: Vec<_> = seen.iter().filter(|r| r[2] != 401).collect();
    assert!(let_in.is_empty(), "another account was let in: {let_in:?}");
    for g in v["gateway"].as_array().unwrap() {
        assert_eq!(g[1], 404, "the gateway without its secret: {g}");
    }
    assert_eq!(v["token_file"], "refused", "another account read the console token");
    assert_eq!(v["gateway_file"], "refused", "another account read the gateway's secret");
    eprintln!(
        "another account ({}): {} console routes, every one 401; the gateway without its secret 404; \
         the token file and the gateway's secret refused",
        account.0,
        seen.len()
    );
}
