import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AGENT_CLIS } from "../../core/cli/agent-clis.js";
import {
  type CommandResult,
  defaultInstallDeps,
  ensureCli,
  INSTALL_TIMEOUT_MS,
  type InstallDeps,
  installerEnv,
  npmCause,
  npmInstallArgv,
  VERSION_TIMEOUT_MS,
} from "./cli-install.js";

const HOME = "/agent";
const PATH = "/agent/.local/bin:/agent/.opencode/bin:/usr/local/bin:/usr/bin:/bin";
const runEnv = {
  PATH,
  HOME,
  AGENT_CLI_VERSION: "2.1.328",
  ANTHROPIC_API_KEY: "sk-ant-secret",
  GH_TOKEN: "ghp_secret",
  npm_config_cache: "/cache/npm",
  NPM_CONFIG_REGISTRY: "https://npm.internal",
  HTTPS_PROXY: "http://proxy:3128",
};

interface Call {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  timeoutMs: number;
}

function fakeDeps(opts: {
  onPath?: Record<string, string>;
  afterInstall?: Record<string, string>;
  packageVersion?: string;
  results?: CommandResult[];
}): { deps: InstallDeps; calls: Call[] } {
  const calls: Call[] = [];
  let installed = false;
  const results = [...(opts.results ?? [])];
  return {
    calls,
    deps: {
      run: async (argv, env, cwd, timeoutMs) => {
        calls.push({ argv, env, cwd, timeoutMs });
        const r = results.shift() ?? { code: 0, lines: [] };
        if (argv[0] === "npm" && r.code === 0) installed = true;
        return r;
      },
      findExecutable: async (name) =>
        (installed ? opts.afterInstall : opts.onPath)?.[name] ?? opts.onPath?.[name],
      packageVersion: async () => opts.packageVersion,
      now: (() => {
        let t = 0;
        return () => (t += 1500);
      })(),
    },
  };
}

async function ensure(
  deps: InstallDeps,
  env: Record<string, string> = runEnv,
  vendor: "claude" | "exec" = "claude",
) {
  const logs: string[] = [];
  const result = await ensureCli(vendor, env, HOME, (m) => logs.push(m), deps);
  return { result, logs };
}

describe("ensureCli: a CLI already on PATH is used as is", () => {
  it("logs the version its npm package records, runs nothing", async () => {
    const { deps, calls } = fakeDeps({
      onPath: { claude: "/usr/local/bin/claude" },
      packageVersion: "2.1.328",
    });
    const { result, logs } = await ensure(deps);
    expect(result).toEqual({ ok: true });
    expect(calls).toEqual([]);
    expect(logs).toEqual(["claude: /usr/local/bin/claude is on PATH, version 2.1.328; not installing"]);
  });

  it("asks the CLI for its version otherwise (bounded, minimal env) and says when it differs from the pin", async () => {
    const { deps, calls } = fakeDeps({
      onPath: { claude: "/usr/local/bin/claude" },
      results: [{ code: 0, lines: ["2.2.0 (Claude Code)"] }],
    });
    const { logs } = await ensure(deps);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.argv).toEqual(["/usr/local/bin/claude", "--version"]);
    expect(calls[0]?.timeoutMs).toBe(VERSION_TIMEOUT_MS);
    expect(calls[0]?.env.ANTHROPIC_API_KEY).toBeUndefined();
    expect(logs).toEqual([
      "claude: /usr/local/bin/claude is on PATH, version 2.2.0 (Claude Code) (the installation's version is 2.1.328); not installing",
    ]);
  });

  it("a --version that fails or hangs is logged, not fatal", async () => {
    const { deps } = fakeDeps({
      onPath: { claude: "/usr/local/bin/claude" },
      results: [{ code: null, failure: "timed out after 10 s", lines: [] }],
    });
    const { result, logs } = await ensure(deps);
    expect(result).toEqual({ ok: true });
    expect(logs[0]).toBe(
      "claude: /usr/local/bin/claude is on PATH, version unknown (/usr/local/bin/claude --version timed out after 10 s) (the installation's version is 2.1.328); not installing",
    );
  });
});

