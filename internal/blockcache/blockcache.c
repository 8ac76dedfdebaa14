//go:build linux && cgo

// The block cache: this program's malloc, calloc, realloc, free and the aligned variants.
// Requests of at least BC_MIN bytes are served from blocks of a reserved address range
// and kept when freed, for the next request of a similar size; every other request, and
// every pointer outside the range, goes to glibc's own functions (__libc_malloc and kin).
// See blockcache.go for why, and docs/hostmalloc.md for the measurements.

#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <link.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "blockcache.h"

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

#define BC_GRAIN ((size_t)2 << 20)       // blocks start and end on 2 MiB boundaries
#define BC_MIN ((size_t)256 << 10)       // requests this large or larger are cached (blockcache.go: why)
#define BC_REGION ((size_t)1 << 40)      // 1 TiB of address space, PROT_NONE until used
#define BC_SLOTS (BC_REGION / BC_GRAIN)  // one capacity entry per 2 MiB of the region
#define BC_FREE_MAX 1024                 // free blocks remembered
#define BC_LIMIT_MIN ((size_t)64 << 20)  // cached bytes always allowed

struct bc_free {
	uintptr_t addr;
	size_t cap;
	uint64_t tick;  // when it was freed (for releasing the least recently freed first)
	int resident;   // its pages are (or may be) resident
};

static pthread_once_t bc_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t bc_mu = PTHREAD_MUTEX_INITIALIZER;
static int bc_on;             // set once by bc_init; 0: every call goes to glibc
static uintptr_t bc_base;     // start of the region (0 until reserved)
static size_t *bc_cap;        // bc_cap[(p-bc_base)/BC_GRAIN]: capacity of the block at p (0: none)
static uintptr_t bc_bump;     // first never-used address
static struct bc_free bc_frees[BC_FREE_MAX];
static int bc_nfree;
static uint64_t bc_tick;
static struct bc_stats bc_st;

static void bc_lock(void) { pthread_mutex_lock(&bc_mu); }
static void bc_unlock(void) { pthread_mutex_unlock(&bc_mu); }

// bc_is_word: s is word, in any case, with only spaces and tabs around it: the comparison of
// envvar.Choice, which checks the variable's value in Go (accelerator.New refuses any other).
static int bc_is_word(const char *s, const char *word) {
	while (*s == ' ' || *s == '\t') s++;
	size_t n = strlen(word);
	if (strncasecmp(s, word, n) != 0) return 0;
	for (s += n; *s == ' ' || *s == '\t'; s++) {
	}
	return *s == '\0';
}

// bc_off_by_env: GOACCEL_HOST_MALLOC=system asks for glibc's defaults, and a GLIBC_TUNABLES
// (the user's own, or the hostmalloc package's re-execution) means glibc is set up already.
static int bc_off_by_env(void) {
	const char *v = getenv("GOACCEL_HOST_MALLOC");
	if (v != NULL && bc_is_word(v, "system")) return 1;
	const char *t = getenv("GLIBC_TUNABLES");
	return t != NULL && *t != '\0';
}

void *malloc(size_t n);
// This file's malloc, reached directly (not through the dynamic linker's choice).
extern void *bc_own_malloc(size_t n) __attribute__((alias("malloc"), visibility("hidden")));

// bc_in_main_executable: this code is part of the program's executable, whose definitions
// come first for every library; not so in a shared library (-buildmode=c-shared), where
// libraries bound to glibc's free would be handed the cache's blocks. Read from the
// executable's program headers (getauxval takes no lock, unlike dlsym or dl_iterate_phdr).
static int bc_in_main_executable(void) {
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)getauxval(AT_PHDR);
	size_t n = getauxval(AT_PHNUM);
	if (ph == NULL || n == 0) return 0;
	uintptr_t bias = 0;
	for (size_t i = 0; i < n; i++) {
		if (ph[i].p_type == PT_PHDR) bias = (uintptr_t)ph - ph[i].p_vaddr;
	}
	uintptr_t self = (uintptr_t)&bc_own_malloc;
	for (size_t i = 0; i < n; i++) {
		if (ph[i].p_type != PT_LOAD) continue;
		uintptr_t lo = bias + ph[i].p_vaddr;
		if (self >= lo && self - lo < ph[i].p_memsz) return 1;
	}
	return 0;
}

