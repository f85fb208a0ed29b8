#include "scheduler/cpu_features.h"

#include <sstream>
#include <vector>

#include "compiler/ir/error.h"

namespace tilegraph::scheduler {

namespace {

const std::vector<std::string> kArmFeatures = {"dotprod", "i8mm"};
const std::vector<std::string> kX86Features = {"amx", "avx512vnni", "avx512f", "avx2"};

bool contains(const std::vector<std::string>& v, const std::string& s) {
  for (const std::string& x : v)
    if (x == s) return true;
  return false;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& x : v) out += (out.empty() ? "" : ", ") + x;
  return out;
}

// Removes every "<sign>feature" token (followed by '+', '~' or the end).
void erase_token(std::string& isa, char sign, const std::string& feature) {
  const std::string token = std::string(1, sign) + feature;
  for (size_t at = isa.find(token); at != std::string::npos; at = isa.find(token, at)) {
    const size_t end = at + token.size();
    if (end == isa.size() || isa[end] == '+' || isa[end] == '~') isa.erase(at, token.size());
    else at = end;
  }
}

}  // namespace

void apply_cpu_features(ArchSpec& arch, const std::string& list) {
  if (list.empty()) return;
  if (arch.is_gpu()) throw UserError(str_cat("--cpu-features applies to CPU targets; --arch ", arch.name, " is a GPU"));
  const bool arm = arch.isa.rfind("armv8", 0) == 0 || arch.isa.rfind("armv9", 0) == 0;
  const std::vector<std::string>& known = arm ? kArmFeatures : kX86Features;
  std::stringstream items(list);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item.size() < 2 || (item[0] != '+' && item[0] != '-'))
      throw UserError(str_cat("--cpu-features: '", item, "' is not +FEATURE or -FEATURE (e.g. +dotprod,-i8mm)"));
    const std::string feature = item.substr(1);
    if (!contains(known, feature))
      throw UserError(str_cat("--cpu-features: unknown feature '", feature, "' for --arch ", arch.name, " (",
                              arch.isa, "); known: ", joined(known)));
    // An AArch64 target's ISA lists what the cross-built code may use; the
    // host and x86 targets can only lose a feature the CPU (or the plain
    // x86-64 build) has, recorded as "~feature" ('-' is part of x86 ISA names).
    const bool editable = arm && arch.name != "host";
    if (item[0] == '+' && !editable)
      throw UserError(str_cat("--cpu-features ", item, ": --arch ", arch.name, " runs on this CPU, so its features "
                              "can only be turned off (-", feature, ")"));
    erase_token(arch.isa, '+', feature);
    erase_token(arch.isa, '~', feature);
    if (item[0] == '+') arch.isa += "+" + feature;
    else if (!editable) arch.isa += "~" + feature;
  }
}

bool cpu_feature_disabled(const ArchSpec& arch, const std::string& feature) {
  const std::string token = "~" + feature;
  const size_t at = arch.isa.find(token);
  if (at == std::string::npos) return false;
  const size_t end = at + token.size();
  return end == arch.isa.size() || arch.isa[end] == '+' || arch.isa[end] == '~';
}

}  // namespace tilegraph::scheduler
