// The C side of package mpi: a thin layer over an MPI library opened with dlopen at run time.
//
// MPI has three binary interfaces in use, which differ in how handles (communicators, datatypes,
// operations, requests) are represented:
//   - the MPI-5 standard ABI (libmpi_abi.so.1): handles are pointers with fixed small values;
//   - MPICH's ABI (libmpi.so.12, also Intel MPI and MVAPICH): handles are 32-bit ints;
//   - Open MPI's ABI (libmpi.so.40): handles are the addresses of exported global objects.
// Go sees every handle as an intptr_t (gs_handle) and every datatype and operation as a small
// enum of this file; the functions below convert to the library's own representation and call it
// through a function pointer of the right C type.
#ifndef GOACCEL_MPI_SHIM_H
#define GOACCEL_MPI_SHIM_H

#include <stdint.h>

typedef intptr_t gs_handle;

enum { GS_ABI_STANDARD = 1, GS_ABI_MPICH = 2, GS_ABI_OPENMPI = 3 };
enum { GS_BYTE = 1, GS_INT64 = 2, GS_FLOAT = 3, GS_DOUBLE = 4 };
enum { GS_SUM = 1, GS_MAX = 2, GS_MIN = 3 };

// Return codes of the shim itself; MPI's own error codes are >= 0.
enum { GS_TIMEOUT = -1, GS_ABORTED = -2, GS_NOT_OPEN = -3 };

// gs_open dlopens path and resolves every function the package uses. abi is one of GS_ABI_*,
// or 0 to detect it (Open MPI by its exported globals, the standard ABI by is_standard_name).
// On failure it returns non-zero and writes a message into err.
int gs_open(const char *path, int abi, int is_standard_name, char *err, int errlen);
int gs_abi(void);

int gs_init_thread_funneled(int *provided_ok);
int gs_finalize(void);
int gs_library_version(char *buf, int len);
void gs_error_string(int code, char *buf, int len);

int gs_comm_world(gs_handle *out);
int gs_comm_dup_world(gs_handle *out);
int gs_comm_rank(gs_handle comm, int *rank);
int gs_comm_size(gs_handle comm, int *size);
int gs_local(gs_handle comm, int *lrank, int *lsize);

// sbuf == NULL means in place (MPI_IN_PLACE).
int gs_allreduce(const void *sbuf, void *rbuf, int count, int dt, int op, gs_handle comm);
int gs_iallreduce(const void *sbuf, void *rbuf, int count, int dt, int op, gs_handle comm, gs_handle *req);
int gs_ibcast(void *buf, int count, int dt, int root, gs_handle comm, gs_handle *req);
int gs_iallgather(const void *sbuf, void *rbuf, int count, int dt, gs_handle comm, gs_handle *req);
int gs_iallgatherv(const void *sbuf, int scount, void *rbuf, const int *counts, const int *displs,
                   gs_handle comm, gs_handle *req);
// Every rank sends count*size elements of sbuf and receives its block of count sums in rbuf
// (MPI_Ireduce_scatter_block; sbuf and rbuf must not overlap).
int gs_ireduce_scatter_block(const void *sbuf, void *rbuf, int count, int dt, int op, gs_handle comm, gs_handle *req);
// Every rank sends block r of count elements of sbuf to rank r and receives rank r's block for
// it into block r of rbuf (MPI_Ialltoall; sbuf and rbuf must not overlap).
int gs_ialltoall(const void *sbuf, void *rbuf, int count, int dt, gs_handle comm, gs_handle *req);
int gs_ibarrier(gs_handle comm, gs_handle *req);
// Zero-byte messages: the "I have arrived" side channel of the collectives.
int gs_isend0(int dest, int tag, gs_handle comm, gs_handle *req);
int gs_irecv0(int src, int tag, gs_handle comm, gs_handle *req);

// gs_wait tests reqs[i] for every i with done[i] == 0 until all are done, timeout_s passes
// (GS_TIMEOUT) or gs_request_abort was called (GS_ABORTED). reqs[0..ndata) are the data
// operations, reqs[ndata..ndata+nrecv) the arrival messages received from peers, the rest the
// arrival messages sent. While an arrival is missing the wait backs off (a peer is late, and
// spinning would only steal its CPU on a shared host); once all arrived it polls flat out, as a
// blocking MPI call does. On an MPI error it returns the code and sets *failed to the index of
// the failing request.
int gs_wait(gs_handle *reqs, int *done, int n, int ndata, int nrecv, double timeout_s, int *failed);

// gs_cancel cancels the n requests (MPI_Cancel) and waits up to timeout_s for each to complete,
// freeing it (a cancelled receive completes at once; a send already delivered completes as
// sent). A request still incomplete then is freed anyway (MPI_Request_free). It returns the
// first error, or GS_TIMEOUT when a request had to be freed incomplete.
int gs_cancel(gs_handle *reqs, int n, double timeout_s);

int gs_abort(gs_handle comm, int code);
void gs_request_abort(void);
void gs_exit(int code);

#endif
