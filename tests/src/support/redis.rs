//! A real `redis-server` (Debian package `redis-server`) as a child process on a free loopback
//! port, for the Redis pause store tests. No persistence (`--save ""`, no AOF): a restart loses
//! every key, as a Redis without persistence does. Killed on drop.
//!
//! When `redis-server` is not installed and the tests run as root, it is installed once with
//! `apt-get` (`.ci/run` installs it the same way beforehand).

use std::collections::HashSet;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::command::run_captured;

/// How long `apt-get install redis-server` may take.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(600);
/// How long the server may take to answer `PING` (the wait ends at the first `PONG`; the bound
/// holds on a loaded 2-core machine).
const READY: Duration = Duration::from_secs(60);

/// The `redis-server` binary: on the PATH, or installed now (root only). Panics with why not.
pub fn redis_server_binary() -> PathBuf {
    static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match FOUND.get_or_init(find_or_install) {
        Ok(path) => path.clone(),
        Err(why) => panic!("{why}"),
    }
}

fn on_path() -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("redis-server"))
            .find(|path| path.is_file())
    })
}

fn find_or_install() -> Result<PathBuf, String> {
    if let Some(path) = on_path() {
        return Ok(path);
    }
    let install = |args: &[&str]| {
        run_captured(
            Command::new("apt-get")
                .args(args)
                .env("DEBIAN_FRONTEND", "noninteractive"),
            INSTALL_TIMEOUT,
        )
    };
    let installed = install(&["install", "-y", "redis-server"]).or_else(|_| {
        install(&["update"])?;
        install(&["install", "-y", "redis-server"])
    });
    match (installed, on_path()) {
        (_, Some(path)) => Ok(path),
        (Err(error), None) => Err(format!(
            "redis-server is not installed and `apt-get install redis-server` failed ({error:?}); install the Debian package redis-server"
        )),
        (Ok(()), None) => Err("apt-get installed redis-server, but it is not on the PATH".into()),
    }
}

/// A loopback port that no other [`ReservedPort`] in this test process holds until it is dropped.
///
/// A killed `redis-server` frees its port while its test still means to restart on it (or to
/// see nothing listening there); without the reservation a test starting at that moment can be
/// handed the same port by the kernel, and the first test then talks to the wrong server.
#[derive(Debug)]
pub struct ReservedPort(u16);

fn reserved_ports() -> &'static Mutex<HashSet<u16>> {
    static RESERVED: OnceLock<Mutex<HashSet<u16>>> = OnceLock::new();
    RESERVED.get_or_init(Default::default)
}

impl ReservedPort {
    /// A port free now and not reserved by another test of this process.
    pub fn new() -> ReservedPort {
        loop {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|listener| listener.local_addr())
                .expect("a free port")
                .port();
            let mut reserved = reserved_ports().lock().unwrap_or_else(|e| e.into_inner());
            if reserved.insert(port) {
                return ReservedPort(port);
            }
        }
    }

    pub fn port(&self) -> u16 {
        self.0
    }
}

impl Default for ReservedPort {
    fn default() -> Self {
        ReservedPort::new()
    }
}

impl Drop for ReservedPort {
    fn drop(&mut self) {
        reserved_ports()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.0);
    }
}

/// One `redis-server` child on `127.0.0.1:port`; the port stays reserved for it (see
/// [`ReservedPort`]) across [`RedisServer::kill`] and [`RedisServer::restart`].
#[derive(Debug)]
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    _reservation: ReservedPort,
}

impl RedisServer {
    /// Starts a server on a free port and waits until it answers `PING`.
    pub async fn start() -> RedisServer {
        let reservation = ReservedPort::new();
        let mut server = RedisServer {
            child: None,
            port: reservation.port(),
            _reservation: reservation,
        };
        server.spawn().await;
        server
    }

    async fn spawn(&mut self) {
        let binary = tokio::task::spawn_blocking(redis_server_binary)
            .await
            .expect("finding redis-server panicked");
        let child = Command::new(binary)
            .args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--protected-mode", "no", "--loglevel", "warning"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start redis-server");
        self.child = Some(child);
        let deadline = Instant::now() + READY;
        while !self.answers_ping().await {
            assert!(
                Instant::now() < deadline,
                "redis-server did not answer PING on port {} within {READY:?}",
                self.port
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn answers_ping(&self) -> bool {
        let Ok(mut stream) = tokio::net::TcpStream::connect(("127.0.0.1", self.port)).await else {
            return false;
        };
        if stream.write_all(b"PING\r\n").await.is_err() {
            return false;
        }
        let mut reply = [0u8; 7];
        matches!(
            tokio::time::timeout(Duration::from_secs(1), stream.read_exact(&mut reply)).await,
            Ok(Ok(_))
        ) && &reply == b"+PONG\r\n"
    }

    /// Deletes every key (`FLUSHALL`), for a test that starts from an empty store.
    pub async fn flush_all(&self) {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", self.port))
            .await
            .expect("connect to redis-server");
        stream
            .write_all(b"FLUSHALL\r\n")
            .await
            .expect("send FLUSHALL");
        let mut reply = [0u8; 5];
        stream.read_exact(&mut reply).await.expect("FLUSHALL reply");
        assert_eq!(&reply, b"+OK\r\n", "FLUSHALL");
    }

    /// `redis://127.0.0.1:PORT/DB`.
    pub fn url(&self, db: u8) -> String {
        format!("redis://127.0.0.1:{}/{db}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Kills the server (every key is lost: no persistence).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills the server and starts a new one on the same port (empty).
    pub async fn restart(&mut self) {
        self.kill();
        self.spawn().await;
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}
