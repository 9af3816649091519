//! The real peers as child processes: the legacy fixture server (HTTP) and the proxy.

use std::collections::hash_map::RandomState;
use std::collections::VecDeque;
use std::ffi::OsString;
use std::hash::{BuildHasher, Hasher};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tempfile::TempDir;
use tokio::sync::oneshot;

use super::build::{binaries_async, Binaries};
use super::{within, ModernClient, RawClient, Script};

/// How long a spawned peer may take to print its listening line.
const STARTUP: Duration = Duration::from_secs(60);
/// How long the proxy may take to report `GET /healthz` 200 after it listens.
const HEALTHY: Duration = Duration::from_secs(60);
/// How long a test waits for a line the proxy logs in reaction to an event (a loaded 2-core
/// machine may take seconds; the wait ends as soon as the line is there).
pub const LOG_WAIT: Duration = Duration::from_secs(30);
/// Lines of stderr/stdout kept per child for failure reports.
const LOG_LINES: usize = 400;

/// The last lines a child wrote, printed when a test fails.
#[derive(Debug, Clone, Default)]
pub(super) struct Logs(Arc<Mutex<VecDeque<String>>>);

impl Logs {
    pub(super) fn push(&self, line: String) {
        let mut lines = self.0.lock().unwrap();
        if lines.len() == LOG_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    fn snapshot(&self) -> Vec<String> {
        self.0.lock().unwrap().iter().cloned().collect()
    }

    pub(super) fn dump(&self, who: &str) {
        let lines = self.0.lock().unwrap();
        eprintln!("---- last {} lines of {who} ----", lines.len());
        for line in lines.iter() {
            eprintln!("{line}");
        }
        eprintln!("---- end of {who} ----");
    }
}

/// Spawns `command` with piped output, waits for its `listening on http://ADDR/mcp` line on
/// stdout and returns the child and that URL. Output is kept in `logs`.
pub(super) async fn spawn_listening(
    mut command: Command,
    who: &str,
    logs: &Logs,
) -> (Child, String) {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot spawn {who} ({command:?}): {e}"));
    let (tx, rx) = oneshot::channel::<String>();
    let stdout = child.stdout.take().expect("piped stdout");
    let out_logs = logs.clone();
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(url) = line.strip_prefix("listening on ") {
                if let Some(tx) = tx.take() {
                    let _ = tx.send(url.trim().to_string());
                }
            }
            out_logs.push(format!("[stdout] {line}"));
        }
    });
    let stderr = child.stderr.take().expect("piped stderr");
    let err_logs = logs.clone();
    std::thread::spawn(move || pump_lines(stderr, &err_logs));

    match tokio::time::timeout(STARTUP, rx).await {
        Ok(Ok(url)) => (child, url),
        outcome => {
            let _ = child.kill();
            let status = child.wait().ok();
            // Let the output threads catch up with what the child wrote before it died.
            tokio::time::sleep(Duration::from_millis(200)).await;
            logs.dump(who);
            let why = if outcome.is_err() {
                "timed out"
            } else {
                "stdout closed"
            };
            panic!("{who} never printed `listening on http://ADDR/mcp` ({why}; exit status {status:?})")
        }
    }
}

fn pump_lines(stream: impl Read, logs: &Logs) {
    for line in BufReader::new(stream).lines() {
        let Ok(line) = line else { break };
        logs.push(line);
    }
}

