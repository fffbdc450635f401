'use strict';

/**
 * The SQL and the JSON of the benchmark's reference servers (the plain node:http baseline and the
 * minimal framework servers), written by hand against the table prisma/schema.prisma defines, so
 * that they stand apart from the service's own code. The statements are the ones the service
 * runs; the JSON is byte for byte the service's (the bench checks that they answer alike).
 */

/** Rows per list batch, as the service reads them (LIST_BATCH_SIZE in src/bikes/repository.ts). */
const BATCH = 250;
const BEFORE_FIRST_SEQ = '-9223372036854775808';

/** The bike's columns, in the order of its JSON fields. */
const COLUMNS = [
  'id',
  'handle',
  'title',
  'product_type',
  'created_at',
  'description',
  'vendor',
  'available_for_sale',
  'total_inventory',
  'min_price_amount',
  'min_price_currency_code',
  'max_price_amount',
  'max_price_currency_code',
];
const LIST = COLUMNS.map((column) => `"${column}"`).join(', ');
/**
 * A bike's state (its version and the transaction that wrote it), which the service reads with
 * every single bike and every write, for its ETag; the reference servers read it too, so the
 * database does the same work for them.
 */
const STATE = `("version"::text || '.' || "xmin"::text) as "state"`;
const SELECT = `select ${LIST}, ${STATE} from "bikes"`;
const BATCH_SELECT = `select ${LIST}, "seq" from "bikes"`;
const RETURNING = `returning ${LIST}, ${STATE}`;
const INSERT = `insert into "bikes" (${LIST}) values (${COLUMNS.map((_, i) => `$${i + 1}`).join(', ')})`;
/** The columns a write sets (all but the id), as `"column" = <value of it>`. */
const SET = (value) =>
  COLUMNS.slice(1)
    .map((column, i) => `"${column}" = ${value(column, i + 2)}`)
    .join(', ');

const SQL = {
  byId: `${SELECT} where "id" = $1`,
  firstByHandle: `${SELECT} where "handle" = $1 order by "seq" limit 1`,
  batch: `${BATCH_SELECT} where "seq" > $1 order by "seq" limit $2`,
  titleBatch: `${BATCH_SELECT} where "title" like $1 and "seq" > $2 order by "seq" limit $3`,
  create: `${INSERT} ${RETURNING}`,
  /** PUT: one upsert, so a replaced bike keeps its place (seq). */
  replace: `${INSERT} on conflict ("id") do update set ${SET((_, n) => `$${n}`)}, "updated_at" = now() ${RETURNING}`,
  /** PATCH: every column in one statement, each null parameter leaving its column as it is. */
  patch: `update "bikes" set ${SET((column, n) => `coalesce($${n}, "bikes"."${column}")`)}, "updated_at" = now() where "id" = $1 ${RETURNING}`,
};

/** The bike a row holds, its fields in the order the service writes them. */
function toBike(row) {
  return {
    id: row.id,
    handle: row.handle,
    title: row.title,
    productType: row.product_type,
    createdAt: row.created_at,
    description: row.description,
    vendor: row.vendor,
    availableForSale: row.available_for_sale,
    totalInventory: row.total_inventory,
    priceRange: {
      minPrice: { amount: row.min_price_amount, currencyCode: row.min_price_currency_code },
      maxPrice: { amount: row.max_price_amount, currencyCode: row.max_price_currency_code },
    },
  };
}

/** A bike's columns (of those its JSON carries), by column name. */
function toColumns(bike) {
  const { minPrice, maxPrice } = bike.priceRange ?? {};
  return {
    id: bike.id,
    handle: bike.handle,
    title: bike.title,
    product_type: bike.productType,
    created_at: bike.createdAt,
    description: bike.description,
    vendor: bike.vendor,
    available_for_sale: bike.availableForSale,
    total_inventory: bike.totalInventory,
    min_price_amount: minPrice?.amount,
    min_price_currency_code: minPrice?.currencyCode,
    max_price_amount: maxPrice?.amount,
    max_price_currency_code: maxPrice?.currencyCode,
  };
}

/** The values of the create and replace statements: every column of a whole bike. */
const insertValues = (bike) => {
  const row = toColumns(bike);
  return COLUMNS.map((column) => row[column]);
};

/** The values of the patch statement: the id, then each column the patch carries, null for the others. */
const patchValues = (id, patch) => {
  const row = toColumns(patch);
  return [id, ...COLUMNS.slice(1).map((column) => row[column] ?? null)];
};

/** `%`, `_` and `\` in a search term match themselves (backslash is LIKE's escape character). */
const escapeLike = (term) => term.replace(/[\\%_]/g, '\\$&');

/** Every bike whose title contains `term`, oldest first, read batch by batch as the service reads them. */
async function searchRows(pool, term) {
  const pattern = `%${escapeLike(term)}%`;
  const rows = [];
  for (let after = BEFORE_FIRST_SEQ; ;) {
    const { rows: batch } = await pool.query(SQL.titleBatch, [pattern, after, BATCH]);
    rows.push(...batch);
    if (batch.length < BATCH) return rows;
    after = batch[batch.length - 1].seq;
  }
}

/** The handle the service derives from a title. */
const deriveHandle = (title) => title.replaceAll(' ', '-').toLowerCase();

module.exports = {
  BATCH,
  BEFORE_FIRST_SEQ,
  SQL,
  deriveHandle,
  escapeLike,
  insertValues,
  patchValues,
  searchRows,
  toBike,
};
