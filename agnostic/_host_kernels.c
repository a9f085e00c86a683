/* ReLU, its gradient and Adam's update over CPU arrays, on the threads of NumPy's OpenBLAS.
 *
 * NumPy's ufuncs run on one core, one operation per pass; PyTorch runs these passes on the threads of its matrix
 * products. agnostic/_host_kernels.py calls the exported functions through ctypes (which releases the GIL)
 * for contiguous float32/float64 arrays, and uses NumPy where this library was not built. The results are NumPy's:
 * ReLU is a comparison and a choice per element, and Adam does NumPy's operations in NumPy's order, in the
 * parameter's dtype, with no fused multiply-adds (built with -ffp-contract=off).
 *
 * The threads: during a training step OpenBLAS's threads are awake (they poll for work between matrix products), so
 * a task is split into parts that OpenBLAS's own dispatcher, blas_level1_thread_with_return_value (exported by its
 * library, though not in its headers), hands to them. That function gives part i the pointer `c + 16 i`, which is
 * all a part needs: `c` points to an array of `struct part`. Python passes the dispatcher's address; a self-test
 * checks on first use that every part runs once, else tasks run in the calling thread, as they do without
 * OpenBLAS. Another pool of threads would fight OpenBLAS's polling threads for the cores. */

#include <Python.h>
#include <math.h>
#include <stdint.h>

#define MAX_PARTS 64     /* parts of one task, at most */
#define MIN_PART 16384   /* elements: smaller parts cost more to hand out than to compute */
#define DOUBLE_MODE 3    /* the dispatcher's mode: a real double routine in every OpenBLAS (BLAS_DOUBLE is 3 since
                            bfloat16 came, and its bit was 1 before); it only decides how alpha is passed */

enum kind { RELU_F32, RELU_F64, RELU_GRADIENT_F32, RELU_GRADIENT_F64, ADAM_F32, ADAM_F64, PROBE };

/* Adam's arrays and scalars, as agnostic/optim/_fused.py's _adam_host names them. */
enum adam_scalar { WEIGHT_DECAY, DECAY, ONE_MINUS_BETA1, BETA1_COMPLEMENT, BETA2, ONE_MINUS_BETA2,
                   BIAS_CORRECTION2_SQRT, EPS, NEG_STEP_SIZE, ADAM_SCALARS };
enum adam_flag { MAXIMIZE = 1, DECOUPLED = 2, AMSGRAD = 4 };
struct adam {
    void *param, *exp_avg, *exp_avg_sq, *max_exp_avg_sq;
    const void *grad;
    double scalars[ADAM_SCALARS];
    int flags;
};

struct task {
    enum kind kind;
    const void *input;  /* relu: x; gradient: the layer's input (or output) */
    const void *grad;   /* gradient only */
    void *out;          /* relu, gradient; PROBE: an int per part, incremented by it */
    const struct adam *adam; /* Adam only */
    int64_t count, parts;
};

struct part { /* 16 bytes: the stride blas_level1_thread_with_return_value gives `c` */
    const struct task *task;
    int64_t index;
};
_Static_assert(sizeof(struct part) == 16, "a part must fill the dispatcher's 16-byte stride");

typedef int (*dispatcher)(int mode, int64_t m, int64_t n, int64_t k, void *alpha, void *a, int64_t lda, void *b,
                          int64_t ldb, void *c, int64_t ldc, void *routine, int threads);
typedef int (*thread_counter)(void);
static dispatcher dispatch = NULL;  /* OpenBLAS's, or NULL: tasks run in the caller */
static thread_counter blas_threads; /* OpenBLAS's thread count, read per task (agnostic.set_num_threads sets it) */
static int dispatch_works = 0;      /* 1: the self-test passed; -1: it failed; 0: not run yet */
static int64_t max_parts = 1;       /* the CPUs this process may use: more parts than cores only wait on each other */

/* Adam's first and second moments of element i, written back; leaves the decayed parameter in `param`, the new
 * moments in `avg` and `square`. Branch-free, so that the compiler vectorizes it: `-g` is `g * -1` and an
 * undecayed parameter is `p * 1`, both exact. */
#define ADAM_MOMENTS                                                                                           \
    param = p[i] * decay;                                                                                      \
    grad = g[i] * sign;                                                                                        \
    grad = l2 ? grad + param * weight_decay : grad;                                                            \
    diff = grad - m[i];                                                                                        \
    avg = small_weight ? m[i] + diff * w : grad - diff * one_minus_w;                                          \
    square = v[i] * beta2;                                                                                     \
    square = square + (grad * grad) * one_minus_beta2;                                                         \
    m[i] = avg;                                                                                                \
    v[i] = square;

