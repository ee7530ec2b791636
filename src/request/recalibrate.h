// A plan's prediction again, with efficiency constants fitted to a trace: what `trace compare`
// says after its term-by-term table ("recalibrated with this trace, the prediction for this
// layout is ..."). The plan is rebuilt from its own JSON (`infralens plan --json`: the request,
// the layout and the constants it used) and checked: evaluated with the constants it states, it
// must give the step time it states, or the rebuild is refused with the difference named.
#ifndef INFRALENS_REQUEST_RECALIBRATE_H_
#define INFRALENS_REQUEST_RECALIBRATE_H_

#include <string>
#include <string_view>

#include "base/status.h"
#include "trace/compare.h"

namespace infralens::request {

struct Recalibrated {
  double step_time_s = 0;      // as the plan stated it
  double new_step_time_s = 0;  // with the calibrated constants over the plan's
  double mfu = 0, new_mfu = 0;
  std::string gpu, precision;
};

// `plan`: a plan prediction read by trace::ReadPrediction from what `infralens plan --json`
// writes (one layout, or a search's first). `efficiency_csv`: rows in data/hw/efficiency.csv's form
// (trace::CalibrationCsv); its rows replace the plan's constants for the same GPU.
// FailedPrecondition when the plan cannot be rebuilt (a model or cluster that is not a preset, a
// JSON from an older InfraLens, or a rebuilt step time that differs from the stated one);
// InvalidArgument for malformed input.
StatusOr<Recalibrated> RecalibratePlan(const trace::Prediction& plan,
                                       std::string_view efficiency_csv);

}  // namespace infralens::request

#endif  // INFRALENS_REQUEST_RECALIBRATE_H_
