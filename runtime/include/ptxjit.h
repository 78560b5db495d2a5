/* ptxjit's C interface: PTX modules compiled to x86-64 code, kernels launched on host
 * memory, .func calls, located errors and faults. Link with -lptxjit_runtime.
 *
 * Every function returning int returns PTXJIT_OK or an error code; after an error,
 * ptxjit_last_error() gives the calling thread's message, ptxjit_diagnostic() its located
 * diagnostics and ptxjit_last_fault() the fault of a failed launch or call. Strings handed
 * out live as long as their module (names) or until the thread's next failing call (error
 * texts). Nothing here aborts the process on bad input; an unchecked module's kernels can. */
#ifndef PTXJIT_H
#define PTXJIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PTXJIT_OK 0
#define PTXJIT_ERROR_INVALID_ARGUMENT 1 /* null pointer, bad UTF-8, unknown name or index */
#define PTXJIT_ERROR_PARSE 2            /* the PTX does not parse or validate */
#define PTXJIT_ERROR_COMPILE 3          /* it parsed but did not compile */
#define PTXJIT_ERROR_USAGE 4            /* the launch or call was refused */
#define PTXJIT_ERROR_FAULT 5            /* the PTX faulted while running */
#define PTXJIT_ERROR_INTERNAL 6         /* a bug in ptxjit, caught */

/* ptxjit_module_load flag: compile without memory checks (faster; a bad access may crash). */
#define PTXJIT_LOAD_UNCHECKED 1u

typedef struct ptxjit_module ptxjit_module;

typedef struct {
  uint32_t x, y, z;
} ptxjit_dim3;

typedef struct {
  const char *path;
  uint32_t line;   /* 1-based */
  uint32_t column; /* 1-based, in characters */
  const char *message;
} ptxjit_diagnostic_t;

typedef struct {
  const char *function; /* the kernel or function that was running */
  const char *message;
  const char *path;
  uint32_t line;
  uint32_t column;
  uint32_t ctaid[3];
  uint32_t tid[3];
  uint64_t address; /* valid when has_address */
  int has_address;
} ptxjit_fault_t;

typedef struct {
  const char *name;
  int is_kernel; /* .entry (1) or .func (0) */
  int has_body;
  uint32_t param_count;
  uint32_t return_count;
  size_t param_buffer_size; /* bytes of the packed parameter buffer */
} ptxjit_function_info_t;

typedef struct {
  const char *name;
  const char *type; /* element type: "u32", "f64", "b8" (a byte array), ... */
  size_t size;      /* bytes: the type's, or the array's */
  uint32_t align;
  size_t offset; /* in the packed parameter buffer (0 for return values) */
} ptxjit_param_info_t;

/* Parses, validates and compiles PTX text; `name` (may be NULL) names it in diagnostics. */
int ptxjit_module_load(const char *ptx, const char *name, uint32_t flags, ptxjit_module **module);
/* Frees a module (NULL allowed); no launch or call of it may be running. */
void ptxjit_module_free(ptxjit_module *module);

size_t ptxjit_function_count(const ptxjit_module *module);
int ptxjit_function_find(const ptxjit_module *module, const char *name, size_t *index);
int ptxjit_function_info(const ptxjit_module *module, size_t index, ptxjit_function_info_t *info);
int ptxjit_param_info(const ptxjit_module *module, size_t function, size_t param, ptxjit_param_info_t *info);
int ptxjit_return_info(const ptxjit_module *module, size_t function, size_t ret, ptxjit_param_info_t *info);

/* Tells checked launches that [base, base + size) is memory kernels may access, until it is
 * unregistered; the caller keeps it valid meanwhile. */
int ptxjit_register_memory(void *base, size_t size);
int ptxjit_unregister_memory(void *base);

/* Launches `kernel`: params[i] points to the value of parameter i (as cuLaunchKernel's
 * kernelParams); a buffer is passed as its host address. Runs to its end before returning. */
int ptxjit_launch(const ptxjit_module *module, const char *kernel, ptxjit_dim3 grid, ptxjit_dim3 block,
                  uint32_t shared_bytes, void **params);
/* Calls a .func: args[i] points to parameter i's value; return value j is written to rets[j]. */
int ptxjit_call(const ptxjit_module *module, const char *function, void **args, void **rets);

/* The calling thread's last error message ("" if none). */
const char *ptxjit_last_error(void);
size_t ptxjit_diagnostic_count(void);
int ptxjit_diagnostic(size_t index, ptxjit_diagnostic_t *out);
/* The fault of the last failed launch or call (PTXJIT_ERROR_INVALID_ARGUMENT if it was not one). */
int ptxjit_last_fault(ptxjit_fault_t *out);
const char *ptxjit_version(void);

/* gpuocelot's entry point: runs the module's kernel with args[i] the value of parameter i. */
void ptx_run(const char *ptx, int n_args, void **args, int blck_x, int blck_y, int blck_z, int grid_x,
             int grid_y, int grid_z, int shared_mem_size);

#ifdef __cplusplus
}
#endif

#endif
