// The identity of a process ppdeploy started, and the only way ppdeploy signals one: every signal is
// preceded by a check that the pid still is that process (docs/safety.md).
//
// A pid alone names nothing for long: it is reused after the process exits, and a number read from a file
// can be anything (0, -1 and 1 make kill(2) signal a whole group or every process). What ppdeploy records at
// spawn, and compares before every signal:
//   - the pid and its start time: /proc/<pid>/stat field 22 ("starttime", clock ticks after boot; proc(5));
//   - the boot id: /proc/sys/kernel/random/boot_id, a random UUID per boot (random(4)), since a start time
//     counts from boot and repeats across reboots;
//   - the process group ppdeploy created: the spawn starts a new session, so the group id is the pid;
//   - a random run token put in the server's environment (PPDEPLOY_RUN_TOKEN), which every process it starts
//     inherits: once the server itself has exited, a group is signalled only when each member carries it
//     (/proc/<pid>/environ), since a group id can be taken again by an unrelated process once it is free.
// Linux; without /proc nothing can be verified and nothing is signalled.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/json_fields.h"

namespace ppdeploy::launch {

/// What identifies a process ppdeploy started, as recorded in the run state.
struct ProcessIdentity {
  int pid = 0;
  std::int64_t start_ticks = -1;  ///< /proc/<pid>/stat starttime; -1 unknown (an old run state)
  int pgid = 0;                   ///< the process group ppdeploy created (== pid); 0 unknown
  std::string boot_id;            ///< the boot the process was started in; "" unknown
  std::string run_token;          ///< PPDEPLOY_RUN_TOKEN in the server's environment; "" unknown
};

/// The environment variable that carries a server's run token to every process it starts.
inline constexpr const char* kRunTokenEnv = "PPDEPLOY_RUN_TOKEN";

/// A new random run token (128 bits, hex).
std::string NewRunToken();

/// True when /proc/<pid>/environ holds `name`=`value` (read up to 1 MiB); false when unreadable.
bool EnvironHas(int pid, const std::string& name, const std::string& value);

/// /proc/sys/kernel/random/boot_id without its newline; "" when unavailable.
std::string BootId();

/// The fields of /proc/<pid>/stat that identity needs.
struct ProcStat {
  int pid = 0;
  char state = '?';               ///< field 3: R, S, D, Z (zombie), X (dead), ...
  int pgrp = 0;                   ///< field 5
  int session = 0;                ///< field 6
  std::int64_t start_ticks = -1;  ///< field 22
  bool Live() const { return state != 'Z' && state != 'X'; }
};
/// nullopt when there is no such process (or no /proc, or a malformed line).
std::optional<ProcStat> ReadProcStat(int pid);

/// The identity of a process just spawned into a new session (pgid = pid) in this boot.
ProcessIdentity IdentityOfSpawned(int pid, std::string run_token = "");

/// True when a live (non-zombie) process belongs to process group `pgid` (a /proc scan). False for pgid <= 1.
bool ProcessGroupAlive(int pgid);

/// What may be signalled for a recorded identity, decided from /proc now.
struct SignalTarget {
  bool gone = false;          ///< neither the process nor its group lives: nothing to signal
  bool ours = false;          ///< verified: the group (and, when leader_alive, the pid) may be signalled
  bool leader_alive = false;  ///< the pid itself still runs (else only members of its group remain)
  std::string refused;  ///< !gone && !ours: why nothing may be signalled (a sentence ending "nothing was signalled")
};
/// The check made before every signal: pid > 1; the recorded start time, boot id and group present; the
/// group the one ppdeploy created (pgid == pid); the boot id this boot's; a live pid with the recorded start
/// time, still in that group; a group without its leader only when every member started after it and carries
/// the recorded run token.
SignalTarget CheckSignalTarget(const ProcessIdentity& id);

/// Sends `sig` to the verified group of `id` (kill(-pgid), pgid > 1) after CheckSignalTarget; returns the
/// check. Never signals anything when the check does not say `ours`.
SignalTarget SignalVerified(const ProcessIdentity& id, int sig);

/// A process id read from a JSON field: an integer in [min, INT_MAX] (2^32 + 1 is refused, never wrapped to
/// 1). Throws Error naming the field and the value.
int ReadPidField(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx, int min);
/// The same for an optional field (absent or null -> nullopt).
std::optional<int> OptPidField(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx, int min);

}  // namespace ppdeploy::launch
