/* Subset tables for boards of 9 to 16 GPUs, and both policies' choices read from them.

   A 16-GPU board has 65,536 free sets. Exact answers there take an exponential search that costs
   milliseconds to seconds per free set in Python, so this kernel works out, once per machine type,
   tables indexed by position mask (bit p = the p-th GPU of the sorted indices):

     scores:           the set score of every mask (the sum of its pair scores);
     best_sets(k):     the best score of a k-subset of every mask (-1: fewer than k);
     partitions(k):    NVIDIA's best partition total of every mask into groups of k, the padded group
                       (count % k GPUs) included when the count is not a multiple of k;

   and answers one query by lookups: nvidia_choice rebuilds NVIDIA's first best partition in its own
   iteration order, ideal_choice ranks the best k-sets by what they leave. The rules are the ones of
   best_effort.py, ideal.py and table.py, which answer when this module is not built; the tests
   compare the two on every policy and size. Tables are arrays of C int; the caller guarantees that
   the board's total score fits one (all pair scores are non-negative, so no mask scores more). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define MAX_GPUS 16

/* The positions of a mask's set bits, lowest first; returns how many. */
static int members_of(unsigned mask, int *out) {
    int m = 0;
    for (int p = 0; mask; p++, mask >>= 1) {
        if (mask & 1u) out[m++] = p;
    }
    return m;
}

/* The first c-combination of m items in lexicographic order; 0 when c > m. */
static int first_combination(int *idx, int c, int m) {
    for (int j = 0; j < c; j++) idx[j] = j;
    return c <= m;
}

/* The next c-combination in lexicographic order; 0 past the last. */
static int next_combination(int *idx, int c, int m) {
    int j = c - 1;
    while (j >= 0 && idx[j] == m - c + j) j--;
    if (j < 0) return 0;
    idx[j]++;
    for (int i = j + 1; i < c; i++) idx[i] = idx[i - 1] + 1;
    return 1;
}

static unsigned mask_of(const int *idx, int c, const int *members) {
    unsigned g = 0;
    for (int j = 0; j < c; j++) g |= 1u << members[idx[j]];
    return g;
}

/* A C-int table over every mask of n GPUs, checked to be of that size. */
static int table_view(Py_buffer *view, int n, const char *what) {
    if (n < 1 || n > MAX_GPUS) {
        PyErr_Format(PyExc_ValueError, "boards of 1 to %d GPUs only, not %d", MAX_GPUS, n);
        return 0;
    }
    if (view->len != (Py_ssize_t)sizeof(int) << n) {
        PyErr_Format(PyExc_ValueError, "%s must hold one C int per mask of %d GPUs", what, n);
        return 0;
    }
    return 1;
}

static int check_k(int k, int n) { /* a size the tables can hold */
    if (k < 1 || k > n) {
        PyErr_Format(PyExc_ValueError, "k must be 1 to %d, not %d", n, k);
        return 0;
    }
    return 1;
}

static PyObject *new_table(int n, int **out) {
    PyObject *bytes = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)sizeof(int) << n);
    if (bytes != NULL) *out = (int *)PyBytes_AS_STRING(bytes);
    return bytes;
}

/* scores(weights, n): the set score of every mask; weights is the n x n pair-score matrix. A mask with
   top bit h scores its lower part plus h's weights to that part. */
static PyObject *scores(PyObject *self, PyObject *args) {
    Py_buffer w;
    int n, *out;
    if (!PyArg_ParseTuple(args, "y*i", &w, &n)) return NULL;
    if (n < 1 || n > MAX_GPUS || w.len != (Py_ssize_t)sizeof(int) * n * n) {
        PyBuffer_Release(&w);
        return PyErr_Format(PyExc_ValueError, "weights must be an n x n C-int matrix, 1 <= n <= %d", MAX_GPUS);
    }
    const int *weight = (const int *)w.buf;
    PyObject *result = new_table(n, &out);
    if (result != NULL) {
        out[0] = 0;
        for (int h = 0; h < n; h++) {
            unsigned top = 1u << h;
            out[top] = 0;
            for (unsigned sub = 1; sub < top; sub++) {
                /* h's weights to sub: those to sub less its lowest bit, plus the one to that bit */
                unsigned rest = sub & (sub - 1);
                int cross = out[top | rest] - out[rest] + weight[h * n + __builtin_ctz(sub)];
                out[top | sub] = out[sub] + cross;
            }
        }
    }
    PyBuffer_Release(&w);
    return result;
}

