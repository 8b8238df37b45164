// Description: the calibration (tools/calibrate.c): its JSON written and read
// back, hostile files refused, a real run on this machine with its verdict
// printed with the figures, and the per-boot file (root's, this boot's) in a
// private /run.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <random>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include "calibrate.h"
#include "tooltest.hpp"
// arm64's generated node, checked on any machine (only its pure encoder is used).
#include "../../tools/arch/aarch64/tool-arch.h"

namespace {

std::string json_of(const hte_calib &c)
{
	char *buf = nullptr;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	REQUIRE(f);
	hte_calib_json(f, &c);
	std::fclose(f);
	std::string s(buf, len);
	std::free(buf);
	return s;
}

std::string text_of(const hte_calib &c)
{
	char *buf = nullptr;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	REQUIRE(f);
	hte_calib_print(f, &c);
	std::fclose(f);
	std::string s(buf, len);
	std::free(buf);
	return s;
}

hte_calib sample()
{
	hte_calib c;
	std::memset(&c, 0, sizeof(c));
	c.verdict = HTE_CALIB_NO_GAIN;
	std::snprintf(c.why, sizeof(c.why), "on 2 MiB pages the loop ran 1.01x as fast \"quoted\"\n");
	std::snprintf(c.boot_id, sizeof(c.boot_id), "fa810350-db6d-44c0-bcf4-1c859c5988f6");
	c.seconds = 3.25;
	c.rounds = 52;
	c.walk_ns_per_page = 41.5;
	c.npoints = 2;
	c.point[0] = { 262144, 3.8, 3.9, 0.9, 1.1, 1, 64, 0.99 };
	c.point[1] = { 16u << 20, 54.1, 53.2, 0.98, 1.04, 1, 4096, 1.01 };
	return c;
}

int parse(const std::string &s, hte_calib *c)
{
	return hte_calib_parse(s.data(), s.size(), c);
}

} // namespace

TEST_CASE("the calibration's JSON reads back as written", "[calibrate]")
{
	hte_calib c = sample(), back;
	std::string j = json_of(c);
	REQUIRE(parse(j, &back) == 0);
	CHECK(back.verdict == HTE_CALIB_NO_GAIN);
	CHECK(std::string(back.why) == c.why);
	CHECK(std::string(back.boot_id) == c.boot_id);
	CHECK(back.seconds == Approx(3.25));
	CHECK(back.rounds == 52);
	CHECK(back.walk_ns_per_page == Approx(41.5));
	REQUIRE(back.npoints == 2);
	CHECK(back.point[1].code_bytes == 16u << 20);
	CHECK(back.point[1].pages == 4096);
	CHECK(back.point[1].ns_4k == Approx(54.1));
	CHECK(back.point[1].ratio == Approx(1.01));
	CHECK(back.point[1].huge_ok == 1);
	CHECK(std::string(hte_calib_verdict_name(HTE_CALIB_HUGE_GAINS)) == "huge_gains");
	// White space after the object is allowed.
	CHECK(parse(j + "\n", &back) == 0);
}

TEST_CASE("calibration files that are not what we wrote are refused", "[calibrate]")
{
	hte_calib c = sample(), back;
	std::string j = json_of(c);
	const std::string bad[] = {
		"",
		"{}",
		"[]",
		"null",
		j.substr(0, j.size() / 2),
		j + "{}",
		j + "x",
		std::string(j).replace(j.find("no_gain"), 7, "maybe!!"),
		std::string(j).replace(j.find("\"seconds\":"), 10, "\"seconds\":-"),
		std::string(j).replace(j.find("\"rounds\":52"), 11, "\"rounds\":\"52\""),
		std::string(j).replace(j.find("\"huge_ok\":true"), 14, "\"huge_ok\":1"),
		std::string(j).replace(j.find("\"code_bytes\":262144"), 19, "\"code_bytes\":1e300"),
		std::string(j).replace(j.find("\"boot_id\":\""), 11, "\"boot_id\":\"" + std::string(60, 'a')),
	};
	for (const std::string &s : bad) {
		INFO(s);
		CHECK(parse(s, &back) == -1);
		CHECK(back.verdict == HTE_CALIB_UNKNOWN);
		CHECK(back.npoints == 0);
	}
	// Nine points where eight fit.
	hte_calib many = sample();
	std::string j9 = json_of(many);
	std::string pt = j9.substr(j9.find("{\"code_bytes\""));
	pt = pt.substr(0, pt.find('}') + 1);
	std::string list;
	for (int i = 0; i < 9; i++)
		list += (i ? "," : "") + pt;
	std::string nine = j9.substr(0, j9.find("\"points\":[") + 10) + list + "]}";
	CHECK(parse(nine, &back) == -1);
	// A NUL inside.
	std::string nul = j;
	nul[5] = '\0';
	CHECK(parse(nul, &back) == -1);
}

