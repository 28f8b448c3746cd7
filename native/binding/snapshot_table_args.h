// The snapshot table as JS describes it to both of its readers: the row store (tables of kind
// 'snapshot', binding/row_store_args.cc) and the overlay's mmap gather (a bench baseline, its
// own addon built from bench/baselines/overlay-mmap/addon).
// One reader for the shared fields, so the two JS shapes cannot drift apart.
#pragma once

#include "binding/args.h"

namespace spark {

// layer, rows, dim, weight {path, offset}, scale {path, offset} into any table struct with the
// members of those names (core TableSpec, core MmapTable). Bad values throw naming the field.
template <typename Table>
void ReadSnapshotColumns(const Fields& o, Table* t) {
  t->layer = o.U32("layer");
  t->rows = o.U64("rows");
  t->dim = o.U64("dim");
  Fields weight = o.Object("weight"), scale = o.Object("scale");
  t->weight_path = weight.String("path");
  t->weight_offset = weight.U64("offset");
  t->scale_path = scale.String("path");
  t->scale_offset = scale.U64("offset");
}

}  // namespace spark
