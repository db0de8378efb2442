/* Included before the preload library by its tests. Under ThreadSanitizer (the tests' -tsan build)
 * the library's socket(), connect(), close()... take the place of TSan's interceptors of the same
 * names, both being in one executable; the libc functions the library then finds with RTLD_NEXT
 * would hide every close() from TSan, which would report the reuse of a descriptor number as a
 * race. So there the library's "next" function is TSan's interceptor, which goes on to libc's. In
 * every other build this file is empty. */
#ifndef TSAN_NEXT_H
#define TSAN_NEXT_H
#if defined(__SANITIZE_THREAD__)
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

int __interceptor_socket(int, int, int);
int __interceptor_connect(int, const struct sockaddr *, socklen_t);
int __interceptor_bind(int, const struct sockaddr *, socklen_t);
int __interceptor_listen(int, int);
int __interceptor_close(int);
int __interceptor_epoll_ctl(int, int, int, struct epoll_event *);
int __interceptor_epoll_create(int);
int __interceptor_epoll_create1(int);
int __interceptor_dup(int);
int __interceptor_dup2(int, int);
int __interceptor_dup3(int, int, int);
ssize_t __interceptor_sendmsg(int, const struct msghdr *, int);
int __interceptor_sendmmsg(int, struct mmsghdr *, unsigned int, int);

static void *tsan_next(void *handle, const char *name)
{
	static const struct {
		const char *name;
		void *f;
	} interceptors[] = {
		{"socket", (void *)__interceptor_socket},
		{"connect", (void *)__interceptor_connect},
		{"bind", (void *)__interceptor_bind},
		{"listen", (void *)__interceptor_listen},
		{"close", (void *)__interceptor_close},
		{"epoll_ctl", (void *)__interceptor_epoll_ctl},
		{"epoll_create", (void *)__interceptor_epoll_create},
		{"epoll_create1", (void *)__interceptor_epoll_create1},
		{"dup", (void *)__interceptor_dup},
		{"dup2", (void *)__interceptor_dup2},
		{"dup3", (void *)__interceptor_dup3},
		{"sendmsg", (void *)__interceptor_sendmsg},
		{"sendmmsg", (void *)__interceptor_sendmmsg},
	};
	/* setsockopt() and fcntl() have no interceptor: libc's, as in the library. */
	for (unsigned i = 0; i < sizeof(interceptors) / sizeof(interceptors[0]); i++)
		if (!strcmp(name, interceptors[i].name))
			return interceptors[i].f;
	return dlsym(handle, name);
}
#define dlsym tsan_next
#endif
#endif
