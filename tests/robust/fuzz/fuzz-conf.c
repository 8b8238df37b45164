/*
 * The policy file's parser, ht_conf_parse(), on any bytes: it accepts or
 * names the line it refused; what it accepts is well formed (strings
 * terminated, warm paths absolute and inside their buffer); a refusal
 * leaves nothing behind.
 */
#include <errno.h>

#include "conf.h"
#include "fuzz.h"

static struct ht_conf conf; /* about 12 KiB: static, as in the preload */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = exact_copy(data, size), err[256];
	int rc;

	if (!buf)
		return 0;
	rc = ht_conf_parse(size ? buf : NULL, size, &conf, err, sizeof(err));
	PROPERTY(rc == 0 || rc == -EINVAL);
	PROPERTY(memchr(err, '\0', sizeof(err)) != NULL);
	if (rc == 0) {
		PROPERTY(memchr(conf.programs, '\0', sizeof(conf.programs)));
		PROPERTY(memchr(conf.match, '\0', sizeof(conf.match)));
		PROPERTY(memchr(conf.ignore, '\0', sizeof(conf.ignore)));
		PROPERTY(memchr(conf.hugetlbfs, '\0', sizeof(conf.hugetlbfs)));
		PROPERTY(conf.nwarm <= HT_CONF_WARM_MAX);
		for (unsigned i = 0; i < conf.nwarm; i++) {
			const char *w = ht_conf_warm(&conf, i);

			PROPERTY(conf.warm_off[i] < HT_CONF_WARM_BYTES && w[0] == '/');
			PROPERTY(memchr(w, '\0', HT_CONF_WARM_BYTES - conf.warm_off[i]));
		}
		PROPERTY(conf.budget_ms <= HT_CONF_BUDGET_MAX && conf.pool <= HT_CONF_POOL_MAX);
		PROPERTY(conf.page_cache <= 1 && conf.async <= 1 && conf.verbose <= 1);
	} else {
		static const struct ht_conf zero;

		PROPERTY(strncmp(err, "line ", 5) == 0 || strncmp(err, "longer than", 11) == 0);
		PROPERTY(memcmp(&conf, &zero, sizeof(conf)) == 0);
	}
	free(buf);
	return 0;
}
