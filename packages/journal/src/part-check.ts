import { JournalError } from "./errors.js";

const LF = 0x0a;
const CR = 0x0d;
const QUOTE = 0x22;

/**
 * Invariant 3: padding is line-wise, so a CSV part may not hold a CR or LF inside a cell. A line with an
 * odd number of quotes opens a cell that runs into the next line; a CR not followed by LF is a bare CR.
 */
export function assertCsvLineSafe(part: Uint8Array, where: string): void {
  let line = 1;
  let quotes = 0;
  for (let i = 0; i < part.length; i++) {
    const b = part[i];
    if (b === QUOTE) quotes++;
    else if (b === CR && i + 1 < part.length && part[i + 1] !== LF) {
      throw new JournalError(`${where}: line ${line} holds a bare CR inside a cell`, "part");
    } else if (b === LF) {
      if (quotes % 2 !== 0)
        throw new JournalError(`${where}: line ${line} has a quoted cell spanning lines`, "part");
      quotes = 0;
      line++;
    }
  }
  if (quotes % 2 !== 0) throw new JournalError(`${where}: line ${line} has an unclosed quote`, "part");
}
