//! Lanes over stdio: one supervised child process per lane (newline-delimited JSON-RPC).
//!
//! Four tasks per child: a stdin writer (the only writer, so messages keep their order), a stdout
//! reader (one JSON-RPC message or batch per line; a malformed line is logged and skipped), a
//! stderr forwarder (each line goes to the proxy's stderr with a `[lane N]` prefix) and a waiter
//! that owns the child ([`super::child_guard`] makes it die with the proxy). When the child exits or closes stdout the lane is dead: pending calls fail
//! with [`BackendError::Crashed`] and the pool replaces the lane on its next use.

use std::io::Write as _;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot, watch};
use tracing::Instrument as _;

use super::lane_core::{LaneCore, Outbound};
use super::{AbortOnDrop, BackendError, Initialized, PendingCall};
use crate::jsonrpc::{ErrorObject, Message};

/// How long `shutdown` waits for the child to exit after stdin is closed, before killing it.
const EXIT_GRACE: Duration = Duration::from_secs(2);

enum WriterCommand {
    Line(String),
    /// Close stdin (the polite way to ask a stdio server to exit).
    Close,
}

struct StdioOutbound(mpsc::UnboundedSender<WriterCommand>);

impl Outbound for StdioOutbound {
    fn send_detached(&self, message: Message) {
        let _ = self.0.send(WriterCommand::Line(message.to_line()));
    }
}

pub struct StdioLane {
    core: Arc<LaneCore>,
    initialized: Initialized,
    writer: mpsc::UnboundedSender<WriterCommand>,
    pid: Option<u32>,
    kill: Mutex<Option<oneshot::Sender<()>>>,
    /// Becomes `true` once the child has been reaped.
    exited: watch::Receiver<bool>,
    /// Aborting the waiter drops the `Child`, which kills it (`kill_on_drop`).
    _tasks: AbortOnDrop,
}

impl std::fmt::Debug for StdioLane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioLane")
            .field("core", &self.core)
            .field("pid", &self.pid)
            .field("protocol_version", &self.initialized.protocol_version)
            .finish_non_exhaustive()
    }
}

/// A legacy stdio server spawned but not initialized yet: the pool keeps one ready (a warm spare)
/// so that a new lane does not wait for an interpreter to start (Python's `import mcp` alone
/// takes most of a second), and initializes it with the profile of the call that needs it.
pub(crate) struct Spawned {
    child: tokio::process::Child,
}

impl std::fmt::Debug for Spawned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spawned")
            .field("pid", &self.child.id())
            .finish()
    }
}

impl Spawned {
    /// Starts `program args...` with piped stdio (killed when dropped unused).
    pub(crate) fn spawn(program: &str, args: &[String]) -> Result<Spawned, BackendError> {
        // Through the trampoline when the binary runs: the child dies with the proxy.
        let child = super::child_guard::command(program, args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| {
                BackendError::Unavailable(format!("cannot start `{program}`: {error}"))
            })?;
        Ok(Spawned { child })
    }

    /// Kills and reaps the unused child (it holds no state).
    pub(crate) async fn stop(mut self) {
        let _ = self.child.kill().await;
    }

