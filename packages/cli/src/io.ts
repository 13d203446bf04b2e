/** Where a command writes: stdout for results, stderr for progress and errors. */
export interface CliIo {
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  stderr: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
}

export function processIo(): CliIo {
  return { stdout: process.stdout, stderr: process.stderr };
}

export function println(stream: NodeJS.WritableStream, text = ""): void {
  stream.write(`${text}\n`);
}
