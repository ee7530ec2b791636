// Test helpers (header-only, used by *_test.cc): a built-in cluster preset with a node count.
#ifndef INFRALENS_CLUSTER_TESTING_H_
#define INFRALENS_CLUSTER_TESTING_H_

#include <gtest/gtest.h>

#include "cluster/cluster.h"

namespace infralens::cluster::testing {

// The preset `name` (which must exist) with `nodes` nodes.
inline Cluster Preset(const char* name, int nodes = 1) {
  auto c = FindClusterPreset(name);
  EXPECT_TRUE(c.ok()) << c.status().message();
  Cluster out = *c;
  out.num_nodes = nodes;
  return out;
}

}  // namespace infralens::cluster::testing

#endif  // INFRALENS_CLUSTER_TESTING_H_
