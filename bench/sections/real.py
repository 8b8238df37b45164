"""Section 5: real work, g++ and rustc compiling generated sources."""
import os
import re
import shutil

from .common import ARGS, TMP, check_report, ensure_pool, exec_bytes, interleave, log, run, sh


def gen_cpp(path):
    """A large C++ translation unit: many template instantiations at -O2."""
    parts = ["#include <algorithm>", "#include <map>", "#include <unordered_map>",
             "#include <set>", "#include <string>", "#include <vector>", "#include <sstream>",
             "#include <functional>", "#include <memory>", "#include <numeric>", "#include <regex>",
             "#include <tuple>", "#include <variant>", "#include <optional>", ""]
    n = 5 if ARGS.quick else 8
    for i in range(n):
        parts.append(f"""
struct Rec{i} {{ int id; std::string name; double w; std::vector<int> tags; }};
template <class T> static T fold{i}(const std::vector<T>& v) {{
  return std::accumulate(v.begin(), v.end(), T{{}}, [](T a, const T& b) {{ return a + b * {i % 7 + 1}; }});
}}
std::string work{i}(const std::vector<Rec{i}>& in, const std::string& pat) {{
  std::map<std::string, std::vector<Rec{i}>> by;
  std::unordered_map<int, std::set<std::string>> tags;
  for (const auto& r : in) {{ by[r.name].push_back(r); for (int t : r.tags) tags[t].insert(r.name); }}
  std::vector<std::tuple<double, int, std::string>> rank;
  for (auto& [k, v] : by) {{
    std::sort(v.begin(), v.end(), [](const Rec{i}& a, const Rec{i}& b) {{ return a.w < b.w || (a.w == b.w && a.id < b.id); }});
    std::vector<double> ws; for (auto& r : v) ws.push_back(r.w);
    rank.emplace_back(fold{i}(ws), (int)v.size(), k);
  }}
  std::stable_sort(rank.begin(), rank.end());
  std::regex re(pat + "{i}");
  std::ostringstream os;
  for (auto& [w, c, k] : rank) if (std::regex_search(k, re)) os << k << ':' << c << ':' << w << '\\n';
  std::variant<int, std::string> var = (int)tags.size();
  if (auto* p = std::get_if<int>(&var)) os << *p;
  std::optional<std::string> best; for (auto& [t, s] : tags) if (!s.empty()) best = *s.begin();
  auto f = std::function<std::string(std::string)>([&](std::string s) {{ return s + best.value_or(""); }});
  return f(os.str());
}}""")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")


def gen_rust(path):
    """A crate of a few thousand lines: generics, traits, iterators, matches."""
    n = 60 if ARGS.quick else 100
    out = ["#![allow(dead_code)]", "use std::collections::{HashMap, BTreeMap, HashSet};",
           "use std::fmt;", ""]
    for i in range(n):
        out.append(f"""
#[derive(Debug, Clone, PartialEq)]
pub enum Shape{i} {{ Circle(f64), Rect {{ w: f64, h: f64 }}, Poly(Vec<(f64, f64)>), Empty }}
pub trait Area{i} {{ fn area(&self) -> f64; fn name(&self) -> String {{ format!("shape{i}") }} }}
impl Area{i} for Shape{i} {{
    fn area(&self) -> f64 {{
        match self {{
            Shape{i}::Circle(r) => 3.14159 * r * r,
            Shape{i}::Rect {{ w, h }} => w * h,
            Shape{i}::Poly(p) => p.windows(2).map(|w| w[0].0 * w[1].1 - w[1].0 * w[0].1).sum::<f64>().abs() / 2.0,
            Shape{i}::Empty => 0.0,
        }}
    }}
}}
impl fmt::Display for Shape{i} {{
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {{ write!(f, "{{}}={{:.3}}", self.name(), self.area()) }}
}}
pub struct Store{i}<K: std::hash::Hash + Eq + Clone + Ord, V: Clone> {{ map: HashMap<K, Vec<V>>, order: BTreeMap<K, usize> }}
impl<K: std::hash::Hash + Eq + Clone + Ord + fmt::Debug, V: Clone + Area{i}> Store{i}<K, V> {{
    pub fn new() -> Self {{ Store{i} {{ map: HashMap::new(), order: BTreeMap::new() }} }}
    pub fn add(&mut self, k: K, v: V) {{ let n = self.order.len(); self.order.entry(k.clone()).or_insert(n); self.map.entry(k).or_default().push(v); }}
    pub fn total(&self) -> f64 {{ self.map.values().flat_map(|v| v.iter()).map(|s| s.area()).sum() }}
    pub fn biggest(&self) -> Option<(K, f64)> {{
        self.map.iter().map(|(k, v)| (k.clone(), v.iter().map(|s| s.area()).fold(0.0, f64::max)))
            .max_by(|a, b| a.1.partial_cmp(&b.1).unwrap())
    }}
    pub fn keys_sorted(&self) -> Vec<String> {{ let mut v: Vec<String> = self.order.keys().map(|k| format!("{{:?}}", k)).collect(); v.sort(); v.dedup(); v }}
}}
pub fn run{i}(n: usize) -> (f64, usize, String) {{
    let mut s: Store{i}<String, Shape{i}> = Store{i}::new();
    let mut seen = HashSet::new();
    for j in 0..n {{
        let sh = match j % 4 {{ 0 => Shape{i}::Circle(j as f64), 1 => Shape{i}::Rect {{ w: j as f64, h: {i} as f64 }},
            2 => Shape{i}::Poly((0..j % 7).map(|k| (k as f64, (k * k) as f64)).collect()), _ => Shape{i}::Empty }};
        seen.insert(j % 13);
        s.add(format!("k{{}}", j % 17), sh);
    }}
    let txt: Vec<String> = s.map.values().flat_map(|v| v.iter().map(|x| x.to_string())).collect();
    (s.total(), seen.len(), txt.join(",") + &s.keys_sorted().concat() + &format!("{{:?}}", s.biggest()))
}}""")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    return sum(x.count("\n") + 1 for x in out)



