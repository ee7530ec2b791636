// The one list of API endpoints. A lab adds its endpoints with one Register call in its own
// file (e.g. pipeline_api.cc), declared in endpoints.h, and one line here.
#include "server/endpoints.h"

#include "server/api.h"
#include "server/trace_api.h"

namespace infralens::server {

void RegisterAllEndpoints(Api& api) {
  RegisterPipelineEndpoints(api);  // lab 04: /api/schedule, /api/compare, /api/import
  RegisterTopologyEndpoints(api);  // lab 08: /api/presets, /api/topology, /api/comm, /api/comm-plan
  RegisterDesignEndpoints(
      api);  // lab 12: /api/memory, /api/plan, /api/worksheet[/check], /api/export
  RegisterScenarioEndpoints(api);   // lab 09: /api/scenarios, /api/explain
  RegisterTraceEndpoints(api);      // measurement: /api/trace/analyze, /api/trace/synth
  RegisterCalibrateEndpoints(api);  // measurement: /api/trace/calibrate[/sample]
}

}  // namespace infralens::server
