// sc-pause: the pod sandbox's process in the CRI test (tests/cri), as the kubelet's pause image
// has one: it holds the pod's namespaces open by existing, reaps the zombies that end up with it
// when it is pid 1 of the pod's pid namespace, and exits 0 on SIGINT or SIGTERM (StopPodSandbox).
// Static, so its image holds this file alone. Only libc.
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void leave(int sig) {
  (void)sig;
  _exit(0);
}

static void reap(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "-v") == 0) {
    puts("sc-pause");
    return 0;
  }
  struct sigaction stop = {.sa_handler = leave};
  struct sigaction child = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP | SA_RESTART};
  if (sigaction(SIGINT, &stop, NULL) < 0 || sigaction(SIGTERM, &stop, NULL) < 0 ||
      sigaction(SIGCHLD, &child, NULL) < 0) {
    perror("sc-pause: sigaction");
    return 1;
  }
  for (;;) pause();
}
