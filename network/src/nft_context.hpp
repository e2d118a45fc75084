#pragma once
// A libnftables context that runs nft command text and reports failures as Error with nft's own
// message. Callers build the text from validated data only (ids, formatted addresses, numbers).
#include <memory>
#include <string>

struct nft_ctx;

namespace sandcell::network {

class NftContext {
 public:
  explicit NftContext(bool json_output = false);
  ~NftContext();
  NftContext(const NftContext&) = delete;
  NftContext& operator=(const NftContext&) = delete;

  // Runs `commands` as one transaction and returns nft's output. Throws Error naming `step`.
  std::string run(const std::string& commands, const std::string& step);
  // The same with JSON output, whatever the context was made with.
  std::string run_json(const std::string& commands, const std::string& step);

 private:
  nft_ctx* ctx_ = nullptr;
};

}  // namespace sandcell::network
