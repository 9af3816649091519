//! The legacy Python server (`tests/legacy-sse-server`, the official Python SDK) as a child
//! process, over HTTP+SSE or Streamable HTTP, and the virtual environment it runs in (built from a
//! requirements file as other venvs of the tests are: [`venv_with_requirements`]).
//!
//! The venv lives at `<target>/legacy-sse-venv` and is built once: `python3 -m venv`, then
//! `pip install -r tests/legacy-sse-server/requirements.txt`. A marker file in the venv holds
//! the requirements it was built from, so later runs (and the other test binaries) skip pip; a
//! lock file next to the venv keeps two test processes from building it at the same time.

use std::collections::VecDeque;
use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use super::build::target_dir;
use super::command::{run_captured, RunError};
use crate::workspace_root;

/// The venv's folder under the cargo target directory.
const VENV_DIR: &str = "legacy-sse-venv";
/// The server's folder, relative to the workspace root.
const SERVER_DIR: &str = "tests/legacy-sse-server";
/// Holds the requirements text the venv was built from; written last.
const MARKER: &str = "mcp-migrate-requirements.txt";
/// How long `python3 -m venv` and `pip install` may take, each.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(600);
/// A lock older than this is left over from a dead process (an install takes well under it).
const STALE_LOCK: Duration = Duration::from_secs(900);
/// How long a Python server may take to answer (`GET /sse`, or its Streamable HTTP endpoint). The
/// wait ends as soon as it answers or exits: the bound only has to hold on a loaded 2-core machine,
/// where several servers importing `mcp` and pydantic at once took over 30 s in a fresh-clone run.
const READY: Duration = Duration::from_secs(120);
/// Lines of the server's output kept for failure reports.
const LOG_LINES: usize = 400;

// ---- The venv ----

/// The Python interpreter of the venv (`<target>/legacy-sse-venv/bin/python`), built with the
/// server's requirements once per test process. Panics with pip's output when that fails.
///
/// Blocking: call it from `spawn_blocking` ([`legacy_sse_python_async`] does).
pub fn legacy_sse_python() -> PathBuf {
    static PREPARED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match PREPARED.get_or_init(|| prepare_venv(&target_dir().join(VENV_DIR))) {
        Ok(python) => python.clone(),
        Err(why) => panic!("{why}"),
    }
}

/// [`legacy_sse_python`] from async code.
pub async fn legacy_sse_python_async() -> PathBuf {
    tokio::task::spawn_blocking(legacy_sse_python)
        .await
        .expect("preparing the legacy SSE server's venv panicked")
}

fn python_in(venv: &Path) -> PathBuf {
    venv.join("bin").join("python")
}

/// Whether `venv` was built from `requirements` (and its interpreter is still there).
fn venv_ready(venv: &Path, requirements: &str) -> bool {
    python_in(venv).exists()
        && std::fs::read_to_string(venv.join(MARKER)).is_ok_and(|text| text == requirements)
}

fn prepare_venv(venv: &Path) -> Result<PathBuf, String> {
    let requirements = workspace_root().join(SERVER_DIR).join("requirements.txt");
    venv_with_requirements(venv, &requirements, "the legacy SSE server's venv")
}

/// The interpreter of `venv`, a venv holding the packages of the pip requirements file
/// `requirements_path`: built once, rebuilt when the file changes (a marker in the venv holds the
/// text it was built from; a lock file beside it keeps two test processes from building at once).
/// `what` names the venv in error messages. Blocking.
pub(crate) fn venv_with_requirements(
    venv: &Path,
    requirements_path: &Path,
    what: &str,
) -> Result<PathBuf, String> {
    let requirements = std::fs::read_to_string(requirements_path)
        .map_err(|e| format!("cannot read {}: {e}", requirements_path.display()))?;
    if venv_ready(venv, &requirements) {
        return Ok(python_in(venv));
    }
    let parent = venv
        .parent()
        .ok_or_else(|| format!("{} has no parent", venv.display()))?;
    std::fs::create_dir_all(parent)
        .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    let name = venv.file_name().unwrap_or_default().to_string_lossy();
    let _lock = InstallLock::acquire(&parent.join(format!("{name}.lock")))?;
    // Another process may have built it while this one waited for the lock.
    if !venv_ready(venv, &requirements) {
        install(venv, requirements_path, &requirements, what)?;
    }
    Ok(python_in(venv))
}

