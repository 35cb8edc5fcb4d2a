/* XLA's large CPU buffers from funcgrad's own cache (NOTE: [XLA's buffers kept between calls]).
 *
 * Included by _hot_call.c (one extension module; this part needs no Python object). Layer:
 * xla_bridge. ``buffer_cache_install(suffix, cap)`` points jaxlib's references to malloc, free, realloc
 * and posix_memalign (the relocations of the loaded shared object whose path ends
 * with ``suffix``: jaxlib's libjax_common.so) at the functions below: a request of BC_BIG bytes (128 KiB) or more is served from this
 * cache's own anonymous mappings (2 MiB aligned and advised for transparent huge pages from
 * 16 MiB up), and freeing one keeps it for the next request of about its size, up to ``cap`` bytes
 * kept in all; anything smaller, and any pointer the cache did not hand out, goes to the process's
 * own malloc/free untouched. No glibc setting changes: NumPy, Python and every other library keep
 * glibc's behaviour (tests/integration/test_import_side_effects.py).
 *
 * Why: XLA's CPU runtime allocates each call's temporaries as one block (the transformer step of
 * bench/bench_transformer.py: 126 MB) and every output with malloc; glibc maps blocks above 32 MiB
 * afresh and gives them back on free, so every page of them faulted in again on every call (30.8k
 * minor faults, 55-60 ms of system time per 250 ms step).
 *
 * Why from 128 KiB (glibc's own default mmap threshold), not only the large blocks: a call's
 * smaller blocks (outputs, the copy of a NumPy argument, temporaries of a few hundred KiB) freed
 * together into one glibc arena leave a free top above the arena's trim threshold, and glibc then
 * gives it back (``brk``, or ``madvise(MADV_DONTNEED)`` in a worker thread's arena) and faults it
 * in again on the next call. Whether that happens depends on the thresholds glibc has raised from
 * the process's history, so it hit some processes and not others: jit(grad) through ``eigh`` of
 * 200x200 (outputs 320 kB, temporaries 960 kB, the argument's copy 320 kB, two 205 kB blocks) took
 * 200-420 faults and 3.4-3.8 ms per call in about half of the fresh processes, 2.8-3.1 ms in the
 * others; served from here, 0-5 faults and 2.8-3.1 ms in every one (one thread, load 10-12).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dl_iterate_phdr (Python.h defines it too) */
#endif
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__))
#define BUFFER_CACHE_SUPPORTED 1
#else
#define BUFFER_CACHE_SUPPORTED 0
#endif

#if BUFFER_CACHE_SUPPORTED

#define BC_PAGE ((size_t)4096)
#define BC_HUGE ((size_t)2 << 20)
/* Blocks from this size up are rounded to, aligned on and advised for 2 MiB pages: at most an
   eighth more memory than asked (a 2.1 MiB block in huge pages would take 4 MiB). */
#define BC_HUGE_MIN ((size_t)16 << 20)
#define BC_BIG ((size_t)128 << 10)
#define BC_SLOTS 8192 /* live blocks tracked (open addressing); more are served by malloc */
#define BC_KEPT 256   /* freed blocks kept at most (64 churned on 24 sizes of 160 kB-1.6 MB) */

static size_t bc_cap = (size_t)256 << 20; /* bytes of freed blocks kept at most */

typedef struct {
    void *ptr;
    size_t size; /* mapped bytes (a multiple of BC_PAGE) */
} bc_block;

static pthread_mutex_t bc_lock = PTHREAD_MUTEX_INITIALIZER;
static bc_block bc_live[BC_SLOTS];
static size_t bc_nlive;
static bc_block bc_kept[BC_KEPT]; /* oldest first */
static size_t bc_nkept, bc_kept_bytes;
static unsigned long bc_hits, bc_maps;
static int bc_installed;

static void *(*bc_real_malloc)(size_t);
static void (*bc_real_free)(void *);
static void *(*bc_real_realloc)(void *, size_t);
static int (*bc_real_posix_memalign)(void **, size_t, size_t);

static size_t bc_hash(void *p) { return ((uintptr_t)p >> 12) * 11400714819323198485ull >> 51; }

/* Slot of p in bc_live, or of the empty slot where it would go. (Lock held.) */
static size_t bc_find(void *p)
{
    size_t i = bc_hash(p) & (BC_SLOTS - 1);
    while (bc_live[i].ptr != NULL && bc_live[i].ptr != p)
        i = (i + 1) & (BC_SLOTS - 1);
    return i;
}

