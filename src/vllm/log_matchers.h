// The matchers of the vLLM log kinds (the table in log_kinds.cc names them): one function per kind that reads
// its line and stores the figures through a LogKindContext, and the `accept` tests of the kinds that have one.
// Memory and pool figures are in log_kinds_memory.cc, the launch, engine and process facts in
// log_kinds_launch.cc. Internal to src/vllm.
#pragma once

#include <cstddef>
#include <string_view>

#include "vllm/log_kinds.h"

namespace ppdeploy::log_kinds {

// ---- memory and pool figures (log_kinds_memory.cc) ----
void AvailableKv(LogKindContext& ctx, std::string_view m, std::size_t a);
void KvTokens(LogKindContext& ctx, std::string_view m, std::size_t a);
void MaxConcurrencyLine(LogKindContext& ctx, std::string_view m, std::size_t a);
void ModelLoading(LogKindContext& ctx, std::string_view m, std::size_t a);
void V0Weights(LogKindContext& ctx, std::string_view m, std::size_t a);
void CgEstimate(LogKindContext& ctx, std::string_view m, std::size_t a);
void CgPool(LogKindContext& ctx, std::string_view m, std::size_t a);
void GraphCapture(LogKindContext& ctx, std::string_view m, std::size_t a);
bool AcceptKvOverride(std::string_view m, std::size_t a);
void KvOverride(LogKindContext& ctx, std::string_view m, std::size_t a);
void CgHint(LogKindContext& ctx, std::string_view m, std::size_t a);
void BlocksOverride(LogKindContext& ctx, std::string_view m, std::size_t a);
void NotEnoughKv(LogKindContext& ctx, std::string_view m, std::size_t a);
void MaxSeqLen(LogKindContext& ctx, std::string_view m, std::size_t a);
void NoMemory(LogKindContext& ctx, std::string_view m, std::size_t a);
void MemoryProfiling(LogKindContext& ctx, std::string_view m, std::size_t a);
void V0Budget(LogKindContext& ctx, std::string_view m, std::size_t a);
void V0Breakdown(LogKindContext& ctx, std::string_view m, std::size_t a);
void V0Results(LogKindContext& ctx, std::string_view m, std::size_t a);
bool AcceptV0Blocks(std::string_view m, std::size_t a);
void V0Blocks(LogKindContext& ctx, std::string_view m, std::size_t a);
void BlocksInfo(LogKindContext& ctx, std::string_view m, std::size_t a);
void UsageSummary(LogKindContext& ctx, std::string_view m, std::size_t a);
void CpMultiplier(LogKindContext& ctx, std::string_view m, std::size_t a);

// ---- launch, engine and process facts (log_kinds_launch.cc) ----
bool AcceptBlockSize(std::string_view m, std::size_t a);
void BlockSize(LogKindContext& ctx, std::string_view m, std::size_t a);
void Partition(LogKindContext& ctx, std::string_view m, std::size_t a);
void InitEngine(LogKindContext& ctx, std::string_view m, std::size_t a);
void LaunchArgsLine(LogKindContext& ctx, std::string_view m, std::size_t a);
bool AcceptEngineConfig(std::string_view m, std::size_t a);
void EngineConfig(LogKindContext& ctx, std::string_view m, std::size_t a);
bool AcceptVersion(std::string_view m, std::size_t a);
void ApiVersion(LogKindContext& ctx, std::string_view m, std::size_t a);
void VllmVersion(LogKindContext& ctx, std::string_view m, std::size_t a);
void ApiServerStart(LogKindContext& ctx, std::string_view m, std::size_t a);
void AppStartup(LogKindContext& ctx, std::string_view m, std::size_t a);
bool AcceptKvDtype(std::string_view m, std::size_t a);
void KvDtype(LogKindContext& ctx, std::string_view m, std::size_t a);
void DsaCustomFp8(LogKindContext& ctx, std::string_view m, std::size_t a);
void DsaStandardFp8(LogKindContext& ctx, std::string_view m, std::size_t a);
void DsaBf16(LogKindContext& ctx, std::string_view m, std::size_t a);
bool AcceptDsaGeneric(std::string_view m, std::size_t a);
void DsaGeneric(LogKindContext& ctx, std::string_view m, std::size_t a);
void Banner(LogKindContext& ctx, std::string_view m, std::size_t a);
bool AcceptRank(std::string_view m, std::size_t a);
void RankLine(LogKindContext& ctx, std::string_view m, std::size_t a);
void DistInit(LogKindContext& ctx, std::string_view m, std::size_t a);
void TracebackStart(LogKindContext& ctx, std::string_view m, std::size_t a);

}  // namespace ppdeploy::log_kinds
