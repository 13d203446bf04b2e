/**
 * A progress bar on a terminal, plain lines otherwise (logs, CI, pipes): the bar redraws in place with
 * "\r", which is noise anywhere but a TTY.
 */
export class Progress {
  private done = 0;
  private lastDraw = 0;
  private lastPlainQuarter = 0;
  private readonly tty: boolean;

  constructor(
    private readonly stream: NodeJS.WritableStream & { isTTY?: boolean; columns?: number },
    private readonly label: string,
    private readonly total: number,
    /** Non-TTY: also print a line at every quarter of the way (for long silent phases). */
    private readonly plainQuarters = false,
  ) {
    this.tty = stream.isTTY === true;
  }

  tick(n = 1, status = ""): void {
    this.done = Math.min(this.total, this.done + n);
    if (this.tty) {
      const now = Date.now();
      if (now - this.lastDraw >= 80 || this.done === this.total) {
        this.lastDraw = now;
        this.draw(status);
      }
    } else if (this.plainQuarters && this.total > 0) {
      const quarter = Math.floor((4 * this.done) / this.total);
      if (quarter > this.lastPlainQuarter) {
        this.lastPlainQuarter = quarter;
        this.stream.write(`${this.label}: ${this.done}/${this.total}\n`);
      }
    }
  }

  /** A line that stays: above the bar on a TTY, a plain line otherwise. */
  note(line: string): void {
    if (this.tty) {
      this.stream.write(`\r\x1b[K${line}\n`);
      this.draw("");
    } else this.stream.write(`${line}\n`);
  }

  finish(): void {
    if (this.tty) this.stream.write("\r\x1b[K");
  }

  private draw(status: string): void {
    const width = Math.max(10, Math.min(40, (this.stream.columns ?? 80) - 40));
    const filled = this.total === 0 ? width : Math.round((this.done / this.total) * width);
    const bar = `${"#".repeat(filled)}${".".repeat(width - filled)}`;
    this.stream.write(
      `\r\x1b[K${this.label} [${bar}] ${this.done}/${this.total}${status ? ` ${status}` : ""}`,
    );
  }
}