/* best_sets(scores, n, k): the best score of a k-subset of every mask (-1: fewer than k), by taking
   each k-set's own score and then the maximum over submasks, one bit at a time. */
static PyObject *best_sets(PyObject *self, PyObject *args) {
    Py_buffer s;
    int n, k, *out;
    if (!PyArg_ParseTuple(args, "y*ii", &s, &n, &k)) return NULL;
    PyObject *result = NULL;
    if (table_view(&s, n, "scores") && check_k(k, n) && (result = new_table(n, &out)) != NULL) {
        const int *score = (const int *)s.buf;
        unsigned full = 1u << n;
        for (unsigned mask = 0; mask < full; mask++) {
            out[mask] = __builtin_popcount(mask) == k ? score[mask] : -1;
        }
        for (int b = 0; b < n; b++) {
            for (unsigned mask = 0; mask < full; mask++) {
                if (mask >> b & 1u && out[mask ^ (1u << b)] > out[mask]) out[mask] = out[mask ^ (1u << b)];
            }
        }
    }
    PyBuffer_Release(&s);
    return result;
}

/* The best total of S given the totals of its submasks: the group holding S's lowest GPU is k GPUs or,
   when the count is not a multiple of k, the padded group of count % k GPUs. */
static int best_total(const int *score, const int *total, unsigned slots, int k) {
    int members[MAX_GPUS], idx[MAX_GPUS];
    int count = members_of(slots, members);
    if (count <= k) return score[slots];
    unsigned first = 1u << members[0];
    int sizes[2] = {k - 1, count % k - 1}, best = -1;
    for (int which = 0; which < (count % k ? 2 : 1); which++) {
        int c = sizes[which];
        for (int more = first_combination(idx, c, count - 1); more; more = next_combination(idx, c, count - 1)) {
            unsigned g = first | mask_of(idx, c, members + 1);
            int value = score[g] + total[slots ^ g];
            if (value > best) best = value;
        }
    }
    return best;
}

/* partitions(scores, n, k): NVIDIA's best partition total of every mask (smaller masks first, so
   every remainder is known). */
static PyObject *partitions(PyObject *self, PyObject *args) {
    Py_buffer s;
    int n, k, *out;
    if (!PyArg_ParseTuple(args, "y*ii", &s, &n, &k)) return NULL;
    PyObject *result = NULL;
    if (table_view(&s, n, "scores") && check_k(k, n) && (result = new_table(n, &out)) != NULL) {
        const int *score = (const int *)s.buf;
        out[0] = 0;
        for (unsigned slots = 1; slots < 1u << n; slots++) out[slots] = best_total(score, out, slots, k);
    }
    PyBuffer_Release(&s);
    return result;
}

/* NVIDIA's first group of ``slots`` (in its iteration order) that reaches the best total: the
   group holds the first slot and k - 1 of the rest, the rest being the other GPUs and then ``pad``
   padding slots; a group takes all the padding or none. Sets *padded; returns the GPU mask. */
static unsigned first_best_group(const int *score, const int *total, unsigned slots, int k, int *padded) {
    int members[MAX_GPUS], idx[MAX_GPUS];
    int count = members_of(slots, members);
    int pad = count % k ? k - count % k : 0, length = count - 1 + pad, c = k - 1;
    int target = total[slots];
    unsigned first = 1u << members[0]; /* slots is never empty here */
    for (int more = first_combination(idx, c, length); more; more = next_combination(idx, c, length)) {
        int pads = 0;
        unsigned g = first;
        for (int j = 0; j < c; j++) {
            if (idx[j] >= count - 1) pads++;
            else g |= 1u << members[1 + idx[j]];
        }
        if (pads != 0 && pads != pad) continue;
        unsigned rest = slots ^ g;
        if (score[g] + (rest ? total[rest] : 0) == target) {
            *padded = pads > 0;
            return g;
        }
    }
    *padded = 0; /* unreachable: some group reaches the best total */
    return 0;
}

/* nvidia_choice(scores, totals, n, k, free): the group NVIDIA's allocator returns (the best-scoring
   unpadded group of its first best partition, the first of equal scores). */