/* adam_float / adam_double: one Adam step on elements [start, stop). */
#define DEFINE_ADAM(NAME, T, SQRT)                                                                             \
    static void NAME(const struct adam *a, int64_t start, int64_t stop) {                                      \
        T *p = a->param, *m = a->exp_avg, *v = a->exp_avg_sq, *v_max = a->max_exp_avg_sq;                      \
        const T *g = a->grad;                                                                                  \
        const T weight_decay = (T)a->scalars[WEIGHT_DECAY];                                                    \
        const T w = (T)a->scalars[ONE_MINUS_BETA1], one_minus_w = (T)a->scalars[BETA1_COMPLEMENT];             \
        const T beta2 = (T)a->scalars[BETA2], one_minus_beta2 = (T)a->scalars[ONE_MINUS_BETA2];                \
        const T correction = (T)a->scalars[BIAS_CORRECTION2_SQRT], eps = (T)a->scalars[EPS];                   \
        const T neg_step = (T)a->scalars[NEG_STEP_SIZE];                                                       \
        const int decoupled = (a->flags & DECOUPLED) != 0, l2 = !decoupled && weight_decay != 0;               \
        const T decay = decoupled && weight_decay != 0 ? (T)a->scalars[DECAY] : (T)1;                          \
        const T sign = a->flags & MAXIMIZE ? (T)-1 : (T)1;                                                     \
        const int small_weight = -0.5 < w && w < 0.5; /* lerp's formula nearer the larger coefficient */       \
        T param, grad, diff, avg, square, largest;                                                             \
        int64_t i;                                                                                             \
        if (!(a->flags & AMSGRAD)) {                                                                           \
            for (i = start; i < stop; i++) {                                                                   \
                ADAM_MOMENTS                                                                                   \
                p[i] = param + (avg / (SQRT(square) / correction + eps)) * neg_step;                           \
            }                                                                                                  \
            return;                                                                                            \
        }                                                                                                      \
        for (i = start; i < stop; i++) {                                                                       \
            ADAM_MOMENTS                                                                                       \
            largest = v_max[i];                                                                                \
            largest = largest != largest || largest >= square ? largest : square; /* NumPy's maximum */        \
            v_max[i] = largest;                                                                                \
            p[i] = param + (avg / (SQRT(largest) / correction + eps)) * neg_step;                              \
        }                                                                                                      \
    }

DEFINE_ADAM(adam_float, float, sqrtf)
DEFINE_ADAM(adam_double, double, sqrt)

static void run_range(const struct task *t, int64_t start, int64_t stop) {
    int64_t i;
    switch (t->kind) {
    case RELU_F32: {
        const float *x = t->input;
        float *y = t->out;
        for (i = start; i < stop; i++) y[i] = (x[i] > 0.0f || x[i] != x[i]) ? x[i] : 0.0f;
        break;
    }
    case RELU_F64: {
        const double *x = t->input;
        double *y = t->out;
        for (i = start; i < stop; i++) y[i] = (x[i] > 0.0 || x[i] != x[i]) ? x[i] : 0.0;
        break;
    }
    case RELU_GRADIENT_F32: {
        const float *x = t->input, *g = t->grad;
        float *y = t->out;
        for (i = start; i < stop; i++) {
            float value = g[i]; /* read unconditionally, so that the compiler can vectorize the choice */
            y[i] = x[i] > 0.0f ? value : 0.0f;
        }
        break;
    }
    case RELU_GRADIENT_F64: {
        const double *x = t->input, *g = t->grad;
        double *y = t->out;
        for (i = start; i < stop; i++) {
            double value = g[i];
            y[i] = x[i] > 0.0 ? value : 0.0;
        }
        break;
    }
    case ADAM_F32:
        adam_float(t->adam, start, stop);
        break;
    case ADAM_F64:
        adam_double(t->adam, start, stop);
        break;
    case PROBE:
        break;
    }
}

/* OpenBLAS's legacy routine signature (m, n, k, alpha, a, lda, b, ldb, c, ldc, buffer): `m` consecutive parts
 * from the one `c` points to. Only integer and pointer arguments are read, which sit in the same registers whether
 * alpha is passed as a float or a double. */
static int run_parts(int64_t m, int64_t n, int64_t k, double alpha, void *a, int64_t lda, void *b, int64_t ldb,
                     void *c, int64_t ldc, void *buffer) {
    const struct part *part = c;
    int64_t j;
    (void)n, (void)k, (void)alpha, (void)a, (void)lda, (void)b, (void)ldb, (void)ldc, (void)buffer;
    for (j = 0; j < m; j++, part++) {
        const struct task *t = part->task;
        if (t->kind == PROBE) ((int *)t->out)[part->index]++;
        run_range(t, part->index * t->count / t->parts, (part->index + 1) * t->count / t->parts);
    }
    return 0;
}

