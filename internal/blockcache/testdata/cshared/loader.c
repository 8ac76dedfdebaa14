// loader dlopens the library named by argv[1] (as Python or a C program loads a Go
// c-shared library) and prints its BlockCacheState.
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	char *(*state)(void) = (char *(*)(void))dlsym(h, "BlockCacheState");
	if (state == NULL) {
		fprintf(stderr, "dlsym: %s\n", dlerror());
		return 1;
	}
	printf("%s\n", state());
	return 0;
}