/* Remove slot i, moving later entries of its cluster back (linear probing's deletion). */
static void bc_remove(size_t i)
{
    size_t j = i;
    bc_live[i].ptr = NULL;
    for (;;) {
        j = (j + 1) & (BC_SLOTS - 1);
        if (bc_live[j].ptr == NULL)
            return;
        size_t home = bc_hash(bc_live[j].ptr) & (BC_SLOTS - 1);
        /* j's entry may move to i when its home is not cyclically in (i, j]. */
        if ((i <= j) ? (home <= i || home > j) : (home <= i && home > j)) {
            bc_live[i] = bc_live[j];
            bc_live[j].ptr = NULL;
            i = j;
        }
    }
}

static size_t bc_round(size_t n)
{
    return n >= BC_HUGE_MIN ? (n + BC_HUGE - 1) & ~(BC_HUGE - 1) : (n + BC_PAGE - 1) & ~(BC_PAGE - 1);
}

/* A fresh mapping of size bytes (2 MiB aligned and advised for huge pages from BC_HUGE_MIN up). */
static void *bc_map(size_t size)
{
    if (size < BC_HUGE_MIN) {
        void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        return p == MAP_FAILED ? NULL : p;
    }
    char *raw = mmap(NULL, size + BC_HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    char *p = (char *)(((uintptr_t)raw + BC_HUGE - 1) & ~(uintptr_t)(BC_HUGE - 1));
    if (p > raw)
        munmap(raw, (size_t)(p - raw));
    if (p + size < raw + size + BC_HUGE)
        munmap(p + size, (size_t)(raw + size + BC_HUGE - (p + size)));
#ifdef MADV_HUGEPAGE
    madvise(p, size, MADV_HUGEPAGE);
#endif
    return p;
}

/* Enter the block p of size mapped bytes in the table of live blocks. */
static void bc_track(void *p, size_t size)
{
    pthread_mutex_lock(&bc_lock);
    size_t i = bc_find(p);
    bc_live[i].ptr = p;
    bc_live[i].size = size;
    bc_nlive++;
    pthread_mutex_unlock(&bc_lock);
}

/* A block of at least n bytes (n >= BC_BIG), page aligned, or NULL. */
static void *bc_alloc(size_t n)
{
    size_t size = bc_round(n), best = (size_t)-1, bi = 0;
    void *p = NULL;
    pthread_mutex_lock(&bc_lock);
    if (bc_nlive * 4 >= BC_SLOTS * 3) { /* table full: leave this one to malloc */
        pthread_mutex_unlock(&bc_lock);
        return bc_real_malloc(n);
    }
    /* The smallest kept block that fits and wastes at most a quarter. */
    for (size_t i = 0; i < bc_nkept; i++)
        if (bc_kept[i].size >= size && bc_kept[i].size - size <= size / 4 && bc_kept[i].size < best)
            best = bc_kept[i].size, bi = i;
    if (best != (size_t)-1) {
        p = bc_kept[bi].ptr;
        size = best;
        bc_kept_bytes -= size;
        memmove(bc_kept + bi, bc_kept + bi + 1, (bc_nkept - bi - 1) * sizeof(bc_block));
        bc_nkept--;
        bc_hits++;
    }
    pthread_mutex_unlock(&bc_lock);
    if (p == NULL) {
        p = bc_map(size);
        if (p == NULL)
            return NULL;
        __atomic_add_fetch(&bc_maps, 1, __ATOMIC_RELAXED);
    }
    bc_track(p, size);
    return p;
}

/* Whether p is a live block of this cache; if so it is taken out of the table and *size set. */
static int bc_take(void *p, size_t *size)
{
    /* The cache's blocks are page aligned; malloc's pointers almost never are. */
    if (p == NULL || ((uintptr_t)p & (BC_PAGE - 1)) != 0)
        return 0;
    pthread_mutex_lock(&bc_lock);
    size_t i = bc_find(p);
    int ours = bc_live[i].ptr == p;
    if (ours) {
        *size = bc_live[i].size;
        bc_remove(i);
        bc_nlive--;
    }
    pthread_mutex_unlock(&bc_lock);
    return ours;
}

static void bc_release(void *p, size_t size)
{
    bc_block drop[BC_KEPT + 1];
    size_t ndrop = 0;
    pthread_mutex_lock(&bc_lock);
    if (size > bc_cap) {
        drop[ndrop++] = (bc_block){p, size};
    } else {
        /* Make room: the oldest kept blocks go back to the system. */
        size_t k = 0;
        while (k < bc_nkept && (bc_kept_bytes + size > bc_cap || bc_nkept - k >= BC_KEPT)) {
            drop[ndrop++] = bc_kept[k];
            bc_kept_bytes -= bc_kept[k].size;
            k++;
        }
        memmove(bc_kept, bc_kept + k, (bc_nkept - k) * sizeof(bc_block));
        bc_nkept -= k;
        bc_kept[bc_nkept++] = (bc_block){p, size};
        bc_kept_bytes += size;
    }
    pthread_mutex_unlock(&bc_lock);
    for (size_t k = 0; k < ndrop; k++)
        munmap(drop[k].ptr, drop[k].size);
}

static void *bc_malloc(size_t n)
{
    if (n < BC_BIG)
        return bc_real_malloc(n);
    void *p = bc_alloc(n);
    if (p == NULL)
        errno = ENOMEM;
    return p;
}

static void bc_free(void *p)
{
    size_t size;
    if (bc_take(p, &size))
        bc_release(p, size);
    else
        bc_real_free(p);
}

static int bc_posix_memalign(void **out, size_t alignment, size_t n)
{
    if (n < BC_BIG || alignment > BC_PAGE)
        return bc_real_posix_memalign(out, alignment, n);
    void *p = bc_alloc(n);
    if (p == NULL)
        return ENOMEM;
    *out = p;
    return 0;
}

static void *bc_realloc(void *p, size_t n)
{
    size_t size;
    if (!bc_take(p, &size))
        return p == NULL ? bc_malloc(n) : bc_real_realloc(p, n);
    void *q = bc_malloc(n > 0 ? n : 1);
    if (q == NULL) { /* p stays valid, as realloc's contract says */
        bc_track(p, size);
        return NULL;
    }
    memcpy(q, p, n < size ? n : size);
    bc_release(p, size);
    return q;
}

/* Give every kept block back to the system (funcgrad.clear_caches()); the bytes given back. */
static size_t bc_trim(void)
{
    bc_block drop[BC_KEPT];
    size_t ndrop, bytes;
    pthread_mutex_lock(&bc_lock);
    ndrop = bc_nkept;
    bytes = bc_kept_bytes;
    memcpy(drop, bc_kept, ndrop * sizeof(bc_block));
    bc_nkept = 0;
    bc_kept_bytes = 0;
    pthread_mutex_unlock(&bc_lock);
    for (size_t k = 0; k < ndrop; k++)
        munmap(drop[k].ptr, drop[k].size);
    return bytes;
}

static void bc_atfork_prepare(void) { pthread_mutex_lock(&bc_lock); }
static void bc_atfork_release(void) { pthread_mutex_unlock(&bc_lock); }

#if defined(__x86_64__)
#define BC_R_ABS64 1
#define BC_R_GLOB_DAT 6
#define BC_R_JUMP_SLOT 7
#else
#define BC_R_ABS64 257
#define BC_R_GLOB_DAT 1025
#define BC_R_JUMP_SLOT 1026
#endif

typedef struct {
    const char *path;
    int patched;
    int found;
} bc_search;

static void *bc_replacement(const char *name)
{
    if (strcmp(name, "malloc") == 0)
        return (void *)bc_malloc;
    if (strcmp(name, "free") == 0)
        return (void *)bc_free;
    if (strcmp(name, "realloc") == 0)
        return (void *)bc_realloc;
    if (strcmp(name, "posix_memalign") == 0)
        return (void *)bc_posix_memalign;
    return NULL;
}

/* Point one relocated word at new (the page made writable for the write, then as it was: RELRO
   pages read-only again). */
static void bc_write(void **slot, void *new, int relro)
{
    uintptr_t page = (uintptr_t)slot & ~(uintptr_t)(BC_PAGE - 1);
    if (mprotect((void *)page, BC_PAGE, PROT_READ | PROT_WRITE) != 0)
        return;
    __atomic_store_n(slot, new, __ATOMIC_SEQ_CST);
    if (relro)
        mprotect((void *)page, BC_PAGE, PROT_READ);
}

static void bc_patch_table(ElfW(Addr) base, const ElfW(Rela) * rel, size_t bytes, const ElfW(Sym) * symtab,
                           const char *strtab, ElfW(Addr) relro_lo, ElfW(Addr) relro_hi, bc_search *s)
{
    for (size_t k = 0; k < bytes / sizeof(ElfW(Rela)); k++) {
        unsigned type = (unsigned)ELF64_R_TYPE(rel[k].r_info);
        if (type != BC_R_ABS64 && type != BC_R_GLOB_DAT && type != BC_R_JUMP_SLOT)
            continue;
        const char *name = strtab + symtab[ELF64_R_SYM(rel[k].r_info)].st_name;
        void *new = bc_replacement(name);
        if (new == NULL || rel[k].r_addend != 0)
            continue;
        void **slot = (void **)(base + rel[k].r_offset);
        bc_write(slot, new, (ElfW(Addr))slot >= relro_lo && (ElfW(Addr))slot < relro_hi);
        s->patched++;
    }
}

static ElfW(Addr) bc_addr(ElfW(Addr) base, ElfW(Addr) v) { return v < base ? base + v : v; }

static int bc_patch_object(struct dl_phdr_info *info, size_t sz, void *data)
{
    bc_search *s = data;
    (void)sz;
    size_t n = info->dlpi_name == NULL ? 0 : strlen(info->dlpi_name), m = strlen(s->path);
    if (n < m || strcmp(info->dlpi_name + n - m, s->path) != 0)
        return 0;
    s->found = 1;
    ElfW(Addr) base = info->dlpi_addr, relro_lo = 0, relro_hi = 0;
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(base + info->dlpi_phdr[i].p_vaddr);
        if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO) {
            relro_lo = (base + info->dlpi_phdr[i].p_vaddr) & ~(ElfW(Addr))(BC_PAGE - 1);
            relro_hi = (base + info->dlpi_phdr[i].p_vaddr + info->dlpi_phdr[i].p_memsz) & ~(ElfW(Addr))(BC_PAGE - 1);
        }
    }
    if (dyn == NULL)
        return 1;
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const ElfW(Rela) *rela = NULL, *jmprel = NULL;
    size_t relasz = 0, pltrelsz = 0;
    int pltrel_is_rela = 1;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        switch (dyn->d_tag) {
        case DT_SYMTAB: symtab = (const ElfW(Sym) *)bc_addr(base, dyn->d_un.d_ptr); break;
        case DT_STRTAB: strtab = (const char *)bc_addr(base, dyn->d_un.d_ptr); break;
        case DT_RELA: rela = (const ElfW(Rela) *)bc_addr(base, dyn->d_un.d_ptr); break;
        case DT_RELASZ: relasz = dyn->d_un.d_val; break;
        case DT_JMPREL: jmprel = (const ElfW(Rela) *)bc_addr(base, dyn->d_un.d_ptr); break;
        case DT_PLTRELSZ: pltrelsz = dyn->d_un.d_val; break;
        case DT_PLTREL: pltrel_is_rela = dyn->d_un.d_val == DT_RELA; break;
        }
    }
    if (symtab == NULL || strtab == NULL || !pltrel_is_rela)
        return 1;
    if (rela != NULL)
        bc_patch_table(base, rela, relasz, symtab, strtab, relro_lo, relro_hi, s);
    if (jmprel != NULL)
        bc_patch_table(base, jmprel, pltrelsz, symtab, strtab, relro_lo, relro_hi, s);
    return 1;
}

/* Install the cache into the loaded shared object whose path ends with path (the first one); the
   number of references redirected (0: not found or nothing to redirect; -1: already installed). */
static int buffer_cache_install(const char *path, size_t cap)
{
    if (bc_installed)
        return -1;
    bc_real_malloc = malloc;
    bc_real_free = free;
    bc_real_realloc = realloc;
    bc_real_posix_memalign = posix_memalign;
    bc_cap = cap;
    pthread_atfork(bc_atfork_prepare, bc_atfork_release, bc_atfork_release);
    bc_search s = {path, 0, 0};
    dl_iterate_phdr(bc_patch_object, &s);
    bc_installed = s.patched > 0;
    return s.patched;
}

#endif /* BUFFER_CACHE_SUPPORTED */
