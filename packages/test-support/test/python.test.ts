import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { findPython, runPython } from "../src/python.js";

// A root without a venv and a module no Python has: the probe must find nothing, whatever the machine.
const emptyRoot = mkdtempSync(join(tmpdir(), "zs-probe-"));
after(() => rmSync(emptyRoot, { recursive: true, force: true }));
const absent = { root: emptyRoot, modules: ["zs_no_such_module_9f3a"] };

describe("the Python probe's rule", () => {
  it("skips with the reason on a developer's machine", () => {
    const probe = findPython({ ...absent, env: {} });
    assert.equal(probe.python, undefined);
    assert.match(probe.skip ?? "", /\.venv\/bin\/python is missing/);
    assert.match(probe.skip ?? "", /setup-python\.sh/);
    assert.throws(() => probe.require(), /zs_no_such_module_9f3a|is missing/);
  });

  it("never skips under CI=true: the test runs and require() fails it with the reason", () => {
    const probe = findPython({ ...absent, env: { CI: "true" } });
    assert.equal(probe.skip, undefined);
    assert.throws(() => probe.require(), /no Python for this test: .*\.venv\/bin\/python is missing/);
  });

  it("names the firecube venv when that is the one asked for", () => {
    const probe = findPython({ ...absent, venv: ".venv-firecube", env: {} });
    assert.match(probe.missing ?? "", /\.venv-firecube\/bin\/python is missing/);
  });
});

const stdlib = findPython({ modules: ["json"] });
it("finds a Python with the standard library and runs code on it", { skip: stdlib.skip }, () => {
  const out = runPython(
    stdlib.require(),
    "import json, sys; print(json.dumps(json.load(sys.stdin)))",
    "[1, 2]",
  );
  assert.equal(out, "[1, 2]\n");
  assert.throws(() => runPython(stdlib.require(), "raise SystemExit(3)"), /python failed \(3\)/);
});
