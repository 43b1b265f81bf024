/** The help text, and the error every bad invocation raises (exit 2, nothing touched). */

export const USAGE = `loom: steer the jobs of a Loom MongoDB store

Usage:
  loom [--uri URI] [--database DB] [--prefix P] [--json] COMMAND
  loom stats
  loom jobs ls [--status S[,S...]] [--name N] [--queue Q] [--limit K] [--cursor C]
  loom jobs show ID | cancel ID [--reason R] | retry ID | rm ID
  loom dlq ls [--name N] [--queue Q] [--limit K]
  loom dlq retry (ID | --all [--name N] [--queue Q])
  loom dlq purge [--name N] [--queue Q] --yes
  loom queues ls | pause Q | resume Q
  loom schedules ls | pause N | resume N | trigger N
  loom doctor [--uri URI] [--database DB] [--prefix P] [--json]
  loom selftest [--uri URI] --database SCRATCH [--duration 60s] [--force] [--json]

Options:
  --uri URI        MongoDB connection string (default: $MONGODB_URI)
  --database DB    database of the Loom store (default: $LOOM_DATABASE, else the URI's)
  --prefix P       collection prefix of the store (default: loom_)
  --json           print JSON for scripts instead of tables
  -h, --help       this text

Exit codes: 0 done; 1 the job, schedule or dead letter does not exist or cannot change;
2 bad usage (nothing was changed) or the database cannot be reached.
doctor and selftest: 0 nothing failed (warnings are fine), 1 a check or a case failed, 2 bad usage.
`;
