/* The convolution algorithms a process chose (cuda_conv_choose.cu), kept in a
 * file that later processes reuse instead of searching again (bin/train
 * --algo-cache FILE; scripts/bench.sh gives each cuda run folder one, so that
 * a configuration's repeats and its trace pass run the algorithms its first
 * process chose, and only the first pays for cuDNN's search).
 *
 * One CSV row per convolution shape and pass (ALGO_CACHE_HEADER): the key
 * names everything the choice depends on (the device, its compute capability
 * and SMs, the cuDNN version, the precision, the workspace limit, the
 * depthwise mode with the checksum of the own depthwise kernels' source,
 * fusion, the --conv-bias and --conv-api modes and the shape: algo_cache_key), then what was
 * chosen (a graph-API pass by its engine's global index and place in the heuristics' list) and what the
 * search measured. A reused row skips the own kernels' check against cuDNN,
 * so rows of other own kernels are not reused. Plain C: parsed once into
 * algo_choice rows, the rest uses their fields. Rows are appended, under an
 * exclusive lock, by whole lines; where two rows have one key and pass (two
 * ranks searching at once), the first is used; a last row without its
 * newline (being written, or cut short) is not read, blank lines and a
 * repeated header are skipped. Delete the file to search again. A file that cannot be read stops the run (its
 * choices would be lost silently); one that cannot be written leaves the
 * choices unsaved, which the backend's choices line says. */
#ifndef ROOFLINE_ALGO_CACHE_H
#define ROOFLINE_ALGO_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "../backend.h"
#include "cuda_plan.h"

#define ALGO_CACHE_HEADER                                                                     \
    "key,pass,own,algo,math,workspace_bytes,find_ms,cudnn_ms,own_ms,verified,matched,"        \
    "own_difference,fused,bias_own_ms,bias_fused_ms,bias_verified,bias_matched,bias_difference," \
    "graph,engine,config_rank,legacy_ms,graph_ms,offered,tried,graph_verified,graph_matched,"  \
    "graph_difference"

enum { ALGO_KEY_LEN = 256, ALGO_PASSES = 3 };

/* One pass of one shape. */
typedef struct {
    char key[ALGO_KEY_LEN];
    int pass;                   /* 0 forward, 1 backward data, 2 backward filter */
    conv_pass_choice choice;
} algo_choice;

typedef struct {
    algo_choice *v;
    int n, cap;
} algo_cache;

/* What a choice depends on besides the shape. */
typedef struct {
    const char *device;         /* the GPU's name */
    int cc;                     /* compute capability, major x 10 + minor */
    int sm_count;               /* the own depthwise kernels' workspace depends on it */
    int cudnn_version;          /* cudnnGetVersion() */
    /* the workspace limit asked for: the search may have had less (half the
     * free memory at most), so a row is taken only where its workspace fits
     * the search workspace of the process that reads it */
    int64_t workspace_limit;
    depthwise_choice depthwise;
    /* the own depthwise kernels' source as built (cuda_depthwise_source_id):
     * a row chose between them and cuDNN, and checked them, as they were */
    uint32_t own_depthwise;
    bool no_fusion;
    conv_bias_choice conv_bias;
    conv_api_choice conv_api;
} algo_context;

/* The key of shape s in context x: the device's name with commas, spaces
 * and control characters made '_', then the rest separated by ';'. 0, or -1
 * when it does not fit in len. */
int algo_cache_key(const algo_context *x, const conv_shape *s, char *key, size_t len);

/* Reads the file at path into c (empty when there is no file). 0, or -1 with
 * one line in err naming the file and the row (a header of another kind, a
 * malformed row). */
int algo_cache_read(const char *path, algo_cache *c, char *err, size_t err_len);

/* The first row of key and pass, or NULL. */
const algo_choice *algo_cache_find(const algo_cache *c, const char *key, int pass);

/* Appends rows to the file at path (the header first when it is new or
 * empty), under an exclusive lock where the file system has locks, and to c.
 * 0, or -1 with one line in err. */
int algo_cache_append(const char *path, algo_cache *c, const algo_choice *rows, int n,
                      char *err, size_t err_len);

void algo_cache_free(algo_cache *c);

#ifdef __cplusplus
}
#endif

#endif
