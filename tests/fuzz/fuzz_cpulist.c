/* fuzz_cpulist.c — CPU lists as the kernel writes them (cpuset.cpus,
 * cpuset.effective_cpus, cpuset.cpus.effective, devices/system/cpu/online,
 * Cpus_allowed_list), strided items included: fr_cpulist_parse and
 * fr_cpulist_format. The input is the file's text.
 *
 * Invariants:
 *  - a list that parses has count == the number of bits set, the same with
 *    or without a mask and whatever the mask's size;
 *  - it formats to a canonical list that parses to the same set and count,
 *    and formatting that again gives the same text (a fixed point);
 *  - the canonical form has no spaces, and no CPU at or above FR_CPU_BITS;
 *  - cut to a small buffer, the text fits, ends in "..." and is a prefix
 *    of the whole list. */
#include "../../launcher/detect/internal.h"
#include "fuzz.h"

#define BIG (64 * 1024) /* "0,2,4,...,8190" is about 20 KiB */

static int popcount(const uint64_t *m)
{
    int c = 0;
    for (int w = 0; w < FR_MASK_WORDS; w++)
        c += __builtin_popcountll(m[w]);
    return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 64 * 1024)
        return 0;
    char *s = fuzz_cstr(data, size);
    uint64_t mask[FR_MASK_WORDS], again[FR_MASK_WORDS], small[2] = {0, 0};
    memset(mask, 0xA5, sizeof mask); /* garbage: the parser must set every word */
    int count = fr_cpulist_parse(s, mask, FR_CPU_BITS);
    FUZZ_CHECK(count >= -1 && count <= FR_CPU_BITS, "count %d", count);
    FUZZ_CHECK(fr_cpulist_parse(s, NULL, 0) == count, "the count does not depend on the mask");
    FUZZ_CHECK(fr_cpulist_parse(s, small, 100) == count, "the count does not depend on the mask's size");
    if (count < 0) {
        free(s);
        return 0;
    }
    FUZZ_CHECK(popcount(mask) == count, "count %d but %d bits set", count, popcount(mask));
    FUZZ_CHECK(small[0] == mask[0] && small[1] == (mask[1] & ((1ull << 36) - 1)),
               "a 100-bit mask holds the first 100 bits");

    char *text = malloc(BIG), *text2 = malloc(BIG);
    if (!text || !text2)
        abort();
    fr_cpulist_format(mask, FR_CPU_BITS, text, BIG);
    FUZZ_CHECK(!strchr(text, ' ') && !strstr(text, "..."), "canonical list '%s'", text);
    memset(again, 0, sizeof again);
    int count2 = fr_cpulist_parse(text, again, FR_CPU_BITS);
    FUZZ_CHECK(count2 == count, "'%s' -> %d CPUs, its canonical form '%s' -> %d", s, count, text, count2);
    FUZZ_CHECK(!memcmp(mask, again, sizeof mask), "'%s' and its canonical form '%s' are different sets", s, text);
    fr_cpulist_format(again, FR_CPU_BITS, text2, BIG);
    FUZZ_CHECK(!strcmp(text, text2), "formatting is not a fixed point: '%s' then '%s'", text, text2);

    static const size_t cuts[] = {1, 4, 5, 16, 40};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        size_t n = cuts[i];
        char *cut = malloc(n);
        if (!cut)
            abort();
        fr_cpulist_format(mask, FR_CPU_BITS, cut, n);
        size_t cl = strlen(cut);
        FUZZ_CHECK(cl < n, "%zu bytes in %zu", cl, n);
        if (strcmp(cut, text)) {
            FUZZ_CHECK(n < 4 || (cl >= 3 && !strcmp(cut + cl - 3, "...")), "cut list '%s' (n=%zu)", cut, n);
            size_t keep = cl >= 3 ? cl - 3 : 0;
            FUZZ_CHECK(!strncmp(cut, text, keep), "cut list '%s' is not a prefix of '%s'", cut, text);
        }
        free(cut);
    }
    free(text);
    free(text2);
    free(s);
    return 0;
}
