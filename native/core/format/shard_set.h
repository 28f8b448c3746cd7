// Checks across the shards of one checkpoint, done where the headers already are: every tensor
// the index places in a shard is in that shard, and no tensor name is in two shards. Doing it
// here keeps a 48-shard, tens-of-thousands-of-tensors snapshot out of a cold JS loop.
#pragma once

#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/format/safetensors.h"

namespace spark::safetensors {

// headers[i] is valid where statuses[i].ok(). expected[i] (empty when there is no index) holds
// the tensor names the index places in shard i. A failing shard gets its Status in statuses[i].
void CheckShardSet(const std::vector<Header>& headers, const std::vector<std::vector<std::string>>& expected,
                   std::vector<Status>& statuses);

}  // namespace spark::safetensors
