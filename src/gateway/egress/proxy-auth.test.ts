import { describe, expect, it } from "vitest";
import { proxyCredential } from "./proxy-auth.js";

const basic = (userPass: string) => `Basic ${Buffer.from(userPass).toString("base64")}`;

describe("the proxy credential (docs/gateway.md#egress-listener)", () => {
  it.each([
    [["Proxy-Authorization", basic("agent:agx1.abc.def")], "agx1.abc.def"],
    [["proxy-authorization", `basic  ${Buffer.from("courier:a:b").toString("base64")}`], "a:b"],
    [["Host", "x", "Proxy-Authorization", basic(":token")], "token"],
  ])("%j presents %j", (raw, credential) => {
    expect(proxyCredential(raw)).toEqual({ ok: true, credential });
  });

  it.each([
    [[], "no Proxy-Authorization (the run's proxy credential)"],
    [["Authorization", basic("agent:tok")], "no Proxy-Authorization (the run's proxy credential)"],
    [
      ["Proxy-Authorization", basic("agent:a"), "Proxy-Authorization", basic("agent:b")],
      "more than one Proxy-Authorization",
    ],
    [["Proxy-Authorization", "Bearer tok"], "Proxy-Authorization is not Basic"],
    [["Proxy-Authorization", "Basic"], "Proxy-Authorization is not Basic"],
    [["Proxy-Authorization", "Basic !!!!"], "Proxy-Authorization is not valid base64"],
    [["Proxy-Authorization", "Basic YWJj="], "Proxy-Authorization is not valid base64"],
    [["Proxy-Authorization", basic("no-colon")], "Proxy-Authorization holds no user:password"],
    [["Proxy-Authorization", basic("agent:")], "Proxy-Authorization holds an empty password"],
  ])("%j is refused: %s", (raw, reason) => {
    expect(proxyCredential(raw)).toEqual({ ok: false, reason });
  });
});
