//! `mcp-mrtr-proxy --version` prints the crate version (the README's install section relies on it).

#[test]
fn version_is_printed() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-mrtr-proxy"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        format!("mcp-mrtr-proxy {}\n", env!("CARGO_PKG_VERSION"))
    );
}