    /// Whether the process is still running (a spare that died is not used).
    pub(crate) fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl StdioLane {
    /// Initializes the spawned server with the lane's profile and waits for the handshake.
    pub(crate) async fn start(
        core: Arc<LaneCore>,
        spawned: Spawned,
        client_info: &Value,
        init_timeout: Duration,
    ) -> Result<Self, BackendError> {
        let span = core.span.clone();
        let mut child = spawned.child;
        let pid = child.id();
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(BackendError::Unavailable(
                "the child's stdio pipes are missing".into(),
            ));
        };
        span.in_scope(|| tracing::info!(pid, "legacy stdio server started"));

        let (writer, mut commands) = mpsc::unbounded_channel::<WriterCommand>();
        core.set_outbound(Box::new(StdioOutbound(writer.clone())));

        let writer_core = Arc::clone(&core);
        let writer_task = tokio::spawn(
            async move {
                while let Some(command) = commands.recv().await {
                    match command {
                        WriterCommand::Line(mut line) => {
                            line.push('\n');
                            let written = async {
                                stdin.write_all(line.as_bytes()).await?;
                                stdin.flush().await
                            };
                            if let Err(error) = written.await {
                                tracing::info!(%error, "writing to the child's stdin failed");
                                writer_core.mark_dead();
                                break;
                            }
                        }
                        WriterCommand::Close => break,
                    }
                }
                drop(stdin);
            }
            .instrument(span.clone()),
        );

        let reader_core = Arc::clone(&core);
        let reader_task = tokio::spawn(
            async move {
                let mut stdout = BufReader::new(stdout);
                let mut line = Vec::new();
                loop {
                    line.clear();
                    match stdout.read_until(b'\n', &mut line).await {
                        Ok(0) => break,
                        Ok(_) => handle_line(&reader_core, &line),
                        Err(error) => {
                            tracing::info!(%error, "reading the child's stdout failed");
                            break;
                        }
                    }
                }
                tracing::debug!("the child closed stdout");
                reader_core.mark_dead();
            }
            .instrument(span.clone()),
        );

        let lane_id = core.id;
        let stderr_task = tokio::spawn(async move {
            let mut stderr = BufReader::new(stderr);
            let mut line = Vec::new();
            loop {
                line.clear();
                match stderr.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let text = String::from_utf8_lossy(&line);
                        let mut err = std::io::stderr().lock();
                        let _ = writeln!(err, "[lane {lane_id}] {}", text.trim_end());
                    }
                }
            }
        });

        let (kill, kill_signal) = oneshot::channel::<()>();
        let (exited_tx, exited) = watch::channel(false);
        let waiter_core = Arc::clone(&core);
        let waiter_task = tokio::spawn(
            async move {
                let mut kill_signal = kill_signal;
                let status = tokio::select! {
                    status = child.wait() => status,
                    _ = &mut kill_signal => {
                        let _ = child.start_kill();
                        child.wait().await
                    }
                };
                match status {
                    Ok(status) => tracing::info!(%status, "legacy stdio server exited"),
                    Err(error) => tracing::warn!(%error, "waiting for the child failed"),
                }
                exited_tx.send_replace(true);
                waiter_core.mark_dead();
            }
            .instrument(span.clone()),
        );

        let tasks = AbortOnDrop(vec![writer_task, reader_task, stderr_task, waiter_task]);

        // On failure `tasks` is dropped, which kills the child.
        let initialized = super::handshake(&core, client_info, init_timeout, |message| {
            writer
                .send(WriterCommand::Line(message.to_line()))
                .map_err(|_| BackendError::Unavailable("the child's stdin is closed".into()))
        })
        .await?;
        span.in_scope(|| {
            tracing::info!(
                protocol_version = %initialized.protocol_version,
                "legacy stdio server initialized"
            )
        });
        Ok(StdioLane {
            core,
            initialized,
            writer,
            pid,
            kill: Mutex::new(Some(kill)),
            exited,
            _tasks: tasks,
        })
    }

    pub(crate) fn core(&self) -> &Arc<LaneCore> {
        &self.core
    }

    pub fn initialized(&self) -> &Initialized {
        &self.initialized
    }

    /// The child's process id (as spawned; the process may have exited since).
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    fn write(&self, message: &Message) -> Result<(), BackendError> {
        if !self.core.is_alive() {
            return Err(BackendError::Crashed);
        }
        self.writer
            .send(WriterCommand::Line(message.to_line()))
            .map_err(|_| BackendError::Crashed)
    }

    pub(crate) async fn send_request(
        &self,
        method: &str,
        params: crate::params::OutParams,
        progress_token: Option<Value>,
    ) -> Result<(PendingCall, Option<mpsc::Receiver<Value>>), BackendError> {
        self.core
            .send_request_with(method, params, progress_token, |message| {
                self.write(&message)
            })
    }

    pub async fn respond(
        &self,
        id: Value,
        outcome: Result<Value, ErrorObject>,
    ) -> Result<(), BackendError> {
        self.core.responded(&id);
        self.write(&Message::response(id, outcome))
    }

    pub async fn notify(&self, method: &str, params: Value) -> Result<(), BackendError> {
        self.write(&Message::notification(method, params))
    }

    pub fn is_alive(&self) -> bool {
        self.core.is_alive()
    }

    /// Resolves once the child has been reaped.
    async fn wait_exited(&self) {
        let mut exited = self.exited.clone();
        let _ = exited.wait_for(|exited| *exited).await;
    }

    /// Closes stdin, waits up to two seconds for the child to exit, then kills it; returns once
    /// the child has been reaped (or the kill did not help within two more seconds).
    pub async fn shutdown(&self) {
        let _ = self.writer.send(WriterCommand::Close);
        if tokio::time::timeout(EXIT_GRACE, self.wait_exited())
            .await
            .is_err()
        {
            self.core.span.in_scope(|| {
                tracing::info!("the child did not exit after stdin closed: killing it")
            });
            let kill = self
                .kill
                .lock()
                .unwrap_or_else(|poison| poison.into_inner())
                .take();
            if let Some(kill) = kill {
                let _ = kill.send(());
            }
            let _ = tokio::time::timeout(EXIT_GRACE, self.wait_exited()).await;
        }
        self.core.mark_dead();
    }
}

/// One line of the child's stdout: a message or (2025-03-26) a batch.
fn handle_line(core: &Arc<LaneCore>, line: &[u8]) {
    core.handle_bytes(line, "stdout line");
}
