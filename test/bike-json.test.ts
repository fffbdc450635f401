import fc from 'fast-check';
import { bike as bikeSchema } from '../src/bikes/bike';
import { bikeJson, bikesJson } from '../src/api/bike-json';
import { nullablePaths, type Shape, shapeOf } from './support/bikes';

/** The compiled serializer must write exactly what JSON.stringify writes: clients see the same bytes. */
describe('the bike serializer', () => {
  const text = fc.string({ unit: 'binary' }).filter((s) => s.isWellFormed() && !s.includes('\u0000'));
  const number = fc.oneof(
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.integer(),
    fc.constantFrom(-0, 1e308, 1.2345678901234567e300, 1e21, 5e-324, 0.1, Number.MAX_SAFE_INTEGER + 2),
  );
  /** Bikes of every field of the definition, in its order (the order JSON.stringify writes them in). */
  const leaves: Record<string, fc.Arbitrary<unknown>> = {
    string: text,
    number,
    boolean: fc.boolean(),
    uuid: fc.uuid(),
  };
  /** An optional field (one that may be null) is null half the time. */
  const optional = new Set(nullablePaths(bikeSchema));
  const objectOf = (shape: Shape, prefix = ''): fc.Arbitrary<Record<string, unknown>> =>
    fc.record(
      Object.fromEntries(
        Object.entries(shape).map(([key, field]) => {
          const value = typeof field === 'string' ? leaves[field] : objectOf(field, `${prefix}${key}.`);
          return [key, optional.has(`${prefix}${key}`) ? fc.option(value, { nil: null, freq: 2 }) : value];
        }),
      ),
    );
  const bike = objectOf({ ...shapeOf(bikeSchema), id: 'uuid' });

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
