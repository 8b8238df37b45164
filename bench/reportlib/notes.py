"""The notes (bench/notes.md, static text) and what measure.py noted during this run."""
import os

# bench/notes.md, beside report.py
NOTES_MD = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "notes.md")


def write(out, R):
    w = out.w
    notes = R.get("notes", [])
    if os.path.exists(NOTES_MD):
        w(open(NOTES_MD).read().rstrip())
        w()
    if notes:
        w("Seen during this run:")
        w()
        for n in notes:
            w(f"- {n}")
        w()
