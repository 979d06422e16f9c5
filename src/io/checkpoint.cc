#include "io/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"
#include "core/escape.h"
#include "core/json_fields.h"
#include "io/files.h"

namespace ppdeploy {
namespace {

// Names from a file (tensors, shards, metadata keys), quoted in messages: long ones are cut.
constexpr std::size_t kNameLimit = 100;

namespace fs = std::filesystem;

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Reads exactly `size` bytes at `offset` (retrying short reads and EINTR).
void ReadAt(int fd, char* buf, std::size_t size, std::int64_t offset, const std::string& path) {
  std::size_t done = 0;
  while (done < size) {
    ssize_t r = ::pread(fd, buf + done, size - done, static_cast<off_t>(offset + static_cast<std::int64_t>(done)));
    if (r < 0) {
      if (errno == EINTR) continue;
      Fail("{}: cannot read: {}", EscapeForMessage(path, 0), std::strerror(errno));
    }
    if (r == 0)
      Fail("{}: cannot read: file ended after {} of {} bytes", EscapeForMessage(path, 0),
           offset + static_cast<std::int64_t>(done), offset + static_cast<std::int64_t>(size));
    done += static_cast<std::size_t>(r);
  }
}

// A shard name from the index must be a plain file name inside the checkpoint directory.
bool PlainFileName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

}  // namespace

SafetensorsHeader ReadSafetensorsFileHeader(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));  // a FIFO must not block: refused below
  if (fd.get() < 0) Fail("{}: cannot open: {}", EscapeForMessage(path, 0), std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) Fail("{}: cannot stat: {}", EscapeForMessage(path, 0), std::strerror(errno));
  if (!S_ISREG(st.st_mode)) Fail("{}: not a regular file", EscapeForMessage(path, 0));
  auto file_size = static_cast<std::int64_t>(st.st_size);
  char len_bytes[8] = {};
  if (file_size >= 8) ReadAt(fd.get(), len_bytes, 8, 0, path);
  const std::string shown = EscapeForMessage(path, 0);  // the header parser names the file in its messages
  std::int64_t n = SafetensorsHeaderLength(std::string_view(len_bytes, file_size >= 8 ? 8 : 0), file_size, shown);
  std::string header(static_cast<std::size_t>(n), '\0');
  ReadAt(fd.get(), header.data(), header.size(), 8, path);
  return ParseSafetensorsHeader(header, file_size - 8 - n, shown);
}

GgufHeader ReadGgufFileHeader(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));  // a FIFO must not block: refused below
  if (fd.get() < 0) Fail("{}: cannot open: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) Fail("{}: cannot stat: {}", path, std::strerror(errno));
  if (!S_ISREG(st.st_mode)) Fail("{}: not a regular file", path);
  const auto file_size = static_cast<std::int64_t>(st.st_size);
  std::string prefix;
  std::int64_t want = std::min<std::int64_t>(file_size, 1 << 20);
  for (;;) {
    const auto have = static_cast<std::int64_t>(prefix.size());
    prefix.resize(static_cast<std::size_t>(want));
    ReadAt(fd.get(), prefix.data() + have, static_cast<std::size_t>(want - have), have, path);
    try {
      return ParseGgufFile(prefix, file_size, path);
    } catch (const GgufNeedMoreBytes& e) {
      if (want >= kGgufMaxHeaderBytes)
        Fail("{}: the GGUF header is longer than {} bytes: not read ({})", path, kGgufMaxHeaderBytes, e.what());
      want = std::min({file_size, kGgufMaxHeaderBytes, std::max(e.needed(), 2 * want)});
    }
  }
}

std::string FindGgufFile(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::error_code fec;
    if (e.path().extension() == ".gguf" && e.is_regular_file(fec)) found.push_back(e.path().string());
  }
  if (ec) Fail("{}: cannot list: {}", dir, ec.message());
  std::sort(found.begin(), found.end());
  if (found.size() > 1)
    Fail("{}: {} *.gguf files ({}, {}, ...): pass the one vLLM should load as --model", dir, found.size(), found[0],
         found[1]);
  return found.empty() ? "" : found[0];
}

