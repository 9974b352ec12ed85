/* The one object every rendered driver library is a copy of (node_render.h):
   a valid ELF shared object whose SONAME rendering replaces. No code runs
   from it. */
int gpulet_sim_driver_stub(void) { return 0; }
