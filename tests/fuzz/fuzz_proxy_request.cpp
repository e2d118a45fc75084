// Bytes from the sandbox → the proxy's request parser (head, then body), fed in two pieces split
// at the first input byte, as the network delivers them; then the host normalisation the proxy
// applies to the request target and the upstream head it would send.
#include <cstdint>
#include <string_view>

#include "proxy_request.hpp"
#include "sandcell/network/host_policy.hpp"
#include "sandcell/runtime/error.hpp"

using sandcell::network::RequestParser;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t split = data[0] % size;
  const char* text = reinterpret_cast<const char*>(data + 1);
  const size_t length = size - 1;
  RequestParser parser(4096);
  size_t used = parser.feed_head(text, split < length ? split : length);
  if (!parser.head() && !parser.error() && used <= length) used += parser.feed_head(text + used, length - used);
  if (!parser.head() || parser.error()) return 0;
  if (used > length) __builtin_trap();  // consumed more than it was given
  size_t body_bytes = 0;
  parser.feed_body(text + used, length - used, [&](std::string_view chunk) {
    body_bytes += chunk.size();
    return true;
  });
  try {
    auto host = sandcell::network::normalise_host(parser.head()->host);
    (void)parser.upstream_head(host.name);
  } catch (const sandcell::Error&) {
  }
  return 0;
}
