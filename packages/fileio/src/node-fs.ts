import { open } from "node:fs/promises";
import type { DirectFileWriter, FileRangeReader } from "./file-io.js";

/** The same contract as the addon's writer through node:fs: exclusive create, write, fsync (buffered). */
export const nodeFsWriter: DirectFileWriter = async (path, bytes) => {
  const file = await open(path, "wx");
  try {
    await file.writeFile(bytes);
    await file.sync();
  } finally {
    await file.close();
  }
};

/** The same contract as the addon's range reader through node:fs (open, fstat, read, close). */
export const nodeFsRangeReader: FileRangeReader = async (path, position, length, fromEnd, into) => {
  const file = await open(path, "r");
  try {
    const st = await file.stat();
    if (!st.isFile()) return [0, -1];
    const start = fromEnd ? Math.max(0, st.size - length) : Math.min(position, st.size);
    const want = fromEnd ? st.size - start : Math.min(length, st.size - start);
    if (want > into.length) return [-1, st.size];
    let done = 0;
    while (done < want) {
      const { bytesRead } = await file.read(into, done, want - done, start + done);
      if (bytesRead === 0) break;
      done += bytesRead;
    }
    return [done, st.size];
  } finally {
    await file.close();
  }
};
