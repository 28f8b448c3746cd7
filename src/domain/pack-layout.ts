// How a pack lays its rows out in a data file (docs/packed-format.md): dense rows back to back, or page
// rows that never straddle a 4096-byte page. The packed manifest, the packer and the row store
// all speak of it.
export type PackLayout = 'dense' | 'page';
