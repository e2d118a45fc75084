// A Tty container's terminal: the supervisor's pump and the server's resize (container_tty.hpp).
#include "container_tty.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <charconv>
#include <string>

#include "api_error.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/number.hpp"

namespace sandcell::dockerapi {
namespace {

using runtime::UniqueFd;

constexpr size_t kMaxPendingInput = 1 << 16;  // stdin read ahead of what the pty takes

// "ROWS COLUMNS\n" lines; anything else is dropped (only the API server writes the FIFO).
void apply_resizes(std::string& pending, int master) {
  for (size_t end; (end = pending.find('\n')) != std::string::npos; pending.erase(0, end + 1)) {
    const char *p = pending.data(), *stop = p + end;
    unsigned rows = 0, columns = 0;
    auto first = std::from_chars(p, stop, rows);
    if (first.ec != std::errc() || first.ptr == stop || *first.ptr != ' ') continue;
    auto second = std::from_chars(first.ptr + 1, stop, columns);
    if (second.ec != std::errc() || second.ptr != stop || rows > 65535 || columns > 65535) continue;
    set_terminal_size(master, {static_cast<uint16_t>(rows), static_cast<uint16_t>(columns)});
  }
  if (pending.size() > 64) pending.clear();  // no line end in sight: not ours
}

}  // namespace

void set_terminal_size(int pty_fd, TerminalSize size) {
  winsize w{.ws_row = size.rows, .ws_col = size.columns, .ws_xpixel = 0, .ws_ypixel = 0};
  ioctl(pty_fd, TIOCSWINSZ, &w);  // fails only for a fd that is no tty: nothing to size
}

UniqueFd make_control_fifo(const ContainerDir& container) {
  const std::string path = container.file("tty.ctl");
  unlink(path.c_str());
  check(mkfifo(path.c_str(), 0600), "mkfifo " + path);
  UniqueFd fd(open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) throw Error(errno, "open " + path);
  return fd;
}

TerminalPump::TerminalPump(UniqueFd master, UniqueFd input, UniqueFd control, Sink output)
    : master_(std::move(master)), input_(std::move(input)), control_(std::move(control)), output_(std::move(output)) {
  int wake[2];
  check(pipe2(wake, O_CLOEXEC | O_NONBLOCK), "pipe");
  wake_read_.reset(wake[0]);
  wake_write_.reset(wake[1]);
  check(fcntl(master_.get(), F_SETFL, O_NONBLOCK), "make the pty master non-blocking");
  if (input_) check(fcntl(input_.get(), F_SETFL, O_NONBLOCK), "make the stdin FIFO non-blocking");
  thread_ = std::thread([this] { run(); });
}

TerminalPump::~TerminalPump() { stop(); }

void TerminalPump::stop() {
  if (!thread_.joinable()) return;
  char byte = 1;
  if (write(wake_write_.get(), &byte, 1) < 0) {
    // the pipe is full: the thread is woken already
  }
  thread_.join();
}

void TerminalPump::run() {
  std::string input, control;
  bool master_open = true, stopping = false;
  char buffer[32768];
  // The master's output, until it is empty (EAGAIN) or gone (EIO: no slave left open).
  auto drain = [&] {
    while (master_open) {
      ssize_t n = read(master_.get(), buffer, sizeof buffer);
      if (n > 0) {
        output_({buffer, static_cast<size_t>(n)});
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      master_open = false;
    }
  };
  while (!stopping) {
    pollfd fds[4] = {
        {.fd = master_open ? master_.get() : -1,
         .events = static_cast<short>(POLLIN | (input.empty() ? 0 : POLLOUT)), .revents = 0},
        {.fd = input_ && input.size() < kMaxPendingInput ? input_.get() : -1, .events = POLLIN, .revents = 0},
        {.fd = control_.get(), .events = POLLIN, .revents = 0},
        {.fd = wake_read_.get(), .events = POLLIN, .revents = 0}};
    if (poll(fds, 4, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) drain();
    if (master_open && !input.empty() && (fds[0].revents & POLLOUT)) {
      ssize_t n = write(master_.get(), input.data(), input.size());
      if (n > 0) input.erase(0, static_cast<size_t>(n));
      else if (n < 0 && errno != EAGAIN && errno != EINTR) input.clear();  // hung up: nobody reads it
    }
    if (!master_open) input.clear();
    if (fds[1].revents & POLLIN) {
      ssize_t n = read(input_.get(), buffer, std::min(sizeof buffer, kMaxPendingInput - input.size()));
      if (n > 0 && master_open) input.append(buffer, static_cast<size_t>(n));
    }
    if (fds[2].revents & POLLIN) {
      ssize_t n = read(control_.get(), buffer, 512);
      if (n > 0) control.append(buffer, static_cast<size_t>(n));
      if (master_open) apply_resizes(control, master_.get());
    }
    if (fds[3].revents & POLLIN) stopping = true;
  }
  drain();  // the program's last words
}

TerminalSize resize_request(const HttpRequest& request) {
  int64_t value[2] = {0, 0};
  const char* names[2] = {"h", "w"};
  for (int i = 0; i < 2; ++i) {
    std::string text = request.param(names[i]).value_or("");
    std::optional<int64_t> parsed = parse_number<int64_t>(text);
    if (!parsed || *parsed < 0 || *parsed > 65535)
      throw bad_request(std::string("invalid value for ") + names[i] + ": \"" + text + "\" (0 to 65535)");
    value[i] = *parsed;
  }
  TerminalSize size;
  terminal_size_in_range(value[0], value[1], size);
  return size;
}

void resize_container_terminal(const ContainerDir& container, TerminalSize size) {
  const std::string path = container.file("tty.ctl");
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW));
  struct stat st {};
  // ENXIO: no reader, the supervisor is gone; ENOENT: it never ran.
  if (!fd || fstat(fd.get(), &st) < 0 || !S_ISFIFO(st.st_mode))
    throw conflict("Container " + container.id() + " is not running");
  std::string line = std::to_string(size.rows) + " " + std::to_string(size.columns) + "\n";
  if (write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()))
    throw ApiError{500, "resize " + container.id() + ": the container's supervisor does not take it"};
}

}  // namespace sandcell::dockerapi
