// exec: a new process in a running container, as `runc exec` (args or --process FILE).
#include <sys/socket.h>
#include <sys/wait.h>

#include <fstream>

#include "sandcell/oci/config.hpp"
#include "sandcell/oci/lifecycle.hpp"
#include "sandcell/runtime/container.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/number.hpp"
#include "unix_socket.hpp"
#include "sandcell/base/bounded_json.hpp"

namespace sandcell::oci {
namespace {

void apply_user(const std::string& user, runtime::Spec& spec) {
  size_t colon = user.find(':');
  auto uid = parse_number<uid_t>(std::string_view(user).substr(0, colon));
  auto gid = colon == std::string::npos ? std::optional<gid_t>(spec.gid)
                                        : parse_number<gid_t>(std::string_view(user).substr(colon + 1));
  if (!uid || !gid) throw Error::invalid("--user: expected uid[:gid] as numbers, got '" + user + "'");
  spec.uid = *uid;
  spec.gid = *gid;
}

runtime::Spec exec_spec(const StateStore& store, const ContainerState& s, const ExecOptions& options) {
  runtime::Spec spec = load_config(s.bundle).spec;
  spec.container->terminal = options.tty;
  if (!options.process_file.empty()) {
    std::ifstream in(options.process_file);
    if (!in) throw Error::invalid("cannot read --process " + options.process_file);
    nlohmann::json process;
    try {
      process = parse_bounded_json(in);
    } catch (const nlohmann::json::parse_error& e) {
      throw Error::invalid("--process " + options.process_file + ": " + e.what());
    }
    spec.container->terminal = false;
    apply_process(process, spec);
  } else {
    if (options.args.empty()) throw Error::invalid("exec: no command given (ARGS... or --process FILE)");
    spec.args = options.args;
  }
  (void)store;
  for (const std::string& entry : options.env) {
    if (entry.find('=') == std::string::npos) throw Error::invalid("--env: expected K=V, got '" + entry + "'");
    spec.env.push_back(entry);
  }
  if (!options.cwd.empty()) spec.cwd = options.cwd;
  if (!options.user.empty()) apply_user(options.user, spec);
  return spec;
}

}  // namespace

int exec(const StateStore& store, const std::string& id, const ExecOptions& options) {
  ContainerState s = store.load(id);
  Status status = current_status(s);
  if (status != Status::Running)
    throw Error::invalid("cannot exec in container " + id + ": it is " + status_name(status));
  runtime::Spec spec = exec_spec(store, s, options);
  if (spec.container->terminal && options.console_socket.empty())
    throw Error::invalid("exec with a terminal needs --console-socket");
  runtime::UniqueFd console =
      options.console_socket.empty() ? runtime::UniqueFd() : connect_unix(options.console_socket, SOCK_STREAM);
  runtime::ContainerIo io{.console_socket = console.get(), .preserve_fds = options.preserve_fds};
  pid_t pid = runtime::exec_in_container(spec, {.init_pid = s.pid, .cgroup_paths = s.cgroup_paths}, io);
  if (!options.pid_file.empty()) {
    std::ofstream out(options.pid_file, std::ios::trunc);
    out << pid;
    if (!out.flush()) throw Error(errno, "write --pid-file " + options.pid_file);
  }
  if (options.detach) return 0;
  int wait_status = 0;
  while (waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
}

}  // namespace sandcell::oci
