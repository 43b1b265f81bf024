import { describe, expect, it } from '@jest/globals';
import { runLoom } from '../src/cli.js';

async function loom(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runLoom(args, { env: {}, stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

describe('loom shard-plan', () => {
  it('prints the mongosh script: indexes, shardCollection, one chunk per partition spread over the shards', async () => {
    const { code, stdout } = await loom(['shard-plan', '--database', 'app', '--partitions', '16']);
    expect(code).toBe(0);
    expect(stdout).toContain('db.adminCommand({"enableSharding":"app"});');
    expect(stdout).toContain('"key":{"queue":1,"partition":1,"idempotencyKey":1},"unique":true');
    expect(stdout).toContain('db.adminCommand({"shardCollection":"app.loom_jobs","key":{"queue":1,"partition":1}});');
    expect(stdout.match(/"split":"app\.loom_jobs"/g)).toHaveLength(16);
    expect(stdout).toContain('find: {"queue":"default","partition":15}, to: shards[15 % shards.length]');
  });

  it('with --shards and --json, the command list itself', async () => {
    const { code, stdout } = await loom(['shard-plan', '--database', 'app', '--partitions', '2', '--queues', 'a,b', '--shards', 's0,s1', '--json']);
    expect(code).toBe(0);
    const plan = JSON.parse(stdout) as { db: string; command: Record<string, unknown> }[];
    const moves = plan.filter((c) => 'moveChunk' in c.command).map((c) => [c.command.find, c.command.to]);
    expect(moves).toEqual([
      [{ queue: 'a', partition: null }, 's0'],
      [{ queue: 'a', partition: 1 }, 's1'],
      [{ queue: 'b', partition: null }, 's1'],
      [{ queue: 'b', partition: 1 }, 's0'],
    ]);
  });

  it('refuses a bad command line with exit 2', async () => {
    expect((await loom(['shard-plan', '--partitions', '4'])).stderr).toContain('--database DB is required');
    expect((await loom(['shard-plan', '--database', 'app'])).code).toBe(2);
    expect((await loom(['shard-plan', '--database', 'app', '--partitions', '0'])).code).toBe(2);
  });
});
