import { describe, expect, it } from "vitest";
import {
  allowHostsProblem,
  destinationAllowed,
  destinationOfUrl,
  type EgressInput,
  egressDestinations,
  parseAllowHost,
  parseDestination,
} from "./destinations.js";

describe("allowHosts entries as destinations (docs/gateway.md#egress)", () => {
  it.each([
    ["pypi.org", "pypi.org:443"],
    ["PyPI.Org", "pypi.org:443"],
    ["files.pythonhosted.org:8443", "files.pythonhosted.org:8443"],
    ["*.example.com", "*.example.com:443"],
    ["*.Example.COM:80", "*.example.com:80"],
    ["example.com.", "example.com:443"],
    ["10.1.2.3:5432", "10.1.2.3:5432"],
    ["[2001:DB8:0:0::1]", "[2001:db8::1]:443"],
    ["[2001:db8::1]:22", "[2001:db8::1]:22"],
    ["localhost:65535", "localhost:65535"],
  ])("%s allows %s", (entry, destination) => {
    expect(parseAllowHost(entry)).toBe(destination);
  });

  it.each([
    ["empty", ""],
    ["a bare wildcard", "*"],
    ["a wildcard not first", "api.*.example.com"],
    ["a wildcard without a dot", "*example.com"],
    ["a wildcard over an address", "*.0.0.1"],
    ["port 0", "example.com:0"],
    ["port past 65535", "example.com:65536"],
    ["a leading-zero port", "example.com:0443"],
    ["an empty port", "example.com:"],
    ["a URL", "https://example.com"],
    ["a path", "example.com/x"],
    ["an underscore", "my_host.example.com"],
    ["a label starting with '-'", "-a.example.com"],
    ["a numeric last label that is no address", "host.123"],
    ["an unbracketed IPv6 address", "2001:db8::1"],
    ["a bad IPv6 literal", "[2001:db8::zz]"],
    ["a label over 63", `${"a".repeat(64)}.com`],
  ])("%s is refused", (_what, entry) => {
    expect(parseAllowHost(entry)).toBeUndefined();
  });

  it("the first bad entry is named by its field and index", () => {
    expect(allowHostsProblem(["pypi.org", "*.npmjs.org:443"])).toBeUndefined();
    expect(allowHostsProblem(["pypi.org", "https://x.example"])).toBe(
      'spec.egress.allowHosts[1] "https://x.example" is not a host or *.suffix with an optional :port',
    );
  });

  it("a destination needs its port and is canonical once parsed", () => {
    expect(parseDestination("github.com")).toBeUndefined();
    expect(parseDestination("GitHub.com:443")).toBe("github.com:443");
    expect(parseDestination("[::FFFF:1]:443")).toBe("[::ffff:1]:443");
  });
});

describe("URLs as destinations", () => {
  it.each([
    ["https://github.com/o/r.git", "github.com:443"],
    ["http://files.example.com/a.md", "files.example.com:80"],
    ["https://files.example.com:8443/a.md", "files.example.com:8443"],
    ["http://Files.Example.com:8080", "files.example.com:8080"],
    ["https://user:pw@git.example.com/o/r", "git.example.com:443"],
    ["git@github.com:owner/repo.git", "github.com:22"],
    ["GitHub.com:owner/repo", "github.com:22"],
    ["ssh://git@git.example.com:2222/o/r.git", "git.example.com:2222"],
    ["ssh://git@git.example.com/o/r.git", "git.example.com:22"],
    ["git+ssh://git.example.com/o/r", "git.example.com:22"],
    ["git://git.example.com/o/r", "git.example.com:9418"],
    ["https://[2001:db8::1]:8443/x", "[2001:db8::1]:8443"],
    ["git@[2001:db8::1]:o/r", "[2001:db8::1]:22"],
  ])("%s connects to %s", (url, destination) => {
    expect(destinationOfUrl(url)).toBe(destination);
  });

  it.each([
    ["a local path", "/srv/repo.git"],
    ["a relative path", "./repo"],
    ["file://", "file:///srv/repo.git"],
    ["ftp://", "ftp://files.example.com/a"],
    ["not a URL", "not a url"],
    ["empty", ""],
  ])("%s names none", (_what, url) => {
    expect(destinationOfUrl(url)).toBeUndefined();
  });
});

