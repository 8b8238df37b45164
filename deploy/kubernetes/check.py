#!/usr/bin/env python3
"""Offline checks of the Kubernetes manifests (deploy/kubernetes/*.yaml).

There is no cluster here, and kubectl's own validation downloads the
cluster's OpenAPI schema.  What can be checked without one:

- every document parses (PyYAML);
- kubectl decodes each into its Go type (`kubectl set image --local` for
  the workloads, `kubectl annotate --local` for the rest): a value of the
  wrong type (a string where a bool goes) fails there;
- nothing is lost in that round trip: a field the type does not have
  (hostPid for hostPID) is dropped by the decoder, and found missing here;
- the API server's rule that a Bidirectional mount needs a privileged
  container, and that each volume mount names a volume of the pod;
- the scripts the manifests run exist where the Containerfile puts them,
  and parse (sh -n).

Exit 0 when all holds, 1 with what is wrong, 77 (skipped) without kubectl
or PyYAML.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))

try:
    import yaml
except ImportError:
    print("SKIP: PyYAML is missing (apt-get install python3-yaml)")
    sys.exit(77)
if not shutil.which("kubectl"):
    print("SKIP: kubectl is missing")
    sys.exit(77)

problems = []


def lost(src, out, path):
    """The fields of @src that the decoded @out does not have, or has otherwise."""
    if isinstance(src, dict):
        if not isinstance(out, dict):
            problems.append(f"{path}: became {type(out).__name__}")
            return
        for k, v in src.items():
            if k not in out:
                problems.append(f"{path}.{k}: not a field of its type (dropped by kubectl's decoder)")
            else:
                lost(v, out[k], f"{path}.{k}")
    elif isinstance(src, list):
        if not isinstance(out, list) or len(out) != len(src):
            problems.append(f"{path}: the list changed")
            return
        for i, (a, b) in enumerate(zip(src, out)):
            lost(a, b, f"{path}[{i}]")
    elif src != out and str(src) != str(out):
        problems.append(f"{path}: {src!r} became {out!r}")


def decode(doc, name):
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump(doc, f)
        tmp = f.name
    try:
        spec = doc.get("spec", {}).get("template", {}).get("spec")
        if spec:
            cs = spec.get("containers", []) + spec.get("initContainers", [])
            # A new image, or kubectl prints nothing; put back below.
            images = [f"{c['name']}=hugetext-check.invalid/x:{i}" for i, c in enumerate(cs)]
            cmd = ["kubectl", "set", "image", "--local", "-o", "json", "-f", tmp] + images
        else:
            cmd = ["kubectl", "annotate", "--local", "-o", "json", "-f", tmp, "hugetext.check/x=y"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            problems.append(f"{name}: kubectl cannot decode it: {r.stderr.strip()}")
            return None
        out = json.loads(r.stdout)
        out.get("metadata", {}).get("annotations", {}).pop("hugetext.check/x", None)
        if spec:
            ospec = out["spec"]["template"]["spec"]
            for c, o in zip(cs, ospec.get("containers", []) + ospec.get("initContainers", [])):
                o["image"] = c["image"]
        return out
    finally:
        os.unlink(tmp)


def pod_rules(doc, name):
    spec = doc.get("spec", {}).get("template", {}).get("spec")
    if not spec:
        return
    volumes = {v["name"] for v in spec.get("volumes", [])}
    for c in spec.get("containers", []) + spec.get("initContainers", []):
        privileged = c.get("securityContext", {}).get("privileged", False)
        for m in c.get("volumeMounts", []):
            if m["name"] not in volumes:
                problems.append(f"{name}: container {c['name']} mounts volume {m['name']}, which the pod lacks")
            if m.get("mountPropagation") == "Bidirectional" and not privileged:
                problems.append(f"{name}: container {c['name']}: a Bidirectional mount needs privileged")
        command = " ".join(c.get("command", []))
        if "/usr/share/hugetext/install.sh" in command:
            containerfile = open(os.path.join(here, "Containerfile")).read()
            if "deploy/kubernetes/install.sh /usr/share/hugetext/install.sh" not in containerfile:
                problems.append(f"{name}: runs /usr/share/hugetext/install.sh, which the Containerfile does not put there")


checked = 0
for fn in sorted(os.listdir(here)):
    if not fn.endswith(".yaml"):
        continue
    try:
        docs = [d for d in yaml.safe_load_all(open(os.path.join(here, fn))) if d]
    except yaml.YAMLError as e:
        problems.append(f"{fn}: not YAML: {e}")
        continue
    for d in docs:
        name = f"{fn}: {d.get('kind')}/{d.get('metadata', {}).get('name')}"
        out = decode(d, name)
        if out is not None:
            lost(d, out, name)
        pod_rules(d, name)
        checked += 1
r = subprocess.run(["sh", "-n", os.path.join(here, "install.sh")], capture_output=True, text=True)
if r.returncode != 0:
    problems.append(f"install.sh: {r.stderr.strip()}")
for p in problems:
    print(p)
print(f"{checked} objects checked, {len(problems)} problems")
sys.exit(1 if problems or not checked else 0)
