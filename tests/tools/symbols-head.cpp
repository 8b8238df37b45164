// A program for `check --symbols`: C++ functions before and after 8 MiB of
// code (symbols-mid.S), so that some fall outside the coverable span and
// one, in the middle, inside it.
namespace head_ns {
__attribute__((noinline)) int head_function(int x)
{
	return x * 3 + 1;
}
} // namespace head_ns

namespace tail_ns {
template <typename T> struct Tail {
	__attribute__((noinline)) T twice(T v) const;
};
} // namespace tail_ns

extern "C" int mid_function(int);

int main(int argc, char **)
{
	tail_ns::Tail<int> t;

	return (head_ns::head_function(argc) + t.twice(argc) + mid_function(argc)) == 0;
}
