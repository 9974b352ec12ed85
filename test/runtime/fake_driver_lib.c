/* Stands in for an NVIDIA driver library: a real ELF shared object with the
 * driver's SONAME, so ldconfig indexes it. */
int gpulet_fake_driver_symbol(void) { return 0; }
