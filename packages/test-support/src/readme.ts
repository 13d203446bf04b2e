import ts from "typescript";

/*
 * The TypeScript examples of the READMEs, as the tests run and type-check them. Every code example is a
 * ```ts block; API summaries that are not code are ```text. A test runs an example as Node would with its
 * types erased (what `node example.ts` does on Node 23.6+, and tsx or tsc do elsewhere).
 */

/** The body of every ```ts block of a markdown text, in order. */
export function tsBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```ts\n([\s\S]*?)^```/gm)].map((m) => m[1]!);
}

/** The code blocks a markdown text fences as JavaScript: none may remain, since none would be type-checked. */
export function jsBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```(?:js|javascript|mjs|typescript|tsx)\n/gm)].map((m) => m[0]);
}

/** What an example says it prints: the comment after each `console.log(...);` line. */
export function statedOutput(code: string): string[] {
  return [...code.matchAll(/console\.log\(.*\); \/\/ (.*)$/gm)].map((m) => m[1]!);
}

/** The example as an ES module with its types erased; `type` imports and `declare`s go, nothing else changes. */
export function runnable(code: string): string {
  return ts.transpileModule(code, {
    compilerOptions: {
      module: ts.ModuleKind.ESNext,
      target: ts.ScriptTarget.ES2022,
      verbatimModuleSyntax: true,
    },
  }).outputText;
}
