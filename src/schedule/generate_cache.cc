#include "schedule/generate_cache.h"

#include <list>
#include <mutex>
#include <tuple>
#include <utility>

namespace infralens::schedule {
namespace {

struct Key {
  ScheduleKind kind;
  int pp, vpp, microbatches;
  bool operator==(const Key&) const = default;
};

// A short list searched linearly: a search keeps a few dozen schedules at most, and a lookup is
// nothing beside generating or simulating one.
class Cache {
 public:
  std::shared_ptr<const Schedule> Find(const Key& key) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->first == key) {
        entries_.splice(entries_.begin(), entries_, it);  // most recently used first
        ++stats_.hits;
        return entries_.front().second;
      }
    }
    ++stats_.misses;
    return nullptr;
  }

  void Insert(const Key& key, std::shared_ptr<const Schedule> s) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& e : entries_) {
      if (e.first == key) return;  // another thread made it meanwhile
    }
    stats_.actions += s->num_actions();
    ++stats_.schedules;
    entries_.emplace_front(key, std::move(s));
    EvictLocked();
  }

  void SetLimit(int64_t actions) {
    std::lock_guard<std::mutex> lock(mu_);
    limit_ = actions;
    EvictLocked();
  }

  GenerateCacheStats Stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

 private:
  void EvictLocked() {
    while (stats_.actions > limit_ && entries_.size() > 1) {
      stats_.actions -= entries_.back().second->num_actions();
      --stats_.schedules;
      entries_.pop_back();
    }
  }

  std::mutex mu_;
  int64_t limit_ = kGenerateCacheActions;
  std::list<std::pair<Key, std::shared_ptr<const Schedule>>> entries_;
  GenerateCacheStats stats_;
};

Cache& TheCache() {
  static Cache* cache = new Cache;  // never destroyed: see the header
  return *cache;
}

}  // namespace

StatusOr<std::shared_ptr<const Schedule>> GenerateShared(ScheduleKind kind,
                                                         const ScheduleParams& params) {
  const int vpp = params.vpp == 0 ? Info(kind).default_vpp : params.vpp;
  const Key key{kind, params.pp, vpp, params.microbatches};
  if (auto hit = TheCache().Find(key)) return hit;
  ASSIGN_OR_RETURN(Schedule s, Generate(kind, params));
  auto shared = std::make_shared<const Schedule>(std::move(s));
  TheCache().Insert(key, shared);
  return shared;
}

GenerateCacheStats GenerateCacheStatsNow() { return TheCache().Stats(); }

void SetGenerateCacheLimit(int64_t actions) { TheCache().SetLimit(actions); }

}  // namespace infralens::schedule
