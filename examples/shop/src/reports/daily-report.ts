/** One day's figures, written by NightlyReport; `_id` is the day (YYYY-MM-DD, UTC). */
export interface DailyReport {
  _id: string;
  orders: number;
  generatedAt: Date;
}
