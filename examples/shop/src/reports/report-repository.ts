import { inject, injectable } from 'inversify';
import type { Collection, Db } from 'mongodb';
import { TOKENS } from '../tokens.js';
import type { DailyReport } from './daily-report.js';

/** The `reports` collection. */
@injectable()
export class ReportRepository {
  private readonly reports: Collection<DailyReport>;

  constructor(@inject(TOKENS.Db) db: Db) {
    this.reports = db.collection<DailyReport>('reports');
  }

  /** Writes the day's report; running it again for that day overwrites it with the same figures. */
  async save(report: DailyReport): Promise<void> {
    const { _id, ...fields } = report;
    await this.reports.updateOne({ _id }, { $set: fields }, { upsert: true });
  }

  get(day: string): Promise<DailyReport | null> {
    return this.reports.findOne({ _id: day });
  }
}
