/* The preload library's per-descriptor records (record.h). A table indexed by descriptor, in chunks
 * of 1024 made on first use: a slot holds 0, EPOLL_TAG (a known epoll instance) or a struct rec *.
 * Slots are read without the lock (one or two atomic loads: close() and epoll_ctl() of every
 * descriptor ask), and written, like every record, under one mutex. A record lives only between a
 * socket's socket() and its connect(), bind() or listen(), so few exist at once and the lock is
 * rarely held. */
#define _GNU_SOURCE
#include "record.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_BITS 10
#define CHUNK (1u << CHUNK_BITS)
#define NCHUNKS 4096 /* descriptors up to 4M */
#define EPOLL_TAG ((uintptr_t)1)
#define MAX_INSTANCES 256

unsigned rec_generation;

static uintptr_t *chunks[NCHUNKS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int instances[MAX_INSTANCES];
static int ninstances;

void rec_lock(void)
{
	pthread_mutex_lock(&lock);
}

void rec_unlock(void)
{
	pthread_mutex_unlock(&lock);
}

int rec_trylock(void)
{
	return pthread_mutex_trylock(&lock);
}

static uintptr_t *chunk_of(int fd)
{
	if (fd < 0 || (unsigned)fd >= (unsigned)NCHUNKS * CHUNK)
		return NULL;
	return __atomic_load_n(&chunks[(unsigned)fd >> CHUNK_BITS], __ATOMIC_ACQUIRE);
}

static uintptr_t slot_load(int fd)
{
	uintptr_t *c = chunk_of(fd);
	return c ? __atomic_load_n(&c[(unsigned)fd & (CHUNK - 1)], __ATOMIC_ACQUIRE) : 0;
}

/* Under the lock: the slot of fd, its chunk made when `make`. */
static uintptr_t *slot_at(int fd, int make)
{
	uintptr_t *c = chunk_of(fd);
	if (!c && make && fd >= 0 && (unsigned)fd < (unsigned)NCHUNKS * CHUNK) {
		c = calloc(CHUNK, sizeof(*c));
		if (c)
			__atomic_store_n(&chunks[(unsigned)fd >> CHUNK_BITS], c, __ATOMIC_RELEASE);
	}
	return c ? &c[(unsigned)fd & (CHUNK - 1)] : NULL;
}

int rec_maybe(int fd)
{
	return slot_load(fd) != 0;
}

struct rec *rec_get(int fd)
{
	uintptr_t v = slot_load(fd);
	return v > EPOLL_TAG ? (struct rec *)v : NULL;
}

void rec_free(struct rec *r)
{
	if (!r)
		return;
	for (int i = 0; i < r->nopts; i++)
		free(r->opts[i]);
	free(r);
}

static void instance_drop(int fd)
{
	for (int i = 0; i < ninstances; i++)
		if (instances[i] == fd) {
			instances[i] = instances[--ninstances];
			return;
		}
}

void rec_forget(int fd)
{
	uintptr_t *s = slot_at(fd, 0);
	uintptr_t v;
	if (!s)
		return;
	v = __atomic_exchange_n(s, 0, __ATOMIC_ACQ_REL);
	if (v == EPOLL_TAG)
		instance_drop(fd);
	else if (v)
		rec_free((struct rec *)v);
}

struct rec *rec_open(int fd, ino_t ino)
{
	uintptr_t *s = slot_at(fd, 1);
	struct rec *r;
	if (!s)
		return NULL;
	rec_forget(fd);
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->ino = ino;
	r->gen = __atomic_load_n(&rec_generation, __ATOMIC_ACQUIRE);
	__atomic_store_n(s, (uintptr_t)r, __ATOMIC_RELEASE);
	return r;
}

struct rec *rec_take(int fd)
{
	uintptr_t *s = slot_at(fd, 0);
	uintptr_t v;
	if (!s)
		return NULL;
	v = __atomic_load_n(s, __ATOMIC_ACQUIRE);
	if (v <= EPOLL_TAG)
		return NULL;
	__atomic_store_n(s, 0, __ATOMIC_RELEASE);
	return (struct rec *)v;
}

void rec_keep(struct rec *r, int why)
{
	if (r && r->keep == KEEP_NONE)
		r->keep = why;
}

void rec_option(struct rec *r, int level, int name, const void *val, socklen_t len)
{
	struct rec_opt *o;
	if (r->keep)
		return;
	if (r->nopts == REC_MAX_OPTS || len > 4096 || !(o = malloc(sizeof(*o) + len))) {
		rec_keep(r, KEEP_FULL);
		return;
	}
	o->level = level;
	o->name = name;
	o->len = len;
	if (len)
		memcpy(o->val, val, len);
	r->opts[r->nopts++] = o;
}

void rec_epoll(struct rec *r, int epfd, ino_t epino, int op, const struct epoll_event *ev)
{
	int i;
	if (r->keep)
		return;
	for (i = 0; i < r->neps; i++)
		if (r->eps[i].epfd == epfd && r->eps[i].ino == epino)
			break;
	if (op == EPOLL_CTL_DEL) {
		if (i < r->neps)
			r->eps[i] = r->eps[--r->neps];
		return;
	}
	if (i == r->neps) {
		if (r->neps == REC_MAX_EPS) {
			rec_keep(r, KEEP_FULL);
			return;
		}
		r->neps++;
	}
	r->eps[i].epfd = epfd;
	r->eps[i].ino = epino;
	if (ev)
		r->eps[i].ev = *ev;
	else
		memset(&r->eps[i].ev, 0, sizeof(r->eps[i].ev));
}

void rec_epoll_instance(int epfd)
{
	uintptr_t *s;
	rec_lock();
	s = slot_at(epfd, 1);
	if (s) {
		rec_forget(epfd);
		if (ninstances < MAX_INSTANCES) {
			instances[ninstances++] = epfd;
			__atomic_store_n(s, EPOLL_TAG, __ATOMIC_RELEASE);
		}
	}
	rec_unlock();
}

int rec_epoll_instances(int *out, int max)
{
	int n = ninstances < max ? ninstances : max;
	memcpy(out, instances, (size_t)n * sizeof(*out));
	return n;
}
