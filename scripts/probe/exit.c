// What a CUDA process pays at exit, by how it exits (a probe for the GPU machine, not
// part of the build): opens the GPU through the driver API, allocates page-locked host
// memory and device memory of the given sizes, prints the time, then leaves by
// `ret` (return from main: libc's exit handlers, the driver's own teardown), `_exit`
// (no handlers: the kernel reclaims the process) or `destroy` (cuCtxDestroy, then _exit) or `fork` (a child outlives the parent and
// closes the driver's files after it).
//     cc -O2 exit.c -o exit -I$CUDA/include -L$CUDA/lib64/stubs -lcuda
//     ./exit ret 64 1024    # mode, MB page-locked, MB on the device
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/types.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_REALTIME, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
#define CK(x) do { CUresult r = (x); if (r) { fprintf(stderr, "%s: %d\n", #x, r); return 1; } } while (0)
int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "ret";
    size_t host = (argc > 2 ? atol(argv[2]) : 64) << 20, dev = (argc > 3 ? atol(argv[3]) : 1024) << 20;
    double t0 = now();
    CUdevice d; CUcontext c; void *h = 0; CUdeviceptr p = 0;
    CK(cuInit(0)); CK(cuDeviceGet(&d, 0)); CK(cuCtxCreate(&c, NULL, 0, d));
    double t1 = now();
    if (host) { CK(cuMemHostAlloc(&h, host, 0)); memset(h, 1, host); }
    if (dev) { CK(cuMemAlloc(&p, dev)); CK(cuMemsetD8(p, 0, dev)); CK(cuCtxSynchronize()); }
    double t2 = now();
    printf("open %.3f s, allocate %.3f s, leaving at %.6f (%s)\n", t1 - t0, t2 - t1, t2, mode);
    fflush(stdout);
    if (!strcmp(mode, "_exit")) _exit(0);
    if (!strcmp(mode, "fork")) {
        // The teardown left to a child: it holds the driver's files once the parent has
        // gone, and closes them (the kernel's release of the context) after the parent's exit.
        pid_t parent = getpid();
        if (fork() == 0) { close(0); close(1); close(2); while (getppid() == parent) usleep(1000); _exit(0); }
        _exit(0);
    }
    if (!strcmp(mode, "destroy")) { double t = now(); cuCtxDestroy(c); printf("cuCtxDestroy %.3f s\n", now() - t); fflush(stdout); _exit(0); }
    return 0;
}
