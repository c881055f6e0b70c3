// CUDA_CHECK / CUBLAS_CHECK: turn a failed CUDA or cuBLAS call into fedpar::Error with file:line
// and the call's text.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "core/check.h"

#define CUDA_CHECK(call)                                                                          \
  do {                                                                                            \
    const cudaError_t fedpar_err_ = (call);                                                       \
    FEDPAR_CHECK(fedpar_err_ == cudaSuccess) << #call << ": " << cudaGetErrorString(fedpar_err_); \
  } while (0)

#define CUBLAS_CHECK(call)                                 \
  do {                                                     \
    const cublasStatus_t fedpar_st_ = (call);              \
    FEDPAR_CHECK(fedpar_st_ == CUBLAS_STATUS_SUCCESS)      \
        << #call << ": cuBLAS status " << int(fedpar_st_); \
  } while (0)
