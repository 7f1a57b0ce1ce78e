/* A stand-in libcuda.so.1 for measuring naiad's host launch path on a machine without a GPU.
 *
 * Why: the warm launch ends in cuda-python's cuLaunchKernel wrapper, whose argument conversion
 * is part of the host cost. Loading this library before cuda.bindings lets the benchmark run the
 * real wrapper while the "driver" does nothing. Every entry point cuda-python resolves through
 * cuGetProcAddress gets a stub: the few that fill output parameters (device count, attributes,
 * module/function handles, events, memory) write plausible values (an H200-like sm_90 device);
 * all others return CUDA_SUCCESS (all stubs are exported under their names too). Memory is host
 * malloc, so copies work; memsets do nothing.
 *
 * Built by bench/launch_overhead.py:  cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o libcuda.so.1
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
static long long launches;
static int event_clock;

long long fake_cuda_launch_count(void) { return launches; }

static CUresult ok(void) { return 0; }
CUresult cuInit(unsigned f) { (void)f; return 0; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return 0; }
CUresult cuDeviceGet(int *d, int i) { *d = i; return 0; }
CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
    (void)dev;
    switch (attr) {
    case 75: *v = 9; break;          /* compute capability major */
    case 76: *v = 0; break;          /* minor */
    case 97: *v = 232448; break;     /* max shared per block, opt-in */
    case 1: *v = 1024; break;        /* max threads per block */
    case 16: *v = 132; break;        /* multiprocessors */
    default: *v = 0;
    }
    return 0;
}
CUresult cuDeviceGetName(char *name, int len, int dev) {
    (void)dev;
    strncpy(name, "Fake H200 (no-op driver)", (size_t)len);
    return 0;
}
CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) {
    (void)dev;
    *ctx = (void *)0x1000;
    return 0;
}
CUresult cuCtxGetCurrent(void **ctx) { *ctx = (void *)0x1000; return 0; }
CUresult cuCtxGetDevice(int *d) { *d = 0; return 0; }
CUresult cuModuleLoadData(void **m, const void *img) { (void)img; *m = (void *)0x2000; return 0; }
CUresult cuModuleGetFunction(void **f, void *m, const char *n) {
    (void)m; (void)n;
    *f = (void *)0x3000;
    return 0;
}
CUresult cuFuncGetAttribute(int *v, int attr, void *f) {
    (void)f;
    *v = attr == 0 ? 1024 : (attr == 4 ? 16 : 0);   /* max threads, registers; else 0 */
    return 0;
}
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shmem, void *stream,
                        void **params, void **extra) {
    (void)f; (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shmem;
    (void)stream; (void)params; (void)extra;
    launches++;
    return 0;
}
CUresult cuMemAlloc(uint64_t *p, size_t n) {
    *p = (uint64_t)(uintptr_t)malloc(n ? n : 1);
    return 0;
}
CUresult cuMemFree(uint64_t p) { free((void *)(uintptr_t)p); return 0; }
/* memsets do nothing: do_bench's L2 flush would otherwise write 256 MB of host memory */
CUresult cuMemsetD8(uint64_t p, unsigned char v, size_t n) { (void)p; (void)v; (void)n; return 0; }
CUresult cuMemsetD8Async(uint64_t p, unsigned char v, size_t n, void *s) {
    (void)s;
    return cuMemsetD8(p, v, n);
}
CUresult cuMemsetD32(uint64_t p, unsigned v, size_t n) { (void)p; (void)v; (void)n; return 0; }
CUresult cuMemsetD32Async(uint64_t p, unsigned v, size_t n, void *s) {
    (void)s;
    return cuMemsetD32(p, v, n);
}
CUresult cuMemcpyHtoD(uint64_t d, const void *s, size_t n) {
    memcpy((void *)(uintptr_t)d, s, n);
    return 0;
}
CUresult cuMemcpyHtoDAsync(uint64_t d, const void *s, size_t n, void *stream) {
    (void)stream;
    return cuMemcpyHtoD(d, s, n);
}
CUresult cuMemAllocHost(void **p, size_t n) { *p = malloc(n ? n : 1); return 0; }
CUresult cuMemFreeHost(void *p) { free(p); return 0; }
CUresult cuMemcpyDtoH(void *d, uint64_t s, size_t n) {
    memcpy(d, (void *)(uintptr_t)s, n);
    return 0;
}
CUresult cuEventCreate(void **e, unsigned f) { (void)f; *e = malloc(sizeof(int)); return 0; }
CUresult cuEventRecord(void *e, void *s) { (void)s; *(int *)e = ++event_clock; return 0; }
CUresult cuEventDestroy(void *e) { free(e); return 0; }
CUresult cuEventElapsedTime(float *ms, void *a, void *b) {
    *ms = (float)(*(int *)b - *(int *)a) * 1e-3f;   /* 1 us per recorded event */
    return 0;
}
CUresult cuGetErrorName(CUresult e, const char **s) { (void)e; *s = "CUDA_ERROR_FAKE"; return 0; }
CUresult cuGetErrorString(CUresult e, const char **s) { (void)e; *s = "fake driver"; return 0; }

struct entry { const char *name; void *fn; };
static const struct entry table[] = {
    {"cuInit", (void *)cuInit}, {"cuDriverGetVersion", (void *)cuDriverGetVersion},
    {"cuDeviceGetCount", (void *)cuDeviceGetCount}, {"cuDeviceGet", (void *)cuDeviceGet},
    {"cuDeviceGetAttribute", (void *)cuDeviceGetAttribute},
    {"cuDeviceGetName", (void *)cuDeviceGetName},
    {"cuDevicePrimaryCtxRetain", (void *)cuDevicePrimaryCtxRetain},
    {"cuCtxGetCurrent", (void *)cuCtxGetCurrent}, {"cuCtxGetDevice", (void *)cuCtxGetDevice},
    {"cuModuleLoadData", (void *)cuModuleLoadData},
    {"cuModuleGetFunction", (void *)cuModuleGetFunction},
    {"cuFuncGetAttribute", (void *)cuFuncGetAttribute},
    {"cuLaunchKernel", (void *)cuLaunchKernel},
    {"cuMemAlloc", (void *)cuMemAlloc}, {"cuMemFree", (void *)cuMemFree},
    {"cuMemsetD8Async", (void *)cuMemsetD8Async}, {"cuMemsetD8", (void *)cuMemsetD8},
    {"cuMemsetD32Async", (void *)cuMemsetD32Async}, {"cuMemsetD32", (void *)cuMemsetD32},
    {"cuMemcpyHtoDAsync", (void *)cuMemcpyHtoDAsync},
    {"cuMemcpyHtoD", (void *)cuMemcpyHtoD}, {"cuMemcpyDtoH", (void *)cuMemcpyDtoH},
    {"cuMemAllocHost", (void *)cuMemAllocHost}, {"cuMemFreeHost", (void *)cuMemFreeHost},
    {"cuEventCreate", (void *)cuEventCreate}, {"cuEventRecord", (void *)cuEventRecord},
    {"cuEventDestroy", (void *)cuEventDestroy},
    {"cuEventElapsedTime", (void *)cuEventElapsedTime},
    {"cuGetErrorName", (void *)cuGetErrorName}, {"cuGetErrorString", (void *)cuGetErrorString},
};

static void *lookup(const char *symbol) {
    size_t n = strlen(symbol);
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        size_t m = strlen(table[i].name);
        /* cuMemAlloc_v2, cuEventDestroy_v2, cuEventElapsedTime_v2 ... map to the base stub */
        if (strncmp(symbol, table[i].name, m) == 0 && (n == m || symbol[m] == '_'))
            return table[i].fn;
    }
    return (void *)ok;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags,
                             int *status) {
    (void)version; (void)flags;
    *pfn = lookup(symbol);
    if (status) *status = 0;
    return 0;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags) {
    return cuGetProcAddress_v2(symbol, pfn, version, flags, 0);
}

