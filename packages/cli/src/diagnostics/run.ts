import type { LoomIo } from '../cli.js';
import { formatDoctor, runDoctor } from '../doctor/doctor.js';
import { UnreachableError, UsageError } from '../errors.js';
import { parseDiagnostic, type DiagnosticName } from './args.js';
import { diagnosticTarget } from './client.js';

/**
 * Runs `loom doctor` or `loom selftest` and resolves with the exit code: 0 nothing failed
 * (warnings alone are fine), 1 something failed, 2 bad usage, a database selftest may not use, or
 * (selftest) no server to reach: the codes of `EXIT` in cli.ts. doctor reports an unreachable server
 * as its failed `connection` check (1).
 */
export async function runDiagnostic(name: DiagnosticName, argv: readonly string[], io: LoomIo): Promise<number> {
  let invocation;
  let target;
  try {
    invocation = parseDiagnostic(name, argv);
    target = diagnosticTarget(invocation, io.env);
    if (name === 'selftest' && target.database === undefined) throw new UsageError("'selftest' needs --database: a scratch database it may create and drop");
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.stderr(`loom: ${err.message} (loom --help shows the commands)\n`);
    return 2;
  }
  if (name === 'doctor') {
    const report = await runDoctor(target, invocation.prefix);
    io.stdout(invocation.json ? `${JSON.stringify(report, null, 2)}\n` : formatDoctor(report, target));
    return report.checks.some((c) => c.status === 'fail') ? 1 : 0;
  }
  // Loaded only for selftest: it brings the conformance suite and its assertion library.
  const { runSelftest } = await import('../selftest/selftest.js');
  try {
    return await runSelftest({ ...invocation, uri: target.uri, database: target.database! }, io);
  } catch (err) {
    if (err instanceof UnreachableError) {
      io.stderr(`loom: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
}
