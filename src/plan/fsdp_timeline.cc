#include "plan/fsdp_timeline.h"

#include <algorithm>
#include <cstddef>

namespace infralens::plan {

double FsdpExposedSeconds(const std::vector<FsdpUnit>& units, const FsdpPrefetch& prefetch) {
  const size_t n = units.size();
  std::vector<double> gather_end(n, 0.0);
  double links_free = 0, live = 0, compute_end = 0, compute_total = 0;
  size_t next_issue = 0, live_units = 0;
  // Budget only frees when a unit is released, so gathers are issued at the start and at each
  // compute end: DeepSpeed's next fetch_sub_module call follows the release at once.
  auto issue_at = [&](double t) {
    while (next_issue < n) {
      const FsdpUnit& u = units[next_issue];
      const bool fits = prefetch.max_live_params <= 0 || live_units == 0 ||
                        live + u.params <= prefetch.max_live_params;
      if (!fits) break;
      const double start = std::max(links_free, t);
      links_free = start + u.gather_s;
      gather_end[next_issue] = links_free;
      live += u.params;
      ++live_units;
      ++next_issue;
    }
  };
  issue_at(0);
  for (size_t i = 0; i < n; ++i) {
    // Unit i's gather is issued by now: every unit before it is released, so when it was not
    // yet issued at the last release nothing was live and it was.
    const double start = std::max(compute_end, gather_end[i]);
    compute_end = start + units[i].compute_s;
    compute_total += units[i].compute_s;
    live -= units[i].params;
    --live_units;
    if (units[i].reduce_s > 0) links_free = std::max(links_free, compute_end) + units[i].reduce_s;
    issue_at(compute_end);
  }
  return std::max(0.0, std::max(compute_end, links_free) - compute_total);
}

}  // namespace infralens::plan
