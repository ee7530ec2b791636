// The registration of each lab's endpoints in the web API (one function a lab, defined in its own
// file), called in one list by RegisterAllEndpoints (server/endpoints.cc). Each answers with the
// same engines and the same JSON as the CLI command it names (request/engine_requests.h).
#ifndef INFRALENS_SERVER_ENDPOINTS_H_
#define INFRALENS_SERVER_ENDPOINTS_H_

#include "server/api.h"

namespace infralens::server {

// Lab 04 (pipeline schedules), pipeline_api.cc: /api/schedule, /api/compare and /api/import, as
// `infralens schedule --json` and `infralens compare --json`.
void RegisterPipelineEndpoints(Api& api);

// Lab 08 (topology and communication), topology_api.cc: /api/presets, /api/topology, /api/comm
// and /api/comm-plan, as `infralens presets --json`, `topology --json`, `comm --json` and
// `comm-plan --json`.
void RegisterTopologyEndpoints(Api& api);

// Lab 12 (parallelism design), design_api.cc: /api/memory and /api/plan, as
// `infralens memory --json` and `infralens plan --json`. A plan search runs on one thread inside
// the request and stops at the server's time limit.
void RegisterDesignEndpoints(Api& api);

// Lab 09 (interview scenarios), scenarios_api.cc: /api/scenarios and /api/explain, the same
// documents as `infralens scenarios` and `infralens explain`.
void RegisterScenarioEndpoints(Api& api);

}  // namespace infralens::server

#endif  // INFRALENS_SERVER_ENDPOINTS_H_
