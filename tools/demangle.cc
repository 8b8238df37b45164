// SPDX-License-Identifier: MIT
// C++ demangling for `check --symbols`, from the C++ runtime the compiler
// already ships: no binutils or libiberty needed.
#include <cstdlib>
#include <cstring>
#include <cxxabi.h>

#include "symbols.h"

// Back-references in @name: substitutions (S_, S0_, SA_ ...) and template
// parameters (T_, T0_ ...).  Each can stand for all that came before it,
// so a few dozen of them, nested, spell a name of gigabytes: a 347-byte
// symbol took 14 s and 2 GB to demangle.  k references doubling in turn give
// at most about e^(k/e) times the name: 40 stay within some megabytes.
// Of the 38,000 names libLLVM exports (the largest C++ library here), 3
// have more (45 at most), and keep their mangled form, which is still the
// right name; so does a name that only looks as if it had many.
static unsigned references(const char *name)
{
	unsigned n = 0;

	for (const char *p = name; *p; p++) {
		if (*p != 'S' && *p != 'T')
			continue;
		const char *q = p + 1;
		while ((*q >= '0' && *q <= '9') || (*p == 'S' && *q >= 'A' && *q <= 'Z'))
			q++;
		n += *q == '_';
	}
	return n;
}

extern "C" char *hte_demangle(const char *name)
{
	int status = 0;

	// Only Itanium-mangled names; anything else (C names) stays as it is.
	if (!name || std::strncmp(name, "_Z", 2) != 0 || references(name) > HTE_DEMANGLE_MAX_REFS)
		return nullptr;
	char *out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
	if (status != 0) {
		std::free(out);
		return nullptr;
	}
	return out;
}
