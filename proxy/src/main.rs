//! `mcp-mrtr-proxy`: see the README.

fn main() -> std::process::ExitCode {
    eprintln!("mcp-mrtr-proxy is not complete yet");
    std::process::ExitCode::from(2)
}
