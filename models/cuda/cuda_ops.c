/* The CUDA backend's table of operations, in C (designated initialisers);
 * the operations themselves are in the .cu files of this folder. */
#ifdef HAVE_CUDA
#include "cuda_backend.h"

const backend_ops cuda_backend_ops = {
    .name = "cuda",
    .create = cuda_create,
    .cannot_run = cuda_cannot_run,
    .destroy = cuda_destroy,
    .error = cuda_error,
    .read = cuda_read,
    .write = cuda_write,
    .set_batch = cuda_set_batch,
    .forward = cuda_forward,
    .loss = cuda_loss,
    .read_loss = cuda_read_loss,
    .backward_data = cuda_backward_data,
    .backward_weights = cuda_backward_weights,
    .update = cuda_update,
    .update_all = cuda_update_all,
    .sync = cuda_sync,
    .kernel_name = cuda_kernel_name,
    .fused_into = cuda_fused_into,
    .bias_grad_by = cuda_bias_grad_by,
    .op_bytes = cuda_op_bytes,
    .timer_start = cuda_timer_start,
    .timer_stop = cuda_timer_stop,
    .timer_read = cuda_timer_read,
    .capture_begin = cuda_capture_begin,
    .capture_end = cuda_capture_end,
    .replay = cuda_replay,
    .stats = cuda_stats,
    .grad_storage = cuda_grad_storage,
    .stream = cuda_stream,
};
#endif
