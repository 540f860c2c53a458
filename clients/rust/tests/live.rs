//! Calls the Python reference server, started by the test on a free loopback port: ToACP and
//! a Chat stream, through the README's client example (`examples/chat.rs`).

mod common;

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use e2a_grpc::json::response_to_json;

#[allow(dead_code)] // its main() is for `cargo run --example chat`
#[path = "../examples/chat.rs"]
mod chat_example;

/// The Python server, killed when dropped (also when a test panics).
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    /// Starts `.venv/bin/python -m e2a_grpc serve` from the repository root on a free port and
    /// waits until it accepts connections.
    fn start() -> Server {
        let root = common::repo_root();
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(root.join(".venv/bin/python"))
            .args(["-m", "e2a_grpc", "serve", "--host", "127.0.0.1", "--port"])
            .arg(port.to_string())
            .current_dir(&root)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting the Python server (.venv/bin/python -m e2a_grpc serve)");
        let mut server = Server { child, port };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = server.child.try_wait().expect("the server's status") {
                panic!("the Python server exited early: {status}");
            }
            if TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_ok() {
                return server;
            }
            assert!(
                Instant::now() < deadline,
                "the Python server did not start serving in 60s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn address(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn to_acp_and_chat_stream_against_the_python_server() {
    let server = Server::start();
    let (jsonrpc, frames) = chat_example::run(server.address())
        .await
        .expect("the calls");

    let acp = common::Json::parse(&jsonrpc);
    assert_eq!(acp.str("jsonrpc").as_deref(), Some("2.0"), "{jsonrpc}");
    assert_eq!(
        acp.str("method").as_deref(),
        Some("session/prompt"),
        "{jsonrpc}"
    );
    assert_eq!(
        acp.get("id"),
        Some(&common::Json::Int("7".into())),
        "{jsonrpc}"
    );

    assert!(frames.len() >= 2, "{frames:?}");
    let mut text = String::new();
    for (i, frame) in frames.iter().enumerate() {
        assert_eq!(frame.sequence, i as i64, "frames in order");
        assert_eq!(frame.request_id.as_deref(), Some("r-1"));
        let last = i + 1 == frames.len();
        assert_eq!(frame.is_final, last, "exactly one final frame, the last");
        let body = common::Json::parse(&frame.body);
        if last {
            assert_eq!(frame.response_kind, "e2a.complete");
            assert_eq!(frame.status, "succeeded");
            let result = body.get("result").expect("a result");
            assert_eq!(result.str("content").as_deref(), Some("hello from Rust"));
        } else {
            assert_eq!(frame.response_kind, "e2a.chunk");
            text += &body.str("delta").expect("a text delta");
        }
        // Every frame writes as wire JSON.
        assert!(response_to_json(frame)
            .unwrap()
            .contains(r#""request_id":"r-1""#));
    }
    assert_eq!(text, "hello from Rust");
}
