// The functions after the 8 MiB of symbols-mid.S (see symbols-head.cpp).
namespace tail_ns {
template <typename T> struct Tail {
	__attribute__((noinline)) T twice(T v) const;
};
template <typename T> T Tail<T>::twice(T v) const
{
	return v + v;
}
template struct Tail<int>;
} // namespace tail_ns
