/** The bike as the API speaks it. Response bodies list the fields in exactly this order. */
export interface Money {
  amount: number;
  currencyCode: string;
}

export interface PriceRange {
  minPrice: Money;
  maxPrice: Money;
}

/** The eight fields a client sets. */
export interface BikeFields {
  title: string;
  productType: string;
  createdAt: string;
  description: string;
  vendor: string;
  availableForSale: boolean;
  totalInventory: number;
  priceRange: PriceRange;
}

export interface Bike extends BikeFields {
  id: string;
  handle: string;
}

/** What a PATCH may write: any client field, and the handle. */
export type BikePatch = Partial<BikeFields> & { handle?: string };

/**
 * The handle is the title with every space (U+0020) turned into '-', then lowercased.
 * Nothing is removed, collapsed or transliterated: "Fat  Bike" -> "fat--bike".
 */
export function deriveHandle(title: string): string {
  return title.replaceAll(' ', '-').toLowerCase();
}
