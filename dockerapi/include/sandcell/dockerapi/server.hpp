#pragma once
// `sandcell serve --docker-api unix:PATH`: the Docker Engine API (docs/docker-api.md).
#include <cstdint>
#include <optional>
#include <string>

namespace sandcell::dockerapi {

struct DockerApiOptions {
  std::string listen;          // "unix:PATH"
  std::string group;           // the socket's group (0660); empty: root's
  std::string store_root;      // image store; containers live under <store_root>/docker/containers
  std::string supervisor_exe;  // runs `docker-container-supervisor DIR`; empty: /proc/self/exe
  // `docker load`'s archive and `docker build`'s context, spooled to a file in the store (not
  // memory): larger gets 413.
  uint64_t max_load_bytes = 4ull << 30;
  // A container's writable layer (`HostConfig.StorageOpt size`; docs/docker-api.md, "Disk"):
  // the bound of a create that gives none, and the most one may ask for (none: no ceiling).
  uint64_t default_disk_bytes = 1ull << 30;
  std::optional<uint64_t> max_disk_bytes;
  // A container's log (`HostConfig.LogConfig`; docs/docker-api.md, "Log"): max-size and
  // max-file of a create that gives none, and the most max-size × max-file may be.
  uint64_t log_max_size = 20ull << 20;
  uint32_t log_max_file = 5;
  uint64_t max_log_bytes = 1ull << 30;
  // `--docker-allow-host-network`: NetworkMode host is allowed (the sandbox shares the host's
  // network namespace; its other confinement stays). Without it, refused.
  bool allow_host_network = false;
};

// Serves until SIGINT/SIGTERM; running containers keep running (their supervisors are not ours).
// Returns the process exit code; throws Error when the socket cannot be made.
int serve_docker_api_until_signal(const DockerApiOptions& options);

// The supervisor of one container (its own process, started by the API server's `start`):
// detaches into its own session, runs the sandbox and records the outcome in the container's
// directory. Returns the exit code of the process that was started (0 once detached).
int supervise_container(const std::string& container_dir, const std::string& store_root);

// The process behind `POST /build` (started by the API server): builds job_dir/context as
// job_dir/request.json says, writes Docker's JSON lines on stdout, removes job_dir.
int run_build_job(const std::string& job_dir, const std::string& store_root);

}  // namespace sandcell::dockerapi
