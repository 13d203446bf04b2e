// What a TypeScript user gets: every published package packed once (`npm pack`), installed from those
// tarballs into a scratch project (third-party packages from npm's cache), and every ```ts example of the
// READMEs type-checked there under `tsc --strict`, with our .d.ts files checked too (skipLibCheck off).
// The same install shows what installing the CLI brings: no better-sqlite3, and a journal that names it.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { tsBlocks } from "@zarr-stream/test-support/readme";

const root = fileURLToPath(new URL("..", import.meta.url));
const manifest = (dir) => JSON.parse(readFileSync(join(root, dir, "package.json"), "utf8"));
const workspaces = manifest(".").workspaces;
/** The packages a user can install: every workspace but the private test helpers. */
const published = workspaces.filter((w) => manifest(w).private !== true);
const work = mkdtempSync(join(tmpdir(), "zs-readme-types-"));
const project = join(work, "project");
after(() => rmSync(work, { recursive: true, force: true }));

function run(cmd, args, cwd, env = process.env) {
  const r = spawnSync(cmd, args, { cwd, encoding: "utf8", env, maxBuffer: 64 << 20 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** npm without the workspace context and npm_* settings of the runner that started this test. */
function npm(args, cwd) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("npm_")));
  const r = run("npm", [...args, "--no-audit", "--no-fund"], cwd, env);
  assert.equal(r.status, 0, `npm ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
}

const timings = {};
before(() => {
  let t = performance.now();
  const tarballs = join(work, "tarballs");
  mkdirSync(tarballs);
  // One npm process packs them all; the build has made every dist/ and the codecs' wasm module already.
  const packed = JSON.parse(
    npm(
      [
        "pack",
        "--json",
        "--ignore-scripts",
        "--pack-destination",
        tarballs,
        ...published.flatMap((w) => ["-w", w]),
      ],
      root,
    ),
  );
  timings.pack = performance.now() - t;
  t = performance.now();
  const dependencies = Object.fromEntries(packed.map((p) => [p.name, `file:${join(tarballs, p.filename)}`]));
  // Developers' helpers, never packed: the examples of their README use them from the repository.
  dependencies["@zarr-stream/test-support"] = `file:${join(root, "packages", "test-support")}`;
  // What the examples import besides our packages, at the versions the repository uses.
  const rootDev = manifest(".").devDependencies;
  const zarritaDeps = manifest("packages/conformance").dependencies;
  dependencies["@types/node"] = rootDev["@types/node"];
  dependencies.zarrita = zarritaDeps.zarrita;
  dependencies["@zarrita/storage"] = zarritaDeps["@zarrita/storage"];
  mkdirSync(project);
  writeFileSync(
    join(project, "package.json"),
    JSON.stringify({ name: "scratch", private: true, type: "module", dependencies }),
  );
  // No install scripts: types need no native build, and the CLI check runs on the shipped wasm codecs.
  npm(["install", "--prefer-offline", "--ignore-scripts"], project);
  timings.install = performance.now() - t;
});

test("every README example compiles under tsc --strict against the packed packages", (t) => {
  const started = performance.now();
  const readmes = ["README.md", ...workspaces.map((w) => join(w, "README.md"))].filter((f) =>
    existsSync(join(root, f)),
  );
  const examples = join(project, "examples");
  mkdirSync(examples);
  const files = [];
  for (const readme of readmes) {
    tsBlocks(readFileSync(join(root, readme), "utf8")).forEach((code, i) => {
      const name = `${readme.replace(/\/?README\.md$/, "").replace(/^packages\//, "") || "root"}-${i + 1}.ts`;
      // A block without imports is still a module (top-level await is allowed only in one).
      writeFileSync(join(examples, name), /^(import|export) /m.test(code) ? code : `${code}\nexport {};\n`);
      files.push(`${readme} example ${i + 1} → examples/${name}`);
    });
  }
  assert.ok(files.length >= 20, `only ${files.length} examples found`);
  writeFileSync(
    join(project, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        module: "nodenext",
        moduleResolution: "nodenext",
        target: "es2022",
        lib: ["es2023"],
        types: ["node"],
        // Examples run with their types erased (the README test, `node x.ts` on Node 23.6+).
        verbatimModuleSyntax: true,
        erasableSyntaxOnly: true,
        skipLibCheck: false,
      },
      include: ["examples/*.ts"],
    }),
  );
  const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
  const r = run(process.execPath, [tsc, "-p", project], project);
  t.diagnostic(
    `${files.length} examples; npm pack of ${published.length} packages ${(timings.pack / 1000).toFixed(1)} s, ` +
      `npm install ${(timings.install / 1000).toFixed(1)} s, tsc ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  // Ours are the examples and our .d.ts files. Other packages' declarations are theirs: numcodecs' import
  // paths lack the extensions nodenext wants and zarrita's name DOM types, so a zarrita user under
  // nodenext sets skipLibCheck; we report those errors and keep checking ours.
  const errors = `${r.stdout}${r.stderr}`.split("\n").filter((l) => /^\S+\(\d+,\d+\): error TS/.test(l));
  const theirs = errors.filter(
    (l) => l.startsWith("node_modules/") && !l.startsWith("node_modules/@zarr-stream/"),
  );
  const owners = [...new Set(theirs.map((l) => l.match(/^node_modules\/((?:@[^/]+\/)?[^/]+)/)?.[1]))];
  if (theirs.length > 0)
    t.diagnostic(`${theirs.length} errors in declarations not ours: ${owners.join(", ")}`);
  const ours = errors.filter((l) => !theirs.includes(l));
  assert.deepEqual(ours, [], `tsc --strict:\n${ours.join("\n")}\n\n${files.join("\n")}`);
  assert.ok(r.status === 0 || theirs.length > 0, `tsc failed without an error line: ${r.stdout}${r.stderr}`);
});

test("installing the CLI brings no better-sqlite3; the journal's registry names the install, the rest works", () => {
  assert.equal(
    existsSync(join(project, "node_modules", "better-sqlite3")),
    false,
    "better-sqlite3 was installed",
  );
  const probe = `
    import { composeJournal, RegistryUnavailable, SqliteJournalRegistry } from "@zarr-stream/journal";
    const composed = composeJournal([new TextEncoder().encode("t,x\\r\\n0,1\\r\\n")], "csv").length;
    try { new SqliteJournalRegistry(":memory:"); console.log("opened"); }
    catch (err) { console.log(composed, err instanceof RegistryUnavailable, err.message); }`;
  const r = run(process.execPath, ["--input-type=module", "--eval", probe], project);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^10 true .*npm install better-sqlite3/);

  writeFileSync(join(project, "part.csv"), "t,x\r\n0,1\r\n");
  const bin = join(project, "node_modules", ".bin", "zstream");
  const cli = run(
    bin,
    ["journal", "publish", "part.csv", "--db", "registry.db", "--store", "journal-store"],
    project,
  );
  assert.equal(cli.status, 3, `${cli.stdout}${cli.stderr}`);
  assert.match(cli.stderr, /RegistryUnavailable: .*npm install better-sqlite3/);
  assert.deepEqual(
    readdirSync(project).filter((f) => f.startsWith("registry") || f === "journal-store"),
    [],
    "nothing was created",
  );
});
