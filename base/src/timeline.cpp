#include "sandcell/base/timeline.hpp"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>

namespace sandcell::timeline {
namespace {

int file = -1;  // set once by start(), before there is a thread or a child to read it
bool started = false;

// Decimal digits of `value` written backwards from `end`; returns the first one.
char* put_decimal(char* end, unsigned long long value) {
  do {
    *--end = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  return end;
}

}  // namespace

void start() {
  if (started) return;
  started = true;
  const char* path = getenv("SANDCELL_TIMELINE");
  if (path == nullptr || *path == '\0') return;
  file = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
}

void mark(const char* name) {
  if (file < 0) return;
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  char line[128];
  char* end = line + sizeof line;
  *--end = '\n';
  end = put_decimal(end, static_cast<unsigned long long>(now.tv_sec) * 1000000ull +
                             static_cast<unsigned long long>(now.tv_nsec) / 1000);
  *--end = ' ';
  size_t length = 0;
  while (name[length] != '\0' && length < 64) ++length;
  end -= length;
  for (size_t i = 0; i < length; ++i) end[i] = name[i];
  *--end = ' ';
  end = put_decimal(end, static_cast<unsigned long long>(getpid()));
  ssize_t ignored = write(file, end, static_cast<size_t>(line + sizeof line - end));
  (void)ignored;
}

}  // namespace sandcell::timeline
