/* The run-time support of cuzk's native kernel library (cuzk/native/build.py).
 *
 * The library holds cuzk's CPU kernels compiled ahead of time by Numba (each as a cfunc with
 * a C signature) and linked with this file, so that a process loads them with ctypes and
 * never imports numba. Numba's generated code calls a small set of run-time functions that
 * its own process would provide; this file provides them, written for cuzk:
 *
 * - memory (Numba's NRT ABI): arrays a kernel allocates (np.empty) get a MemInfo header
 *   whose layout the generated code reads (refct, dtor, dtor_info, data, size, allocator:
 *   numba/core/runtime/nrt.h); the reference counting itself (NRT_incref / NRT_decref) is
 *   compiled into each kernel's module and calls NRT_MemInfo_call_dtor at zero;
 * - parallel loops (Numba's parfor ABI): a prange loop is split into a schedule of ranges
 *   (get_sched_size, do_scheduling_*: inclusive [start, end] per dimension, an empty range
 *   written as start 1, end 0) and run by numba_parallel_for, which calls the loop body once
 *   per schedule entry with the entry's slice of each argument; here the entries are handed
 *   out one at a time from a shared counter to threads started for the loop (a thread start
 *   is ~20-50 us; a proof runs a few dozen parallel loops), and a loop inside a loop's body
 *   runs on the thread that reached it;
 * - the thread count (get_num_threads, set per calling thread as Numba's is; the default is
 *   set by cuzk_native_init) and the chunk size (set_parallel_chunksize: 0 = one schedule
 *   entry per thread, k = about one entry per k iterations);
 * - the exception path: a cfunc that raises reports the error through Numba's helpers and
 *   returns; here numba_do_raise counts it (cuzk_native_errors), which the Python side checks
 *   after every call and turns into an exception.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int64_t intp;
typedef uint64_t uintp;

/* --- memory ------------------------------------------------------------------------------ */

typedef void (*dtor_fn)(void *data, size_t size, void *info);

typedef struct {
    size_t refct; /* atomically updated by the compiled NRT_incref / NRT_decref */
    dtor_fn dtor;
    void *dtor_info;
    void *data;
    size_t size;
    void *external_allocator;
} MemInfo;

static void free_data(void *data, size_t size, void *info) {
    (void)size;
    (void)info;
    free(data);
}

static MemInfo *alloc_aligned(size_t size, unsigned align) {
    MemInfo *mi = malloc(sizeof(MemInfo));
    void *data = NULL;
    size_t a = align < sizeof(void *) ? sizeof(void *) : align;
    if (mi == NULL)
        return NULL;
    if (posix_memalign(&data, a, size ? size : 1) != 0) {
        free(mi);
        return NULL;
    }
    mi->refct = 1;
    mi->dtor = free_data;
    mi->dtor_info = NULL;
    mi->data = data;
    mi->size = size;
    mi->external_allocator = NULL;
    return mi;
}

MemInfo *NRT_MemInfo_alloc_aligned(size_t size, unsigned align) { return alloc_aligned(size, align); }

MemInfo *NRT_MemInfo_alloc_safe_aligned(size_t size, unsigned align) {
    return alloc_aligned(size, align);
}

MemInfo *NRT_MemInfo_alloc(size_t size) { return alloc_aligned(size, 16); }

MemInfo *NRT_MemInfo_alloc_safe(size_t size) { return alloc_aligned(size, 16); }

void NRT_MemInfo_call_dtor(MemInfo *mi) {
    if (mi->dtor)
        mi->dtor(mi->data, mi->size, mi->dtor_info);
    free(mi);
}

void *NRT_Allocate(size_t size) { return malloc(size ? size : 1); }

void NRT_Free(void *ptr) { free(ptr); }

/* --- errors ------------------------------------------------------------------------------ */

static atomic_long errors;

long cuzk_native_errors(void) { return atomic_load(&errors); }

/* The interpreter's own functions, resolved when a Python process loads the library. */
extern int PyGILState_Ensure(void);
extern void PyGILState_Release(int state);
extern void PyErr_SetString(void *type, const char *message);
extern void *PyExc_RuntimeError;

/* A cfunc that raises takes the GIL (numba_gil_ensure), builds its exception (numba_unpickle,
 * numba_runtime_build_excinfo_struct: not kept here, NULL), raises it (numba_do_raise: a
 * RuntimeError), writes it as unraisable, releases the GIL and returns; the count tells the
 * Python side that the call failed. */
void *numba_unpickle(const char *data, int n, const char *hashed) {
    (void)data;
    (void)n;
    (void)hashed;
    return NULL;
}

void *numba_runtime_build_excinfo_struct(void *struct_gv, void *exc_args) {
    (void)struct_gv;
    (void)exc_args;
    return NULL;
}

int numba_do_raise(void *exc_packed) {
    (void)exc_packed;
    atomic_fetch_add(&errors, 1);
    PyErr_SetString(PyExc_RuntimeError, "a cuzk native kernel raised an exception");
    return 0;
}

void numba_gil_ensure(int *state) { *state = PyGILState_Ensure(); }

void numba_gil_release(int *state) { PyGILState_Release(*state); }

/* --- threads ----------------------------------------------------------------------------- */

