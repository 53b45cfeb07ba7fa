// Reads what was appended to a file since the last read, as text: the job's output while it
// runs. A character split across two writes is decoded once whole. No vscode import.
import { open } from "node:fs/promises";

export class FileTail {
  private offset = 0;
  private readonly decoder = new TextDecoder("utf-8");
  private reading: Promise<string> = Promise.resolve("");

  constructor(private readonly file: string) {}

  /** The text appended since the last call ("" when nothing was, or the file is not there yet). */
  read(): Promise<string> {
    // One read at a time: two overlapping ones would hand out the same bytes twice.
    this.reading = this.reading.then(() => this.readNew());
    return this.reading;
  }

  private async readNew(): Promise<string> {
    let handle;
    try {
      handle = await open(this.file, "r");
    } catch {
      return "";
    }
    try {
      const chunks: string[] = [];
      const buffer = Buffer.alloc(64 * 1024);
      for (;;) {
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, this.offset);
        if (bytesRead === 0) {
          break;
        }
        this.offset += bytesRead;
        chunks.push(this.decoder.decode(buffer.subarray(0, bytesRead), { stream: true }));
      }
      return chunks.join("");
    } finally {
      await handle.close();
    }
  }
}
