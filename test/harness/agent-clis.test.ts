import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AGENT_CLIS, CLI_VENDORS } from "../../src/core/cli/agent-clis.js";
import { agentClisMissing, cachedCli, ensureAgentClis, installDirName, STAMP_FILE } from "./agent-clis.js";

/**
 * A stand-in npm: `install ... --prefix <dir> <pkg>@<version>` writes what npm would (the package's
 * package.json and a .bin entry), counts its invocations, and fails when FAIL_PACKAGE names the
 * package. SLOW makes it take a while, so two installs overlap.
 */
const FAKE_NPM = `#!/bin/bash
set -e
prefix=""; spec=""
while [ $# -gt 0 ]; do
  case "$1" in --prefix) prefix="$2"; shift 2;; install|--*) shift;; *) spec="$1"; shift;; esac
done
echo x >> "$COUNT_FILE"
pkg="\${spec%@*}"; version="\${spec##*@}"
if [ "$pkg" = "$FAIL_PACKAGE" ]; then echo "npm error 404 Not Found - $pkg" >&2; exit 1; fi
[ -n "$SLOW" ] && sleep "$SLOW"
mkdir -p "$prefix/node_modules/$pkg" "$prefix/node_modules/.bin"
printf '{"name":"%s","version":"%s"}' "$pkg" "$version" > "$prefix/node_modules/$pkg/package.json"
bin="$(basename "$pkg" | sed -e 's/claude-code/claude/' -e 's/gemini-cli/gemini/' -e 's/opencode-ai/opencode/')"
printf '#!/bin/sh\\necho %s\\n' "$version" > "$prefix/node_modules/$pkg/cli"
chmod +x "$prefix/node_modules/$pkg/cli"
ln -s "../$pkg/cli" "$prefix/node_modules/.bin/$bin"
`;

let dir: string;
let npm: string;
let countFile: string;
const saved = { ...process.env };

beforeEach(() => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), "agent-clis-")));
  npm = join(dir, "npm");
  countFile = join(dir, "count");
  writeFileSync(npm, FAKE_NPM);
  chmodSync(npm, 0o755);
  process.env.COUNT_FILE = countFile;
  delete process.env.FAIL_PACKAGE;
  delete process.env.SLOW;
  delete process.env.HARNESS_REAL_CLIS;
});
afterEach(() => {
  process.env = { ...saved };
  rmSync(dir, { recursive: true, force: true });
});

const installs = () => {
  try {
    return readFileSync(countFile, "utf8").trim().split("\n").length;
  } catch {
    return 0;
  }
};
const root = () => join(dir, "cache");

describe("the real-CLI cache", () => {
  it("names install directories after the package and version, as installed by hand", () => {
    expect(installDirName("@anthropic-ai/claude-code", "2.1.328")).toBe("_anthropic-ai_claude-code_2.1.328");
    expect(installDirName("opencode-ai", "1.18.33")).toBe("opencode-ai_1.18.33");
    expect(cachedCli("codex", "/c").containerExecutable).toBe(
      `/opt/agent-clis/_openai_codex_${AGENT_CLIS.codex.version}/node_modules/.bin/codex`,
    );
  });

  it("installs every pinned CLI once, stamps it, and links it into a bin dir", async () => {
    expect(agentClisMissing(root())).toMatch(/^not installed in .*@anthropic-ai\/claude-code@/);
    const cache = await ensureAgentClis({ root: root(), npm, log: () => {} });
    expect(installs()).toBe(4);
    for (const vendor of CLI_VENDORS) {
      const cli = cache.clis[vendor];
      expect(readFileSync(join(cli.dir, STAMP_FILE), "utf8")).toContain(cli.version);
      expect(readFileSync(join(cache.binDir, cli.binary), "utf8")).toContain(cli.version);
    }
    expect(agentClisMissing(root())).toBeUndefined();
    await ensureAgentClis({ root: root(), npm, log: () => {} });
    expect(installs()).toBe(4);
    // Nothing temporary is left behind.
    expect(readdirSync(root()).filter((n) => n.startsWith("."))).toEqual([]);
  });

  it("adopts a directory installed by hand (no stamp) without reinstalling it", async () => {
    const cli = cachedCli("claude", root());
    mkdirSync(join(cli.dir, "node_modules", cli.package), { recursive: true });
    mkdirSync(join(cli.dir, "node_modules", ".bin"), { recursive: true });
    writeFileSync(
      join(cli.dir, "node_modules", cli.package, "package.json"),
      JSON.stringify({ version: cli.version }),
    );
    writeFileSync(cli.executable, "#!/bin/sh\n");
    await ensureAgentClis({ root: root(), npm, log: () => {} });
    expect(installs()).toBe(3);
    expect(readFileSync(join(cli.dir, STAMP_FILE), "utf8")).toContain(cli.version);
  });

  it("replaces a half-installed directory", async () => {
    const cli = cachedCli("gemini", root());
    mkdirSync(join(cli.dir, "node_modules"), { recursive: true });
    await ensureAgentClis({ root: root(), npm, log: () => {} });
    expect(readFileSync(join(cli.dir, STAMP_FILE), "utf8")).toContain(cli.version);
  });

  it("two processes installing at once both end with one complete install", async () => {
    process.env.SLOW = "0.3";
    const [a, b] = await Promise.all([
      ensureAgentClis({ root: root(), npm, log: () => {} }),
      ensureAgentClis({ root: root(), npm, log: () => {} }),
    ]);
    expect(a.clis.claude.executable).toBe(b.clis.claude.executable);
    for (const vendor of CLI_VENDORS)
      expect(readFileSync(join(a.clis[vendor].dir, STAMP_FILE), "utf8")).toBeTruthy();
    expect(readdirSync(root()).filter((n) => n.startsWith(".tmp-"))).toEqual([]);
  });

  it("a failing npm names the package, npm's exit and its last words, and leaves no directory", async () => {
    process.env.FAIL_PACKAGE = AGENT_CLIS.codex.package;
    await expect(ensureAgentClis({ root: root(), npm, log: () => {} })).rejects.toThrow(
      new RegExp(
        `installing @openai/codex@${AGENT_CLIS.codex.version.replace(/\./g, "\\.")} failed: npm exited with code 1; npm output \\(.*failed\\.log\\) ends:\\nnpm error 404 Not Found`,
      ),
    );
    expect(existsSync(cachedCli("codex", root()).dir)).toBe(false);
    expect(readdirSync(root()).filter((n) => n.startsWith(".tmp-"))).toEqual([]);
  });

  it("HARNESS_REAL_CLIS=0 never installs", async () => {
    process.env.HARNESS_REAL_CLIS = "0";
    expect(agentClisMissing(root())).toMatch(/HARNESS_REAL_CLIS=0/);
    await expect(ensureAgentClis({ root: root(), npm, log: () => {} })).rejects.toThrow(
      /HARNESS_REAL_CLIS=0/,
    );
    expect(installs()).toBe(0);
  });
});
