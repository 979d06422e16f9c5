// libFuzzer target: the strict JSON text reader (core/json_fields.h ParseJsonText), the typed
// field readers on whatever it returns (also range-checked for an `int` target) and the calibration
// file reader (calibration/schema.h ParseCalibration). Must never crash or throw anything but ppdeploy::Error,
// and every message is one line of valid UTF-8 with no control character and no invisible code
// point left raw: a raw 0xFF byte or a zero-width space in the file is never echoed.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "calibration/schema.h"
#include "core/error.h"
#include "core/escape.h"
#include "core/json_fields.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckMessage(std::string_view m) {
  Check(!m.empty() && !ppdeploy::FindInvalidUtf8(m).has_value());
  for (std::size_t pos = 0; pos < m.size();) {
    auto cp = ppdeploy::DecodeUtf8At(m, pos);
    Check(cp.has_value());
    Check(cp->code_point >= 0x20 && cp->code_point != 0x7F && !ppdeploy::IsInvisibleCodePoint(cp->code_point));
    pos += cp->length;
  }
}

template <typename F>
void Expect(F&& f) {
  try {
    f();
  } catch (const ppdeploy::Error& e) {
    CheckMessage(e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  nlohmann::json doc;
  try {
    doc = ppdeploy::ParseJsonText(text, "fuzz/config.json");
  } catch (const ppdeploy::Error& e) {
    CheckMessage(e.what());
    return 0;
  }
  // What the file held reaches messages only through ShortJson / the field readers.
  CheckMessage(ppdeploy::ShortJson(doc));
  const ppdeploy::JsonContext ctx{"fuzz/config.json", ""};
  Expect([&] { ppdeploy::RequireObject(doc, ctx); });
  if (!doc.is_object()) return 0;
  int fields = 0;
  for (auto it = doc.begin(); it != doc.end() && fields < 64; ++it, ++fields) {
    const std::string& key = it.key();
    Expect([&] { (void)ppdeploy::OptInt(doc, key, ctx); });
    Expect([&] {
      if (auto v = ppdeploy::OptIntAs<int>(doc, key, ctx)) Check(*v >= 0);
    });
    Expect([&] {
      for (int v : ppdeploy::OptIntListAs<int>(doc, key, ctx)) Check(v >= 0);
    });
    Expect([&] { (void)ppdeploy::OptNumber(doc, key, ctx); });
    Expect([&] { (void)ppdeploy::OptString(doc, key, ctx); });
    Expect([&] { (void)ppdeploy::OptBool(doc, key, ctx); });
    if (it->is_object()) Expect([&] { ppdeploy::RequireObject(*it, ctx.Child(key)); });
  }
  // A calibration read from any document: accepted values are in range (no wrapped int).
  Expect([&] {
    const ppdeploy::Calibration c = ppdeploy::ParseCalibration(doc, "fuzz/cal.json");
    Check(c.tensor_parallel_size >= 1 && c.pipeline_parallel_size >= 1);
    for (int v : c.layer_partition) Check(v >= 0);
    for (const auto& r : c.ranks) Check(r.pp_rank >= 0 && r.pp_rank < c.pipeline_parallel_size);
  });
  return 0;
}
