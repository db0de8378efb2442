/* The calls event loops make often, timed in one process
 * (bench/preload-calls.ts runs it without and with libsmc-preload.so under a
 * selection): epoll_ctl(MOD) on a connected socket, socket() and close(), and a
 * whole excluded connection as an event loop makes it (non-blocking socket,
 * added to epoll before connect(), connect() to a loopback listener, close()).
 * Prints one "name ns" line per case: nanoseconds a call (a connection for the
 * last). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 200000;
  struct sockaddr_in a = {.sin_family = AF_INET};
  socklen_t len = sizeof(a);
  int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0),
      ep = epoll_create1(EPOLL_CLOEXEC);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 4096) ||
      getsockname(l, (struct sockaddr *)&a, &len)) {
    perror("listener");
    return 1;
  }
  int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  connect(c, (struct sockaddr *)&a, sizeof(a));
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = c};
  epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
  double t0 = now();
  for (int i = 0; i < n; i++) {
    ev.events = (i & 1) ? EPOLLIN | EPOLLOUT : EPOLLIN;
    epoll_ctl(ep, EPOLL_CTL_MOD, c, &ev);
  }
  printf("epoll_ctl_mod %.1f\n", (now() - t0) / n);
  t0 = now();
  for (int i = 0; i < n; i++)
    close(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  printf("socket_close %.1f\n", (now() - t0) / n);
  int m = n / 20;
  t0 = now();
  for (int i = 0; i < m; i++) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct epoll_event e = {.events = EPOLLIN | EPOLLOUT | EPOLLET,
                            .data.fd = s};
    epoll_ctl(ep, EPOLL_CTL_ADD, s, &e);
    connect(s, (struct sockaddr *)&a, sizeof(a));
    int acc = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    close(s);
    close(acc);
  }
  printf("excluded_connection %.1f\n", (now() - t0) / m);
  return 0;
}
