// The tilegraph version (`tilegraph --version`); part of every project hash,
// so a project is never paired with weights from another compiler version.
#pragma once

namespace tilegraph::driver {

inline constexpr const char* kTilegraphVersion = "0.1";

}  // namespace tilegraph::driver
