// The block cache's state, for Stats (blockcache.go).
#include <stddef.h>
#include <stdint.h>

struct bc_stats {
	int on;            // 1: large requests are served from the cache
	int off;           // why not: 1 the environment turned it off, 2 the address range could not be reserved, 3 not the process's malloc
	size_t live;       // bytes in blocks handed out and not freed
	size_t peak_live;  // the most bytes ever in blocks at once
	size_t cached;     // bytes in freed blocks whose pages are kept
	size_t released;   // bytes given back to the kernel (cached blocks over the limit)
	size_t reserved;   // address space used so far
	uint64_t fresh;    // requests served with new pages
	uint64_t reused;   // requests served with a cached block's pages
	uint64_t fallback; // large requests passed to glibc (address range used up)
};

void bc_stats(struct bc_stats *out);
int bc_owns(const void *p);
size_t bc_min(void);
