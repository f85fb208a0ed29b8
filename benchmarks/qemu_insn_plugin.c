/* A QEMU TCG plugin that counts guest instructions, for
 * benchmarks/qemu_insn_count.py. Debian ships qemu-user with plugin support
 * but without qemu-plugin.h, so the few entry points it uses are declared
 * here (plugin API version 1, QEMU 7.x). The count is one global added to
 * inline at each translated block's execution: exact with one guest thread,
 * racy with several (run main_test --threads 1). */
#include <stdint.h>
#include <stdio.h>
#include <stddef.h>
typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
extern void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, void (*cb)(qemu_plugin_id_t, struct qemu_plugin_tb*));
extern size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb*);
extern void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb* tb, enum qemu_plugin_op op, void* ptr, uint64_t imm);
extern void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, void (*cb)(qemu_plugin_id_t, void*), void* userdata);
__attribute__((visibility("default"))) int qemu_plugin_version = 1;
static uint64_t insns;
static void on_trans(qemu_plugin_id_t id, struct qemu_plugin_tb* tb) {
  (void)id;
  qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &insns, qemu_plugin_tb_n_insns(tb));
}
static void on_exit(qemu_plugin_id_t id, void* p) { (void)id; (void)p; fprintf(stderr, "insns: %llu\n", (unsigned long long)insns); }
__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const void* info, int argc, char** argv) {
  (void)info; (void)argc; (void)argv;
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_trans);
  qemu_plugin_register_atexit_cb(id, on_exit, NULL);
  return 0;
}
