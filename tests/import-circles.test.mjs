// No import circles inside a package (developers' guide, "Layout"): every relative import of every
// package's src forms a graph with no cycle, type-only imports included, so modules can be read bottom up.
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { test } from "node:test";

const root = new URL("..", import.meta.url).pathname;

function sources(dir) {
  return readdirSync(dir).flatMap((e) => {
    const p = join(dir, e);
    if (statSync(p).isDirectory()) return sources(p);
    return p.endsWith(".ts") && !p.endsWith(".d.ts") ? [p] : [];
  });
}

/** Strongly connected components with more than one module (Tarjan). */
function circles(graph) {
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  let n = 0;
  const visit = (v) => {
    index.set(v, n);
    low.set(v, n++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) !== index.get(v)) return;
    const component = [];
    for (;;) {
      const w = stack.pop();
      onStack.delete(w);
      component.push(w);
      if (w === v) break;
    }
    if (component.length > 1) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

test("no package imports its own modules in a circle", () => {
  const packages = join(root, "packages");
  const all = [];
  for (const name of readdirSync(packages)) {
    const src = join(packages, name, "src");
    if (!statSync(join(packages, name)).isDirectory()) continue;
    let files;
    try {
      files = sources(src);
    } catch {
      continue;
    }
    const graph = new Map();
    for (const file of files) {
      const text = readFileSync(file, "utf8");
      const deps = [...text.matchAll(/from "(\.\.?\/[^"]+)\.js"/g)].map((m) =>
        normalize(join(dirname(file), `${m[1]}.ts`)),
      );
      graph.set(normalize(file), deps);
    }
    for (const c of circles(graph)) all.push(`${name}: ${c.map((f) => relative(src, f)).join(" -> ")}`);
  }
  assert.deepEqual(all, [], `import circles:\n${all.join("\n")}`);
});
