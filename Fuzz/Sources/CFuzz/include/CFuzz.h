#ifndef CFUZZ_H
#define CFUZZ_H
#include <stddef.h>
#include <stdint.h>

/// libFuzzer's entry for programs with their own main (https://llvm.org/docs/LibFuzzer.html, "Using libFuzzer as a
/// library"). SwiftPM links each executable with its own `main`, so the targets call this instead of libFuzzer's main.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
