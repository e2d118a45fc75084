#pragma once
// What a call threw as a sandcell Error, as text: "" when it returned (or threw nothing of ours).
#include <functional>
#include <string>

#include "sandcell/base/error.hpp"

namespace sandcell::test {

inline std::string thrown_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace sandcell::test
