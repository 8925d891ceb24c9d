/* fuzz.h — what every libFuzzer harness in tests/fuzz/ shares: a checked
 * invariant that aborts (libFuzzer saves the input as a crash), and the
 * fuzzer's bytes as C strings.
 *
 * The parsers under test take NUL-terminated text, so a harness hands them
 * a fresh heap copy of exactly the input plus a NUL: AddressSanitizer then
 * catches a read one byte past the end. Text after an embedded NUL is
 * invisible to C string parsers, as it is when fitrun reads a file; some
 * harnesses use the first NUL to split the input into two strings. */
#ifndef FITRUN_FUZZ_H
#define FITRUN_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* An invariant: on violation print what broke, where, and abort. */
#define FUZZ_CHECK(cond, ...)                                                                                          \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: invariant broken: %s: ", __FILE__, __LINE__, #cond);                               \
            fprintf(stderr, __VA_ARGS__);                                                                              \
            fputc('\n', stderr);                                                                                       \
            abort();                                                                                                   \
        }                                                                                                              \
    } while (0)

/* A malloc'd copy of data[0, size) with a NUL after it. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* Split the input at its first NUL byte into two fresh strings: *a before
 * it, *b after it (b is "" when there is no NUL). Both malloc'd. */
static inline void fuzz_split(const uint8_t *data, size_t size, char **a, char **b)
{
    const uint8_t *nul = memchr(data, '\0', size);
    size_t alen = nul ? (size_t)(nul - data) : size;
    *a = fuzz_cstr(data, alen);
    *b = nul ? fuzz_cstr(nul + 1, size - alen - 1) : fuzz_cstr(data, 0);
}

/* Is s valid UTF-8 (RFC 3629) over its whole length? */
static inline bool fuzz_utf8_valid(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        unsigned char c = u[i];
        size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!len || i + len > n)
            return false;
        uint32_t cp = len == 1 ? c : c & (0x7F >> len);
        for (size_t k = 1; k < len; k++) {
            if ((u[i + k] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (u[i + k] & 0x3F);
        }
        static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}

#endif
