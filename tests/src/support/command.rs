//! Running an installer (npm, python -m venv, pip) to completion with its output kept for the
//! error message.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Why [`run_captured`] failed.
#[derive(Debug)]
pub enum RunError {
    /// The program could not be started.
    Spawn(std::io::Error),
    /// It ran and failed (exit status, timeout or a wait error), having printed this.
    Failed {
        why: String,
        stdout: String,
        stderr: String,
    },
}

/// Runs `command` (stdin closed, stdout and stderr captured) for at most `limit`; past it the
/// child is killed and reaped. Blocking.
pub fn run_captured(command: &mut Command, limit: Duration) -> Result<(), RunError> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(RunError::Spawn)?;
    // Drain the pipes while waiting, or a chatty installer blocks on a full pipe.
    let drain = |stream: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut stream) = stream {
                let _ = stream.read_to_string(&mut text);
            }
            text
        })
    };
    let stdout = drain(child.stdout.take().map(|s| Box::new(s) as _));
    let stderr = drain(child.stderr.take().map(|s| Box::new(s) as _));
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break Ok(()),
            Ok(Some(status)) => break Err(status.to_string()),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(format!("timed out after {limit:?}"));
            }
            Err(e) => break Err(e.to_string()),
        }
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    status.map_err(|why| RunError::Failed {
        why,
        stdout,
        stderr,
    })
}
