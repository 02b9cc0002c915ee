//! The manager's health and submit URLs, asked with a kept HTTP client
//! (reqwest over hyper): chunked replies, keep-alive and the rest of HTTP/1.1
//! are its business, not ours. The URLs are checked to be loopback `http://`
//! addresses by the doctor, so no TLS is built in, and no proxy is ever used
//! (an `HTTP_PROXY` in the environment must not route a loopback call away).

use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;

fn client() -> Result<&'static reqwest::Client, String> {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    if let Some(c) = CLIENT.get() {
        return Ok(c);
    }
    let c = reqwest::Client::builder()
        .no_proxy()
        .connect_timeout(Duration::from_secs(5))
        .pool_idle_timeout(Duration::from_secs(5))
        .build()
        .map_err(|e| format!("building the HTTP client: {e}"))?;
    Ok(CLIENT.get_or_init(|| c))
}

/// Sends one request (a JSON body for a POST) and returns the status code and
/// the body as text; the whole exchange is bounded by `timeout`.
pub async fn request(
    method: &str,
    url: &str,
    body: Option<&Value>,
    timeout: Duration,
) -> Result<(u16, String), String> {
    let method = reqwest::Method::from_bytes(method.as_bytes()).map_err(|e| e.to_string())?;
    let mut req = client()?.request(method, url).timeout(timeout);
    if let Some(b) = body {
        req = req.json(b);
    }
    let res = req.send().await.map_err(|e| describe(&e, timeout))?;
    let code = res.status().as_u16();
    let text = res.text().await.map_err(|e| describe(&e, timeout))?;
    Ok((code, text))
}

fn describe(e: &reqwest::Error, timeout: Duration) -> String {
    if e.is_timeout() {
        format!("no answer within {timeout:?}")
    } else {
        // The chain says why (connection refused, reset, …).
        let mut text = e.to_string();
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            text.push_str(": ");
            text.push_str(&s.to_string());
            source = s.source();
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A one-shot server that answers with `reply` bytes.
    async fn serve_once(reply: &'static [u8]) -> String {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/cells", l.local_addr().unwrap());
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let mut buf = vec![0u8; 65536];
            let _ = s.read(&mut buf).await;
            s.write_all(reply).await.unwrap();
            s.shutdown().await.ok();
        });
        url
    }

    #[tokio::test]
    async fn a_chunked_reply_is_read() {
        let url = serve_once(
            b"HTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n5\r\n{\"ok\"\r\n6\r\n: true\r\n1\r\n}\r\n0\r\n\r\n",
        )
        .await;
        let (code, body) =
            request("POST", &url, Some(&serde_json::json!({"cells": []})), Duration::from_secs(5)).await.unwrap();
        assert_eq!((code, body.as_str()), (202, "{\"ok\": true}"));
    }

    #[tokio::test]
    async fn silence_is_bounded() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/health", l.local_addr().unwrap());
        let _hold = tokio::spawn(async move {
            let (_s, _) = l.accept().await.unwrap();
            tokio::time::sleep(Duration::from_secs(30)).await;
        });
        let err = request("GET", &url, None, Duration::from_millis(300)).await.unwrap_err();
        assert!(err.starts_with("no answer within"), "{err}");
    }
}
