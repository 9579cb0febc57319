/* The model zoo: torchvision's resnet18, resnet50 (v1.5), vgg16 and
 * mobilenet_v2, and their CIFAR variants (DESIGN.md §4). */
#ifndef ROOFLINE_ZOO_H
#define ROOFLINE_ZOO_H

#include <stddef.h>

#include "graph.h"

typedef struct {
    const char *name;
    const char *summary;
    int default_res;
    int default_classes;
    /* SGD learning rate of torchvision's reference recipe at batch 256: 0.1,
     * but 0.01 for VGG-16, which has no batch norm */
    float base_lr;
} model_info;

/* All models, in the order `bin/complexity --list` shows them. */
const model_info *zoo_models(int *count);
const model_info *zoo_find(const char *name);
/* "resnet18, resnet50, ..." for error messages, written into buf. */
enum { ZOO_NAMES_LEN = 256 };
const char *zoo_names(char *buf, size_t len);

/* Builds `model` for res x res RGB input and `classes` outputs. Returns a
 * net_status; on failure net->err says why and the network holds nothing. */
int zoo_build(network *net, const char *model, int res, int classes);

/* The smallest resolution the model admits, or 0 for an unknown model. */
int zoo_min_res(const char *model);

/* The default learning rate at a batch size: the linear-scaling rule of the
 * reference recipes, base_lr x batch / 256. */
float zoo_default_lr(const model_info *m, int batch);
enum { ZOO_LR_BASE_BATCH = 256 };

enum { ZOO_MAX_RES = 4096, ZOO_MAX_CLASSES = 1000000 };

#endif
