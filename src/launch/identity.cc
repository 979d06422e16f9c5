#include "launch/identity.h"

#include <dirent.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <climits>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>

#include "core/error.h"

namespace ppdeploy::launch {
namespace {

template <typename T>
bool ParseDecimal(const std::string& text, T& out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

// The pids of every process in /proc (empty without /proc).
std::vector<int> ProcPids() {
  std::vector<int> pids;
  DIR* dir = opendir("/proc");
  if (!dir) return pids;
  while (dirent* e = readdir(dir)) {
    int pid = 0;
    if (ParseDecimal(std::string(e->d_name), pid) && pid > 0) pids.push_back(pid);
  }
  closedir(dir);
  return pids;
}

// The live members of group `pgid`.
std::vector<ProcStat> GroupMembers(int pgid) {
  std::vector<ProcStat> members;
  for (int pid : ProcPids())
    if (auto st = ReadProcStat(pid); st && st->pgrp == pgid && st->Live()) members.push_back(*st);
  return members;
}

std::string Refusal(const ProcessIdentity& id, const std::string& why) {
  return fmt::format("pid {} is no longer the server ppdeploy started ({}); nothing was signalled", id.pid, why);
}

// The recorded identity is complete and names a group ppdeploy created in this boot ("" when so).
std::string RecordProblem(const ProcessIdentity& id) {
  std::vector<std::string> missing;
  if (id.start_ticks < 0) missing.push_back("start time");
  if (id.pgid <= 0) missing.push_back("process group");
  if (id.boot_id.empty()) missing.push_back("boot id");
  if (!missing.empty())
    return fmt::format(
        "the run state does not record pid {}'s {} (an older ppdeploy wrote it), so it cannot be told from "
        "another process with that pid; nothing was signalled (stop it by hand if it is the server)",
        id.pid, fmt::join(missing, ", "));
  if (id.pgid != id.pid)
    return fmt::format(
        "process group {} is not one ppdeploy created (its server's group is its pid, {}); nothing "
        "was signalled",
        id.pgid, id.pid);
  if (id.boot_id != BootId()) return Refusal(id, "boot id differs: the machine rebooted since");
  return "";
}

}  // namespace

std::string BootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (!in || !std::getline(in, id)) return "";
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

std::optional<ProcStat> ReadProcStat(int pid) {
  if (pid <= 0) return std::nullopt;
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  if (!in) return std::nullopt;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The command name (field 2) is in parentheses and may hold anything: the fields start after the last ')'.
  const auto close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(text.substr(close + 1));
  std::vector<std::string> f;
  for (std::string w; rest >> w;) f.push_back(w);
  ProcStat st;  // f[0] = field 3
  st.pid = pid;
  if (f.size() < 20 || f[0].size() != 1) return std::nullopt;
  st.state = f[0][0];
  if (!ParseDecimal(f[2], st.pgrp) || !ParseDecimal(f[3], st.session) || !ParseDecimal(f[19], st.start_ticks))
    return std::nullopt;
  return st;
}

std::string NewRunToken() {
  std::random_device rd;
  std::string token;
  for (int i = 0; i < 4; ++i) token += fmt::format("{:08x}", static_cast<std::uint32_t>(rd()));
  return token;
}

namespace {

enum class EnvironMatch { kHas, kLacks, kEmpty };

// kEmpty: unreadable or no entry at all (a process exiting, or inside execve before the kernel has laid out the
// new image's environment).
EnvironMatch MatchEnviron(int pid, const std::string& name, const std::string& value) {
  if (pid <= 0) return EnvironMatch::kEmpty;
  std::ifstream in(fmt::format("/proc/{}/environ", pid), std::ios::binary);
  if (!in) return EnvironMatch::kEmpty;
  const std::string want = name + "=" + value;
  std::string entry;
  std::size_t read = 0;
  while (read < (1u << 20) && std::getline(in, entry, '\0')) {
    read += entry.size() + 1;
    if (entry == want) return EnvironMatch::kHas;
  }
  return read == 0 ? EnvironMatch::kEmpty : EnvironMatch::kLacks;
}

// True when `m` is still a live member of its group and does not carry the token. An empty environment is read
// again (up to about half a second) until the process shows one or leaves the group: a worker the server is
// starting at that moment must not make stop refuse.
bool MemberLacksToken(const ProcStat& m, const std::string& token) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    const EnvironMatch match = MatchEnviron(m.pid, kRunTokenEnv, token);
    if (match != EnvironMatch::kEmpty) return match == EnvironMatch::kLacks;
    const auto now = ReadProcStat(m.pid);
    if (!now || !now->Live() || now->start_ticks != m.start_ticks || now->pgrp != m.pgrp) return false;
    usleep(10'000);
  }
  return true;
}

}  // namespace

bool EnvironHas(int pid, const std::string& name, const std::string& value) {
  return MatchEnviron(pid, name, value) == EnvironMatch::kHas;
}

ProcessIdentity IdentityOfSpawned(int pid, std::string run_token) {
  ProcessIdentity id;
  id.pid = pid;
  id.run_token = std::move(run_token);
  id.pgid = pid;  // a new session: its own process group
  id.boot_id = BootId();
  if (auto st = ReadProcStat(pid)) id.start_ticks = st->start_ticks;
  return id;
}

bool ProcessGroupAlive(int pgid) { return pgid > 1 && !GroupMembers(pgid).empty(); }

SignalTarget CheckSignalTarget(const ProcessIdentity& id) {
  SignalTarget t;
  if (id.pid <= 1) {
    t.refused = fmt::format(
        "pid {} is not a process ppdeploy may signal (a pid <= 1 names a whole group or every "
        "process); nothing was signalled",
        id.pid);
    return t;
  }
  const auto leader = ReadProcStat(id.pid);
  const bool leader_live = leader && leader->Live();
  if (!leader_live && !ProcessGroupAlive(id.pid) && !ProcessGroupAlive(id.pgid)) {
    t.gone = true;
    return t;
  }
  if (t.refused = RecordProblem(id); !t.refused.empty()) return t;
  if (leader_live) {
    if (leader->start_ticks != id.start_ticks)
      t.refused = Refusal(id, "start time differs");
    else if (leader->pgrp != id.pgid)
      t.refused = Refusal(id, fmt::format("it left process group {}", id.pgid));
    t.ours = t.refused.empty();
    t.leader_alive = t.ours;
    return t;
  }
  // The leader exited, its group lives on (the server's workers). The group id cannot be reused while the
  // group has members, but it can once the group emptied: an unrelated daemon may hold it now. Every process
  // the server started inherited its run token and started after it.
  if (id.run_token.empty()) {
    t.refused = Refusal(id, fmt::format("it exited; process group {} lives on, and the run state records no run "
                                        "token to tell the server's processes from others",
                                        id.pgid));
    return t;
  }
  for (const ProcStat& m : GroupMembers(id.pgid))
    if (m.start_ticks < id.start_ticks) {
      t.refused = Refusal(id, fmt::format("process group {} holds a process older than the server", id.pgid));
      return t;
    } else if (MemberLacksToken(m, id.run_token)) {
      t.refused = Refusal(
          id, fmt::format("it exited; process group {} holds pid {}, which does not carry the server's run token",
                          id.pgid, m.pid));
      return t;
    }
  t.ours = true;
  return t;
}

SignalTarget SignalVerified(const ProcessIdentity& id, int sig) {
  SignalTarget t = CheckSignalTarget(id);
  if (t.ours && id.pgid > 1) kill(-id.pgid, sig);
  return t;
}

std::optional<int> OptPidField(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx, int min) {
  const auto v = OptInt(obj, key, ctx, min);
  if (!v) return std::nullopt;
  if (*v > INT_MAX) Fail("{}: value {} is out of range (a process id is {} to {})", ctx.Where(key), *v, min, INT_MAX);
  return static_cast<int>(*v);
}

int ReadPidField(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx, int min) {
  ReqInt(obj, key, ctx, min);  // missing or below min: its error
  return *OptPidField(obj, key, ctx, min);
}

}  // namespace ppdeploy::launch
