/* For the test programs: whether the preload's report holds their line. */
#ifndef HT_TEST_REPORT_LINE_H
#define HT_TEST_REPORT_LINE_H

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/*
 * True once the report at @path holds a whole line of this process that
 * contains @needle (any line with NULL; the library writes each region's
 * line last, whatever its outcome).
 */
static inline int report_has_line_with(const char *path, const char *needle)
{
	char line[4096], key[32];
	FILE *f = fopen(path, "r");
	int found = 0;

	if (!f)
		return 0;
	snprintf(key, sizeof(key), "{\"pid\":%ld,", (long)getpid());
	while (!found && fgets(line, sizeof(line), f))
		found = strncmp(line, key, strlen(key)) == 0 && strchr(line, '\n') != NULL &&
			(!needle || strstr(line, needle) != NULL);
	fclose(f);
	return found;
}

static inline int report_has_line(const char *path)
{
	return report_has_line_with(path, NULL);
}

#endif