pub(super) fn kill_and_reap(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

// ---- The legacy fixture server over Streamable HTTP ----

/// `mcp-legacy-fixture-server --transport http --listen 127.0.0.1:0`, killed on drop.
#[derive(Debug)]
pub struct LegacyHttpServer {
    child: Child,
    url: String,
    logs: Logs,
    binary: PathBuf,
    /// Placed before `--transport http ...` (e.g. the script of an interpreter).
    args: Vec<OsString>,
}

impl LegacyHttpServer {
    /// The legacy fixture server.
    pub async fn start() -> LegacyHttpServer {
        let binaries = binaries_async().await;
        LegacyHttpServer::start_binary(&binaries.legacy_server).await
    }

    /// Another legacy server binary with the fixture's command line (`--transport http
    /// --listen ADDR`, prints `listening on http://ADDR/mcp`), e.g. the conformance backend.
    pub async fn start_binary(binary: &Path) -> LegacyHttpServer {
        LegacyHttpServer::start_command(binary, &[]).await
    }

    /// `binary args... --transport http --listen 127.0.0.1:0`: a server with the fixture's
    /// command line behind an interpreter (`python script.py`, `node script.mjs`).
    pub async fn start_command(binary: &Path, args: &[OsString]) -> LegacyHttpServer {
        let mut command = Command::new(binary);
        command
            .args(args)
            .args(["--transport", "http", "--listen", "127.0.0.1:0"]);
        let logs = Logs::default();
        let (child, url) = spawn_listening(command, "the legacy HTTP server", &logs).await;
        LegacyHttpServer {
            child,
            url,
            logs,
            binary: binary.to_owned(),
            args: args.to_vec(),
        }
    }

    /// SIGKILLs the server (sessions and calls in flight die with it) and waits until it is gone.
    pub fn kill(&mut self) {
        kill_and_reap(&mut self.child);
        self.logs.push("==== killed ====".into());
    }

    /// Starts the server again on the same address (after [`kill`](Self::kill), or kills it
    /// first): a backend restart as the proxy sees it.
    pub async fn restart(&mut self) {
        kill_and_reap(&mut self.child);
        let address = self
            .url
            .strip_prefix("http://")
            .and_then(|rest| rest.strip_suffix("/mcp"))
            .expect("http://ADDR/mcp")
            .to_owned();
        // tokio binds with SO_REUSEADDR: the port is free again at once.
        let mut command = Command::new(&self.binary);
        command
            .args(&self.args)
            .args(["--transport", "http", "--listen", &address]);
        self.logs.push("==== restart ====".into());
        let (child, url) = spawn_listening(command, "the legacy HTTP server", &self.logs).await;
        self.child = child;
        self.url = url;
    }

    /// `http://127.0.0.1:PORT/mcp`
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for LegacyHttpServer {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.logs.dump("the legacy HTTP server");
        }
        kill_and_reap(&mut self.child);
    }
}

// ---- The proxy ----

/// Where the proxy finds the legacy server.
#[derive(Debug, Clone, Default)]
pub enum Backend {
    /// `--upstream URL`: a legacy Streamable HTTP server.
    Http(String),
    /// `-- LEGACY_SERVER --transport stdio`: child processes of the proxy (the fixture server
    /// unless [`ProxyOptions::legacy_binary`] says otherwise).
    #[default]
    Stdio,
}

/// The two backend transports, for tests that run against both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    Http,
    Stdio,
}

/// Command line of one proxy. Unset fields are left to the proxy's defaults.
#[derive(Debug, Clone, Default)]
pub struct ProxyOptions {
    pub backend: Backend,
    /// `--store DIR` (or `redis://...`); `None`: a fresh temporary directory owned by the
    /// [`Proxy`].
    pub store_dir: Option<PathBuf>,
    /// `--listen ADDR`; `None`: `127.0.0.1:0` (a free port).
    pub listen: Option<String>,
    /// The sealing key as 64 hex digits; `None`: a random key. Kept across [`Proxy::restart`].
    pub state_key_hex: Option<String>,
    /// Pass the key as `MCP_MRTR_STATE_KEY` instead of `--state-key-file`.
    pub key_in_env: bool,
    /// `--pool-size N`
    pub pool_size: Option<usize>,
    /// `--pause-ttl` (humantime, e.g. `1s`)
    pub pause_ttl: Option<String>,
    /// `--batch-window` (humantime, e.g. `100ms`)
    pub batch_window: Option<String>,
    /// `--root URI`, repeated
    pub roots: Vec<String>,
    /// More arguments, placed before the backend.
    pub extra_args: Vec<String>,
    /// The legacy server binary behind the proxy (spawned over stdio, or started over HTTP by
    /// [`Stack::start`]); `None`: the legacy fixture server. It takes the fixture's command line.
    pub legacy_binary: Option<PathBuf>,
    /// Arguments of [`legacy_binary`](Self::legacy_binary) before the fixture's command line
    /// (the script of an interpreter: see [`crate::support::sdk_servers`]).
    pub legacy_args: Vec<OsString>,
}

