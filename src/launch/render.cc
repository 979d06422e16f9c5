#include "launch/render.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace ppdeploy::launch {
namespace {

bool IsShellName(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

void Add(std::vector<std::string>& v, std::initializer_list<std::string> items) { v.insert(v.end(), items); }

/// docker run options shared by every container of the launch.
std::vector<std::string> DockerRunPrefix(const DeploymentRequest& p, bool host_network, bool detached,
                                         const std::vector<EnvVar>& env) {
  std::vector<std::string> a{p.docker_bin, "run"};
  if (detached) a.push_back("-d");
  Add(a, {"--rm", "--name", p.container_name});
  if (p.gpus == "all")
    Add(a, {"--gpus", "all"});
  else
    Add(a, {"--gpus", fmt::format("\"device={}\"", p.gpus)});
  a.push_back("--ipc=host");
  if (!p.shm_size.empty()) Add(a, {"--shm-size", p.shm_size});
  if (host_network)
    a.push_back("--network=host");
  else
    Add(a, {"-p", fmt::format("{}:{}", p.port, p.port)});
  for (const auto& v : p.volumes) Add(a, {"-v", v});
  for (const auto& e : env) Add(a, {"-e", e.name + "=" + e.value});
  return a;
}

/// The settings' own `vllm serve` flags (the table's serve column), in its serve order:
/// `--flag VALUE` (a boolean: `--flag`) always, or when the value is not vLLM's default.
void AddSettingFlags(std::vector<std::string>& a, const DeploymentRequest& p) {
  std::vector<const SettingSpec*> rows;
  for (const auto& s : SettingSpecs())
    if (!s.serve.flag.empty() && s.serve.when != ServeWhen::kDecided) rows.push_back(&s);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const SettingSpec* x, const SettingSpec* y) { return x->serve.order < y->serve.order; });
  for (const SettingSpec* s : rows) {
    const SettingValue& v = p.Setting(s->key);
    if (s->serve.when == ServeWhen::kNotDefault && IsVllmDefault(v)) continue;
    if (s->type != SettingType::kBool)
      Add(a, {std::string(s->serve.flag), CanonicalValue(v)});
    else if (CanonicalValue(v) == "1")
      a.emplace_back(s->serve.flag);
  }
}

}  // namespace

std::vector<std::string> ServeArgs(const ResolvedDeployment& d, const std::string& hf_overrides) {
  const DeploymentRequest& p = d.request;
  const VllmProfile& v = d.planner.vllm;
  std::vector<std::string> a{"serve", p.model_path};
  AddSettingFlags(a, p);
  if (d.disable_custom_all_reduce) a.emplace_back(ServeFlagOf("disable_custom_all_reduce"));
  if (d.spec_method == "mtp" || d.spec_method == "ngram") {
    if (v.speculative_config_json) {
      nlohmann::json spec = {{"method", d.spec_method}, {"num_speculative_tokens", d.num_spec_tokens}};
      Add(a, {std::string(ServeFlagOf("spec_method")), spec.dump()});
    } else if (d.spec_method == "mtp") {
      Add(a, {"--num-speculative-tokens", std::to_string(d.num_spec_tokens)});
    } else {
      Add(a, {"--speculative-model", "[ngram]", "--num-speculative-tokens", std::to_string(d.num_spec_tokens),
              "--ngram-prompt-lookup-max", "4"});
    }
  }
  if (!hf_overrides.empty()) Add(a, {std::string(ServeFlagOf("hf_overrides")), hf_overrides});
  a.insert(a.end(), p.extra_vllm_args.begin(), p.extra_vllm_args.end());
  return a;
}

