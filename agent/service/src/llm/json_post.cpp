#include "llm/json_post.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <mutex>
#include <thread>

#include "sandcell/base/bounded_json.hpp"
#include "sandcell/base/loaded_libs.hpp"
#include "sandcell/base/number.hpp"

namespace sandcell::agent_service {
namespace {

struct Answer {
  long status = 0;
  std::string body;
  std::optional<long> retry_after_s;
  std::string transport_error;  // set when no HTTP answer came back
};

size_t collect_body(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

size_t collect_header(char* data, size_t size, size_t count, void* user) {
  std::string line(data, size * count);
  std::string lower = line;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower.rfind("retry-after:", 0) == 0) {
    // Only the delta-seconds form; an HTTP-date falls back to our own backoff.
    std::string_view value = std::string_view(line).substr(12);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) value.remove_suffix(1);
    if (auto seconds = parse_number<long>(value)) static_cast<Answer*>(user)->retry_after_s = *seconds;
  }
  return size * count;
}

Answer perform(const JsonPost& post, const std::string& body) {
  static std::once_flag curl_initialised;
  std::call_once(curl_initialised, [] { libcurl().global_init(CURL_GLOBAL_DEFAULT); });
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(libcurl().easy_init(),
                                                           libcurl().easy_cleanup);
  if (!curl) throw ProviderError(post.provider + ": curl_easy_init failed");
  curl_slist* list = libcurl().slist_append(nullptr, "Content-Type: application/json");
  for (const auto& h : post.headers) list = libcurl().slist_append(list, h.c_str());
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headers(list,
                                                                      libcurl().slist_free_all);
  Answer answer;
  char error_buffer[CURL_ERROR_SIZE] = {};
  CURL* c = curl.get();
  libcurl().easy_setopt(c, CURLOPT_URL, post.url.c_str());
  libcurl().easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  libcurl().easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
  libcurl().easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  libcurl().easy_setopt(c, CURLOPT_TIMEOUT, static_cast<long>(post.timeout.count()));
  libcurl().easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 20L);
  libcurl().easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM-based resolver timeouts
  libcurl().easy_setopt(c, CURLOPT_WRITEFUNCTION, collect_body);
  libcurl().easy_setopt(c, CURLOPT_WRITEDATA, &answer.body);
  libcurl().easy_setopt(c, CURLOPT_HEADERFUNCTION, collect_header);
  libcurl().easy_setopt(c, CURLOPT_HEADERDATA, &answer);
  libcurl().easy_setopt(c, CURLOPT_ERRORBUFFER, error_buffer);
  CURLcode rc = libcurl().easy_perform(c);
  if (rc != CURLE_OK) {
    answer.transport_error = error_buffer[0] ? error_buffer : libcurl().easy_strerror(rc);
    return answer;
  }
  libcurl().easy_getinfo(c, CURLINFO_RESPONSE_CODE, &answer.status);
  return answer;
}

// The server's own explanation: {"error": {"message": ...}} (OpenAI and Anthropic) or the
// start of the body.
std::string server_message(const std::string& body) {
  Json parsed = parse_bounded_json_or_discarded(body);
  if (!parsed.is_discarded() && parsed.is_object() && parsed.contains("error")) {
    const Json& e = parsed["error"];
    if (e.is_object() && e.contains("message") && e["message"].is_string()) return e["message"];
    if (e.is_string()) return e;
  }
  return body.substr(0, 300);
}

[[noreturn]] void fail(const JsonPost& post, const Answer& answer) {
  std::string where = post.provider + ": " + std::to_string(answer.status) + " from " + post.url;
  std::string said = server_message(answer.body);
  if (answer.status == 401 || answer.status == 403)
    throw ProviderError(where + ": the API key was refused (check " + post.key_variable + "): " + said,
                        static_cast<int>(answer.status));
  if (answer.status == 404)
    throw ProviderError(where + ": not found (check --base-url and --model): " + said, 404);
  bool about_tools = said.find("tool") != std::string::npos;
  throw ProviderError(where + ": " + said, static_cast<int>(answer.status), answer.status == 400 && about_tools);
}

bool retryable(const Answer& answer) {
  return !answer.transport_error.empty() || answer.status == 429 || answer.status >= 500;
}

}  // namespace

Json post_json(const JsonPost& post, const Json& body) {
  const std::string text = body.dump();
  auto backoff = post.retry.first_backoff;
  for (int attempt = 1;; ++attempt) {
    Answer answer = perform(post, text);
    if (!retryable(answer) || attempt >= post.retry.max_attempts) {
      if (!answer.transport_error.empty())
        throw ProviderError(post.provider + ": POST " + post.url + ": " + answer.transport_error);
      if (answer.status < 200 || answer.status >= 300) fail(post, answer);
      Json parsed = parse_bounded_json_or_discarded(answer.body);
      if (parsed.is_discarded() || !parsed.is_object())
        throw ProviderError(post.provider + ": the answer from " + post.url + " is not a JSON object: " +
                            answer.body.substr(0, 200));
      return parsed;
    }
    auto delay = answer.retry_after_s ? std::chrono::milliseconds(*answer.retry_after_s * 1000) : backoff;
    std::this_thread::sleep_for(std::clamp(delay, std::chrono::milliseconds(0), post.retry.max_backoff));
    backoff = std::min(backoff * 2, post.retry.max_backoff);
  }
}

}  // namespace sandcell::agent_service
