import fc from 'fast-check';
import { bikeJson, bikesJson } from '../src/api/bike-json';

/** The compiled serializer must write exactly what JSON.stringify writes: clients see the same bytes. */
describe('the bike serializer', () => {
  const text = fc.string({ unit: 'binary' }).filter((s) => s.isWellFormed() && !s.includes('\u0000'));
  const number = fc.oneof(
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.integer(),
    fc.constantFrom(-0, 1e308, 1.2345678901234567e300, 1e21, 5e-324, 0.1, Number.MAX_SAFE_INTEGER + 2),
  );
  const money = fc.record({ amount: number, currencyCode: text });
  const bike = fc.record({
    id: fc.uuid(),
    handle: text,
    title: text,
    productType: text,
    createdAt: text,
    description: text,
    vendor: text,
    availableForSale: fc.boolean(),
    totalInventory: number,
    priceRange: fc.record({ minPrice: money, maxPrice: money }),
  });

  it('writes a bike byte for byte as JSON.stringify does', () => {
    fc.assert(
      fc.property(bike, (b) => bikeJson(b) === JSON.stringify(b)),
      { numRuns: 5_000 },
    );
  });

  it('writes a list of bikes byte for byte as JSON.stringify does', () => {
    fc.assert(
      fc.property(fc.array(bike, { maxLength: 5 }), (bs) => bikesJson(bs) === JSON.stringify(bs)),
      {
        numRuns: 1_000,
      },
    );
  });
});