def realwork():
    res = {}
    reps = 3 if ARGS.quick else 7
    work = os.path.join(TMP, "work")
    os.makedirs(work, exist_ok=True)
    # g++
    gxx = shutil.which("g++")
    if not gxx:
        res["gxx"] = {"na": "g++ is not installed"}
    else:
        src = os.path.join(work, "big.cpp")
        gen_cpp(src)
        argv = [gxx, "-O2", "-std=c++17", "-c", src, "-o", os.path.join(work, "big.o")]
        cc1 = sh("g++ -print-prog-name=cc1plus")
        res["gxx_info"] = {"lines": sum(1 for _ in open(src)), "cc1plus": cc1,
                           "cc1plus_text_mib": round(exec_bytes(cc1) / 1048576, 1)}
        log(f"g++ -O2 -c of {res['gxx_info']['lines']} lines: {reps} interleaved rounds")
        variants = {"plain": (None, False, None), "thp": ({"HUGETEXT_MODE": "thp"}, True, "thp"),
                    "explicit": ({"HUGETEXT_MODE": "explicit"}, True, "explicit")}
        res["gxx"] = timed_real(argv, variants, "cc1plus$", reps, "g++", pool=40)
    # rustc
    if not ARGS.rustc:
        res["rustc"] = {"na": "rustc is not installed"}
    else:
        src = os.path.join(work, "lib.rs")
        lines = gen_rust(src)
        argv = [ARGS.rustc, "--edition", "2021", "--crate-type", "lib", "--crate-name", "bench",
                "--emit", "link", "-o", os.path.join(work, "libbench.rlib"), src]
        res["rustc_info"] = {"lines": lines, "rustc": ARGS.rustc}
        log(f"rustc (debug) of {lines} lines: {reps} interleaved rounds")
        m = {"HUGETEXT_MATCH": "librustc_driver|libLLVM"}
        variants = {"plain": (None, False, None),
                    "thp": (dict(m, HUGETEXT_MODE="thp"), True, "thp"),
                    "explicit": (dict(m, HUGETEXT_MODE="explicit"), True, "explicit")}
        res["rustc"] = timed_real(argv, variants, "librustc_driver|libLLVM", reps, "rustc", pool=200,
                                  cwd=work)
    return res


def timed_real(argv, variants, obj, reps, label, pool, cwd=None):
    checks, moved = {}, {}
    for k, (env, pre, mode) in variants.items():
        if mode == "explicit":
            ensure_pool(pool)
        r = run(argv, env, preload=pre, cwd=cwd)
        if r.rc != 0:
            checks[k] = f"exit status {r.rc}: {r.err.strip()[-200:]}"
        elif pre:
            checks[k] = check_report(r, obj, mode)
            ok = [x for x in r.report if x.get("status") == "ok" and re.search(obj, x.get("object", ""))]
            moved[k] = {"objects": sorted({os.path.basename(x["object"]) for x in ok}),
                        "huge_mib": round(sum(x["huge_bytes"] for x in ok) / 1048576, 1),
                        "ms": round(sum(x["ms"] for x in ok), 2),
                        "not_ok": [{"object": os.path.basename(x.get("object", "")), "status": x.get("status"),
                                    "error": x.get("error", "")} for x in r.report
                                   if re.search(obj, x.get("object", "")) and x.get("status") != "ok"][:4]}

    def thunk(k):
        env, pre, mode = variants[k]

        def f():
            if mode == "explicit":
                ensure_pool(pool)
            r = run(argv, env, preload=pre, cwd=cwd)
            if r.rc != 0:
                return None, f"exit status {r.rc}"
            if pre:
                p = check_report(r, obj, mode)
                if p:
                    return None, p
            return {"wall": r.wall_ms / 1e3, "cpu": r.cpu_ms / 1e3}, None
        return f
    out = interleave({k: thunk(k) for k in variants if not checks.get(k)}, reps, None, label)
    for k, why in checks.items():
        if why:
            out[k] = {"na": why}
    out["moved"] = moved
    return out
