/**
 * One client socket: splits the byte stream into length-prefixed messages and answers them in
 * order. Requests on one connection are handled one at a time, as the driver sends them.
 */
import type { Socket } from 'node:net';
import { CloseConnection, CommandError } from '../errors.js';
import { encodeReply, parseMessage, type Request } from './messages.js';
import type { Doc } from '../values.js';

export type CommandHandler = (request: Request, connectionId: number) => Promise<Doc>;

const MAX_MESSAGE = 48_000_000;

export class WireConnection {
  private chunks: Buffer[] = [];
  private bufferedBytes = 0;
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly socket: Socket,
    private readonly id: number,
    private readonly handle: CommandHandler,
  ) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    // Clients drop sockets abruptly on close(); ECONNRESET/EPIPE are normal here.
    socket.on('error', () => socket.destroy());
  }

  // Chunks are joined only once a whole message has arrived: joining on every chunk is
  // quadratic for multi-megabyte insertMany batches.
  private onData(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.bufferedBytes += chunk.length;
    while (this.bufferedBytes >= 4) {
      if (this.chunks[0].length < 4) this.chunks = [Buffer.concat(this.chunks)];
      const size = this.chunks[0].readInt32LE(0);
      if (size < 16 || size > MAX_MESSAGE) {
        this.socket.destroy();
        return;
      }
      if (this.bufferedBytes < size) return;
      const all = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
      const message = all.subarray(0, size);
      const rest = all.subarray(size);
      this.chunks = rest.length > 0 ? [rest] : [];
      this.bufferedBytes = rest.length;
      this.queue = this.queue.then(() => this.process(message));
    }
  }

  private async process(message: Buffer): Promise<void> {
    let request: Request;
    try {
      request = parseMessage(message);
    } catch (err) {
      // An unparseable message leaves the stream in an unknown state: close, as mongod does.
      this.socket.destroy(err instanceof Error ? err : undefined);
      return;
    }
    let reply: Doc;
    try {
      if (request.error) throw request.error;
      reply = await this.handle(request, this.id);
    } catch (err) {
      if (err instanceof CloseConnection) {
        this.socket.destroy();
        return;
      }
      reply = (err instanceof CommandError ? err : new CommandError('InternalError', String(err))).toReply();
    }
    if (request.noReply || this.socket.destroyed) return;
    let encoded: Buffer;
    try {
      encoded = encodeReply(request, reply);
    } catch (err) {
      // A reply BSON cannot hold (over 16 MiB) is an error for this command, never a crash.
      encoded = encodeReply(
        request,
        new CommandError(
          'BSONObjectTooLarge',
          `BSONObj size is invalid: the reply cannot be encoded (${err instanceof Error ? err.message : String(err)})`,
        ).toReply(),
      );
    }
    this.socket.write(encoded);
  }
}
