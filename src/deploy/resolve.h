// The one resolver: a DeploymentRequest plus what was read for it (model, checkpoint headers,
// calibration) becomes the resolved deployment that plan, cmd, start, wait, verify, calibrate
// and rebalance all read. Every "auto" is decided here and nowhere else: the speculation method,
// the V2 model runner pin, --disable-custom-all-reduce, the layer split, the vLLM version row,
// whether the calibration applies. Pure: no I/O.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "deploy/check.h"
#include "deploy/request.h"
#include "layout/planner.h"
#include "model/safetensors.h"
#include "vllm/profile.h"

namespace ppdeploy {

/// What the adapters read for a request (io/deployment_inputs.h LoadDeploymentInputs).
struct DeploymentInputs {
  std::string model_name;                  ///< preset name or the path given
  ModelConfig model;                       ///< with hf_overrides applied
  WeightTable weights;                     ///< from checkpoint headers when there are any, else estimated
  nlohmann::json measured;                 ///< a preset's measured figures (null otherwise)
  std::string checkpoint_dir;              ///< the local checkpoint directory read ("" = none)
  std::vector<TensorInfo> tensors;         ///< its tensors (headers only)
  std::optional<Calibration> calibration;  ///< the calibration file named by the request, parsed
  std::vector<std::string> notes;          ///< what the loader decided (which model source, overrides applied)
};

/// The resolved deployment.
struct ResolvedDeployment {
  DeploymentRequest request;
  VersionMatch version;              ///< the row of data/vllm/versions.json
  Deployment planner;                ///< the planner's input (model, GPU, vLLM row, KV, spec, calibration)
  LayoutSpec layout;                 ///< tp, pp, dp and the split (empty partition: vLLM's default split)
  bool layout_explicit = false;      ///< tp/pp/partition were set (not vLLM's defaults)
  std::vector<int> partition;        ///< the split in effect (vLLM's default when none is given)
  bool pass_partition_env = false;   ///< inject VLLM_PP_LAYER_PARTITION
  std::string spec_method;           ///< effective: "mtp", "ngram" or "none"
  int num_spec_tokens = 0;           ///< effective k (0 when spec_method is none)
  std::optional<int> v2_runner_env;  ///< VLLM_USE_V2_MODEL_RUNNER to inject
  bool disable_custom_all_reduce = false;
  /// How the engine's processes are started: "mp" (one node), "ray" (a Ray cluster, then `vllm serve
  /// --distributed-executor-backend ray` on the head) or "native" (vLLM's --nnodes/--node-rank mode).
  /// executor auto = native where the version row has native_multinode, else ray.
  std::string executor = "mp";
  /// The decisions, as checks (shown by `cmd` among the gates): layer-partition, v2-runner,
  /// speculation, custom-all-reduce.
  CheckResult partition_check, v2_runner_check, speculation_check, all_reduce_check;
  std::vector<std::string> notes;              ///< version row used, calibration used or dropped, overrides applied
  std::string checkpoint_dir;                  ///< the local checkpoint read ("" = none)
  std::vector<TensorInfo> checkpoint_tensors;  ///< its tensor headers (the index_topk_pattern check)

  bool PartitionValid() const { return !partition_check.Failed(); }
};

/// Resolves `request` with `inputs`. Throws Error for what no front-end can go on with: an
/// unknown vLLM version (the message lists the rows), an unknown GPU or KV-cache dtype, an
/// impossible DCP size. A bad layer split or a refused speculation is a failed check instead,
/// so `cmd` can still show the command; `plan` turns it into an error.
ResolvedDeployment ResolveDeployment(const DeploymentRequest& request, const DeploymentInputs& inputs);

/// The speculation decision for a layout with `pp_size` stages: SPEC_METHOD auto -> mtp when the
/// model has MTP layers and the version runs PP + speculation (else none, with a notice); an
/// explicit mtp with PP > 1 on such a version fails, as does mtp on a model without MTP layers,
/// and ngram under the V2 runner (`v2_runner_on`) when the version does not support it.
struct SpeculationDecision {
  CheckResult check;
  std::string method;  ///< "mtp", "ngram" or "none"
};
SpeculationDecision DecideSpeculation(std::string_view requested, int pp_size, int mtp_layers, bool v2_runner_on,
                                      const VllmProfile& vllm);

/// FORCE_V2_RUNNER "" (vLLM's default) passes nothing; "auto" (the default deployment's) pins the V2 runner
/// (VLLM_USE_V2_MODEL_RUNNER=1) at PP > 1: V2 silently falls back to V1 for unsupported methods, and V1's PP +
/// speculation is the broken path; "0"/"1" are passed as given. "1" on a version without the V2 runner fails.
struct RunnerDecision {
  CheckResult check;
  std::optional<int> v2_env;
};
RunnerDecision DecideV2Runner(std::string_view force_v2_runner, int pp_size, const VllmProfile& vllm);

/// TP = 2 (including TP2/PP4) needs --disable-custom-all-reduce: otherwise CUDA-graph profiling
/// crashes in custom_all_reduce ('invalid argument', docs/seed.md §8). Added with a notice.
struct AllReduceDecision {
  CheckResult check;
  bool disable_custom_all_reduce = false;
};
AllReduceDecision DecideCustomAllReduce(int tp_size, bool disable_custom_all_reduce, const VllmProfile& vllm);

/// The layer-split check (seed check_pp_layer_partition; vLLM get_pp_indices): segment count ==
/// pp_size, sum == num_hidden_layers, non-negative entries, with vLLM's texts plus the failing
/// field; pp_size <= 1 with a split only warns (vLLM ignores it) and the variable is not passed.
struct PartitionDecision {
  CheckResult check;
  std::vector<int> partition;         ///< effective layers per stage (vLLM's default split when text is "")
  bool pass_env = false;              ///< inject VLLM_PP_LAYER_PARTITION
  std::vector<std::string> warnings;  ///< said by every subcommand (a 0-layer stage)
};
/// `origin` names where the text came from in messages ("env PP_LAYER_PARTITION", "flag --partition").
/// `vllm` picks the version's default split (nullptr: the current rule, #13839).
PartitionDecision DecidePartition(std::string_view text, int pp_size, int num_hidden_layers,
                                  std::string_view origin = "PP_LAYER_PARTITION", const VllmProfile* vllm = nullptr);

/// The speculation `request` gets in a layout with `pp_size` stages of deployment `d`: DecideSpeculation
/// with the model's MTP layers and the V2 runner that layout runs (memory/deployment.h UsesV2ModelRunner).
SpeculationDecision SpeculationFor(const DeploymentRequest& request, const Deployment& d, int pp_size);

/// The planner's deployment for a layout of the request (the resolved layout itself, plan's
/// every-layout table, the split optimiser, the PP gate's alternatives): speculation decided for its
/// PP size (SpeculationFor: "auto" downgrades where the version lacks PP + speculation; an explicit
/// method stays, so the plan shows the version's refusal) and the MTP draft tokens the planner models
/// set from it. The one place the per-layout deployment is derived; `speculation` (optional) receives
/// the decision.
Deployment DeploymentFor(const ResolvedDeployment& d, const LayoutSpec& layout,
                         SpeculationDecision* speculation = nullptr);

/// Whether calibration `c` was taken on this deployment's model, GPU and vLLM row.
bool CalibrationMatches(const Calibration& c, const Deployment& d, std::string* why_not);

}  // namespace ppdeploy
