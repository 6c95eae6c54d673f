/** Helpers shared by the broker seeds: deterministic randomness and the demo order payload. */

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Deterministic pseudo-random numbers (mulberry32), so runs differ only in UUIDs and timestamps. */
export function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export const CUSTOMERS = ['c-2001', 'c-2002', 'c-2003', 'c-2004', 'c-2005'];

/**
 * A full, mutable order entity (status, customer contact and address, line items, updated_at):
 * the anti-pattern the product flags — a retry minutes later would act on stale state.
 */
export function fullOrder(id: string, r: () => number): Record<string, unknown> {
  const items = Array.from({ length: 1 + Math.floor(r() * 3) }, (_, i) => ({ sku: `SKU-${100 + Math.floor(r() * 900)}`, qty: 1 + i, unitPriceCents: 500 + Math.floor(r() * 5000) }));
  return {
    id,
    status: 'paid',
    customer: { id: CUSTOMERS[Math.floor(r() * CUSTOMERS.length)], email: 'buyer@example.com', shippingAddress: { line1: '1 Harbour St', city: 'Lisbon', country: 'PT' } },
    items,
    totalCents: items.reduce((s, it) => s + it.qty * it.unitPriceCents, 0),
    updatedAt: new Date().toISOString(),
  };
}