CheckpointHeaders ReadCheckpointDirectory(const std::string& dir) {
  if (!IsDirectory(dir)) Fail("{}: not a directory", EscapeForMessage(dir, 0));
  fs::path root(dir);
  CheckpointHeaders out;
  if (IsRegularFile((root / "config.json").string())) out.config_path = (root / "config.json").string();

  std::string index_path = (root / kSafetensorsIndexFile).string();
  // The index DOM stays alive: weight_map points into it (tensor name -> shard file name).
  nlohmann::json index;
  std::vector<std::pair<const std::string*, const std::string*>> weight_map;
  std::vector<std::string> shard_names;
  if (IsRegularFile(index_path)) {
    out.index_path = index_path;
    index = ParseJsonText(ReadFileText(index_path), index_path);
    JsonContext ctx{index_path, ""};
    RequireObject(index, ctx);
    auto wm = index.find("weight_map");
    if (wm == index.end() || wm->is_null()) Fail("{}: required field is missing", ctx.Where("weight_map"));
    if (!wm->is_object()) Fail("{}: expected an object, got {}", ctx.Where("weight_map"), ShortJson(*wm));
    if (wm->empty()) Fail("{}: is empty", ctx.Where("weight_map"));
    std::unordered_set<std::string_view> names;
    weight_map.reserve(wm->size());
    for (auto it = wm->begin(); it != wm->end(); ++it) {
      if (!it.value().is_string())
        Fail("{}: weight_map.{}: expected a shard file name, got {}", EscapeForMessage(index_path, 0),
             QuoteForMessage(it.key(), kNameLimit), ShortJson(it.value()));
      const auto& shard = it.value().get_ref<const std::string&>();
      if (names.insert(shard).second && !PlainFileName(shard))
        Fail("{}: weight_map.{}: shard {} is not a plain file name in the checkpoint directory",
             EscapeForMessage(index_path, 0), QuoteForMessage(it.key(), kNameLimit),
             QuoteForMessage(shard, kNameLimit));
      weight_map.emplace_back(&it.key(), &shard);
    }
    shard_names.assign(names.begin(), names.end());
    std::sort(shard_names.begin(), shard_names.end());
    for (const auto& name : shard_names) {
      std::string path = (root / name).string();
      if (!IsRegularFile(path)) {
        auto first =
            std::find_if(weight_map.begin(), weight_map.end(), [&](const auto& e) { return *e.second == name; });
        Fail("{}: shard {} (for tensor {}) does not exist: {}", EscapeForMessage(index_path, 0),
             QuoteForMessage(name, kNameLimit), QuoteForMessage(*first->first, kNameLimit), EscapeForMessage(path, 0));
      }
    }
  } else {
    std::error_code ec;
    fs::directory_iterator it(root, ec);
    if (ec) Fail("{}: cannot list: {}", EscapeForMessage(dir, 0), ec.message());
    for (const auto& entry : it) {
      std::error_code fec;
      if (entry.path().extension() == ".safetensors" && entry.is_regular_file(fec))
        shard_names.push_back(entry.path().filename().string());
    }
    std::sort(shard_names.begin(), shard_names.end());
    if (shard_names.empty())
      Fail("{}: no *.safetensors files and no {}", EscapeForMessage(dir, 0), kSafetensorsIndexFile);
  }

  // Read every shard header; names must be unique across shards. The map's keys view the names in
  // `headers` (whose tensors are not moved until the checks are done).
  std::vector<SafetensorsHeader> headers;
  headers.reserve(shard_names.size());
  std::unordered_map<std::string_view, std::uint32_t> shard_of;  // tensor name -> index into shard_names
  shard_of.reserve(weight_map.size());  // once: growing it shard by shard would rehash 163 times
  std::size_t count = 0;
  for (std::size_t s = 0; s < shard_names.size(); ++s) {
    std::string path = (root / shard_names[s]).string();
    headers.push_back(ReadSafetensorsFileHeader(path));
    out.files.push_back(path);
    for (const auto& t : headers.back().tensors) {
      auto [it, inserted] = shard_of.emplace(t.name, static_cast<std::uint32_t>(s));
      if (!inserted)
        Fail("{}: tensor {} is also in {}", EscapeForMessage(path, 0), QuoteForMessage(t.name, kNameLimit),
             EscapeForMessage((root / shard_names[it->second]).string(), 0));
      out.total_tensor_bytes += t.bytes;
    }
    count += headers.back().tensors.size();
  }

  // Every tensor the index names must be in the shard it names.
  for (const auto& [name, shard] : weight_map) {
    auto it = shard_of.find(*name);
    if (it == shard_of.end())
      Fail("{}: tensor {} is mapped to {}, but that shard has no such tensor", EscapeForMessage(index_path, 0),
           QuoteForMessage(*name, kNameLimit), EscapeForMessage((root / *shard).string(), 0));
    if (shard_names[it->second] != *shard)
      Fail("{}: tensor {} is mapped to {}, but it is in {}", EscapeForMessage(index_path, 0),
           QuoteForMessage(*name, kNameLimit), EscapeForMessage((root / *shard).string(), 0),
           EscapeForMessage((root / shard_names[it->second]).string(), 0));
  }

  shard_of.clear();  // its keys view the names about to be moved
  out.tensors.reserve(count);
  for (auto& h : headers)
    for (auto& t : h.tensors) out.tensors.push_back(std::move(t));
  return out;
}

}  // namespace ppdeploy
