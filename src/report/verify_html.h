// `ppdeploy verify --format html` and `ppdeploy verdict --format html` (also `rebalance verdict`): one
// self-contained page each in the style of the bench page (report/html_page.h: inline CSS and SVG, no script,
// nothing from the network). Every figure comes from the VerifyResult / Verdict the JSON renders.
//
// Structure (tested in tests/report/verify_html_test.cc):
//   <svg class="chart memory-chart">: one <rect class="bar-used" data-gpu data-arm data-label data-used-mib
//        data-total-mib data-headroom-mib> per GPU per arm (nvidia-smi), drawn inside its GPU's total;
//   <svg class="chart pool-chart">: one <rect class="bar-pool" data-arm data-kind="predicted|measured"
//        data-tokens> per arm and kind;
//   <table class="verdict">: one <tr> per verdict row (verdict page), <table class="facts"> one row per fact,
//   <table class="steps"> the verify steps; <p class="judgement"> the new-arm judgement when given.
#pragma once

#include <optional>
#include <ostream>

#include "probes/verdict.h"
#include "probes/verify_result.h"

namespace ppdeploy {

/// One arm's page (UTF-8, `<!DOCTYPE html>`, well-formed XML after the doctype).
void RenderVerifyHtml(const probes::VerifyResult& result, std::ostream& out);

/// The A/B page: the verdict table, memory bars per GPU per arm, pools predicted and measured, each arm's facts
/// with their sources; `judgement` (rebalance) adds whether the new arm B is worse.
void RenderVerdictHtml(const probes::Verdict& verdict, const probes::VerifyResult& a, const probes::VerifyResult& b,
                       const std::optional<probes::NewArmJudgement>& judgement, std::ostream& out);

}  // namespace ppdeploy
