/* A libc.so.6 that says it is glibc 2.17: version nodes up to GLIBC_2.17
 * (fake-libc.map), no code anyone runs.  The hook must leave an image with
 * it alone, as it would an old distribution's. */
int fake_2_2_5, fake_2_3, fake_2_3_2, fake_2_3_4, fake_2_4, fake_2_14, fake_2_16, fake_2_17;
