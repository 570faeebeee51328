import { describe, expect, it } from "vitest";
import { requiresToImports } from "./emit-validators.js";

describe("requiresToImports", () => {
  it("hoists each required module into one namespace import", () => {
    const code =
      '"use strict";const a = require("m/x").one;const b = require("m/x").two;const c = require("n.js").three;';
    expect(requiresToImports(code)).toBe(
      'import * as __cjs0 from "m/x.js";\nimport * as __cjs1 from "n.js";\nconst a = __cjs0.one;const b = __cjs0.two;const c = __cjs1.three;',
    );
  });

  it.each([
    ['require("ajv/dist/runtime/ucs2length").default', "ucs2length.default"],
    ['require("ajv/dist/runtime/equal")', "equal"],
  ])("refuses %s, which has no portable ESM import", (code, named) => {
    expect(() => requiresToImports(code)).toThrow(
      new RegExp(`${named.replace(".", "\\.")}.*no portable ESM import`),
    );
  });
});
