// Lab 12 (parallelism design) in the web API: /api/memory and /api/plan, the same engines and the
// same JSON as `infralens memory --json` and `infralens plan --json` (request/engine_requests.h).
// A plan search runs on one thread inside the request and stops at the server's time limit.
#ifndef INFRALENS_SERVER_DESIGN_API_H_
#define INFRALENS_SERVER_DESIGN_API_H_

#include "server/api.h"

namespace infralens::server {

void RegisterDesignEndpoints(Api& api);

}  // namespace infralens::server

#endif  // INFRALENS_SERVER_DESIGN_API_H_
