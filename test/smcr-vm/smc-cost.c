/* smc-cost: what a connection costs, timed from inside a pod of the SMC-R test VM
 * (bench/smc-cost.ts). A plain TCP program: socket(AF_INET, SOCK_STREAM, 0), as applications open
 * theirs, so the pod's mechanism (the IPPROTO_SMC BPF program, or the preload library) decides what
 * it gets. Dynamically linked, so that the preload library reaches it.
 *
 *   smc-cost server PORT          on PORT: per connection, echo what it reads (100-byte
 *                                 exchanges) until EOF; on PORT+1: read to EOF (the bulk sink)
 *   smc-cost client ADDR PORT connect N    N times: socket, connect, close
 *   smc-cost client ADDR PORT rr N         N times: socket, connect, 100 bytes out, 100 back, close
 *   smc-cost client ADDR PORT bulk BYTES   one connection to PORT+1, BYTES out, wait for EOF
 *   smc-cost client ADDR PORT pingpong N   one connection, N exchanges of SMC_COST_SIZE bytes
 *                                          (default 1) each way: request/response on a
 *                                          long-lived connection (bench/smc-gain.ts)
 *
 * With SMC_COST_NONBLOCK=1 in its environment the client connects as an event loop does (libuv,
 * asyncio): a SOCK_NONBLOCK socket, connect() until EINPROGRESS, poll() until writable, then the
 * exchange blocking.
 *
 * The client prints one line: the latencies' p50, p99 and mean in microseconds (from before
 * socket() to after connect, or to the reply), its own CPU (user + system) per connection, and
 * the protocol of its last socket (tcp or smc: what the mechanism gave it). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MSG 100
#ifndef IPPROTO_SMC
#define IPPROTO_SMC 256
#endif
#ifndef AF_SMC
#define AF_SMC 43
#endif

static void die(const char *what)
{
	fprintf(stderr, "smc-cost: %s: %s\n", what, strerror(errno));
	exit(2);
}

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static double cpu_us(void)
{
	struct rusage r;
	getrusage(RUSAGE_SELF, &r);
	return (r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1e6 + r.ru_utime.tv_usec + r.ru_stime.tv_usec;
}

static int full_io(int fd, char *buf, size_t n, int out)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = out ? write(fd, buf + done, n - done) : read(fd, buf + done, n - done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

static int listener(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		die("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 512))
		die("bind/listen");
	return fd;
}

/* Echoes each connection until EOF (sink: reads and drops); one connection at a time. */
static void serve(int lfd, int sink)
{
	static char buf[1 << 16];
	for (;;) {
		int c = accept(lfd, NULL, NULL);
		ssize_t r;
		if (c < 0) {
			if (errno == EINTR)
				continue;
			die("accept");
		}
		while ((r = read(c, buf, sizeof(buf))) > 0)
			if (!sink && full_io(c, buf, (size_t)r, 1))
				break;
		close(c);
	}
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static const char *proto_of(int fd)
{
	int p = 0, d = 0;
	socklen_t l = sizeof(p);
	getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &p, &l);
	l = sizeof(d);
	getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &d, &l);
	return d == AF_SMC || p == IPPROTO_SMC ? "smc" : "tcp";
}

/* connect() as an event loop makes it: non-blocking, then poll() for the outcome; blocking after. */
static void connect_nonblocking(int fd, const struct sockaddr_in *a)
{
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	int err = 0;
	socklen_t l = sizeof(err);
	if (connect(fd, (const struct sockaddr *)a, sizeof(*a)) && errno != EINPROGRESS)
		die("connect");
	if (poll(&p, 1, 10000) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l) || err) {
		errno = err ? err : ETIMEDOUT;
		die("connect (non-blocking)");
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK))
		die("fcntl");
}

static int dial(const struct sockaddr_in *a, const char **proto)
{
	static int nonblocking = -1;
	int fd, one = 1;
	if (nonblocking < 0)
		nonblocking = getenv("SMC_COST_NONBLOCK") && !strcmp(getenv("SMC_COST_NONBLOCK"), "1");
	fd = socket(AF_INET, SOCK_STREAM | (nonblocking ? SOCK_NONBLOCK : 0), 0);
	if (fd < 0)
		die("socket");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (nonblocking)
		connect_nonblocking(fd, a);
	else if (connect(fd, (const struct sockaddr *)a, sizeof(*a)))
		die("connect");
	/* After connect: what the socket is once the mechanism has had its say. */
	*proto = proto_of(fd);
	return fd;
}

