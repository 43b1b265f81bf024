/**
 * One client socket: splits the byte stream into length-prefixed messages and answers them in
 * order. Requests on one connection are handled one at a time, as the driver sends them.
 */
import type { Socket } from 'node:net';
import { CommandError } from '../errors.js';
import { encodeReply, parseMessage, type Request } from './messages.js';
import type { Doc } from '../values.js';

export type CommandHandler = (request: Request, connectionId: number) => Promise<Doc>;

const MAX_MESSAGE = 48_000_000;

export class WireConnection {
  private buffered: Buffer = Buffer.alloc(0);
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

  private onData(chunk: Buffer): void {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    while (this.buffered.length >= 4) {
      const size = this.buffered.readInt32LE(0);
      if (size < 16 || size > MAX_MESSAGE) {
        this.socket.destroy();
        return;
      }
      if (this.buffered.length < size) return;
      const message = this.buffered.subarray(0, size);
      this.buffered = this.buffered.subarray(size);
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
      reply = await this.handle(request, this.id);
    } catch (err) {
      reply = (err instanceof CommandError ? err : new CommandError('InternalError', String(err))).toReply();
    }
    if (request.noReply || this.socket.destroyed) return;
    this.socket.write(encodeReply(request, reply));
  }
}
