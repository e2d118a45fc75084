#pragma once
// Docker's error shape: an HTTP status and {"message": "..."}.
#include <string>

namespace sandcell::dockerapi {

struct ApiError {
  int status;
  std::string message;
};

inline ApiError bad_request(std::string message) { return {400, std::move(message)}; }
inline ApiError not_found(std::string message) { return {404, std::move(message)}; }
inline ApiError conflict(std::string message) { return {409, std::move(message)}; }

}  // namespace sandcell::dockerapi
