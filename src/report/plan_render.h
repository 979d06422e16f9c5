// Renders a PlanReport (computed once) as text table, JSON (schema ppdeploy.plan/3, documented in
// docs/plan-json.md), Markdown or CSV. Numbers in every format come from the same value.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "layout/plan_report.h"
#include "report/table.h"

namespace ppdeploy {

nlohmann::json PlanToJson(const PlanReport& report);
nlohmann::json LayoutToJson(const LayoutPlan& layout);
void RenderPlan(const PlanReport& report, OutputFormat format, std::ostream& out);

/// The predicted pool with its range: "728,704 (range 721,000-736,000)" (the ends rounded
/// outwards to a thousand tokens), or just the value when every figure is measured or given.
std::string PoolWithRangeText(const LayoutPlan& l);

/// The layout's largest max_model_len (LayoutPlan::limit) as every surface prints it:
/// "728,704 (point estimate; 714,000 at the low end of the range; vLLM's per-worker check, binding PP rank 1)".
std::string LimitText(const LayoutPlan& l);

/// The GPUs of a deployment as headers name them: "8 x a100-80gb (79.25 GiB each)", or with one GPU
/// type per PP stage (stage_gpus) "8 GPUs, PP stages on h100-sxm (79.19 GiB), a100-80gb (79.25 GiB)";
/// without the memory when `with_memory` is false ("8 x a100-80gb", "8 x h100-sxm/a100-80gb").
std::string GpusText(const Deployment& d, bool with_memory = true);

/// "41,37", "78" - the split column.
std::string SplitText(const LayoutPlan& l);

}  // namespace ppdeploy
