// The C++ file the clang checks compile with and without the preload
// (tests/kernel/real-clang.sh, zeroconf.sh, tests/arm64/real.sh).
#include <map>
#include <string>
#include <vector>
int main(int argc, char **argv)
{
	std::map<std::string, std::vector<int>> m;
	for (int i = 0; i < argc; i++)
		m[argv[i]].push_back(i);
	return (int)m.size() - 1;
}
