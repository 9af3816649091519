//! Legacy stdio children die with the proxy, even when it is `SIGKILL`ed (Linux).
//!
//! `kill_on_drop` and the shutdown path stop children when the proxy exits in an orderly way; a
//! `SIGKILL` runs neither, and a legacy server that awaits a client answer mid-call does not
//! notice that its stdin closed. The kernel's parent-death signal (`PR_SET_PDEATHSIG`) covers
//! that, but it must be set in the child, between `fork` and `exec`: from Rust that is
//! `CommandExt::pre_exec`, an `unsafe` hook, and the workspace forbids `unsafe` code.
//!
//! So the proxy binary is its own trampoline: instead of `program args...` it spawns
//! `mcp-mrtr-proxy <TRAMPOLINE_ARG> <proxy pid> program args...`. That process (a fresh image,
//! single-threaded) sets its own parent-death signal with rustix's safe
//! `set_parent_process_death_signal`, checks that its parent is still the proxy (closing the race
//! where the proxy died before the signal was armed), and `exec`s the legacy server in place, so
//! the pid, the pipes and the argv the pool sees are the legacy server's. The parent-death signal
//! survives `exec` (except into set-user-id binaries).
//!
//! The kernel sends the signal when the *thread* that spawned the child ends. Lanes are started
//! on the runtime's worker threads, which live as long as the runtime (see the proxy's `main`).
//!
//! Only the binary can act as trampoline, so [`enable`] is called from its `main`; a program that
//! embeds the library spawns children directly (they still die on `kill_on_drop` and shutdown).

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The hidden first argument that turns the proxy binary into the trampoline.
pub const TRAMPOLINE_ARG: &str = "--exec-legacy-child";

/// The proxy binary, once [`enable`] was called on a platform that has parent-death signals.
static TRAMPOLINE: OnceLock<PathBuf> = OnceLock::new();

/// Spawn children through this executable (the proxy binary, whose `main` calls
/// [`trampoline_main`] first). Without effect outside Linux/Android.
pub fn enable() {
    if cfg!(any(target_os = "linux", target_os = "android")) {
        match std::env::current_exe() {
            Ok(exe) => {
                let _ = TRAMPOLINE.set(exe);
            }
            Err(error) => tracing::warn!(
                %error,
                "cannot find the proxy's own executable: legacy children will not die with a killed proxy"
            ),
        }
    }
}

/// The command line that starts `program args...`: through the trampoline when enabled.
pub(crate) fn command(program: &str, args: &[String]) -> tokio::process::Command {
    match TRAMPOLINE.get() {
        Some(exe) => {
            let mut command = tokio::process::Command::new(exe);
            command
                .arg(TRAMPOLINE_ARG)
                .arg(std::process::id().to_string())
                .arg(program)
                .args(args);
            command
        }
        None => {
            let mut command = tokio::process::Command::new(program);
            command.args(args);
            command
        }
    }
}

/// Runs the trampoline when `args` (the process's `argv`) ask for it: never returns then (the
/// process becomes the legacy server, or exits 127 saying why it could not). `None` otherwise.
pub fn trampoline_main(args: &[OsString]) -> Option<std::process::ExitCode> {
    if args.get(1).and_then(|arg| arg.to_str()) != Some(TRAMPOLINE_ARG) {
        return None;
    }
    Some(exec_guarded(&args[2..]))
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn exec_guarded(args: &[OsString]) -> std::process::ExitCode {
    use std::os::unix::process::CommandExt as _;

    let fail = |message: String| {
        eprintln!("mcp-mrtr-proxy: {message}");
        std::process::ExitCode::from(127)
    };
    let (Some(parent), Some(program)) = (args.first(), args.get(1)) else {
        return fail(format!(
            "usage: {TRAMPOLINE_ARG} PARENT_PID PROGRAM [ARGS]..."
        ));
    };
    let Some(parent) = parent.to_str().and_then(|pid| pid.parse::<i32>().ok()) else {
        return fail(format!("{TRAMPOLINE_ARG}: {parent:?} is not a pid"));
    };
    let signal = Some(rustix::process::Signal::KILL);
    if let Err(error) = rustix::process::set_parent_process_death_signal(signal) {
        return fail(format!("cannot set the parent-death signal: {error}"));
    }
    // Armed now; if the proxy died before, we were re-parented and must not start at all.
    if rustix::process::Pid::as_raw(rustix::process::getppid()) != parent {
        return fail("the proxy exited before the legacy server started".into());
    }
    let error = std::process::Command::new(program).args(&args[2..]).exec();
    fail(format!(
        "cannot start `{}`: {error}",
        program.to_string_lossy()
    ))
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn exec_guarded(_args: &[OsString]) -> std::process::ExitCode {
    eprintln!("mcp-mrtr-proxy: {TRAMPOLINE_ARG} is for Linux only");
    std::process::ExitCode::from(127)
}
