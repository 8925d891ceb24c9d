/* peek.c — many scattered 8-byte words, or arrays of them, copied in one
 * call.
 *
 * For the warm Python runtime under `isolation = reuse`: after every
 * prediction its state check reads the write counter of about 1,500 dicts
 * (docs/python-runtime.md, "What reuse checks"). Read one ctypes view at a
 * time they cost about 20 ns each, 30 µs a prediction; one call here reads
 * them all in about 2 µs. Lists and sets have no such counter: their
 * items are compared whole, some ten thousand of them (a set's by its
 * table of entries), which fr_peek_arrays copies in one call instead of
 * 30-50 ns each in Python. fr_peek_differs compares words with an
 * earlier reading where they are read, for the checks that only ask
 * whether anything changed (no copy of a reading, no second pass over it:
 * the fields of 6,000 functions, 36,000 words, are a quarter of a MB).
 * All only read: the caller
 * keeps every object it names alive, and they write nothing but `out`. */
#include "fitrun/sandbox.h"

/* How many words ahead the word readers ask for a word's cache line. The
 * words lie in thousands of objects that a prediction's own allocations
 * have pushed out of the caches by the time the check runs, so a read is
 * a miss that the processor's own look-ahead overlaps only a few at a
 * time. Asked for 192 words ahead, the fields of 5,000 functions (31,000
 * words, cold) are read in about half the time, the counters of 7,000
 * dicts in 0.6 of it, the items of 600 lists and 80 sets (objects asked
 * for 16 ahead, their items 8 ahead) in under half (bench/peek_cold.py);
 * a prefetch never faults, and past the end none is asked for. */
enum { PEEK_AHEAD = 192, PEEK_AHEAD_OBJECTS = 16 };

/* bench/peek_cold.py builds this file a second time without the
 * look-ahead, as the plain loops it is measured against. */
#ifdef FR_PEEK_NO_LOOKAHEAD
#define PEEK_PREFETCH(p) ((void)0)
#else
#define PEEK_PREFETCH(p) __builtin_prefetch(p)
#endif

void fr_peek_words(const uint64_t *const *addrs, uint64_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (i + PEEK_AHEAD < n)
            PEEK_PREFETCH(addrs[i + PEEK_AHEAD]);
        out[i] = *addrs[i];
    }
}

size_t fr_peek_differs(const uint64_t *const *addrs, const uint64_t *want, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (i + PEEK_AHEAD < n)
            PEEK_PREFETCH(addrs[i + PEEK_AHEAD]);
        if (*addrs[i] != want[i])
            return i;
    }
    return n;
}

size_t fr_peek_arrays(const unsigned char *const *objs, size_t n, size_t count_at, size_t items_at, uint64_t add,
                      uint64_t mult, uint64_t *out, size_t cap)
{
    size_t k = 0; /* the words all the arrays take */
    for (size_t i = 0; i < n; i++) {
        /* Two steps ahead: an object's head, and the items of the one
         * whose head was asked for half that many objects ago. */
        if (i + PEEK_AHEAD_OBJECTS < n)
            PEEK_PREFETCH(objs[i + PEEK_AHEAD_OBJECTS] + count_at);
        if (i + PEEK_AHEAD_OBJECTS / 2 < n)
            PEEK_PREFETCH(*(const void *const *)(const void *)(objs[i + PEEK_AHEAD_OBJECTS / 2] + items_at));
        uint64_t count = *(const uint64_t *)(const void *)(objs[i] + count_at);
        if (k < cap)
            out[k] = count;
        /* (count + add) * mult words, saturating: a count that says more
         * than any array could hold is too many, never an overflow. */
        uint64_t words = count > UINT64_MAX - add ? UINT64_MAX : count + add;
        words = mult && words > UINT64_MAX / mult ? UINT64_MAX : words * mult;
        if (k >= cap || words > cap - k - 1) {
            /* It does not fit: counted, not read (whatever the count says,
             * no word past cap is read). */
            k = words >= SIZE_MAX - k ? SIZE_MAX : k + 1 + (size_t)words;
            continue;
        }
        k++;
        const uint64_t *items = *(const uint64_t *const *)(const void *)(objs[i] + items_at);
        for (uint64_t j = 0; j < words; j++)
            out[k++] = items[j];
    }
    /* The rest zeroed, so that two readings are equal as whole buffers
     * exactly when what was read is. */
    for (size_t j = k; j < cap; j++)
        out[j] = 0;
    return k;
}
