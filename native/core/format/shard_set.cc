#include "core/format/shard_set.h"

#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace spark::safetensors {

void CheckShardSet(const std::vector<Header>& headers, const std::vector<std::vector<std::string>>& expected,
                   std::vector<Status>& statuses) {
  std::unordered_map<std::string_view, size_t> owner;  // tensor name -> first shard holding it
  for (size_t i = 0; i < headers.size(); ++i) {
    if (!statuses[i].ok()) continue;
    for (const Tensor& t : headers[i].tensors) {
      auto [it, fresh] = owner.emplace(t.name, i);
      if (!fresh) {
        statuses[i] = Status::Error(
            Code::E_SAFETENSORS_DUPLICATE,
            "tensor also appears in " + headers[it->second].path + "; one checkpoint cannot hold it twice",
            headers[i].path, t.name);
        break;
      }
    }
  }
  for (size_t i = 0; i < headers.size() && i < expected.size(); ++i) {
    if (!statuses[i].ok() || expected[i].empty()) continue;
    std::unordered_set<std::string_view> names;
    names.reserve(headers[i].tensors.size());
    for (const Tensor& t : headers[i].tensors) names.insert(t.name);
    for (const std::string& want : expected[i]) {
      if (names.count(want) == 0) {
        statuses[i] = Status::Error(Code::E_INDEX_TENSOR,
                                    "the index places this tensor here, but the shard does not hold it; the index and "
                                    "shards disagree (re-download both)",
                                    headers[i].path, want);
        break;
      }
    }
  }
}

}  // namespace spark::safetensors
