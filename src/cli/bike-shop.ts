/**
 * What `npm run db:seed` makes bikes of: a bike shop's catalog. Real brands, each with models it
 * sells (a model and its grade, as the shops list them) and their type; each type with a plausible
 * price range in the shop's currency, the frames it comes in and what a listing would mention.
 */

export interface BikeType {
  /** The bike's productType. */
  productType: string;
  /** What the description calls it. */
  noun: string;
  /** The lowest and highest price a bike of this type is listed at. */
  price: { min: number; max: number };
  frames: readonly string[];
  features: readonly string[];
}

export const BIKE_TYPES = {
  road: {
    productType: 'Road',
    noun: 'road bike',
    price: { min: 900, max: 13_000 },
    frames: ['aluminium', 'carbon'],
    features: ['electronic shifting', 'a carbon wheelset', 'hydraulic disc brakes', 'an integrated cockpit'],
  },
  gravel: {
    productType: 'Gravel',
    noun: 'gravel bike',
    price: { min: 1_000, max: 7_500 },
    frames: ['aluminium', 'carbon', 'steel', 'titanium'],
    features: ['45 mm tyres', 'a 1x drivetrain', 'mounts for bags and bottles', 'a dropper seatpost'],
  },
  mountain: {
    productType: 'Mountain',
    noun: 'trail bike',
    price: { min: 600, max: 11_000 },
    frames: ['aluminium', 'carbon'],
    features: ['140 mm of travel', 'a dropper seatpost', '4-piston brakes', 'a 12-speed drivetrain'],
  },
  hybrid: {
    productType: 'Hybrid',
    noun: 'hybrid',
    price: { min: 450, max: 1_800 },
    frames: ['aluminium', 'steel'],
    features: ['mudguards and a rack', 'puncture-resistant tyres', 'hydraulic disc brakes', 'integrated lights'],
  },
  eBike: {
    productType: 'E-Bike',
    noun: 'e-bike',
    price: { min: 1_500, max: 6_500 },
    frames: ['aluminium'],
    features: ['a 500 Wh battery', 'a mid-drive motor', 'integrated lights', 'a range of up to 120 km'],
  },
  eMtb: {
    productType: 'E-MTB',
    noun: 'electric mountain bike',
    price: { min: 3_500, max: 14_000 },
    frames: ['aluminium', 'carbon'],
    features: ['a 750 Wh battery', 'a full-power mid-drive motor', '160 mm of travel', 'a dropper seatpost'],
  },
  folding: {
    productType: 'Folding',
    noun: 'folding bike',
    price: { min: 600, max: 4_500 },
    frames: ['steel', 'aluminium', 'titanium'],
    features: ['a fold in under 20 seconds', 'a front carrier block', 'a 6-speed hub', 'mudguards'],
  },
  touring: {
    productType: 'Touring',
    noun: 'touring bike',
    price: { min: 1_000, max: 3_200 },
    frames: ['steel'],
    features: ['racks front and rear', 'bar-end shifters', '36-spoke wheels', 'dynamo lights'],
  },
  bmx: {
    productType: 'BMX',
    noun: 'BMX',
    price: { min: 250, max: 1_000 },
    frames: ['chromoly steel', 'aluminium'],
    features: ['pegs', 'a freecoaster hub', 'sealed bearings', 'a 21-inch top tube'],
  },
  kids: {
    productType: 'Kids',
    noun: "kids' bike",
    price: { min: 150, max: 650 },
    frames: ['aluminium', 'steel'],
    features: ['training wheels', 'a coaster brake', 'a chain guard', 'short-reach brake levers'],
  },
} as const satisfies Record<string, BikeType>;

export type BikeTypeName = keyof typeof BIKE_TYPES;

