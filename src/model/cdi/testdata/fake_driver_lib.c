/* A stand-in for one of the NVIDIA driver's libraries in CDI tests: only its
   file name and SONAME matter. */
int gpulet_fake_driver_lib(void) { return 0; }