static int default_threads = 1;
static _Thread_local int thread_count = 0;   /* 0: default_threads */
static _Thread_local uintp chunk_size = 0;
static _Thread_local int inside_loop = 0;    /* this thread runs a loop body */

void cuzk_native_init(int threads) { default_threads = threads > 0 ? threads : 1; }

int get_num_threads(void) { return thread_count > 0 ? thread_count : default_threads; }

void set_num_threads(int n) { thread_count = n; }

uintp set_parallel_chunksize(uintp n) {
    uintp old = chunk_size;
    chunk_size = n;
    return old;
}

uintp get_parallel_chunksize(void) { return chunk_size; }

static uintp total_iterations(uintp num_dim, const intp *starts, const intp *ends) {
    uintp total = 1;
    for (uintp d = 0; d < num_dim; d++) {
        intp len = ends[d] - starts[d] + 1;
        total *= len > 0 ? (uintp)len : 0;
    }
    return total;
}

uintp get_sched_size(uintp num_threads, uintp num_dim, intp *starts, intp *ends) {
    if (chunk_size == 0)
        return num_threads;
    uintp parts = total_iterations(num_dim, starts, ends) / chunk_size;
    return parts < num_threads ? num_threads : parts;
}

intp *allocate_sched(uintp size) { return malloc((size ? size : 1) * sizeof(intp)); }

void deallocate_sched(intp *sched) { free(sched); }

/* Entry e of the schedule covers, along the longest dimension, the e-th of `entries` nearly
 * equal parts (the first parts one longer), and every other dimension whole; entries beyond
 * the dimension's length are empty. Each entry is D starts then D ends, inclusive. */
static void schedule(uintp num_dim, const intp *starts, const intp *ends, uintp entries,
                     intp *out) {
    uintp split = 0;
    intp longest = -1;
    for (uintp d = 0; d < num_dim; d++) {
        intp len = ends[d] - starts[d] + 1;
        if (len > longest) {
            longest = len;
            split = d;
        }
    }
    uintp len = longest > 0 ? (uintp)longest : 0;
    uintp base = entries ? len / entries : 0, extra = entries ? len % entries : 0, at = 0;
    for (uintp e = 0; e < entries; e++) {
        intp *s = out + e * 2 * num_dim, *t = s + num_dim;
        uintp count = base + (e < extra ? 1 : 0);
        for (uintp d = 0; d < num_dim; d++) {
            s[d] = starts[d];
            t[d] = ends[d];
        }
        if (count == 0) {
            for (uintp d = 0; d < num_dim; d++) {
                s[d] = 1;
                t[d] = 0;
            }
            continue;
        }
        s[split] = starts[split] + (intp)at;
        t[split] = starts[split] + (intp)(at + count) - 1;
        at += count;
    }
}

void do_scheduling_signed(uintp num_dim, intp *starts, intp *ends, uintp num_threads,
                          intp *sched, intp debug) {
    (void)debug;
    if (num_threads)
        schedule(num_dim, starts, ends, num_threads, sched);
}

void do_scheduling_unsigned(uintp num_dim, intp *starts, intp *ends, uintp num_threads,
                            uintp *sched, intp debug) {
    (void)debug;
    if (num_threads)
        schedule(num_dim, starts, ends, num_threads, (intp *)sched);
}

typedef void (*loop_body)(char **args, size_t *dims, size_t *steps, void *data);

typedef struct {
    loop_body body;
    char **args;
    size_t *dims;
    size_t *steps;
    void *data;
    size_t inner_ndim;
    size_t array_count;
    int threads;
    atomic_size_t next;
} loop;

/* Run schedule entries taken from the shared counter until none is left. */
static void run_entries(loop *l) {
    size_t count[l->inner_ndim + 1];
    char *args[l->array_count ? l->array_count : 1];
    int was_inside = inside_loop;
    int was_threads = thread_count;
    inside_loop = 1;
    thread_count = l->threads;
    for (;;) {
        size_t r = atomic_fetch_add(&l->next, 1);
        if (r >= l->dims[0])
            break;
        memcpy(count, l->dims, (l->inner_ndim + 1) * sizeof(size_t));
        count[0] = 1;
        for (size_t j = 0; j < l->array_count; j++)
            args[j] = l->args[j] + l->steps[j] * r;
        l->body(args, count, l->steps, l->data);
    }
    inside_loop = was_inside;
    thread_count = was_threads;
}

static void *worker(void *arg) {
    run_entries((loop *)arg);
    return NULL;
}

void numba_parallel_for(void *fn, char **args, size_t *dims, size_t *steps, void *data,
                        size_t inner_ndim, size_t array_count, int num_threads) {
    loop l = {(loop_body)fn, args, dims, steps, data, inner_ndim, array_count, num_threads, 0};
    atomic_init(&l.next, 0);
    int helpers = num_threads - 1;
    if (inside_loop || helpers < 0)
        helpers = 0;
    if ((size_t)helpers > dims[0])
        helpers = dims[0] ? (int)dims[0] - 1 : 0;
    pthread_t tid[helpers > 0 ? helpers : 1];
    int started = 0;
    for (int i = 0; i < helpers; i++) {
        if (pthread_create(&tid[i], NULL, worker, &l) != 0)
            break; /* fewer threads: the entries are still all run */
        started++;
    }
    run_entries(&l);
    for (int i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
}
