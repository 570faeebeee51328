import { describe, expect, it } from "vitest";
import { displayCommand } from "./commands.js";
import { redactUrlCredentials, stripHttpUserinfo } from "./redact.js";

describe("redactUrlCredentials", () => {
  it.each([
    [
      "git clone -- https://bob:s3cret@h.test/a.git /w/a",
      "git clone -- https://<redacted>@h.test/a.git /w/a",
    ],
    [
      "fatal: https://tok@h.test/a and http://u:p@x.test",
      "fatal: https://<redacted>@h.test/a and http://<redacted>@x.test",
    ],
    ["no credentials https://h.test/a@b", "no credentials https://h.test/a@b"],
    ["git@github.com:acme/app.git", "git@github.com:acme/app.git"],
  ])("%s", (input, want) => {
    expect(redactUrlCredentials(input)).toBe(want);
  });
});

describe("stripHttpUserinfo", () => {
  it.each([
    ["https://bob:pw@h.test/a.git", "https://h.test/a.git"],
    ["http://tok@h.test:8080/a", "http://h.test:8080/a"],
    ["https://h.test/a.git", "https://h.test/a.git"],
    ["ssh://git@h.test/a.git", "ssh://git@h.test/a.git"],
    ["git@h.test:a.git", "git@h.test:a.git"],
  ])("%s", (input, want) => {
    expect(stripHttpUserinfo(input)).toBe(want);
  });
});

describe("displayCommand", () => {
  it("quotes what a shell would split and redacts credentials", () => {
    expect(displayCommand(["bash", "-c", "curl -fsSL https://u:p@x.test | sh"])).toBe(
      "bash -c 'curl -fsSL https://<redacted>@x.test | sh'",
    );
  });
});
