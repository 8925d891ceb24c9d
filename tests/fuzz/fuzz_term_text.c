/* fuzz_term_text.c — fr_term_text, the one filter between job data (ids,
 * exception names, what a worker sent) and a terminal. The input is any
 * bytes, NULs included, with its length.
 *
 * Invariants, for buffers from 1 byte to large enough:
 *  - the result fits (strlen < n) and is NUL-terminated;
 *  - it holds no control byte (C0, DEL), is valid UTF-8, and holds none of
 *    the code points a terminal acts on instead of showing: C1 controls,
 *    bidi marks, embeddings, overrides and isolates, U+2028/9, the BOM;
 *  - with room enough it is the whole text, unescaped bytes in order;
 *  - when it is cut, it is a prefix of the whole text ending in "...". */
#include "fitrun/common.h"
#include "fuzz.h"

static bool acted_on(uint32_t c)
{
    return (c >= 0x80 && c <= 0x9F) || c == 0x061C || c == 0x200E || c == 0x200F || (c >= 0x2028 && c <= 0x202E) ||
           (c >= 0x2066 && c <= 0x2069) || c == 0xFEFF;
}

/* Decode the (already validated) UTF-8 text and refuse what a terminal
 * would act on. */
static void check_shown(const char *buf, size_t n, const char *what)
{
    size_t l = strlen(buf);
    FUZZ_CHECK(l < n, "%s: %zu bytes in a %zu-byte buffer", what, l, n);
    FUZZ_CHECK(fuzz_utf8_valid(buf, l), "%s: output is not UTF-8: '%s'", what, buf);
    const unsigned char *u = (const unsigned char *)buf;
    for (size_t i = 0; i < l;) {
        unsigned char c = u[i];
        FUZZ_CHECK(c >= 0x20 && c != 0x7F, "%s: control byte 0x%02x at %zu", what, c, i);
        size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
        uint32_t cp = len == 1 ? c : c & (0x7F >> len);
        for (size_t k = 1; k < len; k++)
            cp = (cp << 6) | (u[i + k] & 0x3F);
        FUZZ_CHECK(!acted_on(cp), "%s: U+%04X reaches the terminal", what, (unsigned)cp);
        i += len;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    /* A copy of exactly `size` bytes: reading past it is an ASan error. */
    char *s = malloc(size ? size : 1);
    if (!s)
        abort();
    memcpy(s, data, size);

    /* At most 6 shown bytes per input byte ("\u2028" for 3 bytes, "\x1b" for 1). */
    size_t big = 6 * size + 16;
    char *full = malloc(big);
    if (!full)
        abort();
    FUZZ_CHECK(fr_term_text(s, size, full, big) == full, "returns its buffer");
    check_shown(full, big, "full");
    size_t fl = strlen(full);
    /* Printable ASCII passes unchanged: every such input byte is in the output, in order. */
    size_t j = 0;
    for (size_t i = 0; i < size; i++) {
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7F)
            continue;
        while (j < fl && full[j] != s[i])
            j++;
        FUZZ_CHECK(j < fl, "printable byte '%c' (input offset %zu) missing from the output", s[i], i);
        j++;
    }

    static const size_t sizes[] = {1, 2, 3, 4, 5, 8, 13, 32};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        char *cut = malloc(n);
        if (!cut)
            abort();
        fr_term_text(s, size, cut, n);
        check_shown(cut, n, "cut");
        size_t cl = strlen(cut);
        if (strcmp(cut, full)) {
            size_t dots = 0;
            while (dots < 3 && dots < cl && cut[cl - 1 - dots] == '.')
                dots++;
            FUZZ_CHECK(n < 4 || dots > 0, "a cut text ends in '...': '%s' (n=%zu)", cut, n);
            FUZZ_CHECK(!strncmp(cut, full, cl - dots), "cut '%s' is not a prefix of '%s'", cut, full);
        }
        free(cut);
    }
    free(full);
    free(s);
    return 0;
}
