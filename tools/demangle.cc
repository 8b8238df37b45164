// SPDX-License-Identifier: MIT
// C++ demangling for `check --symbols`, from the C++ runtime the compiler
// already ships: no binutils or libiberty needed.
#include <cstdlib>
#include <cstring>
#include <cxxabi.h>

#include "symbols.h"

extern "C" char *hte_demangle(const char *name)
{
	int status = 0;

	// Only Itanium-mangled names; anything else (C names) stays as it is.
	if (!name || std::strncmp(name, "_Z", 2) != 0)
		return nullptr;
	char *out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
	if (status != 0) {
		std::free(out);
		return nullptr;
	}
	return out;
}
