/* SPDX-License-Identifier: MIT */
/* What the kernel tells a process of itself: its base page, its interpreter, whether a hugetlb size exists. */
#include "sys.h"

#include <fcntl.h>
#include <sys/auxv.h>

uint64_t ht_sys_base_page_size(void)
{
	/*
	 * The kernel hands it to every process in the auxiliary vector: no
	 * call.  0 (never seen on Linux) leaves the PMD's size to sysfs.
	 */
	return getauxval(AT_PAGESZ);
}

uintptr_t ht_sys_interp_base(void)
{
	/* The program's interpreter (ld.so), as the kernel mapped it; 0 for a static program. */
	return getauxval(AT_BASE);
}

int ht_sys_dir_exists(const char *path)
{
	int fd = ht_sys_open(path, O_RDONLY | O_DIRECTORY, 0);

	if (fd < 0)
		return fd;
	ht_sys_close(fd);
	return 1;
}
