#!/usr/bin/env node
// Packs the npm packages of mcp-lint for the platform this runs on, from a binary built before:
//
//   node packaging/npm/build.mjs --binary target/release/mcp-lint --out target/npm
//
// writes two tarballs into --out and prints their paths, one a line: the launcher package
// (`mcp-lint`, from packaging/npm/mcp-lint) and the platform package
// (`@mcp-migrate/lint-<os>-<cpu>`, staged under --out from the binary). Both carry the version the
// binary prints, which must be the launcher's `version` and that of each optional dependency.
// Nothing is published: `npm publish <tarball>` is a release step of its own.
import { execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const here = dirname(fileURLToPath(import.meta.url));
const launcherDir = join(here, "mcp-lint");

function fail(message) {
  process.stderr.write(`build.mjs: ${message}\n`);
  process.exit(1);
}

const { values } = parseArgs({
  options: { binary: { type: "string" }, out: { type: "string" } },
});
if (!values.binary || !values.out) {
  fail("usage: node packaging/npm/build.mjs --binary PATH/TO/mcp-lint --out DIR");
}
const binary = resolve(values.binary);
const out = resolve(values.out);

// The version the binary prints (`mcp-lint 0.1.0`) is the version of both packages.
let printed;
try {
  printed = execFileSync(binary, ["--version"], { encoding: "utf8" }).trim();
} catch (error) {
  fail(`cannot run ${binary} --version: ${error.message}`);
}
const match = /^mcp-lint (\S+)$/.exec(printed);
if (!match) fail(`${binary} --version printed ${JSON.stringify(printed)}, not \`mcp-lint VERSION\``);
const version = match[1];

const launcher = JSON.parse(readFileSync(join(launcherDir, "package.json"), "utf8"));
if (launcher.version !== version) {
  fail(`packaging/npm/mcp-lint/package.json has version ${launcher.version}, the binary ${version}: update it`);
}
for (const [dependency, wanted] of Object.entries(launcher.optionalDependencies)) {
  if (wanted !== version) {
    fail(`packaging/npm/mcp-lint/package.json wants ${dependency}@${wanted}, not ${version}: update it`);
  }
}
const [os, cpu] = [process.platform, process.arch];
const name = `@mcp-migrate/lint-${os}-${cpu}`;
if (!(name in launcher.optionalDependencies)) {
  fail(`${os}-${cpu} is not a platform the launcher knows: add ${name} to its optionalDependencies`);
}

// The platform package: the binary, and `os`/`cpu` (and glibc on Linux) so that npm installs it
// only where it runs.
const stage = join(out, "stage", `lint-${os}-${cpu}`);
rmSync(stage, { recursive: true, force: true });
mkdirSync(join(stage, "bin"), { recursive: true });
const executable = os === "win32" ? "mcp-lint.exe" : "mcp-lint";
copyFileSync(binary, join(stage, "bin", executable));
chmodSync(join(stage, "bin", executable), 0o755);
const platformPackage = {
  name,
  version,
  description: `The ${os}-${cpu} binary of mcp-lint (installed by the mcp-lint package)`,
  license: launcher.license,
  repository: launcher.repository,
  os: [os],
  cpu: [cpu],
  ...(os === "linux" ? { libc: ["glibc"] } : {}),
  files: [`bin/${executable}`],
  preferUnplugged: true,
};
writeFileSync(join(stage, "package.json"), `${JSON.stringify(platformPackage, null, 2)}\n`);
writeFileSync(
  join(stage, "README.md"),
  `# ${name}\n\nThe ${os}-${cpu} binary of [mcp-lint](https://www.npmjs.com/package/mcp-lint). ` +
    "Install `mcp-lint`, which picks this package on this platform.\n",
);

function pack(dir) {
  const printed = execFileSync("npm", ["pack", "--json", "--pack-destination", out], {
    cwd: dir,
    encoding: "utf8",
    shell: process.platform === "win32",
  });
  return join(out, JSON.parse(printed)[0].filename);
}

mkdirSync(out, { recursive: true });
for (const tarball of [pack(launcherDir), pack(stage)]) {
  process.stdout.write(`${tarball}\n`);
}
