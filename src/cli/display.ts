import { formatMs } from './values.ts';

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/**
 * The live "waiting for the lock" line on a terminal: one line on stderr, redrawn in place,
 * shown only after a short delay so that an uncontended acquisition never flickers.
 */
export class WaitingDisplay {
  readonly #stream: NodeJS.WriteStream;
  readonly #text: () => string;
  readonly #startedAt = Date.now();
  #timer: NodeJS.Timeout | undefined;
  #frame = 0;
  #shown = false;

  constructor(stream: NodeJS.WriteStream, text: (elapsed: string) => string, delay = 150) {
    this.#stream = stream;
    this.#text = () => text(formatMs(Date.now() - this.#startedAt));
    this.#timer = setTimeout(() => {
      this.#timer = setInterval(() => this.#draw(), 100);
      this.#timer.unref();
      this.#draw();
    }, delay);
    this.#timer.unref();
  }

  /** Whether the line was ever drawn (the caller then reports the outcome on its own line). */
  get shown(): boolean {
    return this.#shown;
  }

  get elapsed(): string {
    return formatMs(Date.now() - this.#startedAt);
  }

  /** Stops redrawing and clears the line. */
  stop(): void {
    clearTimeout(this.#timer);
    clearInterval(this.#timer);
    if (this.#shown) this.#stream.write('\r\x1b[2K');
  }

  #draw(): void {
    this.#shown = true;
    const frame = FRAMES[this.#frame++ % FRAMES.length];
    this.#stream.write(`\r\x1b[2K${frame} ${this.#text()}`);
  }
}
