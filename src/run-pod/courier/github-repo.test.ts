import { describe, expect, it } from "vitest";
import { parseOwnerName, pushUrl, repoOfRemote, withoutUserinfo } from "./github-repo.js";

describe("parseOwnerName", () => {
  it.each([
    ["acme/app", { owner: "acme", name: "app" }],
    ["acme/app.git", { owner: "acme", name: "app" }],
    [" my-org/my.repo_2 ", { owner: "my-org", name: "my.repo_2" }],
    ["acme", undefined],
    ["acme/app/extra", undefined],
    ["acme/", undefined],
    ["../app", undefined],
    ["acme/a b", undefined],
    ["https://github.com/acme/app", undefined],
  ])("%s", (value, expected) => {
    expect(parseOwnerName(value)).toEqual(expected);
  });
});

describe("repoOfRemote", () => {
  const gh = "https://github.com";
  it.each([
    ["https://github.com/acme/app.git", gh, { owner: "acme", name: "app" }],
    ["https://github.com/acme/app", gh, { owner: "acme", name: "app" }],
    ["https://x-access-token:secret@github.com/acme/app.git", gh, { owner: "acme", name: "app" }],
    ["HTTPS://GitHub.com/acme/app/", gh, { owner: "acme", name: "app" }],
    ["git@github.com:acme/app.git", gh, { owner: "acme", name: "app" }],
    ["ssh://git@github.com/acme/app.git", gh, { owner: "acme", name: "app" }],
    ["acme/app", gh, { owner: "acme", name: "app" }],
    ["http://127.0.0.1:8123/acme/app.git", "http://127.0.0.1:8123", { owner: "acme", name: "app" }],
    [
      "https://ghe.example.com/git/acme/app.git",
      "https://ghe.example.com/git",
      { owner: "acme", name: "app" },
    ],
  ])("%s on %s is a GitHub repository", (remote, server, expected) => {
    expect(repoOfRemote(remote, server)).toEqual(expected);
  });

  it.each([
    [
      "https://gitlab.com/acme/app.git",
      gh,
      "the declared repository URL https://gitlab.com/acme/app.git is not on github.com",
    ],
    [
      "https://tok@gitlab.com/acme/app.git",
      gh,
      "the declared repository URL https://gitlab.com/acme/app.git is not on github.com",
    ],
    [
      "git@gitlab.com:acme/app.git",
      gh,
      "the declared repository URL git@gitlab.com:acme/app.git is not on github.com",
    ],
    [
      "http://127.0.0.1:9/acme/app.git",
      "http://127.0.0.1:8123",
      "the declared repository URL http://127.0.0.1:9/acme/app.git is not on 127.0.0.1:8123",
    ],
    [
      "https://github.com/acme",
      gh,
      "the declared repository URL https://github.com/acme does not name an owner/name repository",
    ],
    [
      "https://ghe.example.com/other/acme/app.git",
      "https://ghe.example.com/git",
      "the declared repository URL https://ghe.example.com/other/acme/app.git is not under https://ghe.example.com/git",
    ],
    ["/srv/repos/app", gh, "the declared repository URL /srv/repos/app is not a URL"],
  ])("%s on %s is refused", (remote, server, problem) => {
    expect(repoOfRemote(remote, server)).toEqual({ problem });
  });
});

describe("pushUrl and withoutUserinfo", () => {
  it("builds the https push URL on the server base", () => {
    expect(pushUrl("https://github.com/", { owner: "acme", name: "app" })).toBe(
      "https://github.com/acme/app.git",
    );
  });
  it("drops credentials from URLs only", () => {
    expect(withoutUserinfo("https://u:p@github.com/a/b")).toBe("https://github.com/a/b");
    expect(withoutUserinfo("git@github.com:a/b.git")).toBe("git@github.com:a/b.git");
  });
});
