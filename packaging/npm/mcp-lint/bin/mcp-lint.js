#!/usr/bin/env node
// `mcp-lint` for npm: runs the prebuilt binary of the platform package npm installed beside this
// one (an optional dependency per platform, each with `os`/`cpu` set so that npm installs only the
// matching one), with the same arguments, standard streams and exit code.
// See docs/lint/install.md in the mcp-migrate repository.
"use strict";

const { spawnSync } = require("node:child_process");
const { optionalDependencies, version } = require("../package.json");

// Runs this binary instead of the platform package's (a local build, an unsupported platform).
const OVERRIDE = "MCP_LINT_BINARY";
// Exit code for usage and internal errors, as the linter's own.
const EXIT_ERROR = 2;

function fail(message) {
  process.stderr.write(`mcp-lint: ${message}\n`);
  process.exit(EXIT_ERROR);
}

// glibc builds only: on musl (Alpine) the binary would not start.
function isMusl() {
  if (process.platform !== "linux") return false;
  const report = process.report && process.report.getReport();
  return Boolean(report) && !report.header.glibcVersionRuntime;
}

function binaryPath() {
  const override = process.env[OVERRIDE];
  if (override) return override;
  const target = `${process.platform}-${process.arch}`;
  const name = `@mcp-migrate/lint-${target}`;
  const others = `set ${OVERRIDE} to an mcp-lint binary you built (cargo install --locked --git https://github.com/mcp-migrate/mcp-migrate cargo-mcp-lint), or install the Python package (pipx run --spec mcp-migrate-lint mcp-lint)`;
  if (!Object.prototype.hasOwnProperty.call(optionalDependencies, name)) {
    const supported = Object.keys(optionalDependencies)
      .map((dependency) => dependency.replace("@mcp-migrate/lint-", ""))
      .join(", ");
    fail(`no prebuilt binary for ${target} (there are: ${supported}); ${others}`);
  }
  if (isMusl()) {
    fail(`the prebuilt ${target} binary needs glibc, and this system uses musl; ${others}`);
  }
  let installed;
  try {
    installed = require(`${name}/package.json`).version;
  } catch {
    fail(
      `the package ${name}, which holds the binary for this platform, is not installed: ` +
        `npm skips optional dependencies with --omit=optional (or --no-optional), and a lockfile ` +
        `written on another platform may lack it. Reinstall without those, e.g. ` +
        `\`npm install --include=optional mcp-lint\`; or ${others}`,
    );
  }
  if (installed !== version) {
    fail(`${name} is version ${installed}, but mcp-lint is ${version}: reinstall mcp-lint`);
  }
  const executable = process.platform === "win32" ? "mcp-lint.exe" : "mcp-lint";
  return require.resolve(`${name}/bin/${executable}`);
}

const binary = binaryPath();
const result = spawnSync(binary, process.argv.slice(2), { stdio: "inherit" });
if (result.error) {
  fail(`cannot run ${binary}: ${result.error.message}`);
}
if (result.signal) {
  // Die of the same signal, so that the caller sees what the linter saw.
  process.kill(process.pid, result.signal);
}
process.exit(result.status === null ? EXIT_ERROR : result.status);
