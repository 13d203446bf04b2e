import assert from "node:assert/strict";
import { it } from "node:test";
import { fixture, fixtureText } from "../src/fixtures.js";

interface Manifest {
  schema: string;
  dims: { name: string; length: number }[];
  vars: { name: string }[];
  n_records: number;
}

it("the v1 manifest fixture is the v1 writers' text: no final newline, floats with a fraction", () => {
  const text = fixtureText("manifest-v1.json");
  assert.ok(!text.endsWith("\n"));
  assert.match(text, /"last_t": 10800\.0,/);
  const m = fixture<Manifest>("manifest-v1.json");
  assert.equal(m.schema, "earthsciio/output-manifest/v1");
  assert.equal(m.n_records, 4);
});

it("the v1 case schema and its manifest describe the same dims and vars", () => {
  const schema = fixture<{ dims: [string, number][]; vars: { name: string }[] }>("v1-case-schema.json");
  const m = fixture<Manifest>("manifest-v1.json");
  assert.deepEqual(
    schema.dims.slice(1),
    m.dims.slice(1).map((d) => [d.name, d.length]),
  );
  assert.deepEqual(
    schema.vars.map((v) => v.name),
    m.vars.map((v) => v.name),
  );
});

it("every call returns a fresh copy", () => {
  const a = fixture<Manifest>("manifest-v1.json");
  a.n_records = 99;
  assert.equal(fixture<Manifest>("manifest-v1.json").n_records, 4);
});
