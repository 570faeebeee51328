import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  closedPort,
  type FileServer,
  selfSignedCert,
  startFileServer,
  type Tls,
} from "../../../test/support/http-files.js";
import { DownloadError, downloadToFile, followRedirect } from "./download.js";

describe("followRedirect (docs/decisions.md D-30)", () => {
  const https = new URL("https://a.test/x");
  const http = new URL("http://a.test/x");
  it.each<[string, URL, string | undefined, number, ReturnType<typeof followRedirect>]>([
    ["relative location", http, "/y", 0, { ok: true, url: new URL("http://a.test/y") }],
    ["http to https", http, "https://b.test/z", 4, { ok: true, url: new URL("https://b.test/z") }],
    ["the sixth redirect", http, "/y", 5, { ok: false, cause: "more than 5 redirects" }],
    [
      "https to http",
      https,
      "http://a.test/x",
      0,
      { ok: false, cause: "a redirect from https to http is refused" },
    ],
    [
      "to another scheme",
      http,
      "file:///etc/passwd",
      0,
      { ok: false, cause: "a redirect to URL scheme file: is not followed" },
    ],
    ["without Location", http, undefined, 0, { ok: false, cause: "a redirect without a Location" }],
  ])("%s", (_name, from, location, followed, want) => {
    expect(followRedirect(from, location, followed, 5)).toEqual(want);
  });
});

describe("downloadToFile against a local server", () => {
  let server: FileServer;
  let dir: string;
  beforeEach(async () => {
    server = await startFileServer();
    dir = mkdtempSync(join(tmpdir(), "init-download-"));
  });
  afterEach(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("streams a 200 body to the file with mode 0644, sending the headers", async () => {
    server.route("/brief.md", { status: 200, body: "# brief\n" });
    const dest = join(dir, "brief.md");
    await downloadToFile(`${server.url}/brief.md`, dest, { headers: [["Authorization", "Bearer sekrit"]] });
    expect(readFileSync(dest, "utf8")).toBe("# brief\n");
    expect(statSync(dest).mode & 0o777).toBe(0o644);
    expect(server.requests[0]?.headers.authorization).toBe("Bearer sekrit");
  });

  it("replaces an existing file only once a 2xx arrived", async () => {
    const dest = join(dir, "keep.md");
    writeFileSync(dest, "old");
    await expect(downloadToFile(`${server.url}/missing`, dest)).rejects.toThrow(
      "the server answered HTTP 404",
    );
    expect(readFileSync(dest, "utf8")).toBe("old");
    server.route("/new", { status: 200, body: "new" });
    await downloadToFile(`${server.url}/new`, dest);
    expect(readFileSync(dest, "utf8")).toBe("new");
  });

  it("a 404 carries its status", async () => {
    const err = await downloadToFile(`${server.url}/nope`, join(dir, "x")).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DownloadError);
    expect((err as DownloadError).status).toBe(404);
  });

  it("an unreachable port is a DownloadError naming the cause", async () => {
    const port = await closedPort();
    await expect(downloadToFile(`http://127.0.0.1:${port}/x`, join(dir, "x"))).rejects.toThrow(
      /^unreachable: .*ECONNREFUSED/,
    );
  });

  it("follows 5 redirects and refuses a sixth", async () => {
    for (let i = 0; i < 6; i++) server.route(`/r${i}`, { status: 302, headers: { Location: `/r${i + 1}` } });
    server.route("/r6", { status: 200, body: "end" });
    server.route("/s1", { status: 301, headers: { Location: "/r2" } });
    await downloadToFile(`${server.url}/s1`, join(dir, "five"));
    expect(readFileSync(join(dir, "five"), "utf8")).toBe("end");
    await expect(downloadToFile(`${server.url}/r0`, join(dir, "six"))).rejects.toThrow(
      "more than 5 redirects",
    );
  });

  it("sends the header block to its own origin only", async () => {
    const other = await startFileServer();
    try {
      other.route("/file", { status: 200, body: "x" });
      server.route("/go", { status: 307, headers: { Location: `${other.url}/file` } });
      await downloadToFile(`${server.url}/go`, join(dir, "x"), { headers: [["X-Token", "abc123"]] });
      expect(server.requests[0]?.headers["x-token"]).toBe("abc123");
      expect(other.requests[0]?.headers["x-token"]).toBeUndefined();
    } finally {
      await other.close();
    }
  });

  it("a transfer that stalls past the idle timeout fails and leaves no partial file", async () => {
    const stalled = await startStallingServer();
    try {
      const dest = join(dir, "partial");
      await expect(downloadToFile(`${stalled.url}/slow`, dest, { idleTimeoutMs: 300 })).rejects.toThrow(
        "the transfer stalled past the idle timeout",
      );
      expect(existsSync(dest)).toBe(false);
    } finally {
      await stalled.close();
    }
  });

  it("an endless body is cut off at maxBytes and leaves no partial file", async () => {
    const endless = await startEndlessServer(0);
    try {
      const dest = join(dir, "endless");
      await expect(downloadToFile(`${endless.url}/`, dest, { maxBytes: 1024 * 1024 })).rejects.toThrow(
        "the body is larger than the limit of 1048576 bytes",
      );
      expect(existsSync(dest)).toBe(false);
    } finally {
      await endless.close();
    }
  });

  it("an announced Content-Length over maxBytes is refused before anything is written", async () => {
    server.route("/big", { status: 200, body: "x".repeat(2048) });
    const dest = join(dir, "big");
    await expect(downloadToFile(`${server.url}/big`, dest, { maxBytes: 1024 })).rejects.toThrow(
      "the body is larger than the limit of 1024 bytes",
    );
    expect(existsSync(dest)).toBe(false);
  });

  it("a body that trickles on forever fails at the total timeout, never idle long enough for the idle one", async () => {
    const trickle = await startEndlessServer(20);
    try {
      const dest = join(dir, "trickle");
      await expect(
        downloadToFile(`${trickle.url}/`, dest, { totalTimeoutMs: 1000, idleTimeoutMs: 5000 }),
      ).rejects.toThrow("the download did not finish within 1 s");
      expect(existsSync(dest)).toBe(false);
    } finally {
      await trickle.close();
    }
  });

  it("fetches only http:// and https://", async () => {
    await expect(downloadToFile("ftp://127.0.0.1/x", join(dir, "x"))).rejects.toThrow(
      "URL scheme ftp: is not fetched (only http:// and https://)",
    );
  });
});

