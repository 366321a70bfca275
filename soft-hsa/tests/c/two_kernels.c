/* Dispatches two kernels through the HSA runtime it is linked against: `fill` (out[i] = 3.5 over
 * 256 floats, work-groups of 64) and `rmsnorm` (one row of 256 ones scaled by a weight of 2, one
 * work-group of 256, 1 KiB of static LDS), each from its code object, on one queue, one after
 * the other, and checks both results.
 *
 * usage: two_kernels FILL_CO RMSNORM_CO; exit 0 when both kernels ran and wrote what they must. */
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                    \
    do {                                                                               \
        hsa_status_t status_ = (call);                                                 \
        if (status_ != HSA_STATUS_SUCCESS) {                                           \
            fprintf(stderr, "%s:%d: %s failed with 0x%x\n", __FILE__, __LINE__, #call, \
                    (unsigned)status_);                                                \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

static hsa_agent_t gpu, cpu;
static hsa_amd_memory_pool_t kernarg_pool, fine_pool;

static hsa_status_t find_agent(hsa_agent_t agent, void *unused) {
    (void)unused;
    hsa_device_type_t type;
    CHECK(hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type));
    if (type == HSA_DEVICE_TYPE_GPU && gpu.handle == 0) gpu = agent;
    if (type == HSA_DEVICE_TYPE_CPU) cpu = agent;
    return HSA_STATUS_SUCCESS;
}

static hsa_status_t find_pool(hsa_amd_memory_pool_t pool, void *unused) {
    (void)unused;
    hsa_amd_segment_t segment;
    uint32_t flags = 0;
    CHECK(hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &segment));
    if (segment != HSA_AMD_SEGMENT_GLOBAL) return HSA_STATUS_SUCCESS;
    CHECK(hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags));
    if (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT)
        kernarg_pool = pool;
    else if (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED)
        fine_pool = pool;
    return HSA_STATUS_SUCCESS;
}

struct kernel {
    uint64_t object;
    uint32_t kernarg_bytes;
    uint32_t group_bytes;
};

static struct kernel load(const char *path, const char *symbol_name) {
    FILE *file = fopen(path, "rb");
    if (!file) { perror(path); exit(1); }
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    char *bytes = malloc((size_t)size);
    if (!bytes || fread(bytes, 1, (size_t)size, file) != (size_t)size) { perror(path); exit(1); }
    fclose(file);
    hsa_code_object_reader_t reader;
    hsa_executable_t executable;
    hsa_executable_symbol_t symbol;
    struct kernel k;
    CHECK(hsa_code_object_reader_create_from_memory(bytes, (size_t)size, &reader));
    CHECK(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL, &executable));
    CHECK(hsa_executable_load_agent_code_object(executable, gpu, reader, NULL, NULL));
    CHECK(hsa_executable_freeze(executable, NULL));
    CHECK(hsa_executable_get_symbol_by_name(executable, symbol_name, &gpu, &symbol));
    CHECK(hsa_executable_symbol_get_info(symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, &k.object));
    CHECK(hsa_executable_symbol_get_info(symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE, &k.kernarg_bytes));
    CHECK(hsa_executable_symbol_get_info(symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE, &k.group_bytes));
    return k;
}

/* A queue fault ends the program: its dispatch would never complete. */
static void on_queue_error(hsa_status_t status, hsa_queue_t *queue, void *unused) {
    (void)queue;
    (void)unused;
    fprintf(stderr, "queue fault 0x%x\n", (unsigned)status);
    _Exit(1);
}

static void *allocate(hsa_amd_memory_pool_t pool, size_t bytes) {
    void *p = NULL;
    CHECK(hsa_amd_memory_pool_allocate(pool, bytes, 0, &p));
    memset(p, 0, bytes);
    return p;
}

