import { Client } from 'pg';
import type { BikeFields } from '../../src/bikes/bike';

const slotOf = async (db: Client) =>
  (await db.query<{ slot: number }>('SELECT pg_backend_pid() % 32 AS slot')).rows[0].slot;

/**
 * A session on `url` whose catalog version slot (its backend's pid modulo 32:
 * docs/reference/caching-and-conditions.md#conditional-get) is not `holder`'s. A transaction that has written holds its
 * slot until it ends, and a write on another session of that slot waits for it, so a test that
 * writes while such a transaction stays open writes on this one.
 */
export async function sessionBeside(url: string, holder: Client): Promise<Client> {
  const taken = await slotOf(holder);
  for (;;) {
    const db = new Client({ connectionString: url });
    await db.connect();
    if ((await slotOf(db)) !== taken) return db;
    await db.end();
  }
}

/** Inserts a bike of `fields` by SQL, as an import would; returns its id. */
export async function insertBike(db: Client, fields: BikeFields): Promise<string> {
  const { priceRange: price, ...bike } = fields;
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO bikes (id, handle, title, product_type, created_at, description, vendor, available_for_sale,
       total_inventory, min_price_amount, min_price_currency_code, max_price_amount, max_price_currency_code)
     VALUES (gen_random_uuid(), $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id`,
    [
      bike.title.replaceAll(' ', '-').toLowerCase(),
      bike.title,
      bike.productType,
      bike.createdAt,
      bike.description,
      bike.vendor,
      bike.availableForSale,
      bike.totalInventory,
      price.minPrice.amount,
      price.minPrice.currencyCode,
      price.maxPrice.amount,
      price.maxPrice.currencyCode,
    ],
  );
  return rows[0].id;
}
