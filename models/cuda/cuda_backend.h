/* The CUDA backend (cuDNN 9 convolutions, cuBLASLt fully connected layers,
 * own kernels for the rest) behind backend.h, in fp32, tf32, fp16 and bf16. */
#ifndef ROOFLINE_CUDA_BACKEND_H
#define ROOFLINE_CUDA_BACKEND_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "../backend.h"

extern const backend_ops cuda_backend_ops;

/* CUDA devices that can be opened; 0 with the reason in why (no driver, no
 * device). */
int cuda_device_count(char *why, size_t why_len);

/* Whether device cfg->device cannot run a step of net at cfg's batch and
 * precision at all: 1 with the reason in why (a precision it lacks, or more
 * memory than it has free), 0 where it can, -1 with CUDA's error where the
 * device cannot be asked. What cuda_create would refuse first, asked before. */
int cuda_cannot_run(const network *net, const backend_config *cfg, char *why, size_t why_len);

/* The operations of the table, one per backend_ops entry (cuda_ops.c fills
 * the table from C; they are defined in the .cu files). */
backend *cuda_create(const network *net, const backend_config *cfg, char *err, size_t err_len);
void cuda_destroy(backend *b);
const char *cuda_error(const backend *b);
int cuda_read(backend *b, int layer, buffer_kind kind, float *dst);
int cuda_write(backend *b, int layer, buffer_kind kind, const float *src);
int cuda_set_batch(backend *b, const float *images, const int32_t *labels);
int cuda_forward(backend *b, int layer);
int cuda_loss(backend *b);
int cuda_read_loss(backend *b, float *loss);
int cuda_backward_data(backend *b, int layer, const bool accumulate[LAYER_MAX_INPUTS]);
int cuda_backward_weights(backend *b, int layer);
int cuda_update(backend *b, int layer, const sgd_params *sgd);
int cuda_update_all(backend *b, const sgd_params *sgd);
int cuda_sync(backend *b);
void cuda_kernel_name(const backend *b, int layer, pass phase, char *buf, size_t len);
int cuda_fused_into(const backend *b, int layer, pass phase);
int cuda_bias_grad_by(const backend *b, int layer);
int cuda_op_bytes(const backend *b, int layer, pass phase, int64_t *read, int64_t *written);
int cuda_timer_start(backend *b);
int cuda_timer_stop(backend *b);
int cuda_timer_read(backend *b, double *ms);
int cuda_capture_begin(backend *b);
int cuda_capture_end(backend *b);
int cuda_replay(backend *b);
int cuda_stats(backend *b, backend_stats *out);
int cuda_grad_storage(backend *b, int layer, buffer_kind kind, grad_memory *out);
void *cuda_stream(backend *b);

#ifdef __cplusplus
}
#endif

#endif