impl ProxyOptions {
    /// `--pool-size 1`, everything else left to the proxy's defaults: one legacy lane, so a
    /// paused or running call holds all of it.
    pub fn one_lane() -> ProxyOptions {
        ProxyOptions {
            pool_size: Some(1),
            ..ProxyOptions::default()
        }
    }
}

/// A running `mcp-mrtr-proxy`, killed (with its backend children) on drop.
#[derive(Debug)]
pub struct Proxy {
    child: Child,
    url: String,
    options: ProxyOptions,
    binaries: Binaries,
    store_dir: PathBuf,
    key_hex: String,
    key_file: PathBuf,
    logs: Logs,
    /// Owns the store directory and the key file unless the caller gave a store.
    _temp: TempDir,
}

impl Proxy {
    /// Spawns the proxy, waits for its listening line, then for `GET /healthz` 200.
    pub async fn start(options: ProxyOptions) -> Proxy {
        let proxy = Self::start_unready(options).await;
        proxy.wait_healthy().await;
        proxy
    }

    /// Starts the proxy and returns once it listens, without waiting for its backend (for
    /// backends that never come up).
    pub async fn start_unready(options: ProxyOptions) -> Proxy {
        let binaries = binaries_async().await;
        let temp = tempfile::tempdir().expect("temporary directory");
        let store_dir = options
            .store_dir
            .clone()
            .unwrap_or_else(|| temp.path().join("store"));
        let key_hex = options.state_key_hex.clone().unwrap_or_else(random_key_hex);
        assert_eq!(key_hex.len(), 64, "a state key is 64 hex digits");
        let key_file = temp.path().join("state.key");
        std::fs::write(&key_file, format!("{key_hex}\n")).expect("write the key file");
        let logs = Logs::default();
        let (child, url) =
            spawn_proxy(&binaries, &options, &store_dir, &key_hex, &key_file, &logs).await;
        Proxy {
            child,
            url,
            options,
            binaries,
            store_dir,
            key_hex,
            key_file,
            logs,
            _temp: temp,
        }
    }

    /// `http://127.0.0.1:PORT/mcp` (changes on [`Proxy::restart`]).
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `GET /metrics`, checked to be OpenMetrics text and parsed into `series → value` (series
    /// with labels as exposed, e.g. `mcp_proxy_rejections_total{reason="state_tampered"}`).
    pub async fn metrics(&self) -> std::collections::BTreeMap<String, f64> {
        let base = self
            .url
            .strip_suffix("/mcp")
            .expect("the proxy URL ends with /mcp");
        let response = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(10))
            .build()
            .expect("reqwest client")
            .get(format!("{base}/metrics"))
            .send()
            .await
            .expect("GET /metrics");
        assert_eq!(response.status().as_u16(), 200);
        let content_type = response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(
            content_type.starts_with("application/openmetrics-text"),
            "{content_type}"
        );
        let text = response.text().await.expect("the /metrics body");
        assert!(
            text.ends_with("# EOF\n"),
            "OpenMetrics text ends with # EOF:\n{text}"
        );
        text.lines()
            .filter(|line| !line.starts_with('#') && !line.is_empty())
            .map(|line| {
                let (series, value) = line
                    .rsplit_once(' ')
                    .unwrap_or_else(|| panic!("bad line {line:?}"));
                let value: f64 = value
                    .parse()
                    .unwrap_or_else(|_| panic!("bad value in {line:?}"));
                (series.to_owned(), value)
            })
            .collect()
    }

    pub fn store_dir(&self) -> &Path {
        &self.store_dir
    }

    pub fn state_key_hex(&self) -> &str {
        &self.key_hex
    }

    /// `http://127.0.0.1:PORT/healthz`
    /// The last lines the proxy wrote to stderr/stdout (its `tracing` log).
    pub fn log_lines(&self) -> Vec<String> {
        self.logs.snapshot()
    }

    /// Whether the proxy logged that it cancelled a legacy call and the cancellation reached the
    /// legacy server, within [`LOG_WAIT`].
    pub async fn logs_delivered_cancellation(&self) -> bool {
        self.logs_within(LOG_WAIT, |line| {
            line.contains("cancelled the legacy call") && line.contains("delivered=true")
        })
        .await
    }

