/** The help text, and the error every bad invocation raises (exit 2, nothing touched). */

export const USAGE = `loom: steer the jobs of a Loom MongoDB store

Usage:
  loom [--uri URI] [--database DB] [--prefix P] [--json] COMMAND
  loom stats
  loom jobs ls [--status S[,S...]] [--name N] [--queue Q] [--limit K] [--cursor C]
  loom jobs show ID | cancel ID [--reason R] [--children] | retry ID | rm ID | run-now ID
  loom jobs (cancel | retry | rm | run-now) (ID ID... | [--status S] [--name N] [--queue Q])
            [--dry-run] [--yes]        many jobs: ids, or every job matching the filter
  loom jobs clean --older-than AGE|DATE [--status completed[,dead,cancelled]] [--name N]
            [--queue Q] [--dry-run] [--yes]   removes jobs finished before then (e.g. 7d)
  loom jobs logs ID  the job's kept ctx.log lines (its last 100, 16 KiB at most), oldest first
  loom jobs fork ID --from-step S [--payload JSON]
  loom jobs export ID > run.json
  loom dlq ls [--name N] [--queue Q] [--limit K]
  loom dlq retry (ID | --all [--name N] [--queue Q])
  loom dlq purge [--name N] [--queue Q] --yes
  loom queues ls | pause Q | resume Q
  loom schedules ls | pause N | resume N | trigger N
  loom batches show ID
  loom tokens complete ID [--json OUTPUT] | reject ID [--reason R]
  loom workers ls  the live engines: host, pid, version, queues, concurrency, running, last seen
  loom doctor [--uri URI] [--database DB] [--prefix P] [--json]
  loom selftest [--uri URI] --database SCRATCH [--duration 60s] [--force] [--json]
  loom shard-plan --database DB --partitions N [--queues Q[,Q...]] [--shards S[,S...]] [--prefix P] [--json]
                   prints the mongosh commands that shard the store (connects to nothing)

Options:
  --uri URI        MongoDB connection string (default: $MONGODB_URI)
  --database DB    database of the Loom store (default: $LOOM_DATABASE, else the URI's)
  --prefix P       collection prefix of the store (default: loom_)
  --json           print JSON for scripts instead of tables; after 'tokens complete ID',
                   --json OUTPUT is the token's output (a JSON value, checked against its schema)
  --children       jobs cancel: also cancel its children and dependents, recursively
  --dry-run        bulk actions and clean: print what would change and the counts; change nothing
  --yes            bulk actions over a filter and clean: go ahead without asking (needed when
                   stdin or stderr is not a terminal, and with --json)
  -h, --help       this text

Exit codes: 0 done; 1 the job, batch, schedule or dead letter does not exist or cannot change
(bulk: an id given could not change, or a filter matched jobs none of which could, or the
question was answered no); 2 bad usage (nothing was changed) or the database cannot be reached.
doctor and selftest: 0 nothing failed (warnings are fine), 1 a check or a case failed, 2 bad usage.
`;
