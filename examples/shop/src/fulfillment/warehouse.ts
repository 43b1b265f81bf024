import { injectable } from 'inversify';
import type { OrderItem } from '../orders/order.js';

/** A stand-in for the stock system: one reservation per order, however often asked. */
@injectable()
export class Warehouse {
  private readonly reservations = new Map<string, string>();

  async reserve(orderId: string, items: readonly OrderItem[]): Promise<{ reservationId: string; units: number }> {
    let reservationId = this.reservations.get(orderId);
    if (!reservationId) this.reservations.set(orderId, (reservationId = `res-${this.reservations.size + 1}`));
    return { reservationId, units: items.reduce((n, i) => n + i.quantity, 0) };
  }
}
