#include "cli/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <mutex>

namespace ppdeploy::cli {
namespace {

std::atomic<bool> g_raised{false};
std::mutex g_mu;
int g_depth = 0;
struct sigaction g_previous {};

extern "C" void OnSigint(int) {
  if (g_raised.exchange(true)) _exit(130);  // the second Ctrl-C: do not wait for the cleanup
  static const char kMsg[] = "\nppdeploy: interrupted; writing what finished (Ctrl-C again to quit at once)\n";
  ssize_t ignored = write(STDERR_FILENO, kMsg, sizeof kMsg - 1);
  (void)ignored;
}

}  // namespace

InterruptGuard::InterruptGuard() {
  std::lock_guard lock(g_mu);
  if (g_depth++ > 0) return;
  g_raised.store(false);
  struct sigaction sa {};
  sa.sa_handler = OnSigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &g_previous);
}

InterruptGuard::~InterruptGuard() {
  std::lock_guard lock(g_mu);
  if (--g_depth > 0) return;
  sigaction(SIGINT, &g_previous, nullptr);
}

bool InterruptGuard::Raised() { return g_raised.load(); }

const std::atomic<bool>* InterruptGuard::Flag() { return &g_raised; }

}  // namespace ppdeploy::cli
