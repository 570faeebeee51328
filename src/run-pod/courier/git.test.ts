import { describe, expect, it } from "vitest";
import { CREDENTIAL_HELPER, FALLBACK_PATH, gitEnv, trustedPath } from "./git.js";

/** The run PATH the job builder gives every run container (RUN_PATH). */
const RUN_PATH = "/agent/.local/bin:/agent/.opencode/bin:/usr/local/bin:/usr/bin:/bin";

describe("trustedPath: git is never looked up where the agent could have put one", () => {
  it.each([
    ["the run PATH loses the agent volume's bin dirs", { PATH: RUN_PATH, HOME: "/agent" }, FALLBACK_PATH],
    [
      "a workspace entry goes too",
      { PATH: "/workspace/bin:/opt/git/bin:/usr/bin", HOME: "/agent", WORKSPACE_DIR: "/workspace" },
      "/opt/git/bin:/usr/bin",
    ],
    [
      "HOME and WORKSPACE_DIR default to /agent and /workspace",
      { PATH: "/agent/x:/workspace/y:/usr/bin" },
      "/usr/bin",
    ],
    [
      "another HOME is honoured, and a path merely sharing its prefix is kept",
      { PATH: "/home/run/bin:/home/runner/bin:/bin", HOME: "/home/run" },
      "/home/runner/bin:/bin",
    ],
    ["relative and empty entries go", { PATH: ".:bin::/usr/bin", HOME: "/agent" }, "/usr/bin"],
    ["dot-dot tricks resolve first", { PATH: "/usr/../agent/.local/bin:/bin", HOME: "/agent" }, "/bin"],
    ["duplicates are kept once", { PATH: "/usr/bin:/usr/bin:/bin", HOME: "/agent" }, "/usr/bin:/bin"],
    ["nothing left ⇒ the image's system dirs", { PATH: "/agent/.local/bin", HOME: "/agent" }, FALLBACK_PATH],
    ["no PATH ⇒ the image's system dirs", { HOME: "/agent" }, FALLBACK_PATH],
  ])("%s", (_name, env, expected) => {
    expect(trustedPath(env)).toBe(expected);
  });
});

describe("gitEnv", () => {
  it("gives git the trusted PATH, HOME and nothing else of the courier's environment", () => {
    const env = gitEnv({
      env: {
        PATH: RUN_PATH,
        HOME: "/agent",
        DELIVERY_TOKEN: "secret",
        GH_TOKEN: "secret2",
        WORKSPACE_DIR: "/w",
      },
      home: "/tmp/courier-x",
      gitDir: "/tmp/courier-x/repo.git",
    });
    expect(env.PATH).toBe(FALLBACK_PATH);
    expect(env.HOME).toBe("/tmp/courier-x");
    expect(env.GIT_DIR).toBe("/tmp/courier-x/repo.git");
    expect(env.GIT_ALLOW_PROTOCOL).toBe("");
    expect(Object.values(env)).not.toContain("secret");
    expect(Object.values(env)).not.toContain("secret2");
    expect(env.WORKSPACE_DIR).toBeUndefined();
  });

  it("gives the forge process the token as DELIVERY_TOKEN and the helper naming only the variable", () => {
    const env = gitEnv({
      env: { PATH: "/usr/bin" },
      home: "/tmp/c",
      gitDir: "/tmp/c/repo.git",
      forge: { token: "tok-123", protocol: "https" },
    });
    expect(env.GIT_ALLOW_PROTOCOL).toBe("https");
    expect(env.DELIVERY_TOKEN).toBe("tok-123");
    const keys = Object.keys(env).filter((k) => k.startsWith("GIT_CONFIG_KEY_"));
    const config = keys.map((k) => [env[k], env[k.replace("KEY", "VALUE")]]);
    expect(config.filter(([k]) => k === "credential.helper").map(([, v]) => v)).toEqual([
      "",
      CREDENTIAL_HELPER,
    ]);
    expect(CREDENTIAL_HELPER).not.toContain("tok-123");
    expect(Object.entries(env).filter(([, v]) => v.includes("tok-123"))).toEqual([
      ["DELIVERY_TOKEN", "tok-123"],
    ]);
  });

  it("passes the egress proxy variables (docs/gateway.md#egress) to the forge process only", () => {
    const proxy = "http://courier:agx1.p.m@agent-gateway.ai-agents.svc:3128";
    const courierEnv = {
      PATH: "/usr/bin",
      HTTPS_PROXY: proxy,
      https_proxy: proxy,
      HTTP_PROXY: proxy,
      http_proxy: proxy,
      NO_PROXY: "agent-gateway.ai-agents.svc,localhost,127.0.0.1",
      no_proxy: "agent-gateway.ai-agents.svc,localhost,127.0.0.1",
    };
    const forge = gitEnv({
      env: courierEnv,
      home: "/tmp/c",
      gitDir: "/tmp/c/repo.git",
      forge: { token: "t", protocol: "https" },
    });
    for (const [name, value] of Object.entries(courierEnv))
      if (name !== "PATH") expect(forge[name]).toBe(value);
    const local = gitEnv({ env: courierEnv, home: "/tmp/c", gitDir: "/tmp/c/repo.git" });
    expect(Object.keys(local).filter((k) => /proxy/i.test(k))).toEqual([]);
  });
});
