#include "nft_context.hpp"

#include <cerrno>

#include "dynamic_libs.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::network {

NftContext::NftContext(bool json_output) : ctx_(nft().ctx_new(NFT_CTX_DEFAULT)) {
  if (ctx_ == nullptr) throw Error(ENOMEM, "nft_ctx_new");
  if (json_output) nft().ctx_output_set_flags(ctx_, NFT_CTX_OUTPUT_JSON);
  nft().ctx_buffer_output(ctx_);
  nft().ctx_buffer_error(ctx_);
}

NftContext::~NftContext() {
  nft().ctx_free(ctx_);
}

std::string NftContext::run(const std::string& commands, const std::string& step) {
  if (nft().run_cmd_from_buffer(ctx_, commands.c_str()) != 0) {
    std::string message = nft().ctx_get_error_buffer(ctx_);
    while (!message.empty() && (message.back() == '\n' || message.back() == ' '))
      message.pop_back();
    // libnftables reports no errno; EPERM is what a missing CAP_NET_ADMIN looks like, else EIO.
    const int err = message.find("Operation not permitted") != std::string::npos ? EPERM : EIO;
    throw Error(err, step + ": " + message);
  }
  return nft().ctx_get_output_buffer(ctx_);
}

std::string NftContext::run_json(const std::string& commands, const std::string& step) {
  const unsigned int flags = nft().ctx_output_get_flags(ctx_);
  nft().ctx_output_set_flags(ctx_, flags | NFT_CTX_OUTPUT_JSON);
  try {
    std::string output = run(commands, step);
    nft().ctx_output_set_flags(ctx_, flags);
    return output;
  } catch (...) {
    nft().ctx_output_set_flags(ctx_, flags);
    throw;
  }
}

}  // namespace sandcell::network
