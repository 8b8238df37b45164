/* SPDX-License-Identifier: MIT */
/* The running kernel's page sizes: its base page, and whether a hugetlb size exists. */
#include "sys.h"

#include <fcntl.h>
#include <sys/auxv.h>
#include <unistd.h>

uint64_t ht_sys_base_page_size(void)
{
	/* The kernel hands it to every process in the auxiliary vector: no call. */
	unsigned long v = getauxval(AT_PAGESZ);

	if (v == 0) {
		long s = sysconf(_SC_PAGESIZE);

		v = s > 0 ? (unsigned long)s : 0;
	}
	return v;
}

int ht_sys_dir_exists(const char *path)
{
	int fd = ht_sys_open(path, O_RDONLY | O_DIRECTORY, 0);

	if (fd < 0)
		return fd;
	ht_sys_close(fd);
	return 1;
}
