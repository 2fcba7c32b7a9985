/* membar.h - small pictures of memory for the text and Markdown reports: the GPU at the failure as a
 * bar (allocated by PyTorch, cached but free, used outside PyTorch's cache, free, and the request
 * beside it, each sized to the same scale) and the job's memory trend before it as a sparkline. Each
 * picture comes with the same figures in words; the JSON holds them as numbers (memory.*), so a picture
 * never replaces a number. Block characters on a UTF-8 terminal, plain ASCII otherwise.
 *
 * Ownership: the caller's buffers; nothing is kept. */
#ifndef OOMSCAN_EMIT_MEMBAR_H
#define OOMSCAN_EMIT_MEMBAR_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* 1 when the locale (LC_ALL, else LC_CTYPE, else LANG) names UTF-8 and TERM is not "dumb". */
int membar_unicode(void);

/* The GPU bar of a memory object with `total_bytes` and `allocated_bytes`, `cells` wide, into buf:
 * "[####==oo....] + request [#]"; 0 (buf "") when the message states too little. */
size_t membar_gpu(const cJSON *memory, int unicode, unsigned cells, char *buf, size_t cap);

/* The bar's figures in words: "allocated by PyTorch 70.1 GiB, cached but free 766 MiB, used outside
 * PyTorch's cache 8.2 GiB, free 98 MiB, of 79.1 GiB; request 132 MiB". 0 when membar_gpu gives none. */
size_t membar_gpu_words(const cJSON *memory, char *buf, size_t cap);

/* The sparkline of memory.trend's points (at most 40, evenly picked), lowest to highest. 0 when none. */
size_t membar_spark(const cJSON *trend, int unicode, char *buf, size_t cap);

/* The trend in words: "host_used steps 1-30: growth, 6.5 GiB a step, 306 GiB -> 495 GiB". */
size_t membar_trend_words(const cJSON *trend, char *buf, size_t cap);

#endif
