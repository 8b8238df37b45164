/* SPDX-License-Identifier: MIT */
/* The fields of the kernel's mount tables (mountfield.h). */
#include "mountfield.h"

int hte_mount_field(const char **p, const char *end, const char **f, size_t *n)
{
	while (*p < end && **p == ' ')
		(*p)++;
	*f = *p;
	while (*p < end && **p != ' ')
		(*p)++;
	*n = (size_t)(*p - *f);
	return *n > 0;
}

/* An escape is a backslash and three octal digits, the first 0-3 (one byte). */
static int is_escape(const char *s, size_t i, size_t n)
{
	return s[i] == '\\' && i + 3 < n && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
	       s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7';
}

int hte_mount_unescape(const char *s, size_t n, char *out, size_t cap)
{
	size_t o = 0;

	if (cap == 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (is_escape(s, i, n)) {
			c = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
			i += 3;
		}
		if (o + 1 >= cap)
			return -1;
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}