TEST_CASE("the text says the verdict and the figures", "[calibrate]")
{
	std::string t = text_of(sample());
	CHECK(t.find("calibration: 2 MiB pages of code gain nothing here (52 rounds, 3.2 s)") == 0);
	CHECK(t.find("4096 pages of code in 16.0 MiB: 54.10 ns a jump on 4 KiB pages, 53.20 on 2 MiB: "
		     "1.01x (95%: 0.98-1.04)") != std::string::npos);
}

TEST_CASE("a real calibration on this machine: figures and a verdict that follows from them", "[calibrate]")
{
	hte_calib c;
	REQUIRE(hte_calibrate(&c, 1.0) == 0);
	std::string t = text_of(c);
	WARN(t); // the verdict with its figures, in the test log
	REQUIRE(c.npoints == 3);
	CHECK(c.rounds >= 12);
	CHECK(c.point[0].pages == 64);
	CHECK(c.point[2].pages == 4096);
	CHECK(std::strlen(c.boot_id) == 36);
	// Under qemu's TCG the guest's CPU-time clock may tick in milliseconds:
	// a point then times 0 ns, and the verdict must say it cannot tell.
	bool zero = false;
	for (unsigned i = 0; i < 3; i++)
		zero = zero || !(c.point[i].ns_4k > 0) || !(c.point[i].ns_2m > 0);
	if (zero) {
		CHECK(getenv("HT_EMULATED") != nullptr);
		CHECK(c.verdict == HTE_CALIB_UNKNOWN);
		CHECK(std::string(c.why).find("CPU-time clock is too coarse") != std::string::npos);
		return;
	}
	for (unsigned i = 0; i < 3; i++) {
		CHECK(c.point[i].lo <= c.point[i].ratio);
		CHECK(c.point[i].ratio <= c.point[i].hi);
	}
	std::string thp = read_setting("/sys/kernel/mm/transparent_hugepage/enabled");
	if (thp == "never") {
		CHECK(c.verdict == HTE_CALIB_NO_HUGE);
		return;
	}
	CHECK(c.point[2].huge_ok);
	// The verdict must follow from the figures it quotes.
	if (c.verdict == HTE_CALIB_HUGE_GAINS)
		CHECK(c.point[2].lo > 1);
	if (c.verdict == HTE_CALIB_NO_GAIN)
		CHECK((c.point[2].hi < 1.02 || c.walk_ns_per_page <= 0.05 * c.point[0].ns_4k));
	CHECK(std::string(c.why).find("ns") != std::string::npos);
	// Missing the TLB costs something on every machine we know: the walk
	// figure is the 4 KiB layout's extra time per jump.
	if (c.walk_ns_per_page > 0)
		CHECK(c.walk_ns_per_page == Approx(c.point[2].ns_4k - c.point[0].ns_4k).epsilon(0.5));
}

