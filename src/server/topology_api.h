// Lab 08 (topology and communication) in the web API: /api/presets, /api/topology, /api/comm and
// /api/comm-plan, the same engines and the same JSON as `infralens presets --json`,
// `topology --json`, `comm --json` and `comm-plan --json` (request/engine_requests.h).
#ifndef INFRALENS_SERVER_TOPOLOGY_API_H_
#define INFRALENS_SERVER_TOPOLOGY_API_H_

#include "server/api.h"

namespace infralens::server {

void RegisterTopologyEndpoints(Api& api);

}  // namespace infralens::server

#endif  // INFRALENS_SERVER_TOPOLOGY_API_H_