namespace {

/// The vLLM variables the settings table names (vllm_env), as the resolver decided them.
std::vector<EnvVar> InjectedEnv(const ResolvedDeployment& d) {
  const DeploymentRequest& p = d.request;
  std::vector<EnvVar> env;
  auto inject = [&](std::string_view key, std::string value) {
    env.push_back({std::string(VllmEnvOf(key)), std::move(value)});
  };
  if (d.pass_partition_env) inject("pp_layer_partition", p.pp_layer_partition);
  if (d.v2_runner_env) inject("force_v2_runner", std::to_string(*d.v2_runner_env));
  // The engine where the release ships both (V0 and V1, 0.7-0.10) and VLLM_MLA_DISABLE.
  if (!p.engine.empty() && d.planner.vllm.engines.size() > 1)
    inject("engine", d.planner.engine == Engine::kV1 ? "1" : "0");
  if (p.mla_disable) inject("mla_disable", "1");
  for (const auto& e : env)
    if (!IsShellName(e.name)) Fail("environment variable name '{}' is not a shell identifier", e.name);
  return env;
}

/// What every step of one launch shares.
struct LaunchParts {
  const DeploymentRequest& p;
  bool docker = false;
  std::vector<EnvVar> injected;    ///< the vLLM variables
  std::vector<EnvVar> bare_env;    ///< a bare step's process environment: the GPUs, then the vLLM variables
  std::vector<std::string> serve;  ///< ServeArgs

  /// A node's environment: the GPUs (bare), the vLLM variables, the interfaces NCCL and Gloo use
  /// between nodes, and the node's own address when its name is one (vLLM's VLLM_HOST_IP). A
  /// remote shell forwards no environment, so each step carries all of it.
  std::vector<EnvVar> NodeEnv(const std::string& host) const {
    std::vector<EnvVar> env = docker ? injected : bare_env;
    if (!p.nccl_socket_ifname.empty()) env.push_back({"NCCL_SOCKET_IFNAME", p.nccl_socket_ifname});
    if (!p.gloo_socket_ifname.empty()) env.push_back({"GLOO_SOCKET_IFNAME", p.gloo_socket_ifname});
    if (IsIpLiteral(host)) env.push_back({"VLLM_HOST_IP", host});
    return env;
  }

  /// `vllm serve ...`: in its own container (docker run ... --entrypoint vllm IMAGE) or the executable.
  std::vector<std::string> VllmServe(bool host_network, const std::vector<EnvVar>& env) const {
    std::vector<std::string> argv;
    if (docker) {
      argv = DockerRunPrefix(p, host_network, false, env);
      Add(argv, {"--entrypoint", "vllm", p.image});
    } else {
      argv.push_back(p.vllm_bin);
    }
    argv.insert(argv.end(), serve.begin(), serve.end());
    return argv;
  }
};

/// vLLM's native multi-node mode: the headless workers first, then the head (rank 0, the API).
void AddNativeSteps(const LaunchParts& c, const std::vector<std::string>& hosts, RenderedLaunch& out) {
  const int n = static_cast<int>(hosts.size());
  for (int i = 1; i <= n; ++i) {
    const int r = i % n;
    const std::string& host = hosts[static_cast<size_t>(r)];
    RenderedStep step{host, r == 0 ? "serve" : "serve-headless", {}, c.NodeEnv(host)};
    step.argv = c.VllmServe(true, step.env);
    Add(step.argv, {"--nnodes", std::to_string(n), "--node-rank", std::to_string(r), "--master-addr", hosts.front(),
                    "--master-port", std::to_string(c.p.master_port)});
    if (r > 0) step.argv.push_back("--headless");
    out.steps.push_back(std::move(step));
  }
}

/// Ray: the head, the workers (each blocks, so its process lives as long as the node's Ray), then
/// `vllm serve --distributed-executor-backend ray` on the head once Ray sees every node's GPUs.
void AddRaySteps(const LaunchParts& c, const std::vector<std::string>& hosts, RenderedLaunch& out) {
  const DeploymentRequest& p = c.p;
  const std::string& head = hosts.front();
  const std::string ray_port = std::to_string(p.ray_port);
  for (size_t r = 0; r < hosts.size(); ++r) {
    const std::string& host = hosts[r];
    RenderedStep step{host, r == 0 ? "ray-head" : "ray-worker", {}, c.NodeEnv(host)};
    if (c.docker) {
      step.argv = DockerRunPrefix(p, true, false, step.env);
      Add(step.argv, {"--entrypoint", p.ray_bin, p.image, "start"});
    } else {
      Add(step.argv, {p.ray_bin, "start"});
    }
    if (r == 0)
      Add(step.argv, {"--head", "--port", ray_port});
    else
      Add(step.argv, {"--address", head + ":" + ray_port});
    if (IsIpLiteral(host)) Add(step.argv, {"--node-ip-address", host});
    step.argv.push_back("--block");
    out.steps.push_back(std::move(step));
  }
  RenderedStep step{head, "serve", {}, c.NodeEnv(head)};
  if (c.docker) {
    step.argv = {p.docker_bin, "exec"};
    for (const auto& e : step.env) Add(step.argv, {"-e", e.name + "=" + e.value});
    Add(step.argv, {p.container_name, "vllm"});
  } else {
    step.argv.push_back(p.vllm_bin);
  }
  step.argv.insert(step.argv.end(), c.serve.begin(), c.serve.end());
  Add(step.argv, {"--distributed-executor-backend", "ray"});
  out.steps.push_back(std::move(step));
}

}  // namespace

