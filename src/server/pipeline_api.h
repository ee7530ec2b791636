// Lab 04 (pipeline schedules) in the web API: /api/schedule, /api/compare and /api/import, the
// same engine and the same JSON as `infralens schedule --json` and `infralens compare --json`.
#ifndef INFRALENS_SERVER_PIPELINE_API_H_
#define INFRALENS_SERVER_PIPELINE_API_H_

#include "server/api.h"

namespace infralens::server {

void RegisterPipelineEndpoints(Api& api);

}  // namespace infralens::server

#endif  // INFRALENS_SERVER_PIPELINE_API_H_
