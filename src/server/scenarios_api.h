// Lab 09 (interview scenarios) in the web API: /api/scenarios and /api/explain, the same engines
// and the same documents as `infralens scenarios` and `infralens explain`
// (request/engine_requests.h).
#ifndef INFRALENS_SERVER_SCENARIOS_API_H_
#define INFRALENS_SERVER_SCENARIOS_API_H_

#include "server/api.h"

namespace infralens::server {

void RegisterScenarioEndpoints(Api& api);

}  // namespace infralens::server

#endif  // INFRALENS_SERVER_SCENARIOS_API_H_
