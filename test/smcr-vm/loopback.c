/* loopback: what the preload library gives a program that connects to 127.0.0.1, its own pod's
 * listener (test/vm/transparent.test.ts reads the line it prints). Since #85 the library leaves
 * such sockets SMC sockets: a blocking client with TCP_NODELAY and SOCK_CLOEXEC set before
 * connect(), a non-blocking one (libuv, asyncio), and a non-blocking one added to an epoll set
 * before connect() (nginx's way) all fall back to TCP in the handshake (no device serves lo), keep
 * their options and carry data, and the epoll registration reports the socket writable. With an
 * argument N it keeps the connections open N seconds before it exits, for the pod's summary to
 * count them. Dynamically linked, so that the library reaches it. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

static int domain_of(int fd) {
  int d = -1;
  socklen_t l = sizeof(d);
  getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &d, &l);
  return d;
}

int main(int argc, char **argv) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(7300)};
  int one = 1, nodelay = 0, l, c, s, n, w, ep, before, data, nb_domain, nb_data;
  struct epoll_event ev = {.events = EPOLLOUT, .data.u64 = 7300};
  struct epoll_event got = {0};
  socklen_t len = sizeof(nodelay);
  char buf[6] = {0};
  struct pollfd p;
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  l = socket(AF_INET, SOCK_STREAM, 0);
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 4)) {
    printf("error=listen:%s\n", strerror(errno));
    return 1;
  }
  c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  before = domain_of(c);
  if (connect(c, (struct sockaddr *)&a, sizeof(a))) {
    printf("error=connect:%s\n", strerror(errno));
    return 1;
  }
  s = accept(l, NULL, NULL);
  if (write(c, "hello", 5) != 5 || read(s, buf, 5) != 5)
    printf("error=data:%s\n", strerror(errno));
  data = !strcmp(buf, "hello");
  getsockopt(c, IPPROTO_TCP, TCP_NODELAY, &nodelay, &len);
  n = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (connect(n, (struct sockaddr *)&a, sizeof(a)) && errno != EINPROGRESS)
    printf("error=nonblocking:%s\n", strerror(errno));
  nb_domain = domain_of(n);
  p.fd = n;
  p.events = POLLOUT;
  poll(&p, 1, 5000);
  s = accept(l, NULL, NULL);
  memset(buf, 0, sizeof(buf));
  nb_data = write(n, "hello", 5) == 5 && read(s, buf, 5) == 5 && !strcmp(buf, "hello");
  w = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  ep = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_ctl(ep, EPOLL_CTL_ADD, w, &ev))
    printf("error=epoll_ctl:%s\n", strerror(errno));
  if (connect(w, (struct sockaddr *)&a, sizeof(a)) && errno != EINPROGRESS)
    printf("error=watched:%s\n", strerror(errno));
  printf("before=%d after=%d nodelay=%d cloexec=%d data=%s nonblocking=%d nbdata=%s epoll=%s\n",
         before, domain_of(c), nodelay, (fcntl(c, F_GETFD) & FD_CLOEXEC) != 0,
         data ? "ok" : "lost", nb_domain, nb_data ? "ok" : "lost",
         epoll_wait(ep, &got, 1, 5000) == 1 && (got.events & EPOLLOUT) && got.data.u64 == 7300
             ? "writable"
             : "silent");
  if (argc > 1)
    sleep((unsigned)atoi(argv[1]));
  return 0;
}