TEST_CASE("the calibration is kept per boot in root's file, others' files are not believed", "[calibrate]")
{
	if (geteuid() != 0 || !private_run_dir("/run/hugetext/text")) {
		WARN("needs root and a private mount namespace: not checked");
		return;
	}
	hte_calib c, again;
	REQUIRE(hte_calib_get(&c, 0, 0.5) == 0);
	struct stat st;
	REQUIRE(stat(HTE_CALIB_PATH, &st) == 0);
	CHECK(st.st_uid == 0);
	CHECK((st.st_mode & 0777) == 0644);
	// Read back, not run again: the same figures to the last digit kept.
	REQUIRE(hte_calib_get(&again, 0, 0.5) == 0);
	CHECK(again.seconds == Approx(c.seconds).margin(0.001));
	CHECK(again.point[2].ns_4k == Approx(c.point[2].ns_4k).margin(0.0001));
	// Another boot's file: run again.
	std::string j = json_of(c);
	std::string other = j;
	other.replace(other.find(c.boot_id), 36, "00000000-0000-0000-0000-000000000000");
	unlink(HTE_CALIB_PATH);
	write_file(HTE_CALIB_PATH, other, 0644);
	REQUIRE(hte_calib_get(&again, 0, 0.5) == 0);
	CHECK(std::string(again.boot_id) == c.boot_id);
	CHECK(again.seconds != Approx(c.seconds).margin(0.0001));
	// A file others may write is not believed, nor one that is not root's.
	hte_calib forged = c;
	forged.verdict = HTE_CALIB_NO_HUGE;
	std::snprintf(forged.why, sizeof(forged.why), "forged");
	unlink(HTE_CALIB_PATH);
	write_file(HTE_CALIB_PATH, json_of(forged), 0666);
	REQUIRE(chmod(HTE_CALIB_PATH, 0666) == 0);
	REQUIRE(hte_calib_get(&again, 0, 0.5) == 0);
	CHECK(std::string(again.why) != "forged");
	unlink(HTE_CALIB_PATH);
	write_file(HTE_CALIB_PATH, json_of(forged), 0644);
	REQUIRE(chown(HTE_CALIB_PATH, 65534, 65534) == 0);
	REQUIRE(hte_calib_get(&again, 0, 0.5) == 0);
	CHECK(std::string(again.why) != "forged");
	// force runs it again even over this boot's good file.
	unlink(HTE_CALIB_PATH);
	write_file(HTE_CALIB_PATH, json_of(forged), 0644);
	REQUIRE(hte_calib_get(&again, 0, 0.5) == 0);
	CHECK(std::string(again.why) == "forged");
	REQUIRE(hte_calib_get(&again, 1, 0.5) == 0);
	CHECK(std::string(again.why) != "forged");
}

TEST_CASE("arm64's calibration node: subs, b.ne over the ret, and a b that reaches the next node", "[calibrate]")
{
	alignas(16) unsigned char mem[64 << 10] = {};
	uint32_t w[4];
	// Forward 40 KiB, then backward: imm26 counts words from the b itself (node + 12).
	hte_arch_node(mem, mem + 40960);
	std::memcpy(w, mem, sizeof(w));
	CHECK(w[0] == 0xf1000400u); // subs x0, x0, #1
	CHECK(w[1] == 0x54000041u); // b.ne .+8
	CHECK(w[2] == 0xd65f03c0u); // ret
	CHECK((w[3] >> 26) == 0x05u); // b
	CHECK((w[3] & 0x03ffffffu) == (40960u - 12) / 4);
	hte_arch_node(mem + 40960, mem + 64);
	std::memcpy(w, mem + 40960, sizeof(w));
	int32_t imm = (int32_t)((w[3] & 0x03ffffffu) << 6) >> 6;
	CHECK(imm * 4 == 64 - (40960 + 12));
	CHECK(HTE_ARCH_NODE_BYTES == 16);
	CHECK(HTE_ARCH_NODE_REACH == (uint64_t)1 << 27);
}