static PyObject *nvidia_choice(PyObject *self, PyObject *args) {
    Py_buffer s, t;
    int n, k;
    unsigned free_mask;
    if (!PyArg_ParseTuple(args, "y*y*iiI", &s, &t, &n, &k, &free_mask)) return NULL;
    PyObject *result = NULL;
    if (table_view(&s, n, "scores") && table_view(&t, n, "totals") && check_k(k, n)) {
        const int *score = (const int *)s.buf, *total = (const int *)t.buf;
        unsigned slots = free_mask & ((1u << n) - 1), chosen = 0;
        int chosen_score = -1, padded;
        while (slots) {
            unsigned g = first_best_group(score, total, slots, k, &padded);
            if (!g) break;
            if (!padded && score[g] > chosen_score) {
                chosen = g;
                chosen_score = score[g];
            }
            slots ^= g;
        }
        result = PyLong_FromUnsignedLong(chosen);
    }
    PyBuffer_Release(&s);
    PyBuffer_Release(&t);
    return result;
}

/* The most GPUs of ``mask`` that reach one another over NVLink through GPUs of ``mask``. */
static int largest_island(const int *adjacency, unsigned mask) {
    int largest = 0;
    unsigned left = mask;
    while (left) {
        unsigned island = left & -left, frontier = island;
        while (frontier) {
            int p = __builtin_ctz(frontier);
            frontier &= frontier - 1;
            unsigned grow = (unsigned)adjacency[p] & mask & ~island;
            island |= grow;
            frontier |= grow;
        }
        int size = __builtin_popcount(island);
        if (size > largest) largest = size;
        left &= ~island;
    }
    return largest;
}

/* ideal_choice(scores, best, adjacency, n, k, free): among the k-sets of ``free`` with the best score,
   the one leaving the best k-set, then the largest NVLink island, then the lowest positions (the
   first in lexicographic order). ``best`` is best_sets(k); ``adjacency`` one NVLink mask per GPU. */
static PyObject *ideal_choice(PyObject *self, PyObject *args) {
    Py_buffer s, b, a;
    int n, k;
    unsigned free_mask;
    if (!PyArg_ParseTuple(args, "y*y*y*iiI", &s, &b, &a, &n, &k, &free_mask)) return NULL;
    PyObject *result = NULL;
    if (table_view(&s, n, "scores") && table_view(&b, n, "best") && check_k(k, n)) {
        if (a.len != (Py_ssize_t)sizeof(int) * n) {
            PyErr_SetString(PyExc_ValueError, "adjacency must hold one C int per GPU");
        } else {
            const int *score = (const int *)s.buf, *best = (const int *)b.buf, *adjacency = (const int *)a.buf;
            int members[MAX_GPUS], idx[MAX_GPUS];
            free_mask &= (1u << n) - 1;
            int m = members_of(free_mask, members), top = best[free_mask];
            int best_left = -2, best_island = -1;
            unsigned chosen = 0;
            for (int more = first_combination(idx, k, m); more; more = next_combination(idx, k, m)) {
                unsigned g = mask_of(idx, k, members);
                if (score[g] != top) continue;
                unsigned left = free_mask ^ g;
                int left_best = best[left];
                if (left_best < best_left) continue;
                int island = largest_island(adjacency, left);
                if (left_best > best_left || island > best_island) {
                    chosen = g;
                    best_left = left_best;
                    best_island = island;
                }
            }
            result = PyLong_FromUnsignedLong(chosen);
        }
    }
    PyBuffer_Release(&s);
    PyBuffer_Release(&b);
    PyBuffer_Release(&a);
    return result;
}

static PyMethodDef methods[] = {
    {"scores", scores, METH_VARARGS, "scores(weights, n): the set score of every mask"},
    {"best_sets", best_sets, METH_VARARGS, "best_sets(scores, n, k): the best k-subset score of every mask"},
    {"partitions", partitions, METH_VARARGS, "partitions(scores, n, k): NVIDIA's best partition total of every mask"},
    {"nvidia_choice", nvidia_choice, METH_VARARGS, "nvidia_choice(scores, totals, n, k, free): NVIDIA's group"},
    {"ideal_choice", ideal_choice, METH_VARARGS, "ideal_choice(scores, best, adjacency, n, k, free): ideal's set"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "_kernel",
    .m_doc = "Subset tables for boards of up to 16 GPUs.",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__kernel(void) { return PyModule_Create(&module); }
