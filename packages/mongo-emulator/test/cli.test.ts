import { describe, expect, it } from '@jest/globals';
import { MongoClient } from 'mongodb';
import { runCli } from '../src/cli.js';
import { fakeIo } from './cli-io.js';

// The command starts its own emulator: these run with or without MONGODB_URI.
describe('loom-mongo-emulator command', () => {
  it('prints a URI the driver can use and exits 0 on SIGTERM', async () => {
    const { out, io, signals } = fakeIo();
    const run = await runCli(['--port', '0'], io);
    expect(out.join('')).toMatch(/^mongodb:\/\/127\.0\.0\.1:\d+\/\?replicaSet=rs0\n$/);
    const client = new MongoClient(out.join('').trim());
    await client.db('cli').collection('c').insertOne({ a: 1 });
    expect(await client.db('cli').collection('c').countDocuments()).toBe(1);
    await client.close();
    signals.emit('SIGTERM');
    expect(await run.exited).toBe(0);
  });

  it('runs as a standalone on request and exits 0 on SIGINT', async () => {
    const { out, io, signals } = fakeIo();
    const run = await runCli(['--port', '0', '--standalone'], io);
    expect(out.join('')).toMatch(/^mongodb:\/\/127\.0\.0\.1:\d+\/\n$/);
    signals.emit('SIGINT');
    expect(await run.exited).toBe(0);
  });

  it('rejects a bad port with exit code 2 and a message', async () => {
    const { err, io } = fakeIo();
    const run = await runCli(['--port', 'abc'], io);
    expect(await run.exited).toBe(2);
    expect(err.join('')).toContain("--port must be an integer between 0 and 65535, got 'abc'");
  });

  it('reports a port in use with exit code 1', async () => {
    const first = fakeIo();
    const running = await runCli(['--port', '0'], first.io);
    const port = running.emulator!.port;
    const second = fakeIo();
    const run = await runCli(['--port', String(port)], second.io);
    expect(await run.exited).toBe(1);
    expect(second.err.join('')).toContain(`could not start on port ${port}`);
    first.signals.emit('SIGTERM');
    expect(await running.exited).toBe(0);
  });
});