/* One 1-D kernel dispatch with the barrier bit and system-scope fences, waited for. */
static void dispatch(hsa_queue_t *queue, const struct kernel *k, void *kernarg, uint32_t grid,
                     uint16_t workgroup) {
    hsa_signal_t done;
    CHECK(hsa_signal_create(1, 0, NULL, &done));
    uint64_t index = hsa_queue_add_write_index_scacq_screl(queue, 1);
    hsa_kernel_dispatch_packet_t *packet =
        (hsa_kernel_dispatch_packet_t *)queue->base_address + (index & (queue->size - 1));
    memset((char *)packet + 4, 0, sizeof(*packet) - 4);
    packet->workgroup_size_x = workgroup;
    packet->workgroup_size_y = 1;
    packet->workgroup_size_z = 1;
    packet->grid_size_x = grid;
    packet->grid_size_y = 1;
    packet->grid_size_z = 1;
    packet->group_segment_size = k->group_bytes;
    packet->private_segment_size = 0;
    packet->kernel_object = k->object;
    packet->kernarg_address = kernarg;
    packet->completion_signal = done;
    uint16_t header = (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) |
                      (1 << HSA_PACKET_HEADER_BARRIER) |
                      (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                      (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
    uint16_t setup = 1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
    /* The header last, with release: the packet processor reads the body after it. */
    __atomic_store_n((uint32_t *)packet, (uint32_t)header | ((uint32_t)setup << 16), __ATOMIC_RELEASE);
    hsa_signal_store_screlease(queue->doorbell_signal, (hsa_signal_value_t)index);
    if (hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX, HSA_WAIT_STATE_BLOCKED) != 0) {
        fprintf(stderr, "dispatch did not complete\n");
        exit(1);
    }
    CHECK(hsa_signal_destroy(done));
}

static void put_u32(char *kernarg, uint32_t offset, uint32_t value) { memcpy(kernarg + offset, &value, 4); }
static void put_u16(char *kernarg, uint32_t offset, uint16_t value) { memcpy(kernarg + offset, &value, 2); }

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: %s FILL_CO RMSNORM_CO\n", argv[0]); return 2; }
    CHECK(hsa_init());
    CHECK(hsa_iterate_agents(find_agent, NULL));
    if (gpu.handle == 0 || cpu.handle == 0) { fprintf(stderr, "no GPU or CPU agent\n"); return 1; }
    CHECK(hsa_amd_agent_iterate_memory_pools(cpu, find_pool, NULL));
    if (kernarg_pool.handle == 0 || fine_pool.handle == 0) { fprintf(stderr, "no kernarg or fine pool\n"); return 1; }
    struct kernel fill = load(argv[1], "fill.kd");
    struct kernel rmsnorm = load(argv[2], "rmsnorm.kd");
    hsa_queue_t *queue;
    CHECK(hsa_queue_create(gpu, 64, HSA_QUEUE_TYPE_SINGLE, on_queue_error, NULL, UINT32_MAX, UINT32_MAX, &queue));

    /* fill(out, 3.5, 256): code-object v5 hidden arguments from offset 16, after the explicit
     * ones (block counts at +0, group sizes at +12, remainders at +18, grid dimensions at +64). */
    float *out = allocate(fine_pool, 256 * sizeof(float));
    char *args = allocate(kernarg_pool, fill.kernarg_bytes);
    float value = 3.5f;
    memcpy(args, &out, 8);
    memcpy(args + 8, &value, 4);
    put_u32(args, 12, 256);
    if (fill.kernarg_bytes >= 28) { put_u32(args, 16, 4); put_u32(args, 20, 1); put_u32(args, 24, 1); }
    if (fill.kernarg_bytes >= 34) { put_u16(args, 28, 64); put_u16(args, 30, 1); put_u16(args, 32, 1); }
    if (fill.kernarg_bytes >= 82) put_u16(args, 80, 1);
    dispatch(queue, &fill, args, 256, 64);

    /* rmsnorm(y, x, weight, 1 row, 256 columns, eps 1e-5): no hidden arguments. */
    float *x = allocate(fine_pool, 256 * sizeof(float));
    float *weight = allocate(fine_pool, 256 * sizeof(float));
    float *y = allocate(fine_pool, 256 * sizeof(float));
    for (int i = 0; i < 256; i++) { x[i] = 1.0f; weight[i] = 2.0f; }
    char *rargs = allocate(kernarg_pool, rmsnorm.kernarg_bytes);
    float eps = 1e-5f;
    memcpy(rargs, &y, 8);
    memcpy(rargs + 8, &x, 8);
    memcpy(rargs + 16, &weight, 8);
    put_u32(rargs, 24, 1);
    put_u32(rargs, 28, 256);
    memcpy(rargs + 32, &eps, 4);
    dispatch(queue, &rmsnorm, rargs, 256, 256);

    for (int i = 0; i < 256; i++) {
        if (out[i] != 3.5f) { fprintf(stderr, "fill: out[%d] = %f\n", i, out[i]); return 1; }
        if (fabsf(y[i] - 2.0f) > 1e-3f) { fprintf(stderr, "rmsnorm: y[%d] = %f\n", i, y[i]); return 1; }
    }
    CHECK(hsa_queue_destroy(queue));
    CHECK(hsa_shut_down());
    printf("fill and rmsnorm ran\n");
    return 0;
}
