import type { BulkResult, BulkTarget, JobListFilter, Jobs } from '@loom/core';
import { PageError } from './errors.js';
import { formValues } from './http/form-body.js';
import { BULK_BUTTONS, bulkSummary, type FilterFields } from './views/bulk-view.js';

/** What a posted bulk action came to: done (a sentence for the flash), or a confirmation to show first. */
export type BulkOutcome = { kind: 'done'; text: string } | { kind: 'confirm'; button: string; preview: BulkResult; filter: FilterFields };

/** How the dashboard reads a jobs filter from a query string (checked as the jobs page checks it). */
export interface BulkDeps {
  jobs: Jobs;
  /** The page's filter from `status`, `name`, `queue`, `key` and `payload`; a PageError when malformed. */
  readFilter(query: URLSearchParams): { fields: FilterFields; list: JobListFilter };
}

/**
 * `POST <base>/actions/jobs/bulk`: `action` (cancel, retry, run-now, remove) on the ticked rows
 * (`scope=selected`, their ids as `id` fields) or on every job matching the filter the form carries
 * (`scope=matching`): without `confirm=yes` that is a dry run shown for confirmation. Each job goes
 * through `loom.jobs`' bulk methods, so through its single action.
 */
export async function performBulk(deps: BulkDeps, form: Map<string, string>): Promise<BulkOutcome> {
  const button = BULK_BUTTONS.find((b) => b.value === form.get('action'));
  if (!button) throw new PageError(400, 'Unknown action', 'A bulk action is one of cancel, retry, run now and remove.');
  const scope = form.get('scope');
  const run = (target: BulkTarget, dryRun: boolean): Promise<BulkResult> => {
    const { jobs } = deps;
    switch (button.action) {
      case 'cancel':
        return jobs.cancelMany(target, { dryRun });
      case 'retry':
        return jobs.retryMany(target, { dryRun });
      case 'remove':
        return jobs.removeMany(target, { dryRun });
      case 'runNow':
        return jobs.runNowMany(target, { dryRun });
    }
  };
  if (scope === 'selected') {
    const ids = formValues(form, 'id');
    if (ids.length === 0) throw new PageError(400, 'No job selected', 'Tick the jobs to act on first, or choose "All matching this filter".');
    const result = await run({ ids }, false);
    return { kind: 'done', text: bulkSummary(result, `${ids.length === 1 ? 'selected job' : 'selected jobs'}`) };
  }
  if (scope !== 'matching') throw new PageError(400, 'Unknown scope', 'A bulk action acts on the selected jobs or on all jobs matching the filter.');
  const query = new URLSearchParams();
  for (const status of formValues(form, 'status')) query.append('status', status);
  for (const key of ['name', 'queue', 'key', 'payload']) {
    const value = form.get(key);
    if (value !== undefined) query.set(key, value);
  }
  const { fields, list } = deps.readFilter(query);
  if (form.get('confirm') !== 'yes') return { kind: 'confirm', button: button.value, preview: await run({ filter: list }, true), filter: fields };
  return { kind: 'done', text: bulkSummary(await run({ filter: list }, false), 'jobs matching the filter') };
}
