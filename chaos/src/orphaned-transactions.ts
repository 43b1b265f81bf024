import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { Binary, type MongoClient } from 'mongodb';

/**
 * A worker SIGKILLed inside a `ctx.transaction` leaves its transaction open on the server, holding
 * the job's document (the engine's fenced write comes first), and every claim that reaches that
 * document waits until the server aborts the transaction: transactionLifetimeLimitSeconds, 60 s on
 * mongod and on the emulator. Each kill could stall the whole run for a minute. Each worker notes
 * the session of every transaction it starts (before the command leaves the process), and the
 * controller ends the sessions of a worker it killed, as a server's cleanup would, only sooner.
 * What the run tests is unchanged: the transaction dies uncommitted, its lease runs out, and
 * another worker takes the job over.
 */

/** The file next to a worker's ledger where it notes its transactions' sessions (not a `.jsonl`: no ledger). */
export const sessionsFileOf = (ledger: string): string => `${ledger.replace(/\.jsonl$/, '')}.sessions`;

/**
 * Appends the session id of each transaction `client` starts to `file`, synchronously, when the
 * driver hands out the command: a SIGKILL right after cannot lose it. The client needs
 * `monitorCommands: true`.
 */
export function noteTransactionSessions(client: MongoClient, file: string): void {
  client.on('commandStarted', (event) => {
    const command = event.command as { startTransaction?: boolean; lsid?: { id?: Binary } };
    if (command.startTransaction === true && command.lsid?.id instanceof Binary) {
      appendFileSync(file, `${command.lsid.id.toString('hex')}\n`);
    }
  });
}

/**
 * Ends every session noted in `file` (a killed worker's) with `killSessions`, which aborts an open
 * transaction (mongod and the emulator alike; a user may kill sessions of its own). Sessions that
 * committed long ago are ended too, harmlessly: their process is gone. Returns how many sessions
 * were ended.
 */
export async function endSessionsOf(client: MongoClient, file: string): Promise<number> {
  if (!existsSync(file)) return 0;
  const ids = [
    ...new Set(
      readFileSync(file, 'utf8')
        .split('\n')
        .filter((line) => /^[0-9a-f]{32}$/.test(line)),
    ),
  ];
  if (ids.length === 0) return 0;
  const lsids = ids.map((hex) => ({ id: new Binary(Buffer.from(hex, 'hex'), Binary.SUBTYPE_UUID) }));
  const admin = client.db('admin');
  await admin.command({ killSessions: lsids });
  return ids.length;
}
