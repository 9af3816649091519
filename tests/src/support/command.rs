//! Running an installer (npm, python -m venv, pip) to completion with its output kept for the
//! error message, and npm installs into a folder of their own.

use std::io::Read;
use std::path::Path;
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

/// Installs `packages` with npm (`NPM` or `npm` on PATH) into `dir`, unless `installed(dir)`
/// accepts what is there already, and returns what `installed` makes of the result. npm installs
/// into a sibling staging folder that is renamed into place, so a concurrent test process never
/// sees a half-installed tree; if another process installed meanwhile, its tree is kept. `who`
/// names what needs the packages in error messages. Blocking.
pub fn npm_install_into<T>(
    dir: &Path,
    packages: &[String],
    who: &str,
    installed: impl Fn(&Path) -> Result<T, String>,
) -> Result<T, String> {
    if let Ok(ready) = installed(dir) {
        return Ok(ready);
    }
    let parent = dir
        .parent()
        .ok_or_else(|| format!("{} has no parent", dir.display()))?;
    std::fs::create_dir_all(parent)
        .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    let name = dir.file_name().unwrap_or_default().to_string_lossy();
    let staging = parent.join(format!("{name}.installing-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging)
        .map_err(|e| format!("cannot create {}: {e}", staging.display()))?;
    let npm = std::env::var_os("NPM").unwrap_or_else(|| "npm".into());
    let mut npm_install = Command::new(&npm);
    npm_install
        .args(["install", "--no-audit", "--no-fund", "--prefix"])
        .arg(&staging)
        .args(packages);
    let listed = packages.join(" ");
    match run_captured(&mut npm_install, Duration::from_secs(600)) {
        Ok(()) => {}
        Err(RunError::Spawn(e)) => {
            return Err(format!(
                "{who} needs npm (Node's package manager) on PATH to install {listed}, but \
                 {npm:?} cannot run: {e}"
            ))
        }
        Err(RunError::Failed {
            why,
            stdout,
            stderr,
        }) => {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(format!(
                "`npm install {listed}` failed ({why}); {who} cannot run without them (is the \
                 npm registry reachable?)\n--- npm stdout ---\n{stdout}\n--- npm stderr ---\n{stderr}"
            ));
        }
    }
    if let Err(why) = installed(&staging) {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(format!(
            "npm install succeeded but left no usable tree: {why}"
        ));
    }
    // Replace whatever was there (another version, or a broken tree).
    if installed(dir).is_err() {
        let _ = std::fs::remove_dir_all(dir);
        if std::fs::rename(&staging, dir).is_err() && installed(dir).is_err() {
            return Err(format!(
                "cannot move {} to {}",
                staging.display(),
                dir.display()
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&staging);
    installed(dir)
}