    /// Whether the proxy logged, within [`LOG_WAIT`], that a legacy call it abandoned for
    /// `reason` ended by itself before any cancellation, after `refused` pending requests (or
    /// none) were answered with their refusal (proxy/src/engine/abandon.rs).
    pub async fn logs_call_ended_by_itself(&self, reason: &str, refused: bool) -> bool {
        let refused = format!("refused={refused}");
        self.logs_within(LOG_WAIT, |line| {
            line.contains("the legacy call ended by itself before it was cancelled")
                && line.contains(reason)
                && line.contains(&refused)
        })
        .await
    }

    /// Whether the proxy logs a line matching `matches` within `limit` (checked every 50 ms).
    pub async fn logs_within(&self, limit: Duration, matches: impl Fn(&str) -> bool) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            if self.log_lines().iter().any(|line| matches(line)) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// `GET /readyz`: `{"ready": bool, "checks": {name: bool}, "failed": [name]}`.
    pub async fn readiness(&self) -> serde_json::Value {
        let base = self.url.strip_suffix("/mcp").unwrap_or(&self.url);
        reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(30))
            .build()
            .expect("reqwest client")
            .get(format!("{base}/readyz"))
            .send()
            .await
            .expect("GET /readyz")
            .json()
            .await
            .expect("the /readyz body is JSON")
    }

    pub fn healthz_url(&self) -> String {
        let base = self.url.strip_suffix("/mcp").unwrap_or(&self.url);
        format!("{base}/healthz")
    }

    /// A [`RawClient`] aimed at this proxy (as it is now: make a new one after a restart).
    pub fn raw(&self) -> RawClient {
        RawClient::new(&self.url)
    }

    /// A connected [`ModernClient`] with `script` and no `Authorization` header.
    pub async fn modern(&self, script: Script) -> ModernClient {
        ModernClient::connect(&self.url, script, None).await
    }

    /// Polls `GET /healthz` until it answers 200.
    pub async fn wait_healthy(&self) {
        let url = self.healthz_url();
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(5))
            .build()
            .expect("reqwest client");
        let deadline = Instant::now() + HEALTHY;
        let mut last = String::from("no answer yet");
        while Instant::now() < deadline {
            match client.get(&url).send().await {
                Ok(response) if response.status().as_u16() == 200 => return,
                Ok(response) => last = format!("status {}", response.status()),
                Err(e) => last = format!("{e}"),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.logs.dump("the proxy");
        panic!("{url} did not answer 200 within {HEALTHY:?} (last: {last})");
    }

    /// Writes `text` to the proxy's `--state-key-file` (a keyring or a single key), sends SIGHUP,
    /// and waits until the proxy logs that it reloaded its keys (or that it refused the file:
    /// then this panics with the log).
    pub async fn reload_state_keys(&self, text: &str) {
        let count = |needle: &str| {
            self.logs
                .snapshot()
                .iter()
                .filter(|line| line.contains(needle))
                .count()
        };
        let (reloaded, refused) = (
            count("requestState keys reloaded"),
            count("requestState keys were not reloaded"),
        );
        std::fs::write(&self.key_file, text).expect("write the key file");
        signal(self.child.id(), "-HUP");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if count("requestState keys reloaded") > reloaded {
                return;
            }
            if count("requestState keys were not reloaded") > refused || Instant::now() >= deadline
            {
                self.logs.dump("the proxy");
                panic!("the proxy did not reload its keys after SIGHUP");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Sends SIGHUP (the proxy re-reads its keyring and TLS files); wait for its log line.
    pub fn hangup(&self) {
        signal(self.child.id(), "-HUP");
    }

    /// Sends SIGTERM and waits (up to `limit`) for the proxy to exit; returns its exit status.
    pub async fn terminate(&mut self, limit: Duration) -> std::process::ExitStatus {
        signal(self.child.id(), "-TERM");
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for the proxy") {
                return status;
            }
            if Instant::now() >= deadline {
                self.logs.dump("the proxy");
                panic!("the proxy did not exit within {limit:?} after SIGTERM");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Whether the proxy process has exited (it is reaped then).
    pub fn has_exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Starts the proxy again after it exited (e.g. after [`terminate`](Self::terminate)), with
    /// the same options, store directory and state key. The URL changes (a new port).
    pub async fn start_again(&mut self) {
        assert!(self.has_exited(), "the proxy is still running");
        self.logs.push("==== start again ====".into());
        self.respawn().await;
    }

    /// `VmRSS` of the proxy process in KiB (Linux).
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("/proc/PID/status of the proxy");
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS in /proc/PID/status")
    }

    /// Open file descriptors of the proxy process (Linux).
    pub fn fd_count(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id()))
            .expect("/proc/PID/fd of the proxy")
            .count()
    }

    /// Every live child process of the proxy (whatever it runs).
    pub fn child_pids(&self) -> Vec<u32> {
        children_of(self.child.id())
    }

    /// Kills the proxy (SIGKILL) and its backend children, then starts it again with the same
    /// options, store directory and state key. The URL changes (a new port).
    pub async fn restart(&mut self) {
        self.kill_hard();
        self.logs.push("==== restart ====".into());
        self.respawn().await;
    }

    /// Spawns the proxy with the same options, store directory and state key, and waits until
    /// it is healthy.
    async fn respawn(&mut self) {
        let (child, url) = spawn_proxy(
            &self.binaries,
            &self.options,
            &self.store_dir,
            &self.key_hex,
            &self.key_file,
            &self.logs,
        )
        .await;
        self.child = child;
        self.url = url;
        self.wait_healthy().await;
    }

    /// The legacy server processes the proxy runs now (stdio backend): live children of the
    /// proxy running the fixture server binary.
    pub fn backend_pids(&self) -> Vec<u32> {
        children_of(self.child.id())
            .into_iter()
            .filter(|&pid| runs_binary(pid, legacy_binary(&self.options, &self.binaries)))
            .collect()
    }

    /// SIGKILLs every legacy server process of the proxy (stdio backend) and waits until they
    /// are dead. Returns their pids (empty if there were none).
    pub async fn kill_backend(&self) -> Vec<u32> {
        let dead_lanes = || {
            self.log_lines()
                .iter()
                .filter(|line| line.contains("lane is dead"))
                .count()
        };
        let dead_before = dead_lanes();
        let pids = self.backend_pids();
        for &pid in &pids {
            sigkill(pid);
        }
        within(
            Duration::from_secs(30),
            "killed backend processes to die and the proxy to notice",
            async {
                while pids.iter().any(|&pid| is_alive(pid)) {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                // The proxy reads the child's end of stdout in its own time: a test that acts
                // right after the kill acts on what the proxy knows, not on a race with it.
                while dead_lanes() == dead_before {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            },
        )
        .await;
        pids
    }

    /// Kills the proxy (SIGKILL) and its backend children and leaves it dead (its store
    /// directory stays, e.g. to be opened by the test).
    pub fn kill(&mut self) {
        self.kill_hard();
    }

    /// SIGKILLs the proxy alone (its children are left to whatever makes them die with it) and
    /// reaps it.
    pub fn kill_proxy_only(&mut self) {
        kill_and_reap(&mut self.child);
    }

    fn kill_hard(&mut self) {
        let children = self.backend_pids();
        kill_and_reap(&mut self.child);
        for pid in children {
            sigkill(pid);
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.logs.dump("the proxy");
        }
        self.kill_hard();
    }
}

async fn spawn_proxy(
    binaries: &Binaries,
    options: &ProxyOptions,
    store_dir: &Path,
    key_hex: &str,
    key_file: &Path,
    logs: &Logs,
) -> (Child, String) {
    let mut command = Command::new(&binaries.proxy);
    command.args([
        "--listen",
        options.listen.as_deref().unwrap_or("127.0.0.1:0"),
    ]);
    command.arg("--store").arg(store_dir);
    if options.key_in_env {
        command.env("MCP_MRTR_STATE_KEY", key_hex);
    } else {
        command.env_remove("MCP_MRTR_STATE_KEY");
        command.arg("--state-key-file").arg(key_file);
    }
    if let Some(n) = options.pool_size {
        command.args(["--pool-size", &n.to_string()]);
    }
    if let Some(ttl) = &options.pause_ttl {
        command.args(["--pause-ttl", ttl]);
    }
    if let Some(window) = &options.batch_window {
        command.args(["--batch-window", window]);
    }
    for root in &options.roots {
        command.args(["--root", root]);
    }
    command.args(&options.extra_args);
    match &options.backend {
        Backend::Http(url) => {
            command.args(["--upstream", url]);
        }
        Backend::Stdio => {
            command
                .arg("--")
                .arg(legacy_binary(options, binaries))
                .args(&options.legacy_args)
                .args(["--transport", "stdio"]);
        }
    }
    spawn_listening(command, "the proxy", logs).await
}

/// The legacy server binary of `options`.
fn legacy_binary<'a>(options: &'a ProxyOptions, binaries: &'a Binaries) -> &'a Path {
    options
        .legacy_binary
        .as_deref()
        .unwrap_or(&binaries.legacy_server)
}

fn random_key_hex() -> String {
    (0..4)
        .map(|_| format!("{:016x}", RandomState::new().build_hasher().finish()))
        .collect()
}

// ---- Processes, read from /proc (Linux) ----

/// Pids of the live (not zombie) direct children of `parent`.
fn children_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(
            |&pid| matches!(stat_of(pid), Some((state, ppid)) if ppid == parent && state != 'Z'),
        )
        .collect()
}

/// `(state, ppid)` from `/proc/PID/stat`.
fn stat_of(pid: u32) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

/// Whether process `pid` exists and is not a zombie.
pub fn is_alive(pid: u32) -> bool {
    matches!(stat_of(pid), Some((state, _)) if state != 'Z' && state != 'X')
}

fn runs_binary(pid: u32, binary: &Path) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let argv0 = cmdline.split(|&b| b == 0).next().unwrap_or_default();
    let name = binary.file_name().and_then(|n| n.to_str()).unwrap_or("");
    String::from_utf8_lossy(argv0).ends_with(name)
}