static void bc_init(void) {
	if (bc_off_by_env()) {
		bc_st.off = 1;
		return;
	}
	if (!bc_in_main_executable()) {
		bc_st.off = 3;
		return;
	}
	void *r = mmap(NULL, BC_REGION, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	void *t = mmap(NULL, BC_SLOTS * sizeof(size_t), PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r == MAP_FAILED || t == MAP_FAILED) {
		if (r != MAP_FAILED) munmap(r, BC_REGION);
		if (t != MAP_FAILED) munmap(t, BC_SLOTS * sizeof(size_t));
		bc_st.off = 2;
		return;
	}
	uintptr_t base = ((uintptr_t)r + BC_GRAIN - 1) & ~(BC_GRAIN - 1);
	bc_cap = t;
	bc_base = bc_bump = base;
	pthread_atfork(bc_lock, bc_unlock, bc_unlock);
	__atomic_store_n(&bc_on, 1, __ATOMIC_RELEASE);
}

static int bc_enabled(void) {
	if (__atomic_load_n(&bc_on, __ATOMIC_ACQUIRE)) return 1;
	pthread_once(&bc_once, bc_init);
	return __atomic_load_n(&bc_on, __ATOMIC_ACQUIRE);
}

// bc_ours says whether p is a block of the region (bc_base is set before bc_on).
static int bc_ours(const void *p) {
	uintptr_t b = __atomic_load_n(&bc_base, __ATOMIC_ACQUIRE);
	return b != 0 && (uintptr_t)p - b < BC_REGION - BC_GRAIN;
}

static size_t *bc_slot(uintptr_t p) { return &bc_cap[(p - bc_base) / BC_GRAIN]; }

// bc_limit: the resident bytes allowed in blocks, in use and cached: the most ever in use
// at once, plus a quarter for the steps that overlap (XLA allocates the next execution's
// temporaries before the last one's are freed), so the cache holds at most 1.25 times
// what glibc's defaults would have resident at the program's own peak in blocks.
static size_t bc_limit(void) {
	size_t l = bc_st.peak_live + bc_st.peak_live / 4;
	return l > BC_LIMIT_MIN ? l : BC_LIMIT_MIN;
}

static void bc_remove_free(int i) { bc_frees[i] = bc_frees[--bc_nfree]; }

// bc_release gives the pages of the least recently freed resident blocks back to the
// kernel (their addresses stay cached) until the bytes in use and cached are within bc_limit.
static void bc_release(void) {
	while (bc_st.live + bc_st.cached > bc_limit()) {
		int lru = -1;
		for (int i = 0; i < bc_nfree; i++) {
			if (bc_frees[i].resident && (lru < 0 || bc_frees[i].tick < bc_frees[lru].tick)) lru = i;
		}
		if (lru < 0) return;
		madvise((void *)bc_frees[lru].addr, bc_frees[lru].cap, MADV_DONTNEED);
		bc_frees[lru].resident = 0;
		bc_st.cached -= bc_frees[lru].cap;
		bc_st.released += bc_frees[lru].cap;
	}
}

// bc_alloc returns a block of at least n bytes (n >= BC_MIN), or NULL for glibc to serve.
// *fresh is 1 when the block's memory is known to be zero.
static void *bc_alloc(size_t n, int *fresh) {
	if (n > BC_REGION / 4) return NULL;
	size_t need = (n + BC_GRAIN - 1) & ~(BC_GRAIN - 1);
	void *p = NULL;
	bc_lock();
	// A resident block at most twice the size (best fit), else any released one that fits
	// (its address range is reused; its pages fault in afresh), else new address space.
	int best = -1, best_released = -1;
	for (int i = 0; i < bc_nfree; i++) {
		struct bc_free *f = &bc_frees[i];
		if (f->cap < need) continue;
		if (f->resident) {
			// Of the smallest that fit, the most recently freed: its lines may still be in
			// the CPU's caches (a buffer freed and asked for again within one step).
			if (f->cap <= 2 * need && (best < 0 || f->cap < bc_frees[best].cap ||
			                           (f->cap == bc_frees[best].cap && f->tick > bc_frees[best].tick)))
				best = i;
		} else if (best_released < 0 || f->cap < bc_frees[best_released].cap) {
			best_released = i;
		}
	}
	if (best >= 0) {
		p = (void *)bc_frees[best].addr;
		bc_st.cached -= bc_frees[best].cap;
		bc_st.live += bc_frees[best].cap;
		bc_st.reused++;
		*fresh = 0;
		bc_remove_free(best);
	} else if (best_released >= 0) {
		p = (void *)bc_frees[best_released].addr;
		bc_st.live += bc_frees[best_released].cap;
		bc_st.fresh++;
		*fresh = 1;
		bc_remove_free(best_released);
	} else if (bc_bump + need <= bc_base + BC_REGION - BC_GRAIN &&
	           mprotect((void *)bc_bump, need, PROT_READ | PROT_WRITE) == 0) {
		p = (void *)bc_bump;
		bc_bump += need;
		*bc_slot((uintptr_t)p) = need;
		bc_st.live += need;
		bc_st.fresh++;
		bc_st.reserved = bc_bump - bc_base;
		*fresh = 1;
	}
	if (p != NULL && bc_st.live > bc_st.peak_live) bc_st.peak_live = bc_st.live;
	if (p != NULL && *fresh) bc_release();  // new pages: make room for them in the limit
	if (p == NULL) bc_st.fallback++;
	bc_unlock();
	return p;
}

static void bc_free_block(void *p) {
	int saved = errno;
	bc_lock();
	size_t cap = *bc_slot((uintptr_t)p);
	for (int i = 0; i < bc_nfree && cap != 0; i++) {
		if (bc_frees[i].addr == (uintptr_t)p) cap = 0;  // freed twice
	}
	if (cap == 0) {
		static const char msg[] = "blockcache: free(): invalid pointer or double free of a large block\n";
		write(2, msg, sizeof msg - 1);
		abort();
	}
	bc_st.live -= cap;
	if (bc_nfree == BC_FREE_MAX) {
		// Forget the least recently freed block: its pages go back to the kernel and its
		// address range is not used again.
		int lru = 0;
		for (int i = 1; i < bc_nfree; i++) {
			if (bc_frees[i].tick < bc_frees[lru].tick) lru = i;
		}
		madvise((void *)bc_frees[lru].addr, bc_frees[lru].cap, MADV_DONTNEED);
		if (bc_frees[lru].resident) bc_st.cached -= bc_frees[lru].cap;
		bc_remove_free(lru);
	}
	bc_frees[bc_nfree++] = (struct bc_free){(uintptr_t)p, cap, ++bc_tick, 1};
	bc_st.cached += cap;
	bc_release();
	bc_unlock();
	errno = saved;
}

void *malloc(size_t n) {
	if (n >= BC_MIN && bc_enabled()) {
		int fresh;
		void *p = bc_alloc(n, &fresh);
		if (p != NULL) return p;
	}
	return __libc_malloc(n);
}

void free(void *p) {
	if (bc_ours(p)) {
		bc_free_block(p);
		return;
	}
	__libc_free(p);
}

void *calloc(size_t n, size_t size) {
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	if (total >= BC_MIN && bc_enabled()) {
		int fresh;
		void *p = bc_alloc(total, &fresh);
		if (p != NULL) {
			if (!fresh) memset(p, 0, total);
			return p;
		}
	}
	return __libc_calloc(n, size);
}

size_t malloc_usable_size(void *p) {
	if (p == NULL) return 0;
	if (bc_ours(p)) return *bc_slot((uintptr_t)p);
	// glibc's own, looked up once past this program's definition.
	static size_t (*next)(void *);
	size_t (*f)(void *) = __atomic_load_n(&next, __ATOMIC_ACQUIRE);
	if (f == NULL) {
		f = (size_t (*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
		if (f == NULL) return 0;
		__atomic_store_n(&next, f, __ATOMIC_RELEASE);
	}
	return f(p);
}

void *realloc(void *p, size_t n) {
	if (p == NULL) return malloc(n);
	if (!bc_ours(p)) return __libc_realloc(p, n);
	if (n == 0) {
		free(p);
		return NULL;
	}
	size_t cap = *bc_slot((uintptr_t)p);
	if (n <= cap && n >= BC_MIN) return p;
	void *q = malloc(n);
	if (q == NULL) return NULL;
	memcpy(q, p, n < cap ? n : cap);
	free(p);
	return q;
}

void *reallocarray(void *p, size_t n, size_t size) {
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, total);
}

static void *bc_aligned(size_t align, size_t n) {
	if (n >= BC_MIN && align <= BC_GRAIN && bc_enabled()) {
		int fresh;
		void *p = bc_alloc(n, &fresh);
		if (p != NULL) return p;
	}
	return __libc_memalign(align, n);
}

void *memalign(size_t align, size_t n) { return bc_aligned(align, n); }

void *aligned_alloc(size_t align, size_t n) { return bc_aligned(align, n); }

int posix_memalign(void **out, size_t align, size_t n) {
	if (align % sizeof(void *) != 0 || (align & (align - 1)) != 0 || align == 0) return EINVAL;
	int saved = errno;
	void *p = bc_aligned(align, n);
	if (p == NULL) {
		int e = errno;
		errno = saved;
		return e != 0 ? e : ENOMEM;
	}
	*out = p;
	errno = saved;
	return 0;
}

void *valloc(size_t n) { return bc_aligned((size_t)sysconf(_SC_PAGESIZE), n); }

void *pvalloc(size_t n) {
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	return bc_aligned(page, (n + page - 1) & ~(page - 1));
}

void free_sized(void *p, size_t n) {
	(void)n;
	free(p);
}

void free_aligned_sized(void *p, size_t align, size_t n) {
	(void)align;
	(void)n;
	free(p);
}

void bc_stats(struct bc_stats *out) {
	bc_lock();
	*out = bc_st;
	out->on = bc_on;
	bc_unlock();
}

int bc_owns(const void *p) { return bc_ours(p); }

size_t bc_min(void) { return BC_MIN; }