describe("ensureCli: a missing CLI is installed with npm", () => {
  it("installs exactly AGENT_CLI_VERSION under $HOME/.local with a minimal environment", async () => {
    const { deps, calls } = fakeDeps({
      onPath: { npm: "/usr/bin/npm" },
      afterInstall: { claude: "/agent/.local/bin/claude" },
      packageVersion: "2.1.328",
      results: [{ code: 0, lines: ["added 2 packages in 9s"] }],
    });
    const { result, logs } = await ensure(deps);
    expect(result).toEqual({ ok: true });
    expect(calls).toHaveLength(1);
    expect(calls[0]?.argv).toEqual([
      "npm",
      "install",
      "--global",
      "--prefix",
      "/agent/.local",
      "--no-audit",
      "--no-fund",
      "@anthropic-ai/claude-code@2.1.328",
    ]);
    expect(calls[0]?.cwd).toBe(HOME);
    expect(calls[0]?.timeoutMs).toBe(INSTALL_TIMEOUT_MS);
    // The run's secrets never reach npm (nor a package's install script).
    expect(calls[0]?.env).toEqual({
      PATH,
      HOME,
      npm_config_update_notifier: "false",
      npm_config_cache: "/cache/npm",
      NPM_CONFIG_REGISTRY: "https://npm.internal",
      HTTPS_PROXY: "http://proxy:3128",
    });
    expect(logs).toEqual([
      "claude: claude is not on PATH; installing @anthropic-ai/claude-code@2.1.328: npm install --global --prefix /agent/.local --no-audit --no-fund @anthropic-ai/claude-code@2.1.328",
      "npm: added 2 packages in 9s",
      "claude: installed /agent/.local/bin/claude, version 2.1.328, in 1.5 s",
    ]);
  });

  it("an npm failure fails the setup with npm's own words", async () => {
    const { deps } = fakeDeps({
      onPath: { npm: "/usr/bin/npm" },
      results: [
        {
          code: 1,
          lines: [
            "npm error code E404",
            "npm error 404 Not Found - GET https://npm.internal/@anthropic-ai%2fclaude-code - Not found",
            "npm error A complete log of this run can be found in: /agent/.npm/_logs/x.log",
          ],
        },
      ],
    });
    const { result } = await ensure(deps);
    expect(result).toEqual({
      error:
        "claude: installing @anthropic-ai/claude-code@2.1.328 failed: npm exited with code 1: npm error 404 Not Found - GET https://npm.internal/@anthropic-ai%2fclaude-code - Not found",
    });
  });

  it("a hung npm fails the setup saying it timed out", async () => {
    const { deps } = fakeDeps({
      onPath: { npm: "/usr/bin/npm" },
      results: [{ code: null, failure: "timed out after 600 s", lines: [] }],
    });
    expect((await ensure(deps)).result).toEqual({
      error: "claude: installing @anthropic-ai/claude-code@2.1.328 failed: timed out after 600 s",
    });
  });

  it("no npm on the image: says what the Station image needs", async () => {
    const { deps, calls } = fakeDeps({});
    expect((await ensure(deps)).result).toEqual({
      error:
        "claude: claude is not on PATH and npm is not either, so @anthropic-ai/claude-code@2.1.328 cannot be installed: the Station image needs the claude CLI preinstalled, or Node.js with npm (docs/agent-clis.md)",
    });
    expect(calls).toEqual([]);
  });

  it("npm succeeding without putting the CLI on PATH fails the setup", async () => {
    const { deps } = fakeDeps({ onPath: { npm: "/usr/bin/npm" }, results: [{ code: 0, lines: [] }] });
    expect((await ensure(deps)).result).toEqual({
      error: `claude: npm installed @anthropic-ai/claude-code@2.1.328 but claude is not on PATH ${PATH} (expected in /agent/.local/bin)`,
    });
  });
});

