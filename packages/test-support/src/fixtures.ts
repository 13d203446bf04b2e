import { readFileSync } from "node:fs";

/**
 * The fixtures are JSON files so that test-support needs none of the project's types: the caller names
 * the type it expects, and its own validators are what the tests exercise.
 *
 * - manifest-v1.json: the output manifest EarthSciIO's Julia/Rust v1 writers produce for their v1
 *   write-conformance case, byte for byte (serde_json pretty printing, floats keep ".0", no final newline).
 * - v1-case-schema.json: that case as a stream schema (time × lat 3 × lon 4, two float64 vars).
 */
export type FixtureName = "manifest-v1.json" | "v1-case-schema.json";

const DIR = new URL("../../fixtures/", import.meta.url);

/** The fixture's exact text. */
export function fixtureText(name: FixtureName): string {
  return readFileSync(new URL(name, DIR), "utf8");
}

/** A fresh parse of the fixture on every call, so a test may change its copy freely. */
export function fixture<T>(name: FixtureName): T {
  return JSON.parse(fixtureText(name)) as T;
}
