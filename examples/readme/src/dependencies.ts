import { Job, type JobContext, type Loom } from '@loom/core';

type Day = { day: string };

@Job({ name: 'fetch-prices' })
export class FetchPrices {
  async run({ day }: Day): Promise<Record<string, number>> {
    return { [day]: 101.5 };
  }
}

@Job({ name: 'fetch-rates' })
export class FetchRates {
  async run({ day }: Day): Promise<Record<string, number>> {
    return { [day]: 1.08 };
  }
}

@Job({ name: 'build-report' })
export class BuildReport {
  async run({ day }: Day, ctx: JobContext): Promise<string> {
    // { [jobId]: result } of every dependency that completed
    const results = await ctx.dependencyResults<Record<string, number>>();
    return `${day}: ${Object.values(results).length} inputs`;
  }
}

/** Dependencies and DAGs, as FLOWS.md shows them. */
export async function buildDailyReport(loom: Loom, day: string): Promise<void> {
  const a = await loom.enqueue(FetchPrices, { day });
  const b = await loom.enqueue(FetchRates, { day });
  const report = await loom.enqueue(
    BuildReport,
    { day },
    {
      dependsOn: [a.id, b.id], // waits ('waiting', waitingFor.dependencies) until both completed
      onDependencyFailure: 'fail', // the default: dead-lettered with DEPENDENCY_FAILED; or 'cancel' | 'run'
    },
  );

  // The same DAG in one call, all or nothing; ids by node name. A cycle or an unknown node or id:
  // INVALID_DEPENDENCIES, nothing stored.
  const flow = await loom.flows.add({
    nodes: {
      prices: { job: FetchPrices, payload: { day } },
      rates: { job: FetchRates, payload: { day } },
      report: { job: BuildReport, payload: { day }, dependsOn: ['prices', 'rates'] },
    },
  });

  // Cancels the job and, recursively, its children and dependents that have not finished.
  const { cascaded } = await loom.jobs.cancel(flow.ids.prices!, { children: true });
  console.log(report.id, cascaded);
}
