/* SPDX-License-Identifier: MIT */
/*
 * A shared library with nothing in it: preloaded, it shows what loading
 * any preload costs a program (ld.so opens, maps and relocates it), the
 * floor under hugetext's own preload.
 */
int hugetext_bench_empty_preload;