RenderedLaunch RenderLaunch(const ResolvedDeployment& d, const GateReport& gates) {
  const DeploymentRequest& p = d.request;
  RenderedLaunch out;
  LaunchParts c{p, p.runtime == "docker", InjectedEnv(d), {}, ServeArgs(d, gates.hf_overrides)};
  out.injected_env = c.injected;
  if (!c.docker && p.gpus != "all") c.bare_env.push_back({"CUDA_VISIBLE_DEVICES", p.gpus});
  c.bare_env.insert(c.bare_env.end(), c.injected.begin(), c.injected.end());
  const int nodes_needed = p.num_nodes;
  if (nodes_needed <= 1) {
    out.executor = "mp";
    RenderedStep step{"local", "serve", {}, c.docker ? c.injected : c.bare_env};
    step.argv = c.VllmServe(false, c.injected);
    out.steps.push_back(std::move(step));
    return out;
  }

  out.multi_node = true;
  out.executor = d.executor;
  std::vector<std::string> hosts = p.nodes;
  if (hosts.empty()) {
    hosts.push_back("HEAD_HOST");
    for (int i = 1; i < nodes_needed; ++i) hosts.push_back(fmt::format("WORKER{}_HOST", i));
    out.notices.push_back(fmt::format("NODES gives no host names: {} nodes of {} GPUs; host names are placeholders",
                                      nodes_needed, p.GpusUsedPerNode()));
  }
  if (!std::all_of(hosts.begin(), hosts.end(), [](const std::string& h) { return IsIpLiteral(h); }))
    out.notices.push_back(
        "VLLM_HOST_IP is set only on nodes named by an IP address; on the others vLLM and Ray find the node's address "
        "themselves (NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME choose the interface)");
  if (d.executor == "native")
    AddNativeSteps(c, hosts, out);
  else
    AddRaySteps(c, hosts, out);
  return out;
}

bool IsIpLiteral(std::string_view host) {
  std::string h(host);
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  in6_addr buf{};
  return inet_pton(AF_INET, h.c_str(), &buf) == 1 || inet_pton(AF_INET6, h.c_str(), &buf) == 1;
}

std::string ShellQuote(std::string_view word) {
  if (word.empty()) return "''";
  bool safe = true;
  for (char c : word) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) ||
          std::string_view("_@%+=:,./-").find(c) != std::string_view::npos)) {
      safe = false;
      break;
    }
  }
  if (safe) return std::string(word);
  std::string out = "'";
  for (char c : word) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  out += "'";
  return out;
}

std::string ShellJoin(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    out += ShellQuote(a);
  }
  return out;
}

std::string PreviewStep(const RenderedStep& step, bool bare, bool multiline) {
  std::string out;
  if (bare) {
    for (const auto& e : step.env) {
      out += e.name + "=" + ShellQuote(e.value);
      out += multiline ? " \\\n" : " ";
    }
  }
  for (size_t i = 0; i < step.argv.size(); ++i) {
    const std::string& a = step.argv[i];
    if (i > 0) out += (multiline && !a.empty() && a[0] == '-') ? " \\\n    " : " ";
    out += ShellQuote(a);
  }
  return out;
}

}  // namespace ppdeploy::launch