static int client(const char *addr, int port, const char *mode, long n)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	const char *proto = "?";
	char msg[MSG];
	double *lat, cpu0, t0, sum = 0;
	long i;
	if (inet_pton(AF_INET, addr, &a.sin_addr) != 1)
		die("address");
	memset(msg, 'x', sizeof(msg));
	if (!strcmp(mode, "bulk")) {
		static char buf[1 << 16];
		long left = n;
		int fd;
		a.sin_port = htons((uint16_t)(port + 1));
		t0 = now_us();
		cpu0 = cpu_us();
		fd = dial(&a, &proto);
		while (left > 0) {
			size_t k = left < (long)sizeof(buf) ? (size_t)left : sizeof(buf);
			if (full_io(fd, buf, k, 1))
				die("write");
			left -= (long)k;
		}
		shutdown(fd, SHUT_WR);
		while (read(fd, buf, sizeof(buf)) > 0)
			;
		close(fd);
		printf("mode=bulk bytes=%ld us=%.0f mbps=%.1f cpu_us=%.0f proto=%s\n", n, now_us() - t0,
		       n * 8 / (now_us() - t0), cpu_us() - cpu0, proto);
		return 0;
	}
	lat = calloc((size_t)n, sizeof(*lat));
	if (!lat)
		die("calloc");
	if (!strcmp(mode, "pingpong")) {
		size_t size = getenv("SMC_COST_SIZE") ? (size_t)atol(getenv("SMC_COST_SIZE")) : 1;
		char *m = malloc(size ? size : 1);
		int fd;
		if (!m || !size)
			die("SMC_COST_SIZE");
		memset(m, 'x', size);
		fd = dial(&a, &proto);
		cpu0 = cpu_us();
		for (i = 0; i < n; i++) {
			t0 = now_us();
			if (full_io(fd, m, size, 1) || full_io(fd, m, size, 0))
				die("exchange");
			lat[i] = now_us() - t0;
			sum += lat[i];
		}
		close(fd);
		free(m);
		qsort(lat, (size_t)n, sizeof(*lat), cmp);
		printf("mode=pingpong size=%zu n=%ld p50_us=%.0f p99_us=%.0f mean_us=%.0f cpu_us_per=%.1f proto=%s\n",
		       size, n, lat[n / 2], lat[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1], sum / n,
		       (cpu_us() - cpu0) / n, proto);
		free(lat);
		return 0;
	}
	cpu0 = cpu_us();
	for (i = 0; i < n; i++) {
		int fd;
		t0 = now_us();
		fd = dial(&a, &proto);
		if (!strcmp(mode, "rr") && (full_io(fd, msg, MSG, 1) || full_io(fd, msg, MSG, 0)))
			die("exchange");
		lat[i] = now_us() - t0;
		sum += lat[i];
		close(fd);
	}
	qsort(lat, (size_t)n, sizeof(*lat), cmp);
	printf("mode=%s n=%ld p50_us=%.0f p99_us=%.0f mean_us=%.0f cpu_us_per=%.1f proto=%s\n", mode, n,
	       lat[n / 2], lat[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1], sum / n, (cpu_us() - cpu0) / n,
	       proto);
	free(lat);
	return 0;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc == 3 && !strcmp(argv[1], "server")) {
		int port = atoi(argv[2]);
		int echo = listener(port), sink = listener(port + 1);
		if (fork() == 0)
			serve(sink, 1);
		serve(echo, 0);
	}
	if (argc == 6 && !strcmp(argv[1], "client"))
		return client(argv[2], atoi(argv[3]), argv[4], atol(argv[5]));
	fprintf(stderr, "usage: smc-cost server PORT | smc-cost client ADDR PORT connect|rr|bulk|pingpong N\n");
	return 2;
}