/// Builds the venv from scratch (whatever was there goes: another version, a broken install).
fn install(
    venv: &Path,
    requirements_path: &Path,
    requirements: &str,
    what: &str,
) -> Result<(), String> {
    if venv.exists() {
        std::fs::remove_dir_all(venv)
            .map_err(|e| format!("cannot remove the old venv {}: {e}", venv.display()))?;
    }
    let mut command = Command::new("python3");
    command.args(["-m", "venv"]).arg(venv);
    run(command, "python3 -m venv", what)?;
    let mut command = Command::new(venv.join("bin").join("pip"));
    command
        .args(["install", "--disable-pip-version-check", "-q", "-r"])
        .arg(requirements_path);
    run(command, "pip install", what)?;
    // The marker goes in last and atomically: a venv without it is rebuilt.
    let staging = venv.join(format!("{MARKER}.{}", std::process::id()));
    std::fs::write(&staging, requirements)
        .and_then(|()| std::fs::rename(&staging, venv.join(MARKER)))
        .map_err(|e| format!("cannot write the marker in {}: {e}", venv.display()))
}

/// Runs `command` to completion (at most [`INSTALL_TIMEOUT`]) while preparing `venv_what`; on
/// failure the error holds its output.
pub(crate) fn run(mut command: Command, what: &str, venv_what: &str) -> Result<(), String> {
    run_captured(&mut command, INSTALL_TIMEOUT).map_err(|error| match error {
        RunError::Spawn(e) => format!(
            "{venv_what} needs Python 3 with venv and pip (python3 on PATH), but `{what}` cannot \
             run ({command:?}): {e}"
        ),
        RunError::Failed {
            why,
            stdout,
            stderr,
        } => format!(
            "`{what}` failed ({why}) while preparing {venv_what} (is PyPI reachable?): \
             {command:?}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}"
        ),
    })
}

/// A lock file created with `create_new` (holding the owner's pid), removed on drop. A lock
/// whose owner is gone (Linux: no `/proc/PID`) or that is older than [`STALE_LOCK`] is broken.
pub(crate) struct InstallLock(PathBuf);

impl InstallLock {
    pub(crate) fn acquire(path: &Path) -> Result<InstallLock, String> {
        let give_up = Instant::now() + STALE_LOCK + Duration::from_secs(60);
        loop {
            match OpenOptions::new().write(true).create_new(true).open(path) {
                Ok(mut file) => {
                    let _ = write!(file, "{}", std::process::id());
                    return Ok(InstallLock(path.to_owned()));
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                    let holder = std::fs::read_to_string(path).unwrap_or_default();
                    if lock_is_stale(path, &holder)
                        // Only break the lock that was judged stale, not a new one.
                        && std::fs::read_to_string(path).is_ok_and(|now| now == holder)
                    {
                        let _ = std::fs::remove_file(path);
                        continue;
                    }
                    if Instant::now() > give_up {
                        return Err(format!(
                            "{} is still held (pid {holder:?}) after waiting {:?}",
                            path.display(),
                            STALE_LOCK
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err(e) => return Err(format!("cannot create {}: {e}", path.display())),
            }
        }
    }
}

fn lock_is_stale(path: &Path, holder: &str) -> bool {
    let old = std::fs::metadata(path)
        .and_then(|meta| meta.modified())
        .ok()
        .and_then(|modified| SystemTime::now().duration_since(modified).ok())
        .is_some_and(|age| age > STALE_LOCK);
    // An empty file: the owner is between creating and writing it (or died there: `old`).
    let dead = Path::new("/proc/self").exists()
        && holder
            .trim()
            .parse::<u32>()
            .is_ok_and(|pid| !Path::new(&format!("/proc/{pid}")).exists());
    old || dead
}

impl Drop for InstallLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

// ---- The server ----

/// The last lines the server wrote, printed when a test fails.
#[derive(Debug, Clone, Default)]
pub(super) struct Logs(Arc<Mutex<VecDeque<String>>>);

impl Logs {
    pub(super) fn pump(&self, stream: impl Read + Send + 'static) {
        let logs = self.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines() {
                let Ok(line) = line else { break };
                logs.push(line);
            }
        });
    }

    pub(super) fn push(&self, line: String) {
        let mut lines = self.0.lock().unwrap_or_else(|poison| poison.into_inner());
        if lines.len() == LOG_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    pub(super) fn dump(&self) {
        let lines = self.0.lock().unwrap_or_else(|poison| poison.into_inner());
        eprintln!(
            "---- last {} lines of the legacy SSE server ----",
            lines.len()
        );
        for line in lines.iter() {
            eprintln!("{line}");
        }
        eprintln!("---- end of the legacy SSE server ----");
    }
}

/// `python tests/legacy-sse-server/server.py --port P`: a FastMCP server (mcp 1.30.0) over the
/// legacy HTTP+SSE transport, killed on drop. Its output is kept and printed if a test fails.
#[derive(Debug)]
pub struct LegacySseServer {
    child: Child,
    url: String,
    port: u16,
    python: PathBuf,
    logs: Logs,
    transport: &'static str,
}

impl LegacySseServer {
    /// Prepares the venv (once per process), starts the server on a free port and waits until
    /// `GET /sse` answers with an event stream.
    pub async fn start() -> LegacySseServer {
        Self::start_with("sse").await
    }

    /// The same server over legacy Streamable HTTP (`--transport streamable-http`, at `/mcp`):
    /// FastMCP's request-scoped sends (`ctx.elicit`) arrive on the call's own POST stream.
    pub async fn start_streamable_http() -> LegacySseServer {
        Self::start_with("streamable-http").await
    }

    async fn start_with(transport: &'static str) -> LegacySseServer {
        let python = legacy_sse_python_async().await;
        let logs = Logs::default();
        // The free port may be taken between probing and binding: try a few.
        for attempt in 1..=3 {
            let port = free_port();
            let mut child = spawn(&python, port, transport, &logs);
            let url = url_of(port, transport);
            match wait_ready(&url, transport, &mut child).await {
                Ok(()) => {
                    return LegacySseServer {
                        child,
                        url,
                        port,
                        python,
                        logs,
                        transport,
                    }
                }
                Err(why) if attempt < 3 && why.starts_with("exited") => {
                    logs.push(format!("==== {why}; trying another port ===="));
                }
                Err(why) => fail(&mut child, &logs, &url, &why),
            }
        }
        unreachable!("the last attempt returns or panics")
    }

    /// `http://127.0.0.1:PORT/sse`, the SSE endpoint, or `http://127.0.0.1:PORT/mcp` over
    /// Streamable HTTP (the same across [`restart`](Self::restart)).
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILLs the server (its SSE sessions die with it) and waits until it is gone.
    pub fn kill(&mut self) {
        kill_and_reap(&mut self.child);
        self.logs.push("==== killed ====".into());
    }

    /// Starts the server again on the same port (after [`kill`](Self::kill), or kills it first):
    /// a backend restart as the proxy sees it. Every SSE session of the old process is gone.
    pub async fn restart(&mut self) {
        kill_and_reap(&mut self.child);
        self.logs.push("==== restart ====".into());
        self.child = spawn(&self.python, self.port, self.transport, &self.logs);
        if let Err(why) = wait_ready(&self.url, self.transport, &mut self.child).await {
            fail(&mut self.child, &self.logs, &self.url, &why);
        }
    }
}

impl Drop for LegacySseServer {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.logs.dump();
        }
        kill_and_reap(&mut self.child);
    }
}

/// A port that was free a moment ago (bound to 127.0.0.1:0, then released).
pub(super) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("bind 127.0.0.1:0")
        .port()
}

