void keep_marker(void); void keep_marker(void) {}
