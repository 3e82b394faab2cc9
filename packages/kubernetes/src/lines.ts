// A watch is newline-delimited JSON. Lines are collected up to a bound, so a stream that
// never ends a line (or sends one huge line) costs at most `maxLineBytes`, never the heap.

export class LineTooLongError extends Error {
  readonly maxLineBytes: number
  constructor (maxLineBytes: number) {
    super(`a line longer than ${maxLineBytes} bytes (maxEventBytes)`)
    this.maxLineBytes = maxLineBytes
  }
}

/** Splits chunks into lines; `push` throws LineTooLongError once a line passes the bound. */
export class LineSplitter {
  #parts: Buffer[] = []
  #size = 0
  readonly #max: number

  constructor (maxLineBytes: number) {
    this.#max = maxLineBytes
  }

  /** The complete lines in `chunk` (with what came before it), without their newline. */
  push (chunk: Buffer): string[] {
    const lines: string[] = []
    let start = 0
    for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
      this.#add(chunk.subarray(start, nl))
      lines.push(Buffer.concat(this.#parts, this.#size).toString('utf8'))
      this.#parts = []
      this.#size = 0
      start = nl + 1
    }
    if (start < chunk.length) this.#add(chunk.subarray(start))
    return lines
  }

  /** Bytes held for a line not ended yet. */
  get pending (): number { return this.#size }

  #add (part: Buffer): void {
    if (part.length === 0) return
    if (this.#size + part.length > this.#max) {
      this.#parts = []
      this.#size = 0
      throw new LineTooLongError(this.#max)
    }
    this.#parts.push(part)
    this.#size += part.length
  }
}
