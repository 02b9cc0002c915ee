//! A minimal HTTP/1.1 client for the manager's health and submit URLs. They are
//! checked to be loopback `http://` addresses by the doctor, so this needs no TLS
//! and no connection pool.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use runboard::drive::doctor::http_host_port;

/// Sends one request and returns the status code and body.
pub async fn request(method: &str, url: &str, body: Option<&[u8]>, timeout: Duration) -> Result<(u16, String), String> {
    let (host, port) = http_host_port(url).ok_or_else(|| format!("{url} is not an http://host:port URL"))?;
    let path = url.strip_prefix("http://").and_then(|r| r.find('/').map(|i| &r[i..])).unwrap_or("/");
    let work = async {
        let mut s = TcpStream::connect((host.as_str(), port)).await.map_err(|e| e.to_string())?;
        let body = body.unwrap_or_default();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        s.write_all(head.as_bytes()).await.map_err(|e| e.to_string())?;
        s.write_all(body).await.map_err(|e| e.to_string())?;
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).await.map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&raw).into_owned();
        let code =
            text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).ok_or("no HTTP status line in the answer")?;
        let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
        Ok((code, body))
    };
    tokio::time::timeout(timeout, work).await.map_err(|_| format!("no answer within {timeout:?}"))?
}