describe("whether a destination allows host:port", () => {
  const list = ["github.com:443", "*.example.com:443", "[2001:db8::1]:22", "10.0.0.5:5432"];
  it.each([
    ["the host itself", "github.com", 443, true],
    ["the host in capitals", "GITHUB.com", 443, true],
    ["the host with a trailing dot", "github.com.", 443, true],
    ["another port", "github.com", 80, false],
    ["a subdomain of an exact host", "api.github.com", 443, false],
    ["a lookalike", "evilgithub.com", 443, false],
    ["one label below the wildcard", "a.example.com", 443, true],
    ["deeper labels below the wildcard", "a.b.example.com", 443, true],
    ["the wildcard's suffix itself", "example.com", 443, false],
    ["a host ending in the suffix text without a dot", "badexample.com", 443, false],
    ["the wildcard on another port", "a.example.com", 8443, false],
    ["an IPv6 address, unbracketed and long", "2001:0db8:0:0:0:0:0:1", 22, true],
    ["an IPv6 address, bracketed", "[2001:db8::1]", 22, true],
    ["an IPv4 address", "10.0.0.5", 5432, true],
    ["port 0", "github.com", 0, false],
    ["not a host", "github.com/x", 443, false],
  ])("%s: %s:%s → %s", (_what, host, port, allowed) => {
    expect(destinationAllowed(list, host as string, port as number)).toBe(allowed);
  });

  it("nothing is allowed by an empty list", () => {
    expect(destinationAllowed([], "github.com", 443)).toBe(false);
  });
});

describe("each role's destinations", () => {
  const input: EgressInput = {
    fileUrls: ["http://files.example.com/a.md", "https://cdn.example.org:8443/b"],
    repoUrls: ["https://github.com/o/r.git", "git@gitlab.example.com:o/r.git"],
    skillsSource: "https://skills.example.net/base",
    conversationSource: "https://conv.example.net/store",
    conversationSave: "https://save.example.net/store",
    sinkUrls: ["https://sink.example.io/events", "http://collector.ns.svc:8099/in"],
    mcpUrls: ["https://mcp.example.dev/sse"],
    allowHosts: ["pypi.org", "*.pythonhosted.org", "proxy.golang.org:443", "registry.npmjs.org"],
    npmRegistry: "https://npm.internal.example:4873/",
    githubApiUrl: "https://ghe.example.com/api/v3",
    githubServerUrl: "https://ghe.example.com",
  };
  const sinks = ["collector.ns.svc:8099", "sink.example.io:443"];

  it("the init: files, clones, skills, conversation store and sinks", () => {
    expect(egressDestinations("init", input)).toEqual(
      [
        "files.example.com:80",
        "cdn.example.org:8443",
        "github.com:443",
        "gitlab.example.com:22",
        "skills.example.net:443",
        "conv.example.net:443",
        ...sinks,
      ].sort(),
    );
  });

  it("the agent: allowHosts, MCP servers, sinks, conversation store and npm registry; never the clones' hosts", () => {
    const agent = egressDestinations("agent", input);
    expect(agent).toEqual(
      [
        "pypi.org:443",
        "*.pythonhosted.org:443",
        "proxy.golang.org:443",
        "registry.npmjs.org:443",
        "save.example.net:443",
        "mcp.example.dev:443",
        "npm.internal.example:4873",
        ...sinks,
      ].sort(),
    );
    expect(agent).not.toContain("github.com:443");
  });

  it("the courier: the forge's server and API, and the sinks", () => {
    expect(egressDestinations("courier", input)).toEqual(["ghe.example.com:443", ...sinks].sort());
  });

  it("with nothing named, the agent and init reach nothing and the courier only the forge", () => {
    const bare: EgressInput = {
      fileUrls: [],
      repoUrls: [],
      sinkUrls: [],
      mcpUrls: [],
      allowHosts: [],
      githubApiUrl: "https://api.github.com",
      githubServerUrl: "https://github.com",
    };
    expect(egressDestinations("init", bare)).toEqual([]);
    expect(egressDestinations("agent", bare)).toEqual([]);
    expect(egressDestinations("courier", bare)).toEqual(["api.github.com:443", "github.com:443"]);
  });

  it("repeats are dropped and bad entries skipped", () => {
    const dup = {
      ...input,
      allowHosts: ["sink.example.io", "https://bad"],
      mcpUrls: [],
      npmRegistry: undefined,
    };
    delete dup.npmRegistry;
    expect(egressDestinations("agent", dup)).toEqual(["save.example.net:443", ...sinks].sort());
  });
});
