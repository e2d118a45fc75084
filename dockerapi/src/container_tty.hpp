#pragma once
// A Tty container's terminal (docs/docker-api.md, "Tty"). The runtime opens the pty in the
// sandbox's own devpts and hands its master to the supervisor (RunOptions::on_terminal); no
// process of the sandbox holds the master. The supervisor pumps it: what the program writes
// into the log (as stdout frames, sent without their headers to a Tty container's clients),
// the attached clients' bytes from the stdin FIFO into it, and resizes from the API server,
// which come through <container>/tty.ctl (a FIFO only the supervisor reads) as "ROWS COLUMNS\n".
#include <functional>
#include <memory>
#include <span>
#include <thread>

#include "container_store.hpp"
#include "create_request.hpp"
#include "http_server.hpp"
#include "sandcell/base/unique_fd.hpp"

namespace sandcell::dockerapi {

// TIOCSWINSZ: the program's foreground group gets SIGWINCH when the size changed.
void set_terminal_size(int pty_fd, TerminalSize size);

// Supervisor side: <container>/tty.ctl made afresh (mkfifo 0600) and opened for reading without
// ever seeing end of file (O_RDWR), before the program starts, so a resize right after `start`
// waits in the FIFO.
runtime::UniqueFd make_control_fifo(const ContainerDir& container);

class TerminalPump {
 public:
  using Sink = std::function<void(std::span<const char>)>;
  // `input`: the stdin FIFO, or invalid (no OpenStdin). The pump owns the fds from here.
  TerminalPump(runtime::UniqueFd master, runtime::UniqueFd input, runtime::UniqueFd control, Sink output);
  ~TerminalPump();  // stop()
  TerminalPump(const TerminalPump&) = delete;
  TerminalPump& operator=(const TerminalPump&) = delete;
  // The program is over: what is left in the master goes to the sink, then the thread ends.
  void stop();

 private:
  void run();

  runtime::UniqueFd master_, input_, control_, wake_read_, wake_write_;
  Sink output_;
  std::thread thread_;
};

// The `h` and `w` of a resize request (containers' and execs'): integers from 0 to 65535, what
// struct winsize holds; ApiError 400 naming the parameter otherwise.
TerminalSize resize_request(const HttpRequest& request);

// Server side (POST /containers/{id}/resize): the size to the supervisor. ApiError 409 when
// the container's supervisor is not there to take it (not running).
void resize_container_terminal(const ContainerDir& container, TerminalSize size);

}  // namespace sandcell::dockerapi