/* Parts for `count` elements: one per OpenBLAS thread, none smaller than MIN_PART. */
static int64_t part_count(int64_t count) {
    int64_t parts = count / MIN_PART, threads = dispatch == NULL ? 1 : blas_threads();
    if (parts > threads) parts = threads;
    if (parts > max_parts) parts = max_parts;
    return parts < 1 ? 1 : parts;
}

/* Run t->parts parts of `t` on OpenBLAS's threads (the caller runs the first). */
static void split(const struct task *t) {
    struct part parts[MAX_PARTS];
    double zero = 0;
    int64_t i;
    for (i = 0; i < t->parts; i++) {
        parts[i].task = t;
        parts[i].index = i;
    }
    /* m = parts and zero strides for a and b: OpenBLAS gives each thread one part and its `c` */
    dispatch(DOUBLE_MODE, t->parts, 0, 0, &zero, NULL, 0, NULL, 0, parts, 0, (void *)run_parts, (int)t->parts);
}

/* Whether OpenBLAS's dispatcher runs each of `parts` parts exactly once (checked once, on first use). */
static int dispatch_checked(int64_t parts) {
    if (dispatch_works == 0) {
        int visits[MAX_PARTS] = {0};
        int64_t i;
        struct task probe = {PROBE, NULL, NULL, visits, NULL, parts * MIN_PART, parts};
        split(&probe);
        dispatch_works = 1;
        for (i = 0; i < parts; i++)
            if (visits[i] != 1) dispatch_works = -1;
    }
    return dispatch_works == 1;
}

static void run(struct task *t) {
    t->parts = part_count(t->count);
    if (t->parts > 1 && dispatch_checked(t->parts)) {
        split(t);
        return;
    }
    t->parts = 1;
    run_range(t, 0, t->count);
}

/* ----- exported (ctypes) ------------------------------------------------------------------------------------- */

/* Split tasks through OpenBLAS's blas_level1_thread_with_return_value, across as many threads as its
 * openblas_get_num_threads says and at most `cpus` (NULL: run tasks in the caller). */
void agnostic_use_blas_threads(void *function, void *thread_count, int cpus) {
    dispatch_works = 0;
    max_parts = cpus < 1 ? 1 : cpus > MAX_PARTS ? MAX_PARTS : cpus;
    blas_threads = (thread_counter)thread_count;
    dispatch = thread_count == NULL ? NULL : (dispatcher)function;
}

/* Whether tasks are split across OpenBLAS's threads: its dispatcher passed the self-test of the first split. */
int agnostic_uses_threads(void) { return dispatch != NULL && dispatch_works == 1; }

/* out = x where x > 0 or x is nan, else 0 (NumPy's maximum(x, 0)); out may be x. */
void agnostic_relu(int is_double, const void *x, void *out, int64_t count) {
    struct task t = {is_double ? RELU_F64 : RELU_F32, x, NULL, out, NULL, count, 0};
    run(&t);
}

/* out = grad where x > 0, else 0; out may be grad or x. */
void agnostic_relu_gradient(int is_double, const void *grad, const void *x, void *out, int64_t count) {
    struct task t = {is_double ? RELU_GRADIENT_F64 : RELU_GRADIENT_F32, x, grad, out, NULL, count, 0};
    run(&t);
}

/* One Adam step, in place: scalars in enum adam_scalar's order, flags from enum adam_flag; max_exp_avg_sq is
 * NULL without AMSGRAD. */
void agnostic_adam(int is_double, void *param, const void *grad, void *exp_avg, void *exp_avg_sq,
                   void *max_exp_avg_sq, int64_t count, const double *scalars, int flags) {
    struct adam a = {param, exp_avg, exp_avg_sq, max_exp_avg_sq, grad, {0}, flags};
    struct task t = {is_double ? ADAM_F64 : ADAM_F32, NULL, NULL, NULL, &a, count, 0};
    int k;
    for (k = 0; k < ADAM_SCALARS; k++) a.scalars[k] = scalars[k];
    run(&t);
}

/* An importable (empty) module, so that setuptools can build this file as an extension on every platform. */
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, .m_name = "_host_kernels_c", .m_size = -1};

PyMODINIT_FUNC PyInit__host_kernels_c(void) { return PyModule_Create(&module); }
