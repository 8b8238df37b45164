"""What every section of the report uses: the page being written, figure
formatting (median [min–max], ratios of medians, verdicts against targets)
and saving plots.
"""
import os

import matplotlib
matplotlib.use("Agg")  # no display: the plots only go to PNG files
import matplotlib.pyplot as plt  # noqa: E402


class Report:
    """The page being written: its lines, the summary's rows, where the plots go.

    The sections run in page order but the summary is printed near the top,
    so they collect its rows here and report.py places them at the end.
    """

    def __init__(self, plots, rel_plots):
        self.lines = []
        self.summary = []  # (figure, measured, target, verdict)
        self.plots = plots
        self.rel_plots = rel_plots  # the plots directory as the page links it

    def w(self, s=""):
        self.lines.append(s)

    def missing(self, data):
        """True, after writing its n/a line, when a section has no results."""
        if data and "na" not in data:
            return False
        self.w(na(data))
        self.w()
        return True

    def plot(self, fig, name, alt_text):
        """Saves fig as name in the plots directory and links it from the page."""
        fig.tight_layout()
        fig.savefig(os.path.join(self.plots, name), dpi=110)
        plt.close(fig)
        self.w(f"![{alt_text}]({self.rel_plots}/{name})")
        self.w()


def ok(x):
    return isinstance(x, dict) and "median" in x


def na(x, what="not measured"):
    if isinstance(x, dict) and "na" in x:
        return "n/a: " + x["na"]
    return "n/a: " + what


def fmt(x, unit="", nd=1):
    if not ok(x):
        return na(x)
    return f"{x['median']:.{nd}f}{unit} [{x['min']:.{nd}f}–{x['max']:.{nd}f}]"


def alt(x, key="cpu"):
    """The secondary figure (CPU time beside wall time) of a result, as a result."""
    if ok(x) and isinstance(x.get("alt"), dict) and ok(x["alt"].get(key)):
        return x["alt"][key]
    return {"na": "not recorded"}


def ratio(a, b):
    if ok(a) and ok(b) and b["median"]:
        return a["median"] / b["median"]
    return None


def rfmt(r, nd=2):
    return f"{r:.{nd}f}x" if r is not None else "n/a"


def verdict(r, target, goal=None, higher_better=False):
    if r is None:
        return "n/a"
    better = (lambda a, b: a >= b) if higher_better else (lambda a, b: a <= b)
    if goal is not None and better(r, goal):
        return "meets goal"
    if better(r, target):
        return "meets target"
    return "misses target"