describe("downloadToFile over TLS", () => {
  let tls: Tls;
  let secure: FileServer;
  let plain: FileServer;
  let dir: string;
  beforeAll(async () => {
    tls = selfSignedCert();
    secure = await startFileServer(tls);
    plain = await startFileServer();
    dir = mkdtempSync(join(tmpdir(), "init-download-tls-"));
  });
  afterAll(async () => {
    await secure.close();
    await plain.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("downloads over https and refuses a redirect from https to http", async () => {
    secure.route("/ok", { status: 200, body: "secure" });
    await downloadToFile(`${secure.url}/ok`, join(dir, "ok"), { ca: tls.cert });
    expect(readFileSync(join(dir, "ok"), "utf8")).toBe("secure");

    plain.route("/file", { status: 200, body: "downgraded" });
    secure.route("/down", { status: 302, headers: { Location: `${plain.url}/file` } });
    await expect(downloadToFile(`${secure.url}/down`, join(dir, "down"), { ca: tls.cert })).rejects.toThrow(
      "a redirect from https to http is refused",
    );
    expect(plain.requests).toHaveLength(0);
  });
});

/** Answers 200, sends part of the body, then goes silent with the connection open. */
async function startStallingServer(): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { "Content-Length": "100" });
    res.write("first part");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A 200 whose body never ends: 64 KiB chunks as fast as the client reads, or one small chunk every `everyMs`. */
async function startEndlessServer(everyMs: number): Promise<{ url: string; close(): Promise<void> }> {
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  const server = createServer((_req, res) => {
    res.writeHead(200);
    if (everyMs > 0) {
      const timer = setInterval(() => res.write("a"), everyMs);
      res.on("close", () => clearInterval(timer));
      return;
    }
    const pump = () => {
      while (res.write(chunk)) {
        // until the socket pushes back
      }
    };
    res.on("drain", pump);
    res.on("close", () => res.off("drain", pump));
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
