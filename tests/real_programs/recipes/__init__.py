"""One recipe per real program, grouped by area (one module each): where it lives, its tiny
data, and its tiny flags (`program.Program`)."""
from recipes import language, text, vision

PROGRAMS = language.PROGRAMS + vision.PROGRAMS + text.PROGRAMS


def by_name():
    return {p.name: p for p in PROGRAMS}