describe("ensureCli: nothing to do", () => {
  it("without AGENT_CLI_VERSION (not a controller-built run) and for exec", async () => {
    const { deps, calls } = fakeDeps({ onPath: { npm: "/usr/bin/npm" } });
    const { AGENT_CLI_VERSION: _, ...noVersion } = runEnv;
    expect((await ensure(deps, noVersion)).result).toEqual({ ok: true });
    expect((await ensure(deps, runEnv, "exec")).result).toEqual({ ok: true });
    expect(calls).toEqual([]);
  });
});

describe("helpers", () => {
  it("npmInstallArgv names the package at the version", () => {
    expect(npmInstallArgv("gemini", "0.61.0", "/agent").at(-1)).toBe(`${AGENT_CLIS.gemini.package}@0.61.0`);
  });
  it("installerEnv passes npm config, proxies and CA only", () => {
    expect(
      installerEnv(
        { PATH: "/bin", npm_config_offline: "true", no_proxy: "x", NODE_EXTRA_CA_CERTS: "/ca", X: "y" },
        "/h",
      ),
    ).toEqual({
      PATH: "/bin",
      HOME: "/h",
      npm_config_update_notifier: "false",
      npm_config_offline: "true",
      no_proxy: "x",
      NODE_EXTRA_CA_CERTS: "/ca",
    });
  });
  it("npmCause falls back to the last line without npm error lines", () => {
    expect(npmCause(["something", "went wrong"])).toBe("went wrong");
    expect(npmCause([])).toBeUndefined();
  });
});

describe("ensureCli with real processes", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "cli-install-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("runs npm (a stand-in that installs like npm -g --prefix) and finds the CLI and its package version", async () => {
    const bin = join(dir, "bin");
    const home = join(dir, "home");
    mkdirSync(bin);
    mkdirSync(home);
    // npm -g --prefix P puts the package in P/lib/node_modules and links P/bin/<binary>.
    writeFileSync(
      join(bin, "npm"),
      `#!/bin/sh
env > "${dir}/npm-env"
spec=""; prefix=""
while [ $# -gt 0 ]; do case "$1" in --prefix) prefix="$2"; shift 2;; --*|install) shift;; *) spec="$1"; shift;; esac; done
pkgdir="$prefix/lib/node_modules/@anthropic-ai/claude-code"
mkdir -p "$pkgdir/bin" "$prefix/bin"
printf '{"name":"@anthropic-ai/claude-code","version":"%s"}' "\${spec##*@}" > "$pkgdir/package.json"
printf '#!/bin/sh\\necho hi\\n' > "$pkgdir/bin/claude.exe"; chmod +x "$pkgdir/bin/claude.exe"
ln -s ../lib/node_modules/@anthropic-ai/claude-code/bin/claude.exe "$prefix/bin/claude"
echo "added 1 package in 0s"
`,
    );
    chmodSync(join(bin, "npm"), 0o755);
    const env = {
      PATH: `${home}/.local/bin:${bin}:/usr/bin:/bin`,
      AGENT_CLI_VERSION: AGENT_CLIS.claude.version,
      ANTHROPIC_API_KEY: "sk-ant-secret",
    };
    const logs: string[] = [];
    const result = await ensureCli("claude", env, home, (m) => logs.push(m), defaultInstallDeps);
    expect(result).toEqual({ ok: true });
    expect(existsSync(join(home, ".local", "bin", "claude"))).toBe(true);
    expect(logs.at(-1)).toMatch(
      new RegExp(`^claude: installed ${home}/\\.local/bin/claude, version ${AGENT_CLIS.claude.version}, in `),
    );
    expect(readFileSync(join(dir, "npm-env"), "utf8")).not.toContain("sk-ant-secret");
    // Second run: found on PATH, version from the package, no npm.
    rmSync(join(dir, "npm-env"));
    const again: string[] = [];
    await ensureCli("claude", env, home, (m) => again.push(m), defaultInstallDeps);
    expect(again).toEqual([
      `claude: ${home}/.local/bin/claude is on PATH, version ${AGENT_CLIS.claude.version}; not installing`,
    ]);
    expect(existsSync(join(dir, "npm-env"))).toBe(false);
  });
});