fn sigkill(pid: u32) {
    signal(pid, "-KILL");
}

/// Sends a signal with the `kill` command (`which` is e.g. `-TERM`).
fn signal(pid: u32, which: &str) {
    let _ = Command::new("kill")
        .args([which, &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

// ---- A proxy with its backend ----

/// A proxy in front of the legacy fixture server, over either backend transport. Fields drop in
/// order: the proxy first, then the legacy HTTP server.
#[derive(Debug)]
pub struct Stack {
    pub proxy: Proxy,
    pub legacy: Option<LegacyHttpServer>,
}

impl Stack {
    /// Starts the legacy HTTP server when `kind` is HTTP, then the proxy in front of it (the
    /// `backend` field of `options` is overwritten). [`ProxyOptions::legacy_binary`] chooses the
    /// legacy server for both kinds.
    pub async fn start(kind: BackendKind, mut options: ProxyOptions) -> Stack {
        let legacy = match (kind, &options.legacy_binary) {
            (BackendKind::Http, Some(binary)) => {
                Some(LegacyHttpServer::start_command(binary, &options.legacy_args).await)
            }
            (BackendKind::Http, None) => Some(LegacyHttpServer::start().await),
            (BackendKind::Stdio, _) => None,
        };
        options.backend = match &legacy {
            Some(server) => Backend::Http(server.url().to_string()),
            None => Backend::Stdio,
        };
        let proxy = Proxy::start(options).await;
        Stack { proxy, legacy }
    }

    pub fn raw(&self) -> RawClient {
        self.proxy.raw()
    }

    pub async fn modern(&self, script: Script) -> ModernClient {
        self.proxy.modern(script).await
    }
}

/// A series' value in [`Proxy::metrics`]; absent counters count as 0.
pub fn metric(metrics: &std::collections::BTreeMap<String, f64>, series: &str) -> f64 {
    metrics.get(series).copied().unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_are_found_by_parent_and_binary() {
        let mut shell = Command::new("sh")
            .args(["-c", "sleep 30 & sleep 30 & wait"])
            .spawn()
            .expect("sh");
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut children = Vec::new();
        while children.len() < 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            children = children_of(shell.id())
                .into_iter()
                .filter(|&pid| runs_binary(pid, Path::new("/bin/sleep")))
                .collect();
        }
        assert_eq!(children.len(), 2, "{children:?}");
        assert!(children.iter().all(|&pid| is_alive(pid)));
        assert!(!runs_binary(children[0], Path::new("/bin/sh-not-this")));
        for &pid in &children {
            sigkill(pid);
        }
        let status = shell.wait().unwrap();
        assert!(children.iter().all(|&pid| !is_alive(pid)), "{status}");
    }
}
