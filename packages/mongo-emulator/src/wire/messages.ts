/**
 * Wire framing: the 16-byte header, OP_QUERY (the driver's first handshake message on every
 * connection), OP_MSG with kind-0 and kind-1 sections, and the OP_REPLY / OP_MSG replies.
 */
import { deserialize, serialize } from 'bson';
import { CommandError, OversizedDocument } from '../errors.js';
import { MAX_INTERNAL_SIZE } from '../document-limits.js';
import type { Doc } from '../values.js';

export const OP_REPLY = 1;
export const OP_QUERY = 2004;
export const OP_COMPRESSED = 2012;
export const OP_MSG = 2013;

const CHECKSUM_PRESENT = 1;
const MORE_TO_COME = 2;

export interface Request {
  requestId: number;
  opCode: typeof OP_QUERY | typeof OP_MSG;
  /** The command body, kind-1 sequences merged in as arrays. */
  body: Doc;
  /** The database the command addresses ($db for OP_MSG, the namespace prefix for OP_QUERY). */
  db: string;
  /** moreToCome: the client wants no reply (w:0). */
  noReply: boolean;
  /** Set when the message is well-framed but its command cannot be run (a document over the BSON limit). */
  error?: CommandError;
}

function readCString(buf: Buffer, offset: number): [string, number] {
  const end = buf.indexOf(0, offset);
  if (end < 0) throw new CommandError('FailedToParse', 'unterminated cstring in wire message');
  return [buf.toString('utf8', offset, end), end + 1];
}

function readDocument(buf: Buffer, offset: number): [Doc, number] {
  const size = buf.readInt32LE(offset);
  if (size > MAX_INTERNAL_SIZE) throw new OversizedDocument(size);
  const doc = deserialize(buf.subarray(offset, offset + size)) as Doc;
  return [doc, offset + size];
}

/** Parses one complete message (header included). */
export function parseMessage(msg: Buffer): Request {
  try {
    return parseFramed(msg);
  } catch (err) {
    if (!(err instanceof OversizedDocument)) throw err;
    const opCode = msg.readInt32LE(12) === OP_QUERY ? OP_QUERY : OP_MSG;
    const error = new CommandError(
      'BSONObjectTooLarge',
      `BSONObj size: ${err.size} (0x${err.size.toString(16).toUpperCase()}) is invalid. Size must be between 0 and ${MAX_INTERNAL_SIZE}(16MB)`,
    );
    const noReply = opCode === OP_MSG && (msg.readUInt32LE(16) & MORE_TO_COME) !== 0;
    return { requestId: msg.readInt32LE(4), opCode, body: {}, db: 'admin', noReply, error };
  }
}

function parseFramed(msg: Buffer): Request {
  const requestId = msg.readInt32LE(4);
  const opCode = msg.readInt32LE(12);
  if (opCode === OP_QUERY) {
    let offset = 20;
    const [fullName, next] = readCString(msg, offset);
    offset = next + 8; // numberToSkip, numberToReturn
    const [query] = readDocument(msg, offset);
    const body = '$query' in query && typeof query.$query === 'object' ? (query.$query as Doc) : query;
    return { requestId, opCode, body, db: fullName.split('.')[0], noReply: false };
  }
  if (opCode === OP_MSG) {
    const flags = msg.readUInt32LE(16);
    const end = flags & CHECKSUM_PRESENT ? msg.length - 4 : msg.length;
    let offset = 20;
    let body: Doc | undefined;
    const sequences: [string, Doc[]][] = [];
    while (offset < end) {
      const kind = msg.readUInt8(offset);
      offset += 1;
      if (kind === 0) {
        [body, offset] = readDocument(msg, offset);
      } else if (kind === 1) {
        const size = msg.readInt32LE(offset);
        const sectionEnd = offset + size;
        const [identifier, docsStart] = readCString(msg, offset + 4);
        const docs: Doc[] = [];
        let p = docsStart;
        while (p < sectionEnd) {
          const [doc, next] = readDocument(msg, p);
          docs.push(doc);
          p = next;
        }
        sequences.push([identifier, docs]);
        offset = sectionEnd;
      } else {
        throw new CommandError('FailedToParse', `OP_MSG section kind ${kind} is not valid`);
      }
    }
    if (!body) throw new CommandError('FailedToParse', 'OP_MSG has no kind-0 body section');
    for (const [identifier, docs] of sequences) body[identifier] = docs;
    const db = typeof body.$db === 'string' ? body.$db : 'admin';
    return { requestId, opCode, body, db, noReply: (flags & MORE_TO_COME) !== 0 };
  }
  if (opCode === OP_COMPRESSED) {
    throw new CommandError('FailedToParse', 'OP_COMPRESSED is not supported (the emulator advertises no compressors)');
  }
  throw new CommandError('FailedToParse', `unsupported wire opCode ${opCode}`);
}

let nextResponseId = 1;

function header(length: number, responseTo: number, opCode: number): Buffer {
  const h = Buffer.alloc(16);
  h.writeInt32LE(length, 0);
  h.writeInt32LE(nextResponseId++ & 0x7fffffff, 4);
  h.writeInt32LE(responseTo, 8);
  h.writeInt32LE(opCode, 12);
  return h;
}

/** Encodes the reply for a request in the same protocol the request used. */
export function encodeReply(request: Pick<Request, 'requestId' | 'opCode'>, reply: Doc): Buffer {
  const doc = serialize(reply);
  if (request.opCode === OP_QUERY) {
    const prefix = Buffer.alloc(20); // responseFlags, cursorID (int64), startingFrom, numberReturned
    prefix.writeInt32LE(1, 16);
    const length = 16 + prefix.length + doc.length;
    return Buffer.concat([header(length, request.requestId, OP_REPLY), prefix, doc]);
  }
  const prefix = Buffer.alloc(5); // flagBits 0, section kind 0
  const length = 16 + prefix.length + doc.length;
  return Buffer.concat([header(length, request.requestId, OP_MSG), prefix, doc]);
}
