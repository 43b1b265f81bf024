/**
 * Console output with one live status line kept at the bottom (on a terminal). Log lines print
 * above it. Without a terminal (CI, pipes) the status prints as ordinary lines, at most one a second.
 */
export class LiveConsole {
  private status = '';
  private lastPlain = 0;
  private lastPlainStatus = '';
  private cleared = false;

  constructor(private readonly stream: NodeJS.WriteStream = process.stdout) {}

  private get tty(): boolean {
    return this.stream.isTTY === true;
  }

  /** Prints a line above the status line. */
  print = (line: string): void => {
    if (this.tty && this.status) this.stream.write(`\r\x1b[2K${line}\n${this.status}`);
    else this.stream.write(`${line}\n`);
  };

  /** Replaces the status line. */
  setStatus(status: string): void {
    if (this.cleared) return;
    if (this.tty) {
      this.status = status;
      this.stream.write(`\r\x1b[2K${status}`);
      return;
    }
    const now = Date.now();
    if (status !== this.lastPlainStatus && now - this.lastPlain >= 1000) {
      this.lastPlain = now;
      this.lastPlainStatus = status;
      this.stream.write(`${status}\n`);
    }
  }

  /** Removes the status line for good (before exiting mid-burst, so the shell prompt starts on a clean line). */
  clearStatus(): void {
    if (this.tty && this.status) this.stream.write('\r\x1b[2K');
    this.status = '';
    this.cleared = true;
  }

  /** Leaves the status line as printed (final value) and goes back to plain output. */
  endStatus(final: string): void {
    if (this.tty) this.stream.write(`\r\x1b[2K${final}\n`);
    else this.stream.write(`${final}\n`);
    this.status = '';
  }
}