namespace {

// Made-up rounds: ns per jump of dense, 16 MiB and 80 MiB on 4 KiB and 2 MiB
// pages, each with a little noise that differs from round to round.
hte_calib judged(double dense, double far4, double far2, unsigned n = 40, double noise = 0.01,
		 bool huge = true)
{
	static double v[HTE_CALIB_LAYOUTS][2][400];
	const double *ns[HTE_CALIB_LAYOUTS][2];
	double base[HTE_CALIB_LAYOUTS][2] = { { dense, dense }, { far4 * 0.9, far2 * 0.9 }, { far4, far2 } };
	std::mt19937 rng(7);
	std::normal_distribution<double> z(0, noise);
	for (unsigned l = 0; l < HTE_CALIB_LAYOUTS; l++)
		for (int h = 0; h < 2; h++) {
			for (unsigned i = 0; i < n; i++)
				v[l][h][i] = base[l][h] * std::exp(z(rng));
			ns[l][h] = v[l][h];
		}
	int ok[HTE_CALIB_LAYOUTS] = { 1, huge, huge };
	hte_calib c = {};
	REQUIRE(hte_calib_judge(&c, n, ns, ok) == 0);
	return c;
}

} // namespace

TEST_CASE("the verdicts, from made-up rounds: large translations, shorter walks, none, no huge pages", "[calibrate]")
{
	// 2 MiB pages as fast as the dense layout: the TLB holds them.
	hte_calib c = judged(2.0, 40.0, 2.2);
	CHECK(c.verdict == HTE_CALIB_HUGE_GAINS);
	INFO(c.why);
	CHECK(std::string(c.why).find("and 2 MiB pages take 99% of that away") != std::string::npos);
	CHECK(c.walk_ns_per_page == Approx(38.0).epsilon(0.02));
	CHECK(c.rounds == 40);
	CHECK(c.point[2].ratio == Approx(40.0 / 2.2).epsilon(0.02));
	// Faster, but keeping most of a miss's cost: walks shorter, translations small.
	c = judged(2.0, 40.0, 28.0);
	CHECK(c.verdict == HTE_CALIB_HUGE_GAINS);
	CHECK(std::string(c.why).find("shorter walks, few large translations") != std::string::npos);
	// On huge pages and no faster: the host gives no large translations, said so with the figures.
	c = judged(2.0, 40.0, 40.0);
	CHECK(c.verdict == HTE_CALIB_NO_GAIN);
	CHECK(std::string(c.why).find("this machine (typically its hypervisor) gives no large translations for code") !=
	      std::string::npos);
	CHECK(std::string(c.why).find("1.00x as fast") != std::string::npos);
	CHECK(std::string(c.why).find("costs 38.0 ns") != std::string::npos);
	// Misses that cost nothing: nothing for huge pages to take away.
	c = judged(2.0, 2.02, 2.0);
	CHECK(c.verdict == HTE_CALIB_NO_GAIN);
	CHECK(std::string(c.why).find("costs nothing measurable here") != std::string::npos);
	// The 2 MiB runs not on huge pages: nothing compared.
	c = judged(2.0, 40.0, 2.2, 40, 0.01, false);
	CHECK(c.verdict == HTE_CALIB_NO_HUGE);
	// Too noisy to tell.
	c = judged(2.0, 40.0, 36.0, 12, 0.5);
	INFO(c.why);
	CHECK(c.verdict == HTE_CALIB_UNKNOWN);
	CHECK(std::string(c.why).find("not decided") == 0);
	CHECK(std::string(c.why).find(" ns a jump") != std::string::npos);
	// Too few rounds for an interval.
	c = judged(2.0, 40.0, 2.2, 4);
	CHECK(c.verdict == HTE_CALIB_UNKNOWN);
	CHECK(std::string(c.why).find("too few rounds") != std::string::npos);
	// A clock that ticks in milliseconds (qemu's TCG): 0 ns a jump is no figure.
	c = judged(0.0, 40.0, 2.2);
	INFO(c.why);
	CHECK(c.verdict == HTE_CALIB_UNKNOWN);
	CHECK(std::string(c.why).find("CPU-time clock is too coarse") != std::string::npos);
}
