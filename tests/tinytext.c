/*
 * A library with a few KiB of code, linked with 2 MiB segments (as
 * libXdmcp and libXxf86vm are): the loader puts its code on a 2 MiB
 * boundary with free space after it.  A 2 MiB page for it would cost 2 MiB
 * of memory for 8 KiB of code.
 */
#define TINY_FN(n) \
	__attribute__((noinline)) int tiny_##n(int x) \
	{ \
		unsigned s = (unsigned)x; \
		for (int i = 0; i < 8; i++) \
			s = s * 31u + (unsigned)(i * (n + 1)); \
		return (int)(s & 0x7fffffff); \
	}

/* 4 KiB more code: rets nobody calls. */
__asm__(".text\n.globl tiny_pad\n.type tiny_pad, @function\ntiny_pad: .fill 4096, 1, 0xc3\n");

TINY_FN(0) TINY_FN(1) TINY_FN(2) TINY_FN(3) TINY_FN(4) TINY_FN(5) TINY_FN(6) TINY_FN(7)

int tiny_sum(int x)
{
	unsigned s = (unsigned)tiny_0(x) + tiny_1(x) + tiny_2(x) + tiny_3(x) + tiny_4(x) +
		     tiny_5(x) + tiny_6(x) + tiny_7(x);

	return (int)(s & 0x7fffffff); /* wraps as unsigned: no signed overflow */
}
