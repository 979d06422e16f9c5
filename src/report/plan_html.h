// Pictures of a plan (issue 7): `ppdeploy plan --format html` (one self-contained page: inline
// SVG and CSS, no script, nothing from the network) and `--format svg` (one chart). Every
// number comes from the PlanReport that the JSON output renders, formatted by the same helpers
// (GiB = 2^30 bytes, 2 decimals). Charts are drawn with report/svg.h. Pure: builds text.
//
// Chart structure (tested in tests/report/plan_html_test.cc, relied on by nothing else):
//   memory bars  <svg class="memory-chart">, one <g class="stage" data-pp-rank data-gib
//                data-binding> per PP stage with <rect class="seg seg-<kind>" data-bytes data-gib>,
//                <line class="budget-line" data-gib data-bytes>
//   optimiser    <svg class="optimizer-chart">, one <g class="candidate" data-split
//                data-kv-tokens data-default data-optimum data-forced> per candidate split
//   layer map    <svg class="layer-map">, one <g class="layer-strip" data-split> per layout with
//                <rect class="cell" data-layer data-pp-rank data-full data-forced> per backbone
//                layer and <rect class="cell mtp"> for the MTP layer
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "layout/plan_report.h"
#include "report/table.h"

namespace ppdeploy {

/// Per-rank stacked memory bars of `layout` (one bar per PP stage: weights, non-torch,
/// activation + CUDA-graph estimate, KV allocated, idle KV, CUDA graph pool + context, free to the
/// nvidia-smi total) against the budget line ceil(total x gpu_memory_utilization).
/// `id_prefix` makes the chart's ids unique in a page.
std::string MemoryBarsSvg(const Deployment& d, const LayoutPlan& layout, const std::string& id_prefix);

/// KV tokens of each candidate split of `result` (OptimizeResult::table), default and optimum
/// marked, forced layers annotated.
std::string OptimizerSvg(const OptimizeResult& result, const std::string& id_prefix);

/// Layer map of `layouts`: one strip of num_hidden_layers cells + the MTP cell per layout,
/// coloured by stage; self-computing (LayerIsFull) and fix-B forced layers marked.
std::string LayerMapSvg(const Deployment& d, const std::vector<const LayoutPlan*>& layouts,
                        const std::string& id_prefix);

/// The layouts drawn in detail: PlanReport::detailed, or the best layout when none is detailed
/// (the text output's rule). Empty when neither exists.
std::vector<const LayoutPlan*> DetailedOrBest(const PlanReport& report);

/// The whole page (UTF-8, `<!DOCTYPE html>`, well-formed XML after the doctype).
void RenderPlanHtml(const PlanReport& report, std::ostream& out);

/// The memory bars of the first detailed layout (or the best). Throws Error when the report has
/// no layout to draw.
void RenderPlanSvg(const PlanReport& report, std::ostream& out);

// Shared with the text/Markdown renderers; defined in report/plan_render.cc so that every format
// prints the same strings.

/// "75.29": bytes as GiB with 2 decimals (the plan's GiB format).
std::string PlanGiBText(std::int64_t bytes);
/// The "Layouts" summary table of the text output.
Table PlanSummaryTable(const PlanReport& report);
/// The per-rank table of a detailed layout in the text output.
Table PlanRankTable(const LayoutPlan& layout);
/// "TP4 PP2 split 41,37 (given)": the heading of a detailed layout.
std::string PlanLayoutTitle(const LayoutPlan& layout);

}  // namespace ppdeploy
