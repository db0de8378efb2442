/* What the preload library knows of each socket it may still swap (#99): the options the program set
 * on it, the epoll sets it is in, and why it can no longer be swapped, from socket() until the
 * socket's connect(), bind() or listen() settles what it is. A swapped socket is a new open file:
 * whatever the program built on the old one must be made again on the new one, or the swap must not
 * happen (smc_preload.c's carry()). */
#ifndef ERDMA_SMCR_PRELOAD_RECORD_H
#define ERDMA_SMCR_PRELOAD_RECORD_H

#include <stdint.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/types.h>

/* Why a socket stays what the program asked for (TCP, the safe side), counted per process. */
enum keep_reason {
	KEEP_NONE,
	KEEP_DUP,     /* the descriptor was duplicated (dup, dup2, dup3, F_DUPFD) */
	KEEP_SENT,    /* the descriptor was sent to another process (SCM_RIGHTS) */
	KEEP_FORK,    /* a fork() shares the socket with another process */
	KEEP_UNSEEN,  /* an epoll registration the library did not see */
	KEEP_OPTION,  /* an option the program set is refused by the new socket */
	KEEP_BOUND,   /* bound to a port before connect(): a new socket would get another */
	KEEP_UNKNOWN, /* a socket the library did not see made (no record) */
	KEEP_FULL,    /* more options or epoll sets than a record holds, or no memory */
	KEEP_FAILED,  /* the new socket could not be made or put in place */
	KEEP_NREASONS
};

#define REC_MAX_OPTS 48
#define REC_MAX_EPS 8

struct rec_opt {
	int level, name;
	socklen_t len;
	unsigned char val[];
};

struct rec_ep {
	int epfd;
	ino_t ino; /* the epoll instance's inode: a number reused by another instance is not it */
	struct epoll_event ev;
};

struct rec {
	ino_t ino;    /* the socket's inode at socket() */
	unsigned gen; /* the fork generation at socket() */
	int keep;     /* enum keep_reason: KEEP_NONE while it can be swapped */
	int nopts, neps;
	socklen_t boundlen; /* a bind() to port 0 made (IP_BIND_ADDRESS_NO_PORT): made again */
	struct sockaddr_storage bound;
	struct rec_opt *opts[REC_MAX_OPTS];
	struct rec_ep eps[REC_MAX_EPS];
};

/* The process's fork generation: bumped before each fork() (pthread_atfork). */
extern unsigned rec_generation;

void rec_lock(void);
void rec_unlock(void);
/* 0 when the lock was free and is now held. */
int rec_trylock(void);

/* 1 when fd has a record or is a known epoll instance: one atomic load or two, no lock (the calls
 * event loops make often ask this first). */
int rec_maybe(int fd);

/* Under rec_lock(): fd's record, or NULL. */
struct rec *rec_get(int fd);
/* Under rec_lock(): a new record for the socket fd (inode ino), in place of any older one; NULL
 * without memory. */
struct rec *rec_open(int fd, ino_t ino);
/* Under rec_lock(): fd's record, taken out of the table (the caller frees it with rec_free). */
struct rec *rec_take(int fd);
void rec_free(struct rec *r);
/* Under rec_lock(): forgets fd (closed, or another file in its place). */
void rec_forget(int fd);

/* Under rec_lock(): records a setsockopt() the kernel accepted. */
void rec_option(struct rec *r, int level, int name, const void *val, socklen_t len);
/* Under rec_lock(): records an epoll_ctl() the kernel accepted. */
void rec_epoll(struct rec *r, int epfd, ino_t epino, int op, const struct epoll_event *ev);
/* Under rec_lock(): r can no longer be swapped, for `why` (the first reason stays). */
void rec_keep(struct rec *r, int why);

/* Known epoll instances (epoll_create*): the ones whose registrations the library can check. */
void rec_epoll_instance(int epfd);
/* Under rec_lock(): copies up to max known epoll descriptors into out; returns how many. */
int rec_epoll_instances(int *out, int max);

#endif