fn url_of(port: u16, transport: &str) -> String {
    match transport {
        "sse" => format!("http://127.0.0.1:{port}/sse"),
        _ => format!("http://127.0.0.1:{port}/mcp"),
    }
}

fn spawn(python: &Path, port: u16, transport: &str, logs: &Logs) -> Child {
    let script = workspace_root().join(SERVER_DIR).join("server.py");
    let mut command = Command::new(python);
    command
        .arg(&script)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--transport", transport])
        // Unbuffered, so that the log shows everything up to a crash.
        .env("PYTHONUNBUFFERED", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot spawn the legacy SSE server ({command:?}): {e}"));
    logs.pump(child.stdout.take().expect("piped stdout"));
    logs.pump(child.stderr.take().expect("piped stderr"));
    child
}

/// Polls `GET url` until it answers 200 with `text/event-stream` (the stream is dropped at
/// once), or over Streamable HTTP until it answers at all (a GET without a session is refused).
/// `Err("exited ...")` when the child died first.
pub(super) async fn wait_ready(
    url: &str,
    transport: &str,
    child: &mut Child,
) -> Result<(), String> {
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(5))
        .build()
        .expect("reqwest client");
    let deadline = Instant::now() + READY;
    let mut last = String::from("no answer yet");
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("exited before answering ({status}; last: {last})"));
        }
        match client.get(url).send().await {
            Ok(response) => {
                let content_type = response
                    .headers()
                    .get("content-type")
                    .and_then(|value| value.to_str().ok())
                    .unwrap_or_default()
                    .to_owned();
                if transport != "sse"
                    || (response.status().as_u16() == 200
                        && content_type.starts_with("text/event-stream"))
                {
                    return Ok(());
                }
                last = format!(
                    "status {}, content-type {content_type:?}",
                    response.status()
                );
            }
            Err(e) => last = e.to_string(),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(format!("no event stream within {READY:?} (last: {last})"))
}

fn fail(child: &mut Child, logs: &Logs, url: &str, why: &str) -> ! {
    kill_and_reap(child);
    // Let the output threads catch up with what the child wrote before it died.
    std::thread::sleep(Duration::from_millis(200));
    logs.dump();
    panic!("the legacy SSE server did not come up at {url}: {why}")
}

pub(super) fn kill_and_reap(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}