/** Each brand's models: the name it is sold under, and its type. */
export const BRANDS: Record<string, ReadonlyArray<readonly [model: string, type: BikeTypeName]>> = {
  Trek: [
    ['Domane SL 5', 'road'],
    ['Madone SLR 7', 'road'],
    ['Émonda ALR 5', 'road'],
    ['Checkpoint ALR 5', 'gravel'],
    ['Fuel EX 8', 'mountain'],
    ['Marlin 7', 'mountain'],
    ['FX 3', 'hybrid'],
    ['Allant+ 7', 'eBike'],
    ['Rail 9.8', 'eMtb'],
    ['520', 'touring'],
    ['Precaliber 20', 'kids'],
  ],
  Specialized: [
    ['Tarmac SL8 Expert', 'road'],
    ['Allez Sport', 'road'],
    ['Roubaix Comp', 'road'],
    ['Diverge Comp', 'gravel'],
    ['Stumpjumper Expert', 'mountain'],
    ['Rockhopper Comp', 'mountain'],
    ['Sirrus X 3.0', 'hybrid'],
    ['Turbo Vado 4.0', 'eBike'],
    ['Turbo Levo Comp', 'eMtb'],
    ['Riprock 20', 'kids'],
    ['Jett 16', 'kids'],
  ],
  Giant: [
    ['TCR Advanced Pro 1', 'road'],
    ['Defy Advanced 2', 'road'],
    ['Contend AR 3', 'road'],
    ['Revolt Advanced 2', 'gravel'],
    ['Trance X 29 2', 'mountain'],
    ['Talon 3', 'mountain'],
    ['Escape 3', 'hybrid'],
    ['Explore E+ 2', 'eBike'],
    ['Reign E+ 2', 'eMtb'],
    ['ARX 20', 'kids'],
  ],
  Cannondale: [
    ['SuperSix EVO 3', 'road'],
    ['CAAD13 105', 'road'],
    ['Synapse Carbon 3', 'road'],
    ['Topstone Carbon 4', 'gravel'],
    ['Habit 4', 'mountain'],
    ['Trail 6', 'mountain'],
    ['Quick 4', 'hybrid'],
    ['Treadwell Neo 2', 'eBike'],
    ['Moterra Neo 3', 'eMtb'],
    ['Kids Trail 20', 'kids'],
  ],
  Canyon: [
    ['Aeroad CF SLX 7', 'road'],
    ['Ultimate CF SL 8', 'road'],
    ['Endurace CF 7', 'road'],
    ['Grizl CF SL 7', 'gravel'],
    ['Grail CF SL 8', 'gravel'],
    ['Spectral 125 CF 7', 'mountain'],
    ['Neuron 6', 'mountain'],
    ['Pathlite 5', 'hybrid'],
    ['Spectral:ON CF 8', 'eMtb'],
    ['Offspring AL 20', 'kids'],
  ],
  'Santa Cruz': [
    ['Hightower C', 'mountain'],
    ['Bronson C', 'mountain'],
    ['5010 C', 'mountain'],
    ['Tallboy C', 'mountain'],
    ['Nomad C', 'mountain'],
    ['Stigmata C', 'gravel'],
    ['Heckler 9', 'eMtb'],
    ['Bullit', 'eMtb'],
  ],
  Cervélo: [
    ['S5', 'road'],
    ['R5', 'road'],
    ['Soloist', 'road'],
    ['Caledonia-5', 'road'],
    ['Áspero', 'gravel'],
  ],
  Bianchi: [
    ['Oltre RC', 'road'],
    ['Specialissima Comp', 'road'],
    ['Sprint', 'road'],
    ['Via Nirone 7', 'road'],
    ['Impulso Pro', 'gravel'],
    ['Arcadex', 'gravel'],
    ['Spillo Cromo', 'hybrid'],
    ['e-Omnia C', 'eBike'],
  ],
  Scott: [
    ['Addict RC 10', 'road'],
    ['Foil RC 20', 'road'],
    ['Speedster 20', 'road'],
    ['Addict Gravel 30', 'gravel'],
    ['Spark 930', 'mountain'],
    ['Scale 970', 'mountain'],
    ['Sub Cross 20', 'hybrid'],
    ['Sub Cross eRIDE 20', 'eBike'],
    ['Patron eRIDE 910', 'eMtb'],
    ['Roxter 20', 'kids'],
  ],
  Orbea: [
    ['Orca M30', 'road'],
    ['Orca Aero M20', 'road'],
    ['Avant H40', 'road'],
    ['Terra H30', 'gravel'],
    ['Occam SL M30', 'mountain'],
    ['Oiz M30', 'mountain'],
    ['Alma H50', 'mountain'],
    ['Vector 30', 'hybrid'],
    ['Vibe H30', 'eBike'],
    ['Wild M-Team', 'eMtb'],
    ['Rise M20', 'eMtb'],
    ['MX 20 Dirt', 'kids'],
  ],
  Brompton: [
    ['C Line Explore', 'folding'],
    ['C Line Urban', 'folding'],
    ['P Line Urban', 'folding'],
    ['T Line One', 'folding'],
    ['G Line', 'folding'],
  ],
  Tern: [
    ['Link D8', 'folding'],
    ['Verge D9', 'folding'],
    ['BYB P8', 'folding'],
    ['Vektron S10', 'eBike'],
    ['HSD S8i', 'eBike'],
  ],
  Surly: [
    ['Long Haul Trucker', 'touring'],
    ['Disc Trucker', 'touring'],
    ['Bridge Club', 'touring'],
    ['Cross-Check', 'gravel'],
    ['Straggler', 'gravel'],
    ['Midnight Special', 'road'],
    ['Krampus', 'mountain'],
    ['Karate Monkey', 'mountain'],
    ['Preamble', 'hybrid'],
  ],
  Kona: [
    ['Sutra', 'touring'],
    ['Rove DL', 'gravel'],
    ['Honzo ST', 'mountain'],
    ['Process 153', 'mountain'],
    ['Dew', 'hybrid'],
    ['Remote 160', 'eMtb'],
  ],
  Haro: [
    ['Leucadia', 'bmx'],
    ['Downtown', 'bmx'],
    ['Boulevard', 'bmx'],
    ['Sport', 'bmx'],
    ['Shredder 20', 'kids'],
    ['Double Peak 29', 'mountain'],
  ],
  Woom: [
    ['Original 2', 'kids'],
    ['Original 3', 'kids'],
    ['Original 4', 'kids'],
    ['Original 5', 'kids'],
  ],
};

export const COLOURS = [
  'black',
  'gloss white',
  'matte grey',
  'racing red',
  'deep blue',
  'sage green',
  'sand',
  'orange',
  'celeste',
  'raw aluminium',
];

/** Most shops price in one currency; a few bikes in others make the per-currency reports meaningful. */
export const CURRENCIES = [
  { weight: 8, value: 'USD' },
  { weight: 1, value: 'EUR' },
  { weight: 1, value: 'GBP' },
];
