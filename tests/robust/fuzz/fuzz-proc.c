/*
 * The other text the library reads or writes: /proc/meminfo and the sysfs
 * pool counts, /proc/self/mounts (hugetlbfs), ELF build-id notes, the
 * HUGETEXT_* settings, and the report lines it formats.
 * Input: one byte chooses the parser, a few more bytes of control, then
 * the text.
 */
#include <errno.h>

#include "fuzz.h"
#include "internal.h"
#include "objects.h"
#include "pool.h"

static void fuzz_pool(const char *buf, size_t len, uint64_t ctl)
{
	uint64_t v;
	char dir[512];
	size_t dirlen = 1 + ctl % sizeof(dir);

	(void)ht_parse_meminfo_hugepagesize(buf, len);
	if (ht_parse_count(buf, len, &v) == 0)
		PROPERTY(len > 0 && buf[0] >= '0' && buf[0] <= '9');
	int rc = ht_find_hugetlbfs(buf, len, 2048, (ctl >> 16) & 1 ? 1048576 : 2048, dir, dirlen);
	PROPERTY(rc == 0 || rc == -ENOENT || rc == -ENAMETOOLONG);
	if (rc == 0)
		PROPERTY(strnlen(dir, dirlen) < dirlen);

	/* The memory cgroup files: /proc/self/cgroup, memory.max, memory.stat. */
	int v1 = -1;
	rc = ht_parse_memcg_path(buf, len, dir, dirlen, &v1);
	PROPERTY(rc == 0 || rc == -ENOENT || rc == -ENAMETOOLONG);
	if (rc == 0)
		PROPERTY(strnlen(dir, dirlen) < dirlen && (v1 == 0 || v1 == 1));
	rc = ht_parse_memory_max(buf, len, &v);
	PROPERTY(rc == 0 || rc == -EINVAL);
	(void)ht_memory_stat_field(buf, len, "inactive_file");
	(void)ht_memory_stat_field(buf, len, (ctl >> 17) & 1 ? "total_inactive_file" : "");
}

static void fuzz_notes(const char *buf, size_t len, uint64_t ctl)
{
	unsigned char id[64];
	size_t max = ctl % (sizeof(id) + 1);
	/* Notes are 4-byte aligned in memory; give the parser aligned bytes. */
	unsigned char *al = aligned_alloc(8, (len + 7) & ~(size_t)7);
	int rc;

	if (!al)
		return;
	memcpy(al, buf, len);
	rc = ht_note_build_id(al, len, id, max);
	PROPERTY(rc == -ENOENT || (rc > 0 && (size_t)rc <= max));
	free(al);
}

/* Settings: NUL-separated values for the variables, in this order. */
static const char *const vars[] = {
	"HUGETEXT_MODE", "HUGETEXT_VERBOSE", "HUGETEXT_REPORT", "HUGETEXT_MATCH", "HUGETEXT_IGNORE",
	"HUGETEXT_BUDGET_MS", "HUGETEXT_FILL", "HUGETEXT_SHARE", "HUGETEXT_SHARE_DIR",
	"HUGETEXT_PERF_MAP", "IODLR_USE_EXPLICIT_HP",
};
static char *values[sizeof(vars) / sizeof(vars[0])];

static char *fake_getenv(const char *name)
{
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		if (strcmp(name, vars[i]) == 0)
			return values[i];
	return NULL;
}

static void check_line(const char *buf, int n, size_t len, int json)
{
	PROPERTY(n == -ENOSPC || (n > 0 && (size_t)n < len));
	if (n <= 0)
		return;
	PROPERTY(buf[n] == '\0' && (size_t)n == strlen(buf));
	PROPERTY(buf[n - 1] == '\n');
	/* One line, no raw control byte a terminal or a JSON parser would trip on. */
	for (int i = 0; i < n - 1; i++)
		PROPERTY((unsigned char)buf[i] >= 0x20 && buf[i] != 0x7f);
	if (json)
		PROPERTY(buf[0] == '{' && buf[n - 2] == '}');
}

static void fuzz_settings(char *text, size_t len, uint64_t ctl)
{
	struct ht_options opt;
	struct ht_region r;
	char notes[600], line[1200];
	size_t at = 0, notes_len = ctl % sizeof(notes), line_len = (ctl >> 16) % sizeof(line);

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		values[i] = NULL;
		if (at < len && ((ctl >> (32 + i)) & 1)) {
			values[i] = text + at;
			at += strnlen(text + at, len - at) + 1;
		}
	}
	if (at > len)
		return; /* the last value had no NUL: not a C string */
	ht_options_init(&opt);
	ht_options_env(&opt, fake_getenv, notes_len ? notes : NULL, notes_len);
	if (notes_len)
		PROPERTY(memchr(notes, '\0', notes_len) != NULL);
	PROPERTY((unsigned)opt.mode <= HT_MODE_FOLIOS);

	/* A region with the rest of the text as its object, and odd fields. */
	memset(&r, 0, sizeof(r));
	if (at < len) {
		size_t n = len - at < sizeof(r.object) - 1 ? len - at : sizeof(r.object) - 1;
		memcpy(r.object, text + at, n);
		r.object[n] = '\0';
	}
	r.start = (uintptr_t)ctl;
	r.end = (uintptr_t)~ctl;
	r.bytes = (size_t)(ctl * 7);
	r.huge_bytes = (size_t)(ctl >> 3);
	r.mode = (enum ht_mode)(ctl % 6);
	r.status = (enum ht_status)((ctl >> 8) % 4);
	r.error = (enum ht_error)((ctl >> 12) % (HT_E__COUNT + 2));
	r.sys_errno = (int)((ctl >> 20) % 140);
	r.ms = (double)(ctl % 100000) / 7.0;
	r.fill = (ctl >> 40) & 1 ? "pread" : "";
	r.cache = (ctl >> 41) & 1 ? "refused" : "";
	/* The library only ever sets it to one of its own texts. */
	r.cache_error = (ctl >> 42) & 1 ? "cache directory is not on a 2 MiB hugetlbfs" : "";
	check_line(line, ht_format_json(&r, (long)(ctl >> 24), line, line_len), line_len, 1);
	check_line(line, ht_format_human(&r, line, line_len), line_len, 0);
	/* The library's own buffer size: a report line that does not fit is lost. */
	check_line(line, ht_format_json(&r, 4194304, line, 1024), 1024, 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t which = take(&data, &size, 1), ctl = take(&data, &size, 8);
	char *buf = exact_copy(data, size);

	if (!buf)
		return 0;
	switch (which % 3) {
	case 0:
		fuzz_pool(buf, size, ctl);
		break;
	case 1:
		fuzz_notes(buf, size, ctl);
		break;
	default:
		fuzz_settings(buf, size, ctl);
		break;
	}
	free(buf);
	return 0;
}
