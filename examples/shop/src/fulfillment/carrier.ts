import { injectable } from 'inversify';

/** A stand-in for the parcel carrier's API. */
@injectable()
export class Carrier {
  private shipments = 0;

  /** Books the pickup; `signal` aborts the call when the job times out or the engine shuts down. */
  async ship(orderId: string, _signal: AbortSignal): Promise<{ trackingNumber: string }> {
    this.shipments++;
    return { trackingNumber: `TRK-${orderId}-${this.shipments}` };
  }
}
