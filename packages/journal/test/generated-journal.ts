/**
 * A synthetic CSV journal generated on the fly: part p has width 2 + p, `linesPerPart` data lines of
 * fixed length, LF terminators on even parts and CRLF on odd ones, so composing exercises padding and
 * terminator rewriting. Sources yield one reused 1 MiB block, so the generator itself holds no data.
 */
export interface GeneratedJournal {
  parts: (() => AsyncIterable<Uint8Array>)[];
  /** Exact composite size, worked out arithmetically. */
  expectedBytes: number;
  expectedLines: number;
  inputBytes: number;
  unionWidth: number;
}

const BLOCK = 1 << 20;

function partShape(p: number) {
  const width = 2 + p;
  const eol = p % 2 === 0 ? "\n" : "\r\n";
  const header = Array.from({ length: width }, (_, c) => `col${c}`).join(",") + eol;
  // Fixed-width cells so every data line has the same length.
  const line = Array.from({ length: width }, (_, c) => `${String(c).padStart(12, "0")}.${p}`).join(",") + eol;
  return { width, eol, header, line };
}

export function generateJournal(totalBytes: number, nParts: number): GeneratedJournal {
  const unionWidth = 2 + nParts - 1;
  const unionHeader = Array.from({ length: unionWidth }, (_, c) => `col${c}`).join(",") + "\r\n";
  let expectedBytes = unionHeader.length;
  let expectedLines = 1;
  let inputBytes = 0;
  const parts = Array.from({ length: nParts }, (_, p) => {
    const { width, eol, header, line } = partShape(p);
    const linesPerBlock = Math.floor(BLOCK / line.length);
    const block = Buffer.from(line.repeat(linesPerBlock));
    const blocks = Math.max(1, Math.floor(totalBytes / nParts / block.length));
    const lines = blocks * linesPerBlock;
    const pad = unionWidth - width;
    const composedLine = line.length - eol.length + pad + 2;
    expectedBytes += lines * composedLine;
    expectedLines += lines;
    inputBytes += header.length + blocks * block.length;
    const headerBytes = Buffer.from(header);
    return async function* () {
      yield headerBytes;
      for (let i = 0; i < blocks; i++) yield block;
    };
  });
  return { parts, expectedBytes, expectedLines, inputBytes, unionWidth };
}
